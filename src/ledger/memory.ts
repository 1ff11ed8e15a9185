import type { RunRecord } from "../core/record.js";

/**
 * The in-memory ledger: the latest record of each call, oldest first, at most `max` calls
 * (the oldest are dropped). An update replaces the call's record in place.
 */
export class MemoryLedger {
  readonly #records = new Map<number, RunRecord>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  put(key: number, record: RunRecord): void {
    if (this.#max === 0) return;
    this.#records.set(key, record);
    if (this.#records.size > this.#max) this.#records.delete(this.#records.keys().next().value!);
  }

  list(): RunRecord[] {
    return [...this.#records.values()];
  }
}
