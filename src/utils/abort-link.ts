import { settleSlicer } from "./slices.js";
import type { SliceWork } from "./slices.js";
import { Wakeable } from "./wakeable.js";
import { noop } from "./hooks.js";
import { sweepComposedSignals } from "./composed-signals.js";

/** What an abort reaches: a callback, or a pending call (woken through its method: no closure per call). */
export type AbortTarget = (() => void) | Wakeable;

/**
 * Per signal: its one `abort` listener and the callbacks it fans out to. Once the signal aborted,
 * the callbacks subscribed then are called one at a time in the process's settle slices (see
 * `Slicer`): a signal shared by 100,000 pending calls settles them over as many tasks as it
 * takes, never holding the event loop longer than one slice. The first callback is called at
 * once, in `abort()`'s own task, and so are the others while the slice lasts. A callback
 * unsubscribed before its turn is not called.
 *
 * A signal with one callback is that callback's own (a request's stream, a call's signal): there
 * is nothing to slice, and it is called at once, in `abort()`, even while a settling is under way.
 * Queued behind it, a 2026-07-28 request's stream close (its cancel: the stream's signal, linked to
 * the fetch's) waited for the rest of a mass timeout's settles and closes, up to 135 ms for 100
 * calls, while the server worked on and the record said the stream had closed at the settle.
 */
class Fanout implements SliceWork {
  /**
   * Subscribed and not yet called: the one callback while there has been only one (a call's own
   * signal, the common case: no `Set` for it, nor the new table its `clear()` made at the abort: about
   * 290 B less a call), else all of them in `#many`.
   */
  #one: AbortTarget | undefined = undefined;
  #many: Set<AbortTarget> | undefined = undefined;
  /** Once aborted: the callbacks subscribed then, in subscription order, and the next to call. */
  #fired: AbortTarget[] | undefined = undefined;
  #next = 0;

  constructor(readonly signal: AbortSignal) {}

  /** Callbacks subscribed and not yet called. */
  get size(): number {
    return this.#many !== undefined ? this.#many.size : this.#one === undefined ? 0 : 1;
  }

  add(target: AbortTarget): void {
    if (this.#many !== undefined) this.#many.add(target);
    else if (this.#one === undefined || this.#one === target) this.#one = target;
    else {
      this.#many = new Set([this.#one, target]);
      this.#one = undefined;
    }
  }

  /** Unsubscribes `target`; false when it was not subscribed (any more). */
  delete(target: AbortTarget): boolean {
    if (this.#many !== undefined) return this.#many.delete(target);
    if (this.#one !== target) return false;
    this.#one = undefined;
    return true;
  }

  readonly listener = (): void => {
    if (this.size === 1) {
      // Called first, the bookkeeping after: this is the path from `abort()` to a cancel's write.
      const only = this.#one ?? this.#many!.values().next().value!;
      this.#one = undefined;
      this.#many?.clear();
      fire(only);
      this.#done();
      return;
    }
    this.#fired = this.#many === undefined ? [] : [...this.#many];
    settleSlicer.run(this);
  };

  step(): boolean {
    const fired = this.#fired ?? [];
    while (this.#next < fired.length) {
      const target = fired[this.#next]!;
      fired[this.#next++] = noop; // what is done is not kept
      if (!this.delete(target)) continue; // unsubscribed meanwhile
      fire(target);
      break;
    }
    if (this.#next < fired.length) return true;
    this.#fired = undefined;
    this.#done();
    return false;
  }

  /**
   * Every callback subscribed at the abort was called: the fan-out is forgotten. A native signal
   * dropped its listener as it fired (`once`); a signal of the caller's own making that ignores
   * `once` (a polyfill with `addEventListener` and `removeEventListener` only: an outside tester's)
   * gets it removed here, so it keeps nothing of ours after its abort either.
   */
  #done(): void {
    if (fanouts.get(this.signal) === this) fanouts.delete(this.signal);
    if (typeof AbortSignal === "function" && this.signal instanceof AbortSignal) return;
    try {
      this.signal.removeEventListener("abort", this.listener);
    } catch {
      // Its `removeEventListener` throws: the listener left behind calls an empty fan-out.
    }
  }
}

/** Calls one abort target: a callback, or a pending call's wake. */
function fire(target: AbortTarget): void {
  if (typeof target === "function") target();
  else Wakeable.wake(target);
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
 * subscription with {@link offAbort}. A pending call subscribes itself (a `Wakeable`, woken
 * through its method): no closure per call at all.
 */
export function linkAbort(signal: AbortSignal, callback: AbortTarget): void {
  let fanout = fanouts.get(signal);
  if (fanout === undefined) {
    // A signal made per call by `AbortSignal.any([session, own])`: on Node 20 each one stays on
    // the session's signal unless swept (see composed-signals.ts).
    sweepComposedSignals(signal);
    fanout = new Fanout(signal);
    // Added first: a signal whose `addEventListener` throws leaves nothing behind (the call that
    // links it fails before its send).
    signal.addEventListener("abort", fanout.listener, { once: true });
    fanouts.set(signal, fanout);
  }
  fanout.add(callback);
}

/** Ends a {@link linkAbort} subscription; a no-op when `callback` is not subscribed (any more). */
export function offAbort(signal: AbortSignal, callback: AbortTarget): void {
  const fanout = fanouts.get(signal);
  if (fanout === undefined || !fanout.delete(callback) || fanout.size > 0) return;
  fanouts.delete(signal);
  try {
    signal.removeEventListener("abort", fanout.listener);
  } catch {
    // A signal of the caller's own making whose `removeEventListener` throws: the call settles all
    // the same (the listener left behind calls an empty fan-out, which does nothing).
  }
}

/** How many callbacks are subscribed to this signal right now (for tests). @internal */
export function abortSubscribers(signal: AbortSignal): number {
  return fanouts.get(signal)?.size ?? 0;
}
