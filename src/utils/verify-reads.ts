// Whether code runs inside a `verify` read, across its awaits: the tool calls a verifier makes to
// read back (often through the same client) take no verifier from `verifiers` themselves. Without
// this, a `"*"` verifier whose read timed out verified that read, whose read timed out, and so on,
// one read per timeout until the client closed (an outside tester's finding).
//
// Built on Node's `AsyncLocalStorage` (Node, Deno and Bun give it through
// `process.getBuiltinModule`); where there is none (a browser) every call is as before. On Node 20
// an `AsyncLocalStorage` in use slows every promise of the process (its promise hook), so the
// store is enabled only while a read is under way and disabled when the last one ends.

interface Store {
  getStore(): unknown;
  run<R>(store: unknown, fn: () => R): R;
  disable(): void;
}

const store: Store | undefined = (() => {
  try {
    const get = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule;
    if (typeof get !== "function") return undefined;
    const hooks = get("node:async_hooks") as { AsyncLocalStorage?: new () => Store } | undefined;
    return hooks?.AsyncLocalStorage === undefined ? undefined : new hooks.AsyncLocalStorage();
  } catch {
    return undefined;
  }
})();

/** Reads under way (the store is disabled at 0). */
let reads = 0;

/** True inside a `verify` read started by {@link asVerifyRead} (always false where the runtime has no `AsyncLocalStorage`). */
export function inVerifyRead(): boolean {
  return reads > 0 && store?.getStore() === true;
}

/** Runs one `verify` read (`read` returns its promise) as a verify read: see {@link inVerifyRead}. */
export function asVerifyRead<R>(read: () => Promise<R>): Promise<R> {
  if (store === undefined) return read();
  reads++;
  let running: Promise<R>;
  try {
    running = store.run(true, read);
  } catch (error) {
    running = Promise.reject(error);
  }
  const done = (): void => {
    if (--reads === 0) store.disable();
  };
  running.then(done, done);
  return running;
}
