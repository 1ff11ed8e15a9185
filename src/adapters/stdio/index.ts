import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { StdioServerParameters } from "@modelcontextprotocol/sdk/client/stdio.js";
import { notificationCancellation } from "../notification.js";
import type { CancellationAdapter, TransportLike } from "../types.js";

/**
 * The stdio adapter (`mcp-cancellable/stdio`): a cancel is exactly one
 * `notifications/cancelled {requestId, reason}` line on the server's stdin (rules 6, 31), never
 * for `initialize` (rule 39), written without making the caller wait: a server that stopped
 * reading its stdin cannot hold the caller past its deadline.
 *
 * @param transport an SDK stdio transport (v1 `StdioClientTransport`, v2 `StdioClientTransport`),
 *   or the v1 `StdioServerParameters` (`{command, args, env, cwd, stderr}`) to spawn one with.
 * @returns the adapter to pass to `withCancellation`; `.transport` is the SDK transport.
 */
export function stdioCancellation<T extends TransportLike>(transport: T): CancellationAdapter<T>;
export function stdioCancellation(parameters: StdioServerParameters): CancellationAdapter<StdioClientTransport>;
export function stdioCancellation(
  transportOrParameters: TransportLike | StdioServerParameters,
): CancellationAdapter<TransportLike> {
  const transport =
    "command" in transportOrParameters && typeof transportOrParameters.command === "string"
      ? new StdioClientTransport(transportOrParameters)
      : (transportOrParameters as TransportLike);
  return notificationCancellation(transport);
}
