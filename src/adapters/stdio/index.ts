import { InvalidOptionError } from "../../errors/InvalidOptionError.js";
import { received } from "../../options/schemas.js";
import { onRefusedStdioLine, stdioChildExited, stdioChildStdin, stdioChildStdout } from "../../sdk/private.js";
import type { CancellationAdapter, TransportLike } from "../types.js";
import { refuseStreamableHttp, refuseCarried } from "../notification.js";
import { stdioAdapter } from "./adapter.js";
import { refusedAnswer } from "./refused-answers.js";
import type { Stdin } from "./queue.js";
import type { Stdout } from "./stdout-end.js";

/**
 * The stdio adapter (`mcp-cancellable/stdio`): a cancel is exactly one
 * `notifications/cancelled {requestId, reason}` line on the server's stdin (rules 6, 31), never
 * for `initialize` (rule 39), written without making the caller wait: a server that stopped
 * reading its stdin cannot hold the caller past its deadline.
 *
 * Backpressure: the SDK's own `send` adds one `drain` listener per write that finds the pipe
 * full (Node warns past 10). In the connection's pipeline the adapter's write queue
 * (`StdioQueue`) sits right on the transport: while the pipe is full, or anything waits for it,
 * every message (the SDK's requests and the adapter's own cancel lines) waits in one queue, in
 * order, behind a single `drain` listener, and then goes through the transport's own `send` (so
 * a wrapper on `send` sees every message), called only when stdin can take the write: at most
 * one blocked write of the SDK's own is in flight, so there is never more than one SDK listener.
 * A request still waiting when its call is cancelled is never written (record: never sent). A
 * `close()` right after a cancel writes every waiting message before stdin ends.
 *
 * A server that closes its stdout and keeps running can answer nothing more: 200 ms after its
 * stdout ended (time for an exiting process's exit to be seen) the connection counts as closed:
 * calls pending settle `connection-closed` at once (not at their own timeouts), the SDK client's
 * `onerror` gets why and its `onclose` runs, and the transport is closed (the SDK's `close()`
 * ends the server's stdin, then signals it if it has not exited about 2 s later).
 *
 * @param transport an SDK stdio transport: v1 `StdioClientTransport` from
 *   `@modelcontextprotocol/sdk/client/stdio.js`, or v2's from `@modelcontextprotocol/client`.
 * @returns the adapter to pass to `withCancellation`; `.transport` is the SDK transport itself
 *   (the wire's view, `mcp.transport`, is what the client connects through).
 * @throws {InvalidOptionError} (option `transport`) for anything that is not a transport, such as
 *   the `{ command, args }` parameters themselves.
 */
export function stdioCancellation<T extends TransportLike>(transport: T): CancellationAdapter<T> {
  // No options: a second argument (`{ flushTimeoutMs }`, as `streamableHttpCancellation` takes)
  // would otherwise be ignored without a word (an outside tester's).
  if (arguments.length > 1 && arguments[1] !== undefined) {
    const given: unknown = arguments[1];
    const keys = typeof given === "object" && given !== null ? Object.keys(given) : [];
    throw new InvalidOptionError(
      "options",
      `stdioCancellation takes the transport only, no options; received a second argument: ${received(given)}${
        keys.length > 0 ? ` with ${keys.map((key) => JSON.stringify(key)).join(", ")}` : ""
      }. On stdio a cancel's line is written at once, and a close writes what waits before the server's stdin ends: there is no flushTimeoutMs to set. Call limits go to withCancellation(client, adapter, { timeoutMs, ... }) or to each call`,
    );
  }
  if (
    typeof transport !== "object" ||
    transport === null ||
    typeof transport.send !== "function" ||
    typeof transport.start !== "function"
  ) {
    const looksLikeParams = typeof transport === "object" && transport !== null && "command" in transport;
    throw new InvalidOptionError(
      "transport",
      looksLikeParams
        ? "stdioCancellation: transport must be an SDK StdioClientTransport, not its parameters: stdioCancellation(new StdioClientTransport({ command, args }))"
        : 'stdioCancellation: transport must be an SDK StdioClientTransport, such as stdioCancellation(new StdioClientTransport({ command: "report-server" }))',
    );
  }
  refuseCarried(transport, "stdioCancellation", "passes");
  refuseStreamableHttp(transport);
  // An answer the SDK's schema refuses (cases.md C02: `{"id":1,"error":{"code":0}}`) comes up,
  // marked: a settled call's late answer, counted on its record, not the SDK's `onerror`.
  onRefusedStdioLine(transport, refusedAnswer);
  return stdioAdapter(transport, () => stdioChildStdin(transport) as Stdin | undefined, {
    stdout: { stdout: () => stdioChildStdout(transport) as Stdout | undefined, exited: () => stdioChildExited(transport) },
  });
}
