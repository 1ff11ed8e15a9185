import type { CallOutcome, RunRecord } from "../types/record.js";

export type {
  CallOutcome,
  CallStatus,
  CancelDelivery,
  CancelMechanism,
  CancelTrigger,
  CancelUndelivered,
  RunRecord,
} from "../types/record.js";

/** The longest server text a summary quotes, in characters. */
const SUMMARY_TEXT_LENGTH = 200;

/** A server's text as part of one human line: whitespace folded, at most 200 characters. */
function oneLine(text: string): string {
  const folded = text.replace(/\s+/g, " ").trim();
  return folded.length > SUMMARY_TEXT_LENGTH ? `${folded.slice(0, SUMMARY_TEXT_LENGTH - 1)}…` : folded;
}

const OUTCOME_WORDS: Record<CallOutcome, string> = {
  completed: "",
  error: "",
  "not-sent": "never sent",
  unverified: "outcome unverified",
  "late-result-discarded": "late result discarded",
  "verified-applied": "verified applied",
  "verified-not-applied": "verified not applied",
  "verify-failed": "verification failed, outcome unverified",
};

/**
 * The record's one human line. When a verification settled the outcome and a late result also
 * arrived, both facts are said: `cancelled (timeout), verified applied, late result discarded`.
 */
export function summarize(record: Pick<RunRecord, "status" | "cancel" | "outcome" | "error"> & { late?: RunRecord["late"] }): string {
  switch (record.status) {
    case "succeeded":
      return "succeeded";
    case "failed":
      return record.error === null
        ? "failed"
        : `failed (${record.error.code === null ? "" : `${record.error.code} `}${oneLine(record.error.message)})`;
    case "cancelled": {
      let line = `cancelled (${record.cancel?.trigger ?? "aborted"}), ${OUTCOME_WORDS[record.outcome]}`;
      const lateResponses = (record.late?.results ?? 0) + (record.late?.errors ?? 0);
      if (lateResponses > 0 && record.outcome !== "late-result-discarded") line = `${line}, late result discarded`;
      if (record.cancel?.undelivered) line = `${line}, cancel ${record.cancel.undelivered.mechanism} not delivered`;
      return line;
    }
  }
}

/**
 * Ranks of a cancelled call's outcomes: an update only ever raises it. A verification is the
 * authority on the side effect; a late result is evidence the work ran; a failed verification
 * still beats knowing nothing.
 */
export const OUTCOME_RANK: Partial<Record<CallOutcome, number>> = {
  unverified: 0,
  "verify-failed": 1,
  "late-result-discarded": 2,
  "verified-applied": 3,
  "verified-not-applied": 3,
};
