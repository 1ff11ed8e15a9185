import { InvalidOptionError } from "../../errors/InvalidOptionError.js";
import { notificationCancellation } from "../notification.js";
import { stdioChildStdin } from "../../sdk/private.js";
import type { CancellationAdapter, TransportLike } from "../types.js";

/** The part of a Node `Writable` (the server's stdin) the adapter uses. */
interface Stdin {
  readonly writable: boolean;
  readonly destroyed: boolean;
  readonly writableNeedDrain: boolean;
  write(chunk: string): boolean;
  once(event: "drain", listener: () => void): unknown;
  removeListener(event: "drain", listener: () => void): unknown;
}

/**
 * The stdio adapter (`mcp-cancellable/stdio`): a cancel is exactly one
 * `notifications/cancelled {requestId, reason}` line on the server's stdin (rules 6, 31), never
 * for `initialize` (rule 39), written without making the caller wait: a server that stopped
 * reading its stdin cannot hold the caller past its deadline.
 *
 * Backpressure: the SDK's own `send` adds one `drain` listener per write that finds the pipe
 * full (Node warns past 10). The cancel lines are written by the adapter itself, in order, and
 * while the pipe is full they wait behind a single `drain` listener of the adapter's, so they
 * never add to that pile. A `close()` right after a cancel writes every waiting line before
 * stdin ends (the server reads them before its end of input).
 *
 * @param transport an SDK stdio transport: v1 `StdioClientTransport` from
 *   `@modelcontextprotocol/sdk/client/stdio.js`, or v2's from `@modelcontextprotocol/client`.
 * @returns the adapter to pass to `withCancellation`; `.transport` is the SDK transport.
 * @throws {InvalidOptionError} (option `transport`) for anything that is not a transport, such as
 *   the `{ command, args }` parameters themselves.
 */
export function stdioCancellation<T extends TransportLike>(transport: T): CancellationAdapter<T> {
  if (typeof transport !== "object" || transport === null || typeof transport.send !== "function" || typeof transport.start !== "function") {
    const looksLikeParams = typeof transport === "object" && transport !== null && "command" in transport;
    throw new InvalidOptionError(
      "transport",
      looksLikeParams
        ? "stdioCancellation: transport must be an SDK StdioClientTransport, not its parameters: stdioCancellation(new StdioClientTransport({ command, args }))"
        : "stdioCancellation: transport must be an SDK StdioClientTransport, such as stdioCancellation(new StdioClientTransport({ command: \"report-server\" }))",
    );
  }
  const fallback = notificationCancellation(transport);
  const lines = new CancelLines();
  return {
    transport,
    cancel(request) {
      const stdin = stdinOf(transport);
      // A transport without a child's stdin (not started, or not the SDK's): its own send.
      if (stdin === undefined) return fallback.cancel(request);
      lines.write(stdin, `${JSON.stringify(request.notification)}\n`, request.reportError);
      return "notification";
    },
    flush() {
      const stdin = stdinOf(transport);
      if (stdin !== undefined) lines.flush(stdin);
    },
  };
}

/** The server's stdin of an SDK `StdioClientTransport` (its private `_process`: src/sdk/private.ts). */
function stdinOf(transport: TransportLike): Stdin | undefined {
  return stdioChildStdin(transport);
}

/** Cancel lines waiting for the pipe, behind one `drain` listener. */
class CancelLines {
  readonly #waiting: string[] = [];
  #stdin: Stdin | undefined = undefined;

  write(stdin: Stdin, line: string, reportError: (error: unknown) => void): void {
    if (!stdin.writable) {
      reportError(new Error(stdin.destroyed ? "the server's stdin was destroyed" : "write after end: the server's stdin has ended"));
      return;
    }
    if (this.#stdin !== undefined || stdin.writableNeedDrain) {
      this.#waiting.push(line);
      this.#listen(stdin);
      return;
    }
    stdin.write(line); // a false return only means the next lines wait
  }

  /** Writes every waiting line now (the transport is about to end stdin: they go before the end). */
  flush(stdin: Stdin): void {
    this.#unlisten();
    if (!stdin.writable) {
      this.#waiting.length = 0;
      return;
    }
    for (const line of this.#waiting.splice(0)) stdin.write(line);
  }

  #listen(stdin: Stdin): void {
    if (this.#stdin !== undefined) return;
    this.#stdin = stdin;
    stdin.once("drain", this.#drain);
  }

  #unlisten(): void {
    this.#stdin?.removeListener("drain", this.#drain);
    this.#stdin = undefined;
  }

  readonly #drain = (): void => {
    const stdin = this.#stdin!;
    this.#stdin = undefined;
    if (!stdin.writable) {
      this.#waiting.length = 0;
      return;
    }
    while (this.#waiting.length > 0 && !stdin.writableNeedDrain) stdin.write(this.#waiting.shift()!);
    if (this.#waiting.length > 0) this.#listen(stdin);
  };
}
