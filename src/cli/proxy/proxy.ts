// `mcp-cancellable proxy`: one more entry point of the one call path (docs/architecture.md).
// A `ProxySession` (session.ts: one client session over one upstream) behind the stdio front
// (stdio-front.ts: the client's JSON-RPC lines on stdin, only protocol messages on stdout).
import { headerSecrets, redactor } from "./listen/guard.js";
import { constants, createWriteStream, fstatSync } from "node:fs";
import type { Stats, WriteStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import type { TransportLike } from "../../adapters/types.js";
import type { ProxyOptions } from "./args.js";
import { loadConfig, NO_CONFIG } from "./config.js";
import type { ProxyConfig } from "./config.js";
import { ProxySession } from "./session.js";
import type { EndSignal, ProxyExtras, Upstream } from "./session.js";
import { StdioFront } from "./stdio-front.js";
import type { StdioFrontIo } from "./stdio-front.js";

export {
  CLIENT_CANCEL_REASON,
  CLIENT_GONE_REASON,
  INVALID_REQUEST_CODE,
  PARSE_ERROR_CODE,
  ProxySession,
  SHUTDOWN_BOUND_MS,
  SIGNAL_EXIT_CODES,
} from "./session.js";
export type { ClientPort, EndReason, EndSignal, Outbound, ProxyCounts, ProxyExtras, Upstream } from "./session.js";

/** Where the proxy reads and writes. */
export interface ProxyIo extends StdioFrontIo {
  /** Diagnostics (stderr). */
  log(text: string): void;
  /**
   * Registers what to do on a signal that should end the proxy (SIGTERM, SIGINT, SIGHUP): the
   * command hands `process.on`; tests and the bench give none (no signal handling).
   */
  onSignal?(handler: (signal: EndSignal) => void): () => void;
}

/**
 * Runs the proxy until the client closes its input, the upstream ends, or a signal stops it.
 * Resolves with the exit status (see `ProxySession.end`). Rejects only with a `ConfigError` (bad
 * `--config`) or when `--records` cannot be opened, before anything started.
 */
export async function runProxy<T extends TransportLike>(
  options: ProxyOptions,
  io: ProxyIo,
  makeUpstream: () => Upstream<T> | Promise<Upstream<T>>,
  extras: ProxyExtras = {},
): Promise<number> {
  const config: ProxyConfig = options.config === undefined ? NO_CONFIG : loadConfig(options.config);
  const records =
    options.records === undefined
      ? undefined
      : await openRecords(options.records, (text) => io.log(`mcp-cancellable proxy: ${text}\n`), { stdoutIsProtocol: true });
  const upstream = await makeUpstream();
  // An HTTP upstream's --header secrets never reach the client or the log, even echoed back by it.
  const redact = redactor(options.upstream.kind === "http" ? headerSecrets(options.upstream.headers) : []);
  const front = new StdioFront(io, { maxMessageBytes: options.maxMessageBytes, redact });
  const session = new ProxySession({
    options,
    config,
    upstream,
    records,
    extras,
    client: front,
    redact,
    log: (text) => io.log(redact(text)),
  });
  // A signal runs the same shutdown; a second one while it runs ends the process at once. The
  // signals are the proxy's before the server starts: one that comes while it starts ends the
  // proxy once it is up (its default action would leave the server's process group running).
  let stopping: EndSignal | undefined;
  const starting = session.start(START_FAILURE_ANSWER_MS);
  const off = io.onSignal?.((signal) => {
    if (stopping !== undefined) {
      // Both named: "SIGINT again" after a SIGTERM said a signal came twice that came once.
      io.log(`mcp-cancellable proxy: a second signal (${signal}, after ${stopping}) while stopping: exiting now\n`);
      process.exit(128 + (signal === "SIGHUP" ? 1 : signal === "SIGINT" ? 2 : 15));
    }
    stopping = signal;
    // A server that could not be started: the signal ends the answering of requests (exit 1).
    void starting.then(() => void session.end({ kind: "signal", signal }));
  });
  try {
    await starting;
    // Also when the server could not be started: the client's requests are answered with why.
    front.attach(session);
    return await session.done;
  } finally {
    off?.();
  }
}

/**
 * How long, at most, the stdio proxy answers the client's requests when its server could not be
 * started (see `ProxySession.start`), in ms: a host writes its `initialize` right after the spawn.
 */
const START_FAILURE_ANSWER_MS = 1_000;

/**
 * Opens the `--records` file for appending. A write that fails once it is open (a full disk:
 * `ENOSPC`; an I/O error) is said once through `log`, with the records from there on lost: the
 * proxy goes on relaying (an outside tester's: records were lost with nothing said).
 * `stdoutIsProtocol` (the stdio proxy): the file may not be the process's own stdout, whatever
 * its name (`/dev/stdout`, `/proc/self/fd/1`, the file stdout is redirected to): records there
 * would be lines in the client's protocol stream. A FIFO is opened only when something reads it:
 * opening one without a reader waits for a reader, and the proxy would never start nor end.
 * @throws {RecordsFileError} it cannot be opened, it is stdout, or it is a FIFO nobody reads.
 */
export async function openRecords(file: string, log: (text: string) => void, { stdoutIsProtocol = false } = {}): Promise<WriteStream> {
  const found = await stat(file).catch(() => undefined); // absent (created below), or the open says why not
  if (found !== undefined) {
    if (stdoutIsProtocol && isStdout(found)) {
      throw new RecordsFileError(
        `--records ${file}: that is the proxy's own stdout, which carries only protocol messages to the client; give a file (or /dev/stderr, when stderr is not stdout)`,
      );
    }
  }
  // Held open until the stream's own open is done: a reader such as `cat` ends at its last writer's close.
  const held = found?.isFIFO() === true ? await readerOf(file) : undefined;
  return new Promise((resolve, reject) => {
    const stream = createWriteStream(file, { flags: "a" });
    const why = (error: Error): string => (error as NodeJS.ErrnoException).code ?? error.message;
    const release = (): void => void held?.close().catch(() => {});
    const refused = (error: Error): void => {
      release();
      reject(new RecordsFileError(`--records ${file}: cannot open it for writing (${why(error)})`));
    };
    stream.once("error", refused);
    stream.once("open", () => {
      release();
      stream.off("error", refused);
      stream.once("error", (error) => log(`--records ${file}: cannot write to it (${why(error)}): the run records from here on are lost`));
      resolve(stream);
    });
  });
}

/** Whether `found` is the file the process's fd 1 is (the same device and inode); not when fd 1 is closed. */
function isStdout(found: Stats): boolean {
  try {
    const stdout = fstatSync(1);
    return stdout.dev === found.dev && stdout.ino === found.ino;
  } catch {
    return false;
  }
}

/**
 * Checks that a FIFO has a reader, by opening it without blocking (`ENXIO`: none), and returns
 * that open handle: while it is open the reader stays, so the stream's own (blocking) open finds
 * it at once. `undefined` when the open failed otherwise (the stream's open says why).
 * @throws {RecordsFileError} nothing reads it.
 */
async function readerOf(file: string): Promise<FileHandle | undefined> {
  try {
    return await open(file, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENXIO") return undefined;
    throw new RecordsFileError(`--records ${file}: a FIFO with no reader (ENXIO); start what reads it first, or give a file`);
  }
}

/** The `--records` file cannot be opened. Exit code 2. */
export class RecordsFileError extends Error {
  override name = "RecordsFileError" as const;
}
