// The run record's shapes: plain types at the bottom layer, so the errors, the options, the
// core, the wire and the ledger can all name them without importing upwards.

/** What ended a cancelled call. */
export type CancelTrigger = "timeout" | "max-total-timeout" | "aborted" | "connection-closed";

/**
 * How the cancel went on the wire: `notification` (stdio, rule 6), `stream-close` (Streamable
 * HTTP 2026-07-28, rule 6), `notification+stream-close` (2025-era Streamable HTTP, rule 40),
 * `tasks/cancel` (a task-augmented call whose task exists: the request `tasks/cancel`, never the
 * notification, rules 2, 35, 36), `none` (nothing was sent: the request never left, or the
 * connection was already gone).
 */
export type CancelMechanism = "notification" | "stream-close" | "notification+stream-close" | "tasks/cancel" | "none";

/**
 * The part of a cancel that did not reach the server (see `RunRecord.cancel.undelivered`): a
 * `notifications/cancelled` that did not get through or was not sent, a 2026-07-28 stream close
 * that was not done because the response came first (rule 7: the only way a stream close is
 * undelivered; once done, the socket is gone either way), or a `tasks/cancel` that could not be
 * sent (no `CreateTaskResult` came within `watchMs`). `mechanism` names the transport's own
 * cancel: `stream-close` only on 2026-07-28 Streamable HTTP, where no notification is ever sent.
 */
export interface CancelUndelivered {
  mechanism: "notification" | "stream-close" | "tasks/cancel";
  error: string;
  /**
   * `true` when the notification's POST body was written (the server, or something between, may
   * have it): what did not come is its answer, so whether it reached the server is unknown.
   * Absent when it never left.
   */
  written?: true;
}

/**
 * What an adapter learned after `cancel` returned: `sent` is what went out in the end; `failed`
 * the part that did not reach the server, or `null` with `sent: "none"` when the request itself
 * never reached the server (nothing to cancel: the outcome becomes `not-sent`).
 */
export interface CancelDelivery {
  sent: CancelMechanism;
  failed: CancelUndelivered | null;
  /**
   * When what was `sent` went out (`Date.now()`, ms), when that was later than the settle: the
   * record's `cancel.sentAt` becomes this time. `null`: it has not gone out yet, it waits (a stdio
   * line behind a full pipe); `sentAt` is `null` until a later report gives the time. Absent:
   * `sentAt` stays as it was, or, if it was `null` (not out yet) and `sent` names what went, the
   * time of this report.
   */
  sentWall?: number | null | undefined;
}

/** One `verify` read: when it started, in ms after the cancel (0.1 ms), and what it found (`failed`: threw, timed out, or answered something else). */
export interface VerifyRead {
  atMs: number;
  found: "applied" | "not-applied" | "failed";
  /** The failure of a `failed` read (at most 1,000 characters), else `null`. */
  error: string | null;
}

/**
 * How a call ended. A cancelled call is never reported as succeeded or failed. `task-created`:
 * the server answered with a `CreateTaskResult` to a call that did not ask the library to
 * follow the task (no `task` option): nothing has finished, so it is not `succeeded`.
 */
export type CallStatus = "succeeded" | "failed" | "cancelled" | "task-created";

/** A task's status (2025-11-25 core tasks and the 2026-07-28 extension share them, rules 35, 36). */
export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/** The task behind a task-augmented call, as last seen. */
export interface TaskInfo {
  taskId: string;
  /** The task's last status seen (from the `CreateTaskResult`, `tasks/get` or `tasks/cancel`). */
  status: TaskStatus;
  /** Which tasks revision: `2025-11-25` core tasks or the `2026-07-28` extension. */
  revision: "2025-11-25" | "2026-07-28";
  /**
   * `true` when the `CreateTaskResult` arrived after the call was cancelled (the task id was not
   * known at the cancel): the library then sent `tasks/cancel` for it at once, and `outcome`
   * says what became of the task. Absent otherwise.
   */
  createdAfterCancel?: true;
}

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
  | "verify-failed"
  | "task-cancelled"
  | "task-completed-anyway"
  | "task-failed";

/** The outcomes a cancelled call can have (see {@link CallOutcome}). */
export type CancelledOutcome = Exclude<CallOutcome, "completed" | "error">;

