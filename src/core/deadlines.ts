import { MAX_TIMER_DELAY_MS } from "../options/defaults.js";
import type { Timers } from "../types/options.js";

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
 * When the timer fires, every slot whose deadline the clock has reached is taken off the heap
 * first, then each is woken in deadline order; a slot scheduled again while waking (an idle
 * deadline moved by progress) goes back into the heap and is judged at the next fire. Node may
 * fire a timer up to ~1 ms before its delay by `performance.now()`; nothing is due then, and
 * the queue re-arms for the rest.
 * @internal
 */
export class DeadlineQueue {
  readonly #heap: DeadlineSlot[] = [];
  readonly #clock: () => number;
  readonly #timers: Timers;
  #timer: unknown = undefined;
  /** The deadline the timer is armed for, or +Infinity when no timer is armed. */
  #armedFor = Number.POSITIVE_INFINITY;
  #seq = 0;

  /**
   * @param clock monotonic clock, ms (the same one the calls read).
   * @param timers where the one timer comes from (injectable for fake timers).
   */
  constructor(clock: () => number, timers: Timers) {
    this.#clock = clock;
    this.#timers = timers;
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
    const now = this.#clock();
    const due: DeadlineSlot[] = [];
    while (this.#heap.length > 0 && this.#heap[0]!.at <= now) {
      const slot = this.#heap[0]!;
      this.#removeAt(0);
      due.push(slot);
    }
    for (const slot of due) {
      try {
        slot.wake();
      } catch {
        // A wake never throws (the call catches its own hooks); one must not stop the others.
      }
    }
    const next = this.#heap[0];
    if (next !== undefined && next.at < this.#armedFor) this.#arm(next.at);
  };

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
