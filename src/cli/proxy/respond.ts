// How the proxy answers a client request the library settled without the server's answer: one
// text for every front (the stdio session and the HTTP front's relay).
import { isCallTimeoutError, isConnectionClosedError } from "../../errors/guards.js";
import type { McpCancellableError } from "../../errors/McpCancellableError.js";
import { CONNECTION_CLOSED_ERROR_CODE, TIMEOUT_ERROR_CODE, isLocalAnswer } from "../../runner/message-transport.js";
import type { LibraryErrorResponse } from "../../runner/message-transport.js";
import type { RunRecord } from "../../types/record.js";

/**
 * For `--verbose`: the note of an answer the proxy made itself (the library settled the request:
 * a timeout, a lost connection), naming its code and the cancel that went upstream; `undefined`
 * for the server's own answer.
 */
export function ownAnswerNote(message: object): string | undefined {
  if (!isLocalAnswer(message)) return undefined;
  const data = (message as { error?: { data?: { code?: unknown; record?: RunRecord | null } } }).error?.data;
  const cancel = data?.record?.cancel;
  const upstream =
    cancel === undefined || cancel === null
      ? ""
      : cancel.mechanism === "none"
        ? "; nothing sent upstream"
        : `; cancelled upstream (${cancel.mechanism}): ${cancel.reason}`;
  return `the proxy's own answer (${String(data?.code ?? "error")})${upstream}`;
}

/**
 * A timeout is -32001 naming the limit (the idle timeout, `timeoutMs`, the maximum total
 * timeout, `maxTotalTimeoutMs`, or the wait for the client's own answer, `clientWaitTimeoutMs`); a lost connection -32000 (never retried); a client's own cancel
 * gets nothing (`undefined`). `data` carries the stable code, the trigger, the limit, the summary
 * and the record as `withClient` completes it (the client's id of its request, ...).
 * `taskAugmented`: the request asked for a task (rule 35): cancelled before its
 * `CreateTaskResult`, nothing went upstream yet, and the task it creates is cancelled with
 * `tasks/cancel` once that result comes; the message says so.
 */
export function proxyErrorResponse(
  error: McpCancellableError,
  withClient: (record: RunRecord) => RunRecord,
  taskAugmented = false,
): LibraryErrorResponse | undefined {
  const record = error.record;
  const what = record.name === null ? record.method : `${record.method} ${JSON.stringify(record.name)}`;
  if (isCallTimeoutError(error)) {
    const idle = error.code === "REQUEST_TIMEOUT";
    // What went upstream, as the record says it (a handshake is never cancelled: rule 39, and the
    // library's own choice for server/discover).
    const upstream =
      record.cancel?.mechanism !== "none"
        ? "cancelled upstream"
        : record.method === "server/discover" || record.method === "initialize"
          ? record.method === "initialize"
            ? "not cancelled (initialize never is: rule 39 in docs/spec-rules.md)"
            : 'not cancelled (server/discover never is, as initialize: "Never cancelled" in docs/spec-rules.md)'
          : taskAugmented && record.task === undefined
            ? "nothing sent upstream yet: the task it creates is cancelled with tasks/cancel once its CreateTaskResult comes (rules 35, 36 in docs/spec-rules.md)"
            : "nothing sent upstream";
    const message = !idle
      ? `mcp-cancellable proxy: ${what} exceeded its maximum total timeout of ${error.timeoutMs} ms (maxTotalTimeoutMs); ${upstream}`
      : error.limitName === "clientWaitTimeoutMs"
        ? `mcp-cancellable proxy: ${what} timed out after ${error.timeoutMs} ms waiting for the client's answer to the server's request (clientWaitTimeoutMs); ${upstream}`
        : `mcp-cancellable proxy: ${what} timed out after ${error.timeoutMs} ms with no answer (the idle timeout, timeoutMs); ${upstream}`;
    const data = {
      code: error.code,
      trigger: record.cancel?.trigger ?? (idle ? "timeout" : "max-total-timeout"),
      limitMs: error.timeoutMs,
      summary: record.summary,
      record: withClient(record),
    };
    return { code: TIMEOUT_ERROR_CODE, message, data };
  }
  if (isConnectionClosedError(error)) {
    const data = { code: error.code, trigger: "connection-closed", summary: record.summary, record: withClient(record) };
    return {
      code: CONNECTION_CLOSED_ERROR_CODE,
      message: `mcp-cancellable proxy: the connection to the server was lost before ${what} was answered; not retried`,
      data,
    };
  }
  return undefined;
}
