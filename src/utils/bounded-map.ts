/**
 * A Map that keeps at most `capacity` keys, forgetting the oldest first. The insertion order
 * lives in a ring (grown up to `capacity`, then reused), so eviction is O(1): evicting through
 * `map.keys().next()` costs microseconds per call once many keys have been deleted, because V8
 * scans past the deleted slots. Setting a key that is present replaces its value in place.
 */
export class BoundedMap<K, V> {
  readonly #map = new Map<K, V>();
  readonly #ring: K[] = [];
  readonly #capacity: number;
  #next = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#map.size;
  }

  has(key: K): boolean {
    return this.#map.has(key);
  }

  get(key: K): V | undefined {
    return this.#map.get(key);
  }

  set(key: K, value: V): void {
    if (this.#map.has(key)) {
      this.#map.set(key, value);
      return;
    }
    if (this.#capacity === 0) return;
    if (this.#ring.length < this.#capacity) {
      this.#ring.push(key);
    } else {
      this.#map.delete(this.#ring[this.#next]!);
      this.#ring[this.#next] = key;
      this.#next = (this.#next + 1) % this.#capacity;
    }
    this.#map.set(key, value);
  }

  /**
   * Replaces the value of `key` with `value` when it is `expected` now (its place in the order is
   * kept); returns false, changing nothing, otherwise (and always for an `expected` of
   * undefined: an absent key is never added). One lookup less than `get` then `set`.
   */
  replace(key: K, expected: V, value: V): boolean {
    if (expected === undefined || this.#map.get(key) !== expected) return false;
    this.#map.set(key, value);
    return true;
  }

  /** The values, oldest key first. */
  values(): IterableIterator<V> {
    return this.#map.values();
  }
}
