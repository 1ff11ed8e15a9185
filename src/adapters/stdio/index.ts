import { InvalidOptionError } from "../../errors/InvalidOptionError.js";
import { notificationCancellation } from "../notification.js";
import { decorateTransport } from "../../wire/decorate.js";
import { stdioChildStdin } from "../../sdk/private.js";
import type { CancellationAdapter, TransportLike } from "../types.js";

/** The part of a Node `Writable` (the server's stdin) the adapter uses. */
interface Stdin {
  readonly writable: boolean;
  readonly destroyed: boolean;
  readonly writableNeedDrain: boolean;
  write(chunk: string, callback?: (error?: Error | null) => void): boolean;
  once(event: "drain" | "close", listener: () => void): unknown;
  removeListener(event: "drain" | "close", listener: () => void): unknown;
}

/**
 * The stdio adapter (`mcp-cancellable/stdio`): a cancel is exactly one
 * `notifications/cancelled {requestId, reason}` line on the server's stdin (rules 6, 31), never
 * for `initialize` (rule 39), written without making the caller wait: a server that stopped
 * reading its stdin cannot hold the caller past its deadline.
 *
 * Backpressure: the SDK's own `send` adds one `drain` listener per write that finds the pipe
 * full (Node warns past 10). The adapter decorates `send`: while the pipe is full, or anything
 * waits for it, every message (the SDK's requests and the adapter's own cancel lines) waits in
 * one queue, in order, behind a single `drain` listener of the adapter's, and is written as the
 * SDK writes it (one JSON line); the SDK's promise resolves as its own would (written, or the
 * next drain). At most one blocked write of the SDK's own is in flight (the one that found the
 * pipe full), so there is never more than one SDK listener. A `close()` right after a cancel
 * writes every waiting message before stdin ends (the server reads them before its end of input).
 *
 * @param transport an SDK stdio transport: v1 `StdioClientTransport` from
 *   `@modelcontextprotocol/sdk/client/stdio.js`, or v2's from `@modelcontextprotocol/client`.
 * @returns the adapter to pass to `withCancellation`; `.transport` is the SDK transport, its
 *   `send` decorated (every other member is the transport's own).
 * @throws {InvalidOptionError} (option `transport`) for anything that is not a transport, such as
 *   the `{ command, args }` parameters themselves.
 */
