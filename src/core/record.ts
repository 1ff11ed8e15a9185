/** What ended a cancelled call. */
export type CancelTrigger = "timeout" | "max-total-timeout" | "aborted" | "connection-closed";

/**
 * How the cancel went on the wire: `notification` (stdio, rule 6), `stream-close` (Streamable
 * HTTP 2026-07-28, rule 6), `notification+stream-close` (2025-era Streamable HTTP, rule 40),
 * `none` (nothing was sent: the request never left, or the connection was already gone).
 */
export type CancelMechanism = "notification" | "stream-close" | "notification+stream-close" | "none";

/** How a call ended. A cancelled call is never reported as succeeded or failed. */
export type CallStatus = "succeeded" | "failed" | "cancelled";

/**
 * What is known of the work behind the call. `completed` and `error` belong to settled calls;
 * a cancelled call starts `unverified` (or `not-sent` when the request never left) and only a
 * late result (`late-result-discarded`) or a verification changes it.
 */
export type CallOutcome =
  | "completed"
  | "error"
  | "not-sent"
  | "unverified"
  | "late-result-discarded"
  | "verified-applied"
  | "verified-not-applied"
  | "verify-failed";

/**
 * One call's run record: plain JSON, safe to log (arguments and results are not copied in).
 * Final when the call settles; `revision` goes up each time a late message or a verification
 * updates it.
 */
export interface RunRecord {
  /** The JSON-RPC request id, or `null` when none was assigned (the call ended before the send). A request that got an id but provably never reached the wire keeps it, with outcome `not-sent`. */
  requestId: string | number | null;
  /** The JSON-RPC method, such as `"tools/call"`. */
  method: string;
  /** The tool, prompt or resource name (`params.name` or `params.uri`), or `null`. */
  name: string | null;
  /** Wall-clock time of the send, ISO 8601. */
  startedAt: string;
  /** Wall-clock time of the settle, ISO 8601. */
  settledAt: string;
  /** Monotonic time from the send to the settle, in ms, rounded to 0.1 ms. */
  elapsedMs: number;
  status: CallStatus;
  /** Present when `status` is `cancelled`. */
  cancel: {
    trigger: CancelTrigger;
    /** The reason sent in `notifications/cancelled` (or that would have been sent). */
    reason: string;
    mechanism: CancelMechanism;
    /** Wall-clock time the cancel was put on the wire, ISO 8601, or `null` if nothing was sent. */
    sentAt: string | null;
  } | null;
  outcome: CallOutcome;
  /** Present when `status` is `failed`: the error's JSON-RPC code (if any) and message (at most 1,000 characters). */
  error: { code: number | string | null; message: string } | null;
  /** Messages for this request that arrived after it settled and were discarded, by kind. */
  late: { results: number; errors: number; progress: number };
  /** Progress received while the call was live: how many, and the last one. */
  progress: { count: number; last: { progress: number; total?: number; message?: string } | null };
  /** Verification of a cancelled call's side effect, when a `verify` read was given. */
  verification: { startedAt: string; settledAt: string | null; error: string | null } | null;
  /** 0 when the call settles; +1 at each later update. */
  revision: number;
  /** One human line, such as `"cancelled (timeout), outcome unverified"`. */
  summary: string;
}

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
      const line = `cancelled (${record.cancel?.trigger ?? "aborted"}), ${OUTCOME_WORDS[record.outcome]}`;
      const lateResponses = (record.late?.results ?? 0) + (record.late?.errors ?? 0);
      return lateResponses > 0 && record.outcome !== "late-result-discarded" ? `${line}, late result discarded` : line;
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
