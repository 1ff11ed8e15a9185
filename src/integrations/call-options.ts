// What a framework shell's `callOptions` hook returned (the OpenAI Agents server's
// `callOptions(tool, args)`, the AI SDK transport's `callOptions(method, params)`), sorted once
// here for both: `null` and `undefined` are "no options of this call's own"; an options object goes
// on to the runner, which validates each option in it; anything else goes on as a refusal the
// runner turns into an `InvalidOptionError` naming `callOptions`, warned once and recorded, like
// an invalid option from the hook: a spread would turn a string into options "0", "1", ... and a
// number, `true`, an array or a Promise into no options at all, silently.
import { isOptionsObject, received } from "../options/schemas.js";
import { REFUSED_HOOK_VALUE } from "../runner/runner.js";
import type { HookRefusal } from "../runner/runner.js";
import { textOf } from "../utils/hooks.js";

/**
 * The per-call options a `callOptions` hook returned: `undefined` for `null` or `undefined` (no
 * options of the call's own), the object itself for a plain object (its options are validated
 * by the runner, as ever; a class instance is one, as everywhere an options object is taken), and
 * for anything else (a string, a number, a boolean, an array, a function, a Promise, a Date, a
 * Map) options that carry the refusal to the runner: the call
 * then rejects with an `InvalidOptionError` naming `callOptions` and saying what it returned
 * (`... returned a string ("30s"), so tools/call "echo" was not sent: callOptions must return an
 * object of call options, or null/undefined`), warned once (`MCP_CANCELLABLE_INVALID_OPTION`)
 * and recorded (`failed`, outcome `not-sent`).
 * @param returned what the hook returned.
 */
export function hookedCallOptions<T extends object>(returned: unknown): T | undefined {
  if (returned === null || returned === undefined) return undefined;
  try {
    if (!isOptionsObject(returned)) return refused({ returned: described(returned) });
    // The framework's own signal for the request cancels it; one from the hook would be taken in
    // its place where the framework gives none, and its abort answer nothing (an outside tester's:
    // the AI SDK's request was left unanswered).
    if ((returned as { signal?: unknown }).signal !== undefined) {
      return refused({
        option: "signal",
        invalid: `"signal" is not one of callOptions' options: the framework's own signal for the request cancels it (a limit of the hook's own: timeoutMs, maxTotalTimeoutMs)`,
      });
    }
    return returned as T;
  } catch {
    // A value that cannot be read (a revoked Proxy).
    return refused({ returned: "a value that cannot be read" });
  }
}

/**
 * Calls a `callOptions` hook and sorts what it returned ({@link hookedCallOptions}). A hook that
 * throws (a bug in it: `args.budget.ms` with no `budget`) is refused the same way, naming what it
 * threw: the call rejects with an `InvalidOptionError` (`... threw TypeError: ..., so tools/call
 * "echo" was not sent`), warned once and recorded, never handed to the model as the tool's error.
 * @param hook the hook, bound to its arguments.
 */
export function callHook<T extends object>(hook: () => unknown): T | undefined {
  let returned: unknown;
  try {
    returned = hook();
  } catch (error) {
    const text = thrownText(error);
    return refused({ threw: text.length > 200 ? `${text.slice(0, 199)}…` : text });
  }
  return hookedCallOptions<T>(returned);
}

/** `TypeError: ...` for an error, its text for anything else; never a throw (a getter that throws, a revoked Proxy). */
function thrownText(error: unknown): string {
  try {
    if (error instanceof Error) return `${String(error.name)}: ${textOf(error)}`;
  } catch {
    // read below as any value
  }
  return textOf(error);
}

function refused<T>(refusal: HookRefusal): T {
  return { [REFUSED_HOOK_VALUE]: refusal } as unknown as T;
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
      return received(value); // a built-in: a Date, a Map
  }
}
