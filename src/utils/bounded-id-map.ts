/** The most slots of the direct-mapped table (2^16: 512 KB of arrays at most, whatever the capacity). */
const MAX_SLOTS = 1 << 16;
/** The table's first size. */
const FIRST_SLOTS = 64;

/**
 * A map that keeps at most `capacity` keys, forgetting the oldest first, as {@link BoundedMap}
 * does (the same answers for the same calls), for keys that are mostly small non-negative
 * integers: the request ids the SDKs and the proxy number 0, 1, 2, ... A hash map of 10,000 such
 * keys (the wire's tombstones, `maxTombstones`) costs cache misses on every lookup in a busy
 * process, about 1.5 µs a call in the proxy at 1,000 in flight; here an integer key sits in a
 * direct-mapped table at its low bits (neighbouring ids in neighbouring slots), which doubles when
 * two live keys meet in one slot, up to the capacity rounded up to a power of two (at most 2^16
 * slots). Other keys (strings, negative or fractional numbers, numbers past 2^31), and an integer
 * whose slot is taken once the table is full size, live in a Map beside it.
 */
export class BoundedIdMap<K extends string | number, V> {
  readonly #capacity: number;
  /** Every key in insertion order (a ring once `capacity` is reached: `#next` is the oldest). */
  readonly #order: K[] = [];
  #next = 0;
  /** The direct-mapped table: a key and its value per slot (`undefined`: an empty slot). */
  #keys: (number | undefined)[] = [];
  #values: (V | undefined)[] = [];
  #mask = -1;
  readonly #maxSlots: number;
  /** The keys that are not in the table. */
  #other: Map<K, V> | undefined;

  constructor(capacity: number) {
    this.#capacity = capacity;
    let slots = FIRST_SLOTS;
    while (slots < capacity && slots < MAX_SLOTS) slots *= 2;
    this.#maxSlots = slots;
  }

  get size(): number {
    return this.#order.length;
  }

  /** How many of the keys live in the Map beside the table (tests, benchmarks). @internal */
  get besideTable(): number {
    return this.#other?.size ?? 0;
  }

  has(key: K): boolean {
    const slot = this.#slotOf(key);
    return slot >= 0 && this.#keys[slot] === key ? true : (this.#other?.has(key) ?? false);
  }

  get(key: K): V | undefined {
    const slot = this.#slotOf(key);
    return slot >= 0 && this.#keys[slot] === key ? this.#values[slot] : this.#other?.get(key);
  }

  /** Sets the value of `key`: in place when it is present (its place in the order kept), else as the newest key. */
  set(key: K, value: V): void {
    const slot = this.#slotOf(key);
    if (slot >= 0 && this.#keys[slot] === key) {
      this.#values[slot] = value;
      return;
    }
    const other = this.#other;
    if (other?.has(key) === true) {
      other.set(key, value);
      return;
    }
    if (this.#capacity === 0) return;
    const order = this.#order;
    if (order.length < this.#capacity) {
      order.push(key);
    } else {
      this.#remove(order[this.#next]!);
      order[this.#next] = key;
      this.#next = (this.#next + 1) % this.#capacity;
    }
    this.#place(key, value);
  }

  /**
   * Replaces the value of `key` with `value` when it is `expected` now (its place in the order is
   * kept); returns false, changing nothing, otherwise (and always for an `expected` of
   * undefined: an absent key is never added). One lookup less than `get` then `set`.
   */
  replace(key: K, expected: V, value: V): boolean {
    if (expected === undefined) return false;
    const slot = this.#slotOf(key);
    if (slot >= 0 && this.#keys[slot] === key) {
      if (this.#values[slot] !== expected) return false;
      this.#values[slot] = value;
      return true;
    }
    const other = this.#other;
    if (other === undefined || other.get(key) !== expected) return false;
    other.set(key, value);
    return true;
  }

  /** The values, oldest key first. */
  *values(): IterableIterator<V> {
    const order = this.#order;
    const start = order.length < this.#capacity ? 0 : this.#next;
    for (let i = 0; i < order.length; i++) yield this.get(order[(start + i) % order.length]!) as V;
  }

  /** The key's slot in the table as it is now; -1 for a key that never goes in it. */
  #slotOf(key: K): number {
    return typeof key === "number" && (key | 0) === key && key >= 0 ? key & this.#mask : -1;
  }

  #place(key: K, value: V): void {
    if (typeof key === "number" && (key | 0) === key && key >= 0) {
      if (this.#mask === -1) this.#resize(FIRST_SLOTS);
      // Two live keys in one slot: the table doubles (keys apart at the old size stay apart).
      while (this.#keys[key & this.#mask] !== undefined && this.#keys.length < this.#maxSlots) this.#resize(this.#keys.length * 2);
      const slot = key & this.#mask;
      if (this.#keys[slot] === undefined) {
        this.#keys[slot] = key;
        this.#values[slot] = value;
        return;
      }
    }
    (this.#other ??= new Map()).set(key, value);
  }

  #remove(key: K): void {
    const slot = this.#slotOf(key);
    if (slot >= 0 && this.#keys[slot] === key) {
      this.#keys[slot] = undefined;
      this.#values[slot] = undefined;
      return;
    }
    this.#other?.delete(key);
  }

  #resize(slots: number): void {
    const keys = this.#keys;
    const values = this.#values;
    this.#keys = new Array<number | undefined>(slots).fill(undefined);
    this.#values = new Array<V | undefined>(slots).fill(undefined);
    this.#mask = slots - 1;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (key === undefined) continue;
      this.#keys[key & this.#mask] = key;
      this.#values[key & this.#mask] = values[i];
    }
  }
}
