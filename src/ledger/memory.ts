import type { RunRecord } from "../types/record.js";
import { BoundedIdMap } from "../utils/bounded-id-map.js";

/** Where a call's latest record is read: a settled call's `SettledRecord` (built when read), or a record as it is. */
export interface RecordSource {
  readonly record: RunRecord;
}

/**
 * The in-memory ledger: the latest record of each call, oldest first, at most `max` calls
 * (the oldest are dropped). It holds each call's record source (a settled call's compact facts),
 * and builds the records when they are listed; an update replaces the call's record in place.
 */
export class MemoryLedger {
  readonly #records: BoundedIdMap<number, RecordSource>;

  constructor(max: number) {
    this.#records = new BoundedIdMap(max);
  }

  put(key: number, source: RecordSource): void {
    this.#records.set(key, source);
  }

  /** The record source of call `key`, while the ledger holds it. */
  get(key: number): RecordSource | undefined {
    return this.#records.get(key);
  }

  list(): RunRecord[] {
    const records: RunRecord[] = [];
    for (const source of this.#records.values()) records.push(source.record);
    return records;
  }
}
