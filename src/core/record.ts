import type { CallOutcome, CancelledOutcome, RunRecord, TaskInfo, TaskStatus } from "../types/record.js";

export type {
  CallOutcome,
  CallStatus,
  CancelDelivery,
  CancelMechanism,
  CancelTrigger,
  CancelUndelivered,
  RunRecord,
  TaskInfo,
  TaskStatus,
} from "../types/record.js";

/** True for the terminal task statuses: `completed`, `failed`, `cancelled` (immutable, rules 35, 36). */
export function isTerminalTaskStatus(status: string): boolean {
  return status === "completed" || status === "failed" || status === "cancelled";
}

/**
 * The task a result creates, or `null`: a 2025-11-25 `CreateTaskResult` (`{ task: Task }`) or a
 * 2026-07-28 one (`resultType: "task"` with the task's fields inline).
 */
export function createdTask(result: unknown): TaskInfo | null {
  if (typeof result !== "object" || result === null) return null;
  const value = result as { task?: unknown; resultType?: unknown; taskId?: unknown; status?: unknown };
  if (value.resultType === "task" && typeof value.taskId === "string" && value.taskId !== "") {
    return { taskId: value.taskId, status: taskStatus(value.status), revision: "2026-07-28" };
  }
  if (typeof value.task === "object" && value.task !== null) {
    const task = value.task as { taskId?: unknown; status?: unknown };
    if (typeof task.taskId === "string" && task.taskId !== "")
      return { taskId: task.taskId, status: taskStatus(task.status), revision: "2025-11-25" };
  }
  return null;
}

/** What a cancelled call's record says of a task last seen in this status (`undefined`: not terminal, or no task). */
export function terminalTaskOutcome(status: TaskStatus | undefined): CancelledOutcome | undefined {
  return status === "cancelled"
    ? "task-cancelled"
    : status === "completed"
      ? "task-completed-anyway"
      : status === "failed"
        ? "task-failed"
        : undefined;
}

/** The five task statuses (rules 35, 36), in the words an error names them. */
export const TASK_STATUSES = "working, input_required, completed, failed, cancelled";

/** True for one of the five task statuses (rules 35, 36). */
export function isTaskStatus(status: unknown): status is TaskStatus {
  return status === "working" || status === "input_required" || isTerminalTaskStatus(String(status));
}

/**
 * What is wrong with a result shaped as a `CreateTaskResult` (2025-11-25 `{ task }`, 2026-07-28
 * `resultType: "task"`) whose task id is no string with text in it, or `null` for any other
 * result (a well-formed `CreateTaskResult`, or no `CreateTaskResult` at all). Such a task can be
 * neither followed nor cancelled: no `tasks/get` or `tasks/cancel` can name it.
 */
export function malformedCreatedTask(result: unknown): string | null {
  if (typeof result !== "object" || result === null || createdTask(result) !== null) return null;
  const value = result as { task?: unknown; resultType?: unknown; taskId?: unknown };
  const nested = typeof value.task === "object" && value.task !== null;
  if (value.resultType !== "task" && !nested) return null;
  const [field, id] = nested ? ["task.taskId", (value.task as { taskId?: unknown }).taskId] : ["taskId", value.taskId];
  const fault = id === undefined ? "missing" : id === "" ? "empty" : `not a string (${JSON.stringify(id) ?? typeof id})`;
  return `malformed CreateTaskResult: ${field} is ${fault}`;
}

/** A status as sent, or `working` when it is not one of the five. */
export function taskStatus(status: unknown): TaskStatus {
  return status === "input_required" || status === "completed" || status === "failed" || status === "cancelled" ? status : "working";
}

/** The record's text for a cancel notification not sent because its request's response was read first (rule 7). */
export const ANSWERED_FIRST = "not sent: the response arrived first (rule 7 in docs/spec-rules.md)";

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
  "task-cancelled": "task cancelled by the server",
  "task-completed-anyway": "task completed anyway, result not returned",
  "task-failed": "task failed",
};

/**
 * The record's one human line. When a verification settled the outcome and a late result also
 * arrived, both facts are said: `cancelled (timeout), verified applied, late result discarded`.
 */
export function summarize(
  record: Pick<RunRecord, "status" | "cancel" | "outcome" | "error"> & {
    late?: RunRecord["late"];
    verification?: RunRecord["verification"];
  },
): string {
  switch (record.status) {
    case "succeeded":
      return "succeeded";
    case "task-created":
      return "task created, not followed (the library follows a task only for a call given the task option)";
    case "failed":
      return record.error === null
        ? "failed"
        : `failed (${record.error.code === null ? "" : `${record.error.code} `}${oneLine(record.error.message)})`;
    case "cancelled": {
      let line = `cancelled (${record.cancel?.trigger ?? "aborted"}), ${OUTCOME_WORDS[record.outcome]}`;
      // A verification found it not applied, then a successful late result said it ran.
      if (
        (record.outcome === "late-result-discarded" || record.outcome === "task-completed-anyway") &&
        record.verification?.reads.at(-1)?.found === "not-applied"
      ) {
        line = `${line}: it ran after all (a verification had found it not applied)`;
      }
      const lateResponses = (record.late?.results ?? 0) + (record.late?.errors ?? 0);
      if (lateResponses > 0 && record.outcome !== "late-result-discarded") line = `${line}, late result discarded`;
      // A notification not sent because the response came first (rule 7) is no failed delivery: the late result says it.
      const undelivered = record.cancel?.undelivered;
      // Written but unanswered: it may well have reached the server, so the summary does not say it did not.
      if (undelivered && undelivered.error !== ANSWERED_FIRST) {
        line = `${line}, cancel ${undelivered.mechanism} ${undelivered.written === true ? "sent, unanswered" : "not delivered"}`;
      }
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
  // What the server said became of a cancelled task: evidence as good as a late result.
  "task-cancelled": 2,
  "task-completed-anyway": 2,
  "task-failed": 2,
};
