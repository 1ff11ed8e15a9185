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
  /** Its place in the queue's heap, `IN_RUN` while it is in the queue's run, or -1 when it is not queued. */
  #index = -1;
  /** Its neighbours in the queue's run (see `WakeRun`), while it is in it. */
  #prev: Wakeable | undefined = undefined;
  #next: Wakeable | undefined = undefined;

  /**
   * The deadline it was queued for was reached, or a signal it is subscribed to aborted. A hint,
   * never a verdict: the owner checks its own deadlines and signals. Must not throw.
   */
  protected abstract wake(): void;

  /** Wakes `w` (see `wake`). */
  static wake(w: Wakeable): void {
    w.wake();
  }

  /** True while `w` is in a queue (its heap or its run). */
  static queued(w: Wakeable): boolean {
    return w.#index !== -1;
  }

  /** True while `w` is in a queue's run (not its heap). */
  static inRun(w: Wakeable): boolean {
    return w.#index === IN_RUN;
  }

  /**
   * Adds `w` at the end of `run` for the deadline `at`, as number `seq`, when that keeps the run
   * in order: `at` is not before the last one's (whose `seq` is lower). False, and nothing done,
   * otherwise (the heap takes it). O(1).
   */
  static append(run: WakeRun, w: Wakeable, at: number, seq: number): boolean {
    const tail = run.tail;
    if (tail !== undefined && at < tail.#at) return false;
    w.#at = at;
    w.#seq = seq;
    w.#index = IN_RUN;
    w.#prev = tail;
    w.#next = undefined;
    if (tail === undefined) run.head = w;
    else tail.#next = w;
    run.tail = w;
    run.size++;
    return true;
  }

  /** Takes `w` out of `run` (it must be in it). O(1). */
  static unlink(run: WakeRun, w: Wakeable): void {
    const prev = w.#prev;
    const next = w.#next;
    if (prev === undefined) run.head = next;
    else prev.#next = next;
    if (next === undefined) run.tail = prev;
    else next.#prev = prev;
    w.#prev = undefined;
    w.#next = undefined;
    w.#index = -1;
    run.size--;
  }

  /** True when `a` is due before `b`: an earlier deadline, or the same one scheduled earlier. */
  static before(a: Wakeable, b: Wakeable): boolean {
    return Wakeable.#before(a, b);
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

/** `Wakeable`'s place while it is in a run, not a heap. */
const IN_RUN = -2;

/**
 * The slots of a deadline queue in the order they were scheduled, while that is also the order of
 * their deadlines: a doubly linked list through the slots themselves (no entry objects), O(1) to
 * add at the end and to take out anywhere. Calls that share one timeout (the common case: the
 * client's default, or one `timeoutMs` per tool) are scheduled with deadlines that only grow, so
 * they all go here; a heap of 1,000 pending calls took about 0.5 µs a call to keep in order
 * (10 levels to sift through, each touching another call). A slot whose deadline comes before the
 * last one's goes to the queue's heap instead.
 * @internal
 */
export class WakeRun {
  head: Wakeable | undefined = undefined;
  tail: Wakeable | undefined = undefined;
  size = 0;
}

/** What fills a heap slot past its entries (so the array holds no call it no longer queues). */
class Empty extends Wakeable {
  protected override wake(): void {}
}
const EMPTY: Wakeable = new Empty();
