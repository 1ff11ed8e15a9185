// Verifiers by tool name (the `verifiers` option): a connection's verify reads for its tool calls,
// whoever makes them, so a framework's own tool calls are verified without bypassing the framework.
import type { ToolVerifier, Verifiers, VerifyFn } from "../types/options.js";

/** The verifier of tool `name`: its own, else `"*"`'s, else none. */
export function verifierFor(verifiers: Verifiers, name: string): ToolVerifier | undefined {
  return (Object.hasOwn(verifiers, name) ? verifiers[name] : undefined) ?? (Object.hasOwn(verifiers, "*") ? verifiers["*"] : undefined);
}

/**
 * The `verify` of one tool call from its tool's verifier: the verifier gets the tool's `name`
 * and `arguments` besides the record and the signal. Made only for a call that has a verifier;
 * it holds the call's arguments (the caller's object, not copied) until its verification ends.
 */
export function toolVerify(verifier: ToolVerifier, name: string, params: Record<string, unknown>): VerifyFn {
  const args = typeof params.arguments === "object" && params.arguments !== null ? (params.arguments as Record<string, unknown>) : {};
  return ({ record, signal }) => verifier({ record, signal, name, arguments: args });
}
