// What a framework shell's `callOptions` hook returned (the OpenAI Agents server's
// `callOptions(tool, args)`, the AI SDK transport's `callOptions(method, params)`), checked once
// here for both: `null` and `undefined` are "no options of this call's own"; a plain object goes
// on to the runner, which validates each option in it; anything else is refused here, since a
// spread would turn a string into options "0", "1", ... and a number, `true`, an array or a
// Promise into no options at all, silently.
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { warnMistakeOnce } from "../options/warnings.js";

/**
 * The per-call options a `callOptions` hook returned: `undefined` for `null` or `undefined` (no
 * options of the call's own), the object itself for a plain object (its options are validated
 * by the runner, as ever).
 * @param returned what the hook returned.
 * @param hook the hook as the developer knows it, such as `cancellableTransport callOptions("tools/call", params)`.
 * @param what the request that is not sent when the value is refused, such as `tools/call "echo"`.
 * @throws {InvalidOptionError} naming `callOptions` for anything else (a string, a number, a
 *   boolean, an array, a function, a Promise, a class instance), saying what it returned; the
 *   mistake is also warned about once (`MCP_CANCELLABLE_INVALID_OPTION`), since a framework may
 *   hand the error to its model as tool text only.
 */
export function hookedCallOptions<T extends object>(returned: unknown, hook: string, what: string): T | undefined {
  if (returned === null || returned === undefined) return undefined;
  if (isPlainObject(returned)) return returned as T;
  const mistake = new InvalidOptionError(
    "callOptions",
    `${hook} returned ${described(returned)}, so ${what} was not sent: callOptions must return an object of call options, or null/undefined`,
  );
  warnMistakeOnce(mistake.message);
  throw mistake;
}

/** An object literal's kind: its prototype is (some realm's) `Object.prototype`, or `null`. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as object | null;
  return prototype === null || Object.getPrototypeOf(prototype) === null;
}

/** What a refused value is, for the message: `a string ("30s")`, `a number (5)`, `an array`, `a Promise (callOptions must not be async)`. */
function described(value: unknown): string {
  switch (typeof value) {
    case "string":
      return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 39)}…` : value)})`;
    case "number":
    case "boolean":
    case "bigint":
      return `a ${typeof value} (${String(value)})`;
    case "function":
      return "a function";
    case "symbol":
      return "a symbol";
    default:
      if (Array.isArray(value)) return "an array";
      if (typeof (value as { then?: unknown }).then === "function") return "a Promise (callOptions must not be async)";
      return (value as object).constructor?.name
        ? `an instance of ${(value as object).constructor.name}`
        : "an object that is not a plain object";
  }
}
