import { McpCancellableError } from "./McpCancellableError.js";
import type { RunRecord } from "../core/record.js";

/**
 * The transport closed while the call was pending (rule 31: in-flight requests are lost).
 * The outcome stays unverified: the server may have done the work.
 */
export class ConnectionClosedError extends McpCancellableError {
  override readonly name = "ConnectionClosedError" as const;
  readonly code = "CONNECTION_CLOSED" as const;

  constructor(record: RunRecord, verification: Promise<RunRecord>, cause?: unknown) {
    super(
      `the connection closed while ${record.method} was pending (request id ${String(record.requestId)})`,
      record,
      verification,
      cause === undefined ? undefined : { cause },
    );
  }
}
