import { main } from "./main.js";
import { EXIT_FLUSH_MS } from "./proxy/config.js";

/**
 * The `mcp-cancellable` executable (`bin`). Runs the command, flushes its output, and exits
 * with its status: a probe leaves nothing running (servers it started are ended, and killed
 * with their process group on an early exit, Ctrl-C included). The proxy handles SIGTERM,
 * SIGINT and SIGHUP itself: each runs its shutdown (docs/proxy.md, "Exit status").
 */
if (process.argv[2] !== "proxy") {
  process.once("SIGINT", () => process.exit(130));
  process.once("SIGTERM", () => process.exit(143));
}

/**
 * Diagnostics go to stderr; a reader of it that went away (a log shipper restarted, `| logger`
 * ended) must not end the process: an unhandled `EPIPE` there killed the proxy and its HTTP front
 * at their next log line, with calls in flight unanswered and uncancelled (an outside tester's).
 * What is written to a stderr that cannot take it is dropped.
 */
process.stderr.on("error", () => {});

/**
 * The longest the executable waits for its stdout and stderr to flush before it exits, in ms (a
 * reader that stopped reading cannot hold it). The proxy flushed to its client within its own
 * shutdown bound already, which keeps `EXIT_RESERVE_MS` of it for this and the exit.
 */
const FLUSH_BOUND_MS = process.argv[2] === "proxy" ? EXIT_FLUSH_MS : 500;

const code = await main(process.argv.slice(2), {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
});
setTimeout(() => process.exit(code), FLUSH_BOUND_MS).unref();
process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
