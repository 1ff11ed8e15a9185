import { MAX_TIMER_DELAY_MS } from "../options/defaults.js";
import type { Timers } from "../types/options.js";
import { SLICE_BUDGET_MS, Slicer, processClock, settleSlicer, yieldTask } from "../utils/slices.js";
import type { SliceWork } from "../utils/slices.js";
import { WakeRun, Wakeable } from "../utils/wakeable.js";

/** A next deadline this close (ms) holds the settling's `runAfter` work for it (see `DeadlineQueue.step`). */
const HOLD_AHEAD_MS = 1;

/**
 * A {@link DeadlineQueue} entry around a callback (a pending call is its own entry: it extends
 * `Wakeable`). Reused for every deadline its owner schedules.
 * @internal
 */
export class DeadlineSlot extends Wakeable {
  /**
   * @param onWake called (synchronously, from the queue's settling) once the queue's clock reads
   *   the slot's deadline or later. The owner re-checks its own deadlines against the clock: a
   *   wake is a hint, never a verdict, so a timer that fires early or late cannot settle the
   *   wrong call.
   */
  constructor(readonly onWake: () => void) {
    super();
  }

  protected override wake(): void {
    this.onWake();
  }
}

/**
 * The deadlines of many calls behind one timer, ordered by deadline, then by insertion order
 * (the entries are the calls themselves: `Wakeable`), with one `setTimeout` armed for the
 * earliest deadline. A slot whose deadline is not before the last one's in the run goes at the
 * run's end (`WakeRun`: calls that share one timeout, O(1) in and out); any other goes to a binary
 * min-heap (O(log n)); the earliest is the first of either. Scheduling a deadline later than the
 * one the timer is armed for touches no timer; removing a slot clears the timer only when the
 * queue becomes empty, so no timer outlives the last pending call. A client's calls share one
 * queue (one timer for any number of pending calls, where there was one per call); a call made on
 * its own gets a private queue.
 *
 * When the timer fires, the slots whose deadline the clock has reached are taken off the queue
 * one at a time, earliest first, and each is woken as it is taken; a slot scheduled again while the
 * queue settles (an idle deadline moved by progress, a new call) is judged at the next fire. The
 * settling runs in slices (`Slicer`, shared by the process's queues and abort fan-outs): when
 * 10,000 calls are due at once, the queue settles as many as fit in the slice's budget, yields to
 * the event loop, and goes on in the next task, so a mass timeout never holds the loop longer
 * than one slice. When the settling ends with the next deadline a millisecond away (10,000 calls
 * made in a loop time out over as long as the loop took), what it brought after it (the cancels'
 * notifications) is held for that one's settle too (`Slicer.hold`, at most `MAX_HOLD_MS`): the
 * callers of a burst are released before the server's work on their notifications, which in the
 * same process (an in-memory transport) would otherwise delay the settles still due. A slot is
 * never woken before its deadline: only a later one. Node may fire a
 * timer up to ~1 ms before its delay by `performance.now()`; nothing is due then, and the queue
 * re-arms for the rest.
 * @internal
 */
export class DeadlineQueue implements SliceWork {
  /** The heap's entries are `#heap[0..#size)`; the array never shrinks (see `Wakeable.remove`). */
  readonly #heap: Wakeable[] = [];
  #size = 0;
  /** The slots scheduled in deadline order (see `WakeRun`); the heap holds the others. */
  readonly #run = new WakeRun();
  /** The queue's clock (monotonic, ms); the calls it holds read it too. */
  readonly clock: () => number;
  /** Where its timer comes from; the calls it holds use them too (verification). */
  readonly timers: Timers;
  #timer: unknown = undefined;
  /**
   * True while the timer is kept, unreferenced, with nothing queued (see `#park`): it holds no
   * process open, and the next call whose deadline is not earlier takes it back with `ref()`.
   */
  #parked = false;
  /** The deadline the timer is armed for, or +Infinity when no timer is armed. */
  #armedFor = Number.POSITIVE_INFINITY;
  #seq = 0;
  readonly #slicer: Slicer;
  /** True from a fire until every due slot is settled (over one or more slices). */
  #settling = false;
  /** The slots of the settling: those scheduled before the fire (`seq` up to this). */
  #batch = 0;

  /**
   * @param clock monotonic clock, ms (the same one the calls read).
   * @param timers where the one timer comes from (injectable for fake timers).
   * @param slicer where a fire's settling runs. Default: on the process's clock (`processClock`),
   *   the process's slicer, shared by every such queue and every abort fan-out; on another clock
   *   (injected, fake), a slicer of the queue's own that measures its slices on that clock and
   *   ends its holds on `timers`.
   */
  constructor(clock: () => number, timers: Timers, slicer?: Slicer) {
    this.clock = clock;
    this.timers = timers;
    this.#slicer =
      slicer ??
      (clock === processClock
        ? settleSlicer
        : new Slicer({
            clock,
            defer: yieldTask,
            budgetMs: SLICE_BUDGET_MS,
            later: (next, ms) => timers.setTimeout(next, ms),
            cancelLater: (handle) => timers.clearTimeout(handle),
          }));
  }

