/** Per signal: its one `abort` listener and the callbacks it fans out to. */
interface Fanout {
  readonly listener: () => void;
  readonly callbacks: Set<() => void>;
}

const fanouts = new WeakMap<AbortSignal, Fanout>();

/**
 * Calls `callback` when `signal` aborts; the returned function unsubscribes. However many
 * callbacks a signal has, it carries one `abort` listener, added with the first and removed
 * with the last: a long-lived signal (one per bot session) shared by any number of concurrent
 * calls never reaches Node's MaxListenersExceededWarning, and keeps nothing once they settle.
 * No `AbortSignal.any`, which on Node 20 retains every composed signal on the long-lived one.
 * The caller checks `signal.aborted` first: an already aborted signal never fires.
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  linkAbort(signal, callback);
  return () => offAbort(signal, callback);
}

/**
 * Subscribes `callback` like {@link onAbort}, without making an unsubscribe function: for an
 * owner that keeps the signal and the callback anyway (a pending call), and ends the
 * subscription with {@link offAbort}. One closure and its scope less per subscription.
 */
export function linkAbort(signal: AbortSignal, callback: () => void): void {
  let fanout = fanouts.get(signal);
  if (fanout === undefined) {
    const callbacks = new Set<() => void>();
    const listener = (): void => {
      fanouts.delete(signal);
      for (const fire of [...callbacks]) fire();
      callbacks.clear();
    };
    fanout = { listener, callbacks };
    fanouts.set(signal, fanout);
    signal.addEventListener("abort", listener, { once: true });
  }
  fanout.callbacks.add(callback);
}

/** Ends a {@link linkAbort} subscription; a no-op when `callback` is not subscribed (any more). */
export function offAbort(signal: AbortSignal, callback: () => void): void {
  const fanout = fanouts.get(signal);
  if (fanout === undefined || !fanout.callbacks.delete(callback) || fanout.callbacks.size > 0) return;
  signal.removeEventListener("abort", fanout.listener);
  fanouts.delete(signal);
}

/** How many callbacks are subscribed to this signal right now (for tests). @internal */
export function abortSubscribers(signal: AbortSignal): number {
  return fanouts.get(signal)?.callbacks.size ?? 0;
}
