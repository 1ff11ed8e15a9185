import { McpCancellableError } from "./McpCancellableError.js";
import type { RunRecord } from "../types/record.js";

/**
 * The transport closed while the call was pending (rule 31: in-flight requests are lost), or
 * had closed when the call was made (`requestId` null, outcome `not-sent`: nothing was sent). A call
 * before the first connect is a usage mistake: `InvalidOptionError`.
 * A pending call's outcome stays unverified: the server may have done the work.
 */
export class ConnectionClosedError extends McpCancellableError {
  override readonly name = "ConnectionClosedError" as const;
  readonly code = "CONNECTION_CLOSED" as const;

  constructor(record: RunRecord, verification: Promise<RunRecord>, cause?: unknown) {
    super(
      record.requestId === null
        ? `the connection is closed, so ${record.method} was not sent (reconnect the client to call again)`
        : `the connection closed while ${record.method} was pending (request id ${String(record.requestId)})`,
      record,
      verification,
      cause === undefined ? undefined : { cause },
    );
  }
}
