// What the deadline queue (core/deadlines.ts) and the abort fan-out (abort-link.ts) wake: a
// pending call, without an entry object or a closure of its own per call. Its place in the
// deadline queue is kept on it (three fields), and it is woken through a method.

/**
 * Something the library wakes when its deadline is reached or its signal aborts: a pending call
 * (`CancellableCall`), or a `DeadlineSlot` around a callback. The deadline queue's bookkeeping
 * (deadline, order, place in the heap) lives on it, in private fields only the queue's heap
 * operations below touch: a pending call is its own queue entry.
 * @internal
 */
export abstract class Wakeable {
  /**
   * The deadline it is queued for (ms on the queue's clock), exact: rounded up to whole ms it would
   * be a small integer (16 bytes less per pending call) but wake calls 0.5 ms later on average
   * (the maximum total timeout's median lateness went from 1.2 to 1.7 ms).
   */
  #at = 0;
  /** Insertion order: equal deadlines wake in the order they were scheduled. */
  #seq = 0;
  /** Its place in the queue's heap, or -1 when it is not queued. */
  #index = -1;

  /**
   * The deadline it was queued for was reached, or a signal it is subscribed to aborted. A hint,
   * never a verdict: the owner checks its own deadlines and signals. Must not throw.
   */
  protected abstract wake(): void;

  /** Wakes `w` (see `wake`). */
  static wake(w: Wakeable): void {
    w.wake();
  }

  /** True while `w` is in a queue's heap. */
  static queued(w: Wakeable): boolean {
    return w.#index >= 0;
  }

  /** `w`'s deadline in its queue (ms). */
  static at(w: Wakeable): number {
    return w.#at;
  }

  /** `w`'s insertion order in its queue. */
  static seq(w: Wakeable): number {
    return w.#seq;
  }

  /**
   * Adds `w` to the heap `heap[0..size)` (a binary min-heap by deadline, then order) for the
   * deadline `at`, as number `seq`. The heap then has `size + 1` entries.
   */
  static push(heap: Wakeable[], size: number, w: Wakeable, at: number, seq: number): void {
    w.#at = at;
    w.#seq = seq;
    w.#index = size;
    heap[size] = w;
    Wakeable.#up(heap, size);
  }

  /**
   * Takes `w` off the heap `heap[0..size)` (it must be in it). The heap then has `size - 1`
   * entries; the slot past them is cleared, and the array keeps its length (a heap that empties
   * and fills again, call after call, allocates nothing).
   */
  static remove(heap: Wakeable[], size: number, w: Wakeable): void {
    const index = w.#index;
    const last = heap[size - 1]!;
    heap[size - 1] = EMPTY;
    w.#index = -1;
    if (last === w) return;
    heap[index] = last;
    last.#index = index;
    Wakeable.#down(heap, size - 1, index);
    Wakeable.#up(heap, last.#index);
  }

  static #up(heap: Wakeable[], index: number): void {
    const w = heap[index]!;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex]!;
      if (!Wakeable.#before(w, parent)) break;
      heap[index] = parent;
      parent.#index = index;
      index = parentIndex;
    }
    heap[index] = w;
    w.#index = index;
  }

  static #down(heap: Wakeable[], length: number, index: number): void {
    const w = heap[index]!;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && Wakeable.#before(heap[right]!, heap[left]!) ? right : left;
      const smallest = heap[child]!;
      if (!Wakeable.#before(smallest, w)) break;
      heap[index] = smallest;
      smallest.#index = index;
      index = child;
    }
    heap[index] = w;
    w.#index = index;
  }

  static #before(a: Wakeable, b: Wakeable): boolean {
    return a.#at < b.#at || (a.#at === b.#at && a.#seq < b.#seq);
  }
}

/** What fills a heap slot past its entries (so the array holds no call it no longer queues). */
class Empty extends Wakeable {
  protected override wake(): void {}
}
const EMPTY: Wakeable = new Empty();
