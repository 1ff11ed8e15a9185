import { stdioAdapter } from "../../adapters/stdio/adapter.js";
import type { Message } from "../../wire/messages.js";
import { ChildStdioTransport } from "../stdio-transport.js";
import type { StdioTarget } from "../stdio-transport.js";
import type { Upstream } from "./session.js";

/** The JSON-RPC code of the answer the proxy gives for a server's answer it could not relay (Internal error, JSON-RPC 2.0 §5.1). */
export const INTERNAL_ERROR_CODE = -32603;

/**
 * A stdio server as the proxy's upstream: the child process, cancels as `notifications/cancelled`
 * (rules 6, 31). A line longer than `maxMessageBytes` is dropped as it streams in; when it ends
 * and names the request it answers (its last member `"id"`), that request is answered -32603
 * naming `--max-message-bytes`, as the server's answer (the request was received; nothing is
 * sent again).
 */
export function stdioUpstream(target: StdioTarget, maxMessageBytes: number, log: (text: string) => void): Upstream<ChildStdioTransport> {
  // The server's stderr is the proxy's own (diagnostics never reach the client's stdout). A server
  // that closes its stdout can answer nothing more: the connection counts as closed then (every
  // request in flight answered -32000 at once, not left to its timeout), even while it runs.
  const child = new ChildStdioTransport(target, { stderr: "inherit", maxMessageBytes, closeOnStdoutEnd: true });
  child.ontoolong = (line) => {
    if (!line.ended) {
      log(`mcp-cancellable proxy: the server is writing a message of more than ${line.limit} bytes (--max-message-bytes): dropping it\n`);
      return;
    }
    log(`mcp-cancellable proxy: dropped a message of ${line.bytes} bytes from the server (more than --max-message-bytes ${line.limit})\n`);
    if (line.id === undefined) return;
    const answer: Message = {
      jsonrpc: "2.0",
      id: line.id,
      error: {
        code: INTERNAL_ERROR_CODE,
        message: `mcp-cancellable proxy: the server's answer was ${line.bytes} bytes, more than --max-message-bytes (${line.limit}); dropped. Raise --max-message-bytes to relay it`,
      },
    };
    child.onmessage?.(answer);
  };
  /** The connection closed (its stdout ended) with the process still running: `stop` ended it. */
  let runningAtClose = false;
  return {
    // The write queue reads the child's stdin, as over the SDK's transports: a cancel line behind a
    // full pipe waits there (its record's sentAt null until it left, then when it did). Without
    // it, the queue took the line as sent when the transport's send was called (the settle's
    // time, never revised). Relayed messages go to the transport at once (`holdMessages: false`):
    // its writes of a pass are corked together, and its send waits by callback, not by `drain`;
    // that callback is the line's own write (`sendSettlesAtWrite`).
    adapter: stdioAdapter(child, () => child.stdin, { holdMessages: false, sendSettlesAtWrite: true }),
    onInvalid(handler) {
      child.oninvalid = handler;
    },
    onLongLine(handler) {
      child.onlongline = handler;
    },
    onRead(around) {
      child.onread = around;
    },
    cork: () => child.cork(),
    uncork: () => child.uncork(),
    pause: () => child.pauseReading(),
    resume: () => child.resumeReading(),
    stop() {
      if (child.exit !== undefined) return Promise.resolve();
      runningAtClose = true;
      return child.close();
    },
    ended() {
      const exit = child.exit;
      if (runningAtClose) {
        const how = exit === undefined ? "" : exit.signal !== null ? ` (${exit.signal})` : ` (exit code ${String(exit.code)})`;
        return { message: `the server closed its stdout while still running; the proxy stopped it${how}`, code: 1 };
      }
      // A command that could not be spawned "closes" with its errno as the code (-2): never ran.
      if (child.spawnError !== undefined) return { message: `the server could not be started (${child.spawnError.message})`, code: 1 };
      if (exit === undefined) return { message: "the server is stopped", code: 1 };
      if (exit.signal !== null) return { message: `the server was ended by ${exit.signal}`, code: 1 };
      return { message: `the server exited with code ${String(exit.code)}`, code: exit.code === 0 ? 0 : 1 };
    },
  };
}