  /** Slots waiting for their deadline. */
  get size(): number {
    return this.#size + this.#run.size;
  }

  /** True while a timer is armed for a queued deadline (tests); a parked one (see `#park`) is not. */
  get armed(): boolean {
    return this.#timer !== undefined && !this.#parked;
  }

  /**
   * Queues `slot` for the deadline `at` (ms on the clock; finite). A slot already queued is
   * moved to the new deadline.
   */
  schedule(slot: Wakeable, at: number): void {
    if (Wakeable.queued(slot)) this.#take(slot);
    const seq = ++this.#seq;
    if (!Wakeable.append(this.#run, slot, at, seq)) Wakeable.push(this.#heap, this.#size++, slot, at, seq);
    if (at < this.#armedFor) this.#arm(at);
    else if (this.#parked) this.#unpark();
  }

  /** Takes `slot` off the queue (a no-op when it is not queued). The timer stops with the last slot. */
  remove(slot: Wakeable): void {
    if (!Wakeable.queued(slot)) return;
    this.#take(slot);
    if (this.#size === 0 && this.#run.size === 0) this.#park();
  }

  /** Takes a queued slot out of the run or the heap, wherever it is. */
  #take(slot: Wakeable): void {
    if (Wakeable.inRun(slot)) Wakeable.unlink(this.#run, slot);
    else Wakeable.remove(this.#heap, this.#size--, slot);
  }

  /** The slot due first: the run's first or the heap's top, whichever comes before. */
  #first(): Wakeable | undefined {
    const head = this.#run.head;
    const top = this.#size > 0 ? this.#heap[0] : undefined;
    if (top === undefined) return head;
    return head === undefined || Wakeable.before(top, head) ? top : head;
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#parked = false;
    this.#armedFor = Number.POSITIVE_INFINITY;
    if (this.#settling) return; // the settling under way re-arms when it ends
    this.#settling = true;
    this.#batch = this.#seq;
    this.#slicer.run(this);
  };

  /**
   * One item of the settling (see `Slicer`): takes the earliest slot off the queue and wakes it,
   * if the clock has reached its deadline and it was queued before the fire. Once no such slot is
   * left, ends the settling and re-arms the timer for the next deadline. @internal
   */
  step(): boolean {
    // One clock read a step: a slot woken here is followed by a step of its own for the next
    // (one step more at the end of the settling, one clock read fewer per call settled).
    const now = this.clock();
    const slot = this.#first();
    if (slot !== undefined && this.#due(slot, now)) {
      this.#take(slot);
      try {
        Wakeable.wake(slot);
      } catch {
        // A wake never throws (the call catches its own hooks); one must not stop the others.
      }
      if (this.#size > 0 || this.#run.size > 0) return true;
    }
    this.#settling = false;
    const next = this.#first();
    if (next === undefined) this.#park();
    else {
      const at = Wakeable.at(next);
      if (at < this.#armedFor) this.#arm(at);
      // The next deadline is a moment away: what the settling brought after it (the timer-fired
      // cancels' notifications) waits for that one's settle too (`Slicer.hold`).
      if (at - now <= HOLD_AHEAD_MS) this.#slicer.hold(at + HOLD_AHEAD_MS);
    }
    return false;
  }

  /** Due in this settling: queued before the fire, and its deadline reached. */
  #due(slot: Wakeable, now: number): boolean {
    return Wakeable.seq(slot) <= this.#batch && Wakeable.at(slot) <= now;
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) this.timers.clearTimeout(this.#timer);
    this.#parked = false;
    const delay = Math.min(Math.max(at - this.clock(), 0), MAX_TIMER_DELAY_MS);
    this.#armedFor = at;
    this.#timer = this.timers.setTimeout(this.#fire, delay);
  }

  #disarm(): void {
    if (this.#timer === undefined) return;
    this.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#parked = false;
    this.#armedFor = Number.POSITIVE_INFINITY;
  }

  /**
   * Nothing is queued any more. A Node `Timeout` is kept, unreferenced (it holds no process open
   * and is not an active resource), for the next call: sequential calls with the same timeout
   * then take it back with `ref()` (about 20 ns) instead of a `clearTimeout` and a `setTimeout`
   * each (about 600 ns, and a timer object and list per call). If it fires first it finds nothing
   * due and is gone. Any other timer (a browser's number, fake timers, injected ones) is cleared.
   */
  #park(): void {
    const timer = this.#timer as { unref?: unknown; constructor?: { name?: unknown } } | undefined;
    if (timer === undefined) return;
    if (typeof timer === "object" && timer !== null && typeof timer.unref === "function" && timer.constructor?.name === "Timeout") {
      (timer as { unref(): void }).unref();
      this.#parked = true;
      return;
    }
    this.#disarm();
  }

  #unpark(): void {
    (this.#timer as { ref(): void }).ref();
    this.#parked = false;
  }
}
