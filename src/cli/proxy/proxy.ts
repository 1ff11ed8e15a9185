// `mcp-cancellable proxy`: one more entry point of the one call path (docs/architecture.md).
// A `ProxySession` (session.ts: one client session over one upstream) behind the stdio front
// (stdio-front.ts: the client's JSON-RPC lines on stdin, only protocol messages on stdout).
import { headerSecrets, redactor } from "./listen/guard.js";
import { createWriteStream } from "node:fs";
import type { WriteStream } from "node:fs";
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
    options.records === undefined ? undefined : await openRecords(options.records, (text) => io.log(`mcp-cancellable proxy: ${text}\n`));
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
  let stopping = false;
  const starting = session.start(START_FAILURE_ANSWER_MS);
  const off = io.onSignal?.((signal) => {
    if (stopping) {
      io.log(`mcp-cancellable proxy: ${signal} again while stopping: exiting now\n`);
      process.exit(128 + (signal === "SIGHUP" ? 1 : signal === "SIGINT" ? 2 : 15));
    }
    stopping = true;
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
 * @throws {RecordsFileError} it cannot be opened.
 */
export function openRecords(file: string, log: (text: string) => void): Promise<WriteStream> {
  return new Promise((resolve, reject) => {
    const stream = createWriteStream(file, { flags: "a" });
    const why = (error: Error): string => (error as NodeJS.ErrnoException).code ?? error.message;
    const refused = (error: Error): void => reject(new RecordsFileError(`--records ${file}: cannot open it for writing (${why(error)})`));
    stream.once("error", refused);
    stream.once("open", () => {
      stream.off("error", refused);
      stream.once("error", (error) => log(`--records ${file}: cannot write to it (${why(error)}): the run records from here on are lost`));
      resolve(stream);
    });
  });
}

/** The `--records` file cannot be opened. Exit code 2. */
export class RecordsFileError extends Error {
  override name = "RecordsFileError" as const;
}
