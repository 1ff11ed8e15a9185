import { notificationCancellation } from "../notification.js";
import type { CancellationAdapter, TransportLike } from "../types.js";

/**
 * The stdio adapter (`mcp-cancellable/stdio`): a cancel is exactly one
 * `notifications/cancelled {requestId, reason}` line on the server's stdin (rules 6, 31), never
 * for `initialize` (rule 39), written without making the caller wait: a server that stopped
 * reading its stdin cannot hold the caller past its deadline.
 *
 * @param transport an SDK stdio transport: v1 `StdioClientTransport` from
 *   `@modelcontextprotocol/sdk/client/stdio.js`, or v2's from `@modelcontextprotocol/client`.
 * @returns the adapter to pass to `withCancellation`; `.transport` is the SDK transport.
 */
export function stdioCancellation<T extends TransportLike>(transport: T): CancellationAdapter<T> {
  return notificationCancellation(transport);
}
