import { McpCancellableError, outcomeNote } from "./McpCancellableError.js";
import type { RecordAtSettle } from "./McpCancellableError.js";
import { textOf } from "../utils/hooks.js";
import type { RunRecord } from "../types/record.js";

/**
 * The causes of calls whose request's stream ended without its response, ended by the server (a
 * Streamable HTTP stream that ended, a `202 Accepted`, a JSON answer for another id: the wire's
 * `ended` fact, `eof`): the message says so, not that the connection was lost (whether the
 * connection itself closed then is not what was seen).
 * @internal
 */
export const endedWithoutResponse = new WeakSet<object>();

/**
 * ` (message: code)` of the error a transport failed with, or "" for anything else. Read where the
 * call settles: an error whose `message`, `cause` or `code` cannot be read (a getter that throws, a
 * revoked Proxy) gives "", never a throw (which would lose the call: an outside tester's).
 */
function causeText(cause: unknown): string {
  try {
    if (!(cause instanceof Error)) return "";
    const inner = (cause as { cause?: unknown }).cause;
    const code = typeof inner === "object" && inner !== null ? (inner as { code?: unknown }).code : undefined;
    const message = cause.message;
    return ` (${typeof message === "string" ? message : textOf(message)}${typeof code === "string" ? `: ${code}` : ""})`;
  } catch {
    return "";
  }
}

/**
 * The transport closed while the call was pending (rule 31: in-flight requests are lost), or
 * had closed when the call was made (`requestId` null, outcome `not-sent`: nothing was sent), or
 * the request provably never reached the wire (a refused connection, a host name that did not
 * resolve: outcome `not-sent`, the request id kept). A call before the first connect is a usage
 * mistake: `InvalidOptionError`.
 * A pending call's outcome stays unverified: the server may have done the work.
 */
export class ConnectionClosedError extends McpCancellableError {
  override readonly name = "ConnectionClosedError" as const;
  readonly code = "CONNECTION_CLOSED" as const;

  /** @param byClient the client's own `close()` ended the connection (not a lost one): the message says so. */
  constructor(record: RunRecord | RecordAtSettle, verification?: Promise<RunRecord>, cause?: unknown, byClient = false) {
    super(
      record.requestId === null
        ? // Never sent: safe to send again, and said so as frameworks read it ("not connected":
          // Mastra's MCPClient reconnects and retries once; an outside tester's: its tools stayed
          // dead after a server crash).
          `${record.method} was not sent: not connected (the connection is closed; reconnect the client to call again)`
        : record.outcome === "not-sent"
          ? `${record.method} (request id ${String(record.requestId)}) was never sent: the connection failed before it reached the server${causeText(cause)}`
          : // Not "connection closed": frameworks (Mastra's MCPClient) reconnect and send a call again
            // when an error says so, and this call may have been done (its outcome is unverified).
            `${record.method} (request id ${String(record.requestId)}) was pending when ${
              byClient
                ? "the client closed its connection"
                : typeof cause === "object" && cause !== null && endedWithoutResponse.has(cause)
                  ? `its response stream ended without its response${causeText(cause)}`
                  : "its connection was lost"
            } and was not retried${outcomeNote(record) || "; it may have run"}`,
      record,
      verification,
      cause === undefined ? undefined : { cause },
    );
  }
}
