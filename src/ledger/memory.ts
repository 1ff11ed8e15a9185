import type { RunRecord } from "../types/record.js";
import { BoundedMap } from "../utils/bounded-map.js";

/**
 * The in-memory ledger: the latest record of each call, oldest first, at most `max` calls
 * (the oldest are dropped). An update replaces the call's record in place.
 */
export class MemoryLedger {
  readonly #records: BoundedMap<number, RunRecord>;

  constructor(max: number) {
    this.#records = new BoundedMap(max);
  }

  put(key: number, record: RunRecord): void {
    this.#records.set(key, record);
  }

  list(): RunRecord[] {
    return [...this.#records.values()];
  }
}