export function stdioCancellation<T extends TransportLike>(transport: T): CancellationAdapter<T> {
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
  const fallback = notificationCancellation(transport);
  const lines = new Outbox();
  const innerSend = (message: unknown, options?: unknown): Promise<void> =>
    (transport.send as (message: unknown, options?: unknown) => Promise<void>).call(transport, message, options);
  const { view } = decorateTransport(transport, {
    methods: {
      // The SDK's requests wait in the adapter's queue while the pipe is full (one listener for all).
      send: (message: unknown, options?: unknown): Promise<void> => {
        const stdin = stdinOf(transport);
        if (stdin === undefined || !lines.busy(stdin)) return innerSend(message, options);
        return lines.send(stdin, `${JSON.stringify(message)}\n`);
      },
    },
  });
  return {
    transport: view,
    cancel(request) {
      const stdin = stdinOf(transport);
      // A transport without a child's stdin (not started, or not the SDK's): its own send.
      if (stdin === undefined) return fallback.cancel(request);
      // Recorded, never sent to onerror: the record says the notification did not get out
      // (the record exists once cancel() has returned: hence the microtask).
      const undelivered = (error: string): void =>
        queueMicrotask(() => request.delivery({ sent: "none", failed: { mechanism: "notification", error } }));
      const written = lines.write(stdin, { text: `${JSON.stringify(request.notification)}\n`, undelivered });
      if (written) return "notification";
      undelivered(goneText(stdin));
      return "none";
    },
    isOwnCancelError(error) {
      return ownWriteErrors.has(error);
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

/** Marks the write errors of cancel lines: the SDK echoes a stdin `error` to `onerror`, the record has it. */
const ownWriteErrors = new WeakSet<object>();

/** The record's text for a cancel line that could not be written to a stdin that is gone. */
function goneText(stdin: Stdin): string {
  return stdin.destroyed ? "the server's stdin was destroyed" : "write after end: the server's stdin has ended";
}

/** One cancel line and how to tell its record that it did not get out. */
interface Line {
  readonly text: string;
  readonly undelivered: (error: string) => void;
}

/** One SDK message waiting for the pipe: its line and its `send` promise's settlers. */
interface Send {
  readonly text: string;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

type Entry = { line: Line; send?: undefined } | { send: Send; line?: undefined };

/**
 * Everything waiting for the pipe, in order, behind one `drain` listener (and one `close`
 * listener, for a pipe that closes instead of draining).
 */
class Outbox {
  readonly #waiting: Entry[] = [];
  /** SDK sends written while the pipe was full: their promises resolve at the next drain, as the SDK's own would. */
  readonly #draining: Array<() => void> = [];
  #stdin: Stdin | undefined = undefined;

  /** True while a message must wait: the pipe is full, or something waits already (order). */
  busy(stdin: Stdin): boolean {
    return this.#stdin !== undefined || this.#waiting.length > 0 || stdin.writableNeedDrain;
  }

  /** Queues or writes the cancel line; false when stdin is gone (nothing was written). */
  write(stdin: Stdin, line: Line): boolean {
    if (!stdin.writable) return false;
    if (this.busy(stdin)) {
      this.#waiting.push({ line });
      this.#listen(stdin);
      return true;
    }
    put(stdin, line); // a false return only means the next lines wait
    return true;
  }

  /** Queues an SDK message (called only while `busy`); resolves once written, as the SDK's `send`. */
  send(stdin: Stdin, text: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#waiting.push({ send: { text, resolve, reject } });
      this.#listen(stdin);
    });
  }

  /** Writes everything waiting now (the transport is about to end stdin: it goes before the end). */
  flush(stdin: Stdin): void {
    this.#unlisten();
    this.#release();
    for (const entry of this.#waiting.splice(0)) this.#put(stdin, entry, true);
  }

  /** Writes one entry; false when the pipe is full after it (an SDK send then resolves at the drain). */
  #put(stdin: Stdin, entry: Entry, closing: boolean): void {
    if (entry.line !== undefined) {
      if (stdin.writable) put(stdin, entry.line);
      else entry.line.undelivered(goneText(stdin));
      return;
    }
    const { text, resolve, reject } = entry.send;
    if (!stdin.writable) {
      reject(new Error(`Not connected: ${goneText(stdin)}`));
      return;
    }
    if (stdin.write(text) || closing) resolve();
    else this.#draining.push(resolve);
  }

  #listen(stdin: Stdin): void {
    if (this.#stdin !== undefined) return;
    this.#stdin = stdin;
    stdin.once("drain", this.#drain);
    // A pipe that closes (the server died) never drains: what waits is settled then.
    stdin.once("close", this.#drain);
  }

  #unlisten(): void {
    this.#stdin?.removeListener("drain", this.#drain);
    this.#stdin?.removeListener("close", this.#drain);
    this.#stdin = undefined;
  }

  /** The SDK sends that waited for this drain resolve (they were written). */
  #release(): void {
    for (const resolve of this.#draining.splice(0)) resolve();
  }

  readonly #drain = (): void => {
    const stdin = this.#stdin;
    if (stdin === undefined) return;
    this.#unlisten();
    this.#release();
    while (this.#waiting.length > 0 && (!stdin.writable || !stdin.writableNeedDrain)) this.#put(stdin, this.#waiting.shift()!, false);
    if (this.#waiting.length > 0 || this.#draining.length > 0) this.#listen(stdin);
  };
}

/**
 * Writes one cancel line. A write that fails later (EPIPE: the server closed its stdin) is
 * recorded on the call; the error is marked so that the SDK's echo of it (its stdin `error`
 * listener calls `onerror`) is known for the library's own (`isOwnCancelError`).
 */
function put(stdin: Stdin, line: Line): void {
  stdin.write(line.text, (error) => {
    if (error === null || error === undefined) return;
    if (typeof error === "object") ownWriteErrors.add(error);
    line.undelivered(error.message);
  });
}