/** A cancelled call's cancel: what ended it and how the cancel went out (see {@link CancelledRunRecord}). */
export interface CancelInfo {
  trigger: CancelTrigger;
  /** The reason sent in `notifications/cancelled` (or that would have been sent). */
  reason: string;
  /**
   * What went out. Set when the call settles; revised (with `revision` + 1) if part of the
   * cancel is later known not to have reached the server: then it names only what did go out
   * (`stream-close` when the 2025-era notification failed, `none` when nothing did).
   */
  mechanism: CancelMechanism;
  /**
   * Wall-clock time the cancel was put on the wire, ISO 8601, or `null` if nothing was sent (or it
   * has not gone out yet: a stdio line behind a full pipe, a 2025-era notification waiting for its
   * request to reach the server; a later revision gives the time). A timer-fired cancel goes out
   * after its call settled (a stdio line in a later phase of the same turn, a mass timeout's behind
   * the settles): the first record gives the settle's time, and a revision the time it left when
   * that was 1 ms or more later.
   */
  sentAt: string | null;
  /**
   * `null`, or the part of the cancel that did not reach the server: `mechanism`
   * (`notification`: a 2025-era Streamable HTTP notification POST that failed, after one retry
   * on a connection-level failure, that the server refused with an HTTP error, or that was not
   * sent because the response arrived first, on any transport: then it names the notification
   * even where the transport's cancel is a stream close, since neither went; `tasks/cancel`: a
   * task's cancel that could not be sent) and `error` (the failure, at most 1,000 characters).
   * `mechanism` above then says what did go out (`tasks/cancel` for a task created anyway).
   */
  undelivered: CancelUndelivered | null;
}

/** A failed call's error (see {@link FailedRunRecord}). */
export interface CallErrorInfo {
  /** The JSON-RPC code, or the SDK's, or `null`. */
  code: number | string | null;
  /** At most 1,000 characters. */
  message: string;
  /** The HTTP error status the server answered the request's Streamable HTTP POST with (the request reached it; `message` names the status too). */
  httpStatus?: number;
}

/** The fields every run record has, whatever its `status`. */
export interface RunRecordBase {
  /**
   * The call's own id: unique in the process (across every connection and client), the same in
   * every revision of the record. Request ids are not: each connection counts from its own start.
   */
  callId: number;
  /** The connection (one `withCancellation` wrapper) the call went through: unique in the process. */
  connectionId: number;
  /** The MCP session id (Streamable HTTP `Mcp-Session-Id`) when the call settled, or `null` (stdio, stateless servers). */
  sessionId: string | null;
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
  /** Messages for this request that arrived after it settled and were discarded, by kind. */
  late: { results: number; errors: number; progress: number };
  /** Progress received while the call was live: how many, and the last one. */
  progress: { count: number; last: { progress: number; total?: number; message?: string } | null };
  /**
   * Verification of a cancelled call's side effect, when a `verify` read was given: when it
   * started and ended, the error of its last read if that failed, each read (`reads`), and one
   * line for people (`summary`, such as `"not applied as of 0.4 s (2 reads from 0.0 s); applied at
   * 0.8 s"` or `"not applied as of 0.0 s"`).
   */
  verification: {
    startedAt: string;
    settledAt: string | null;
    error: string | null;
    /** Every read, in order: when it started (ms after the cancel) and what it found. */
    reads: VerifyRead[];
    /** The reads in one line, times in seconds after the cancel. */
    summary: string;
  } | null;
  /** 0 when the call settles; +1 at each later update. */
  revision: number;
  /** One human line, such as `"cancelled (timeout), outcome unverified"`. */
  summary: string;
  /** Task-augmented calls only: the task's id, its last status, and the tasks revision. */
  task?: TaskInfo;
}

/** A call answered with a result (`outcome` `completed`). */
export interface SucceededRunRecord extends RunRecordBase {
  status: "succeeded";
  cancel: null;
  outcome: "completed";
  error: null;
}

/** A task-augmented call answered with a `CreateTaskResult` it did not ask the library to follow (no `task` option): nothing has finished yet. */
export interface TaskCreatedRunRecord extends RunRecordBase {
  status: "task-created";
  cancel: null;
  outcome: "completed";
  error: null;
  task: TaskInfo;
}

/** A call answered with an error, or that failed before or while it was sent (`outcome` `not-sent` when the request never left). */
export interface FailedRunRecord extends RunRecordBase {
  status: "failed";
  cancel: null;
  outcome: "error" | "not-sent";
  /** The error's code (the JSON-RPC code, or the SDK's), its message, and `httpStatus` when the server answered the request's POST with an HTTP error status. */
  error: CallErrorInfo;
}

/** A cancelled call (a timeout, a maximum total timeout, an abort, a closed connection): never reported as succeeded or failed. */
export interface CancelledRunRecord extends RunRecordBase {
  status: "cancelled";
  cancel: CancelInfo;
  /** What is known of the work: `unverified` (or `not-sent`) at the settle; a late result, a verification or the task's end raise it. */
  outcome: CancelledOutcome;
  error: null;
}

/**
 * One call's run record: plain JSON, safe to log (arguments and results are not copied in).
 * Final when the call settles; `revision` goes up each time a late message or a verification
 * updates it. A union on `status`: narrowing on it types `cancel`, `error` and `outcome`
 * (`record.status === "cancelled"` gives a `cancel` that is never `null`).
 */
export type RunRecord = SucceededRunRecord | TaskCreatedRunRecord | FailedRunRecord | CancelledRunRecord;
