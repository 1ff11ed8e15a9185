import { OUTCOME_RANK, summarize } from "./record.js";
import type { CallOutcome, CancelDelivery, RunRecord } from "../types/record.js";
import { MAX_REASON_LENGTH } from "../options/defaults.js";

/** The late counts with one more message of this kind (a new object: records are never mutated). */
export function countLate(late: RunRecord["late"], kind: "result" | "error" | "progress"): RunRecord["late"] {
  return {
    results: late.results + (kind === "result" ? 1 : 0),
    errors: late.errors + (kind === "error" ? 1 : 0),
    progress: late.progress + (kind === "progress" ? 1 : 0),
  };
}

/** Where messages for a request that already settled go (rules 8, 11). */
export interface LateSink {
  /** A message for this request arrived after it settled and was dropped before the SDK saw it. */
  late(kind: "result" | "error" | "progress"): void;
}

/**
 * What stays of a call once it settled: its run record, updated by late messages and by
 * verification, and the callback that reports each revision. Tombstones hold only this (a few
 * hundred bytes), never the call with its options, hooks and result.
 */
export class SettledRecord implements LateSink {
  #record: RunRecord;
  readonly #emit: (record: RunRecord) => void;

  constructor(record: RunRecord, emit: (record: RunRecord) => void) {
    this.#record = record;
    this.#emit = emit;
    emit(record);
  }

  get record(): RunRecord {
    return this.#record;
  }

  /** Counts a late message; a late result or error of a cancelled call is `late-result-discarded`. */
  late(kind: "result" | "error" | "progress"): void {
    this.update({ late: countLate(this.#record.late, kind) }, kind === "progress" ? undefined : "late-result-discarded");
  }

  /**
   * What the adapter learned after the settle about the cancel's delivery: the record then names
   * only what went out, and the part that failed; a request that never reached the server is
   * `not-sent` (nothing to cancel).
   */
  delivery({ sent, failed }: CancelDelivery): void {
    const cancel = this.#record.cancel;
    if (cancel === null) return;
    const undelivered =
      failed === null ? null : { mechanism: failed.mechanism, error: failed.error.slice(0, MAX_REASON_LENGTH) };
    const next = { ...cancel, mechanism: sent, sentAt: sent === "none" ? null : cancel.sentAt, undelivered };
    this.update(sent === "none" && failed === null ? { cancel: next, outcome: "not-sent" } : { cancel: next });
  }

  /** Replaces the record with an updated copy (a cancelled call's outcome only ever rises) and reports it. */
  update(changes: Partial<RunRecord>, outcome?: CallOutcome): RunRecord {
    const current = this.#record;
    const next: RunRecord = { ...current, ...changes, revision: current.revision + 1 };
    if (
      outcome !== undefined &&
      current.status === "cancelled" &&
      (OUTCOME_RANK[outcome] ?? -1) > (OUTCOME_RANK[current.outcome] ?? Number.POSITIVE_INFINITY)
    ) {
      next.outcome = outcome;
    }
    next.summary = summarize(next);
    this.#record = next;
    this.#emit(next);
    return next;
  }
}
