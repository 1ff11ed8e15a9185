// What the library does with values it did not make: the text of anything thrown, and a call of
// a user's hook that neither a throw nor a rejected promise can get past.

/**
 * The text of anything thrown or given as a reason, never throwing: an `Error`'s message, else
 * `String(value)`; a value `String` cannot convert (an object with no prototype, a `toString`
 * that throws) is `Object.prototype.toString`'s `[object Object]`, and one that answers nothing
 * (a revoked Proxy) is "a value that cannot be read".
 */
export function textOf(value: unknown): string {
  try {
    if (value instanceof Error && typeof value.message === "string") return value.message;
    return String(value);
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      // A revoked Proxy answers nothing, not even its tag.
      return "a value that cannot be read";
    }
  }
}

/**
 * Calls a user's hook with `arg`: a throw, or a promise it returns that rejects (an `async`
 * hook), goes to `failed` and no further (never an unhandled rejection, never into the call).
 */
export function callHook<A>(hook: (arg: A) => unknown, arg: A, failed: (error: unknown) => void): void {
  try {
    const returned = hook(arg);
    if (typeof (returned as PromiseLike<unknown> | null | undefined)?.then === "function") {
      (returned as PromiseLike<unknown>).then(undefined, failed);
    }
  } catch (error) {
    failed(error);
  }
}

/** Does nothing: the one no-op the library passes where a callback must be given and nothing is to be done (an ignored hook failure, a settled call's resolvers). @internal */
export function noop(): void {}
