import { MAX_TIMER_DELAY_MS } from "../options/defaults.js";
import type { Timers } from "../types/options.js";
import { SLICE_BUDGET_MS, Slicer, processClock, settleSlicer, yieldTask } from "../utils/slices.js";
import type { SliceWork } from "../utils/slices.js";

/**
 * One entry of a {@link DeadlineQueue}: a deadline and the callback to run once it is reached.
 * Each call owns one slot and reuses it for every deadline it schedules; `index` is its place
 * in the queue's heap, or -1 when it is not queued.
 * @internal
 */
export class DeadlineSlot {
  /** The deadline, on the queue's clock (ms). */
  at = 0;
  /** Insertion order: equal deadlines fire in the order they were scheduled. */
  seq = 0;
  index = -1;

  /**
   * @param wake called (synchronously, from the queue's timer) once the queue's clock reads
   *   `at` or later. The owner re-checks its own deadlines against the clock: a wake is a hint,
   *   never a verdict, so a timer that fires early or late cannot settle the wrong call.
   */
  constructor(readonly wake: () => void) {}
}

/**
 * The deadlines of many calls behind one timer: a binary min-heap ordered by deadline, then by
 * insertion order, with one `setTimeout` armed for the earliest deadline. Scheduling a
 * deadline later than the one the timer is armed for touches no timer; removing a slot is
 * O(log n) and clears the timer only when the queue becomes empty, so no timer outlives the
 * last pending call. A client's calls share one queue (one timer for any number of pending
 * calls, where there was one per call); a call made on its own gets a private queue.
 *
 * When the timer fires, the slots whose deadline the clock has reached are taken off the heap one
 * at a time, earliest first, and each is woken as it is taken; a slot scheduled again while the
 * queue settles (an idle deadline moved by progress, a new call) is judged at the next fire. The
 * settling runs in slices (`Slicer`, shared by the process's queues and abort fan-outs): when
 * 10,000 calls are due at once, the queue settles as many as fit in the slice's budget, yields to
 * the event loop, and goes on in the next task, so a mass timeout never holds the loop longer
 * than one slice. A slot is never woken before its deadline: only a later one. Node may fire a
 * timer up to ~1 ms before its delay by `performance.now()`; nothing is due then, and the queue
 * re-arms for the rest.
 * @internal
 */
export class DeadlineQueue implements SliceWork {
  readonly #heap: DeadlineSlot[] = [];
  readonly #clock: () => number;
  readonly #timers: Timers;
  #timer: unknown = undefined;
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
   *   (injected, fake), a slicer of the queue's own that measures its slices on that clock.
   */
  constructor(clock: () => number, timers: Timers, slicer?: Slicer) {
    this.#clock = clock;
    this.#timers = timers;
    this.#slicer = slicer ?? (clock === processClock ? settleSlicer : new Slicer({ clock, defer: yieldTask, budgetMs: SLICE_BUDGET_MS }));
  }

  /** Slots waiting for their deadline. */
  get size(): number {
    return this.#heap.length;
  }

  /** True while a timer is armed (tests). */
  get armed(): boolean {
    return this.#timer !== undefined;
  }

  /**
   * Queues `slot` for the deadline `at` (ms on the clock; finite). A slot already queued is
   * moved to the new deadline.
   */
  schedule(slot: DeadlineSlot, at: number): void {
    if (slot.index >= 0) this.#removeAt(slot.index);
    slot.at = at;
    slot.seq = ++this.#seq;
    slot.index = this.#heap.length;
    this.#heap.push(slot);
    this.#up(slot.index);
    if (at < this.#armedFor) this.#arm(at);
  }

  /** Takes `slot` off the queue (a no-op when it is not queued). The timer stops with the last slot. */
  remove(slot: DeadlineSlot): void {
    if (slot.index < 0) return;
    this.#removeAt(slot.index);
    if (this.#heap.length === 0) this.#disarm();
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    if (this.#settling) return; // the settling under way re-arms when it ends
    this.#settling = true;
    this.#batch = this.#seq;
    this.#slicer.run(this);
  };

  /**
   * One item of the settling (see `Slicer`): takes the earliest slot off the heap and wakes it,
   * if the clock has reached its deadline and it was queued before the fire. Once no such slot is
   * left, ends the settling and re-arms the timer for the next deadline. @internal
   */
  step(): boolean {
    const slot = this.#heap[0];
    if (slot !== undefined && this.#due(slot)) {
      this.#removeAt(0);
      try {
        slot.wake();
      } catch {
        // A wake never throws (the call catches its own hooks); one must not stop the others.
      }
    }
    const next = this.#heap[0];
    if (next !== undefined && this.#due(next)) return true;
    this.#settling = false;
    if (next === undefined) this.#disarm();
    else if (next.at < this.#armedFor) this.#arm(next.at);
    return false;
  }

  /** Due in this settling: queued before the fire, and its deadline reached. */
  #due(slot: DeadlineSlot): boolean {
    return slot.seq <= this.#batch && slot.at <= this.#clock();
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    const delay = Math.min(Math.max(at - this.#clock(), 0), MAX_TIMER_DELAY_MS);
    this.#armedFor = at;
    this.#timer = this.#timers.setTimeout(this.#fire, delay);
  }

  #disarm(): void {
    if (this.#timer === undefined) return;
    this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
  }

  #removeAt(index: number): void {
    const heap = this.#heap;
    const slot = heap[index]!;
    const last = heap.pop()!;
    slot.index = -1;
    if (last === slot) return;
    heap[index] = last;
    last.index = index;
    this.#down(index);
    this.#up(last.index);
  }

  #up(index: number): void {
    const heap = this.#heap;
    const slot = heap[index]!;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex]!;
      if (!before(slot, parent)) break;
      heap[index] = parent;
      parent.index = index;
      index = parentIndex;
    }
    heap[index] = slot;
    slot.index = index;
  }

  #down(index: number): void {
    const heap = this.#heap;
    const length = heap.length;
    const slot = heap[index]!;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && before(heap[right]!, heap[left]!) ? right : left;
      const smallest = heap[child]!;
      if (!before(smallest, slot)) break;
      heap[index] = smallest;
      smallest.index = index;
      index = child;
    }
    heap[index] = slot;
    slot.index = index;
  }
}

function before(a: DeadlineSlot, b: DeadlineSlot): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
