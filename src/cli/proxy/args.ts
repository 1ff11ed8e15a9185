import { eraFlag, httpFlags, msFlag, parseFlags, SERVER_FLAGS, stdioFlags, UsageError } from "../args.js";
import type { Era } from "../args.js";
import { DEFAULT_MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES_LIMIT } from "../json-lines.js";
import { DEFAULT_PROXY_TIMEOUT_MS, SHUTDOWN_BOUND_MS } from "./config.js";
import type { Limits } from "./config.js";
import { docHint } from "../package-root.js";
import { LISTEN_FLAG_NAMES } from "./listen/args.js";

/** Which protocol era an HTTP upstream speaks: the 2025 `initialize` session (v1 SDK transport), or 2026-07-28 (v2). */
export type HttpEra = Era;

/** Everything `mcp-cancellable proxy` was asked to do, validated. Durations in ms. */
export interface ProxyOptions {
  upstream:
    | { kind: "stdio"; command: string; args: string[]; env: Record<string, string>; cwd?: string }
    | { kind: "http"; url: string; headers: Record<string, string>; era: HttpEra };
  /** Limits given on the command line (over the config file's defaults). */
  limits: Limits;
  /** The `--config` file, if any. */
  config: string | undefined;
  /** The `--records` file, if any (appended to). */
  records: string | undefined;
  /** Log each relayed message's direction and method on stderr. */
  verbose: boolean;
  /** Record a span per request with the library's OpenTelemetry recorder (`OTEL_*` configure the exporter). */
  otel: boolean;
  /** The longest message (one line) read from the client or a stdio server, in bytes (`--max-message-bytes`). */
  maxMessageBytes: number;
}

/** Where the proxy's documentation is, for its errors: its path in the package that runs, and the project's page. */
export const docsHint = (): string => docHint("proxy.md");

/** The smallest `--max-message-bytes` accepted, in bytes. */
export const MIN_MESSAGE_BYTES = 1_024;

export const PROXY_HELP = `Usage: mcp-cancellable proxy [options] -- <command> [args...]
       mcp-cancellable proxy [options] --url <url> [--header "Name: value"]...

Sits between an MCP client and a server, and gives every request the client sends an idle
timeout (reset by progress) and a maximum total timeout, the cancel by the upstream transport's
own mechanism with the id the server knows, and late results dropped. Start it in place of the
server: it reads the client's JSON-RPC lines on stdin and writes only protocol messages on
stdout; diagnostics go to stderr. Everything else (initialize, notifications, the server's own
requests such as sampling, elicitation and roots/list, and the client's answers) is relayed
unchanged. The details, and config lines for desktop and IDE clients: docs/proxy.md in the
package, or https://github.com/mcp-cancellable/mcp-cancellable/blob/main/docs/proxy.md

Upstream (exactly one):
  -- <command> [args...]  Run a stdio server: the program and its arguments, after "--" (no
                          shell). Started in its own process group, stopped with it. The "--"
                          may be left out (for a host that keeps it, such as the MCP
                          Inspector's CLI): the command then starts at the first argument
                          that is not one of these options or its value.
  --env KEY=VALUE         Environment variable for the stdio server. Repeatable.
  --cwd <dir>             Working directory for the stdio server. Default: the current one.
  --url <url>             A Streamable HTTP server (http:// or https://).
  --header "Name: value"  Header sent with every HTTP request (a token, for example). Repeatable.
                          \${NAME} in the value is the environment variable NAME, so a token
                          stays off the command line: --header "Authorization: Bearer \${MCP_TOKEN}"
                          (an unset or empty one is an error; $\${ is a literal \${).
  --era <era>             For --url: legacy (2025-03-26 to 2025-11-25: initialize and a session;
                          a cancel POSTs notifications/cancelled, then closes the request's
                          stream) or 2026-07-28 (the cancel closes the request's stream; needs
                          @modelcontextprotocol/client). Default: legacy.

Limits (milliseconds; "none" for no limit):
  --timeout-ms <ms>            Idle timeout of each request, restarted by its progress.
                               Default: ${DEFAULT_PROXY_TIMEOUT_MS}.
  --max-total-timeout-ms <ms>  Maximum total time of each request from its send; progress never
                               extends it. Default: max(600000, --timeout-ms).
  --no-reset-on-progress       Progress does not restart the idle timeout.
  --client-wait-timeout-ms <ms>
                               While the server waits for the client's answer to a request of
                               its own (elicitation: a person filling a form; sampling; roots),
                               the idle timeout of every request pending on the connection is
                               paused and the wait bounds them (which request it is for is not
                               on the wire); the maximum total timeout still holds. Default: 300000.
  --config <file>              JSON file with "defaults", and overrides per method ("methods")
                               and per tool ("tools"). The most specific entry wins; the command
                               line wins over the file's defaults.
  initialize and server/discover (the handshakes) have only --max-total-timeout-ms, not
  --timeout-ms (they include starting the server): answered -32001 at it, never cancelled;
  the config file's "methods" can give them an idle timeout too. subscriptions/listen has none unless the config file's "methods" gives it
  some: it ends with the client's cancel, the server, or the session.

Messages:
  --max-message-bytes <n>      The longest message (one JSON-RPC line) read from the client or a
                               stdio server, in bytes, ${MIN_MESSAGE_BYTES} to ${MAX_MESSAGE_BYTES_LIMIT}.
                               Default: ${DEFAULT_MAX_MESSAGE_BYTES} (256 MiB). A longer one is
                               dropped as it streams in and answered with an error naming this
                               option. What waits unread for the client is bounded by it
                               plus 16 MiB (beyond it the proxy exits 1).

When a limit expires the request is cancelled upstream and the client gets a JSON-RPC error
-32001 naming the limit, with data { trigger, limitMs, summary, record }. A client's own
notifications/cancelled cancels the request upstream. Nothing is ever re-sent.

Records:
  --records <file>        Append one JSON Lines run record per request (initialize excepted).
  --otel                  A span per request (the library's OpenTelemetry recorder), exported as
                          the standard OTEL_* variables say: OTEL_TRACES_EXPORTER=otlp (the
                          default; needs @opentelemetry/exporter-trace-otlp-proto, or -http or
                          -grpc by OTEL_EXPORTER_OTLP_PROTOCOL), console (JSON lines on stderr)
                          or none; OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_ENDPOINT and the rest.
                          Needs @opentelemetry/api and @opentelemetry/sdk-trace-base installed.
  --verbose               Log every relayed message (direction, method, ids) on stderr.
  -h, --help              Print this help.

Exit status: 0 the client closed its end (stdin, or its stdout went away), or the server exited
with status 0; 1 the server could not be started, exited with another status or was killed, the
HTTP server could not be reached, it lost the session and refused a new one, or the client did
not read its stdout; 2 usage error, a bad --config file or --records file, or a package that
--era 2026-07-28, --otel or --listen needs is not installed; 129, 130, 143 stopped by SIGHUP,
SIGINT, SIGTERM (with --listen: 0 after the drain, see below). However it ends, the proxy shuts down the same way within ${SHUTDOWN_BOUND_MS} ms: every request
in flight is cancelled upstream by the upstream's mechanism, an HTTP session is deleted, the
records and spans are written, and a stdio server is stopped (stdin closed, then SIGTERM, then
SIGKILL to its process group). SIGKILL of the proxy itself runs none of this: the server only
sees its stdin end (docs/proxy.md).

Examples:
  mcp-cancellable proxy --timeout-ms 30000 --max-total-timeout-ms 300000 -- \\
    npx -y @modelcontextprotocol/server-everything stdio
  MCP_TOKEN=... mcp-cancellable proxy --url https://mcp.example.com/mcp \\
    --header 'Authorization: Bearer \${MCP_TOKEN}'
`;

/** The proxy's own flags (the HTTP front's are taken out before: `splitListenArgs`). */
const PROXY_FLAGS = {
  ...SERVER_FLAGS,
  "timeout-ms": { type: "string" },
  "max-total-timeout-ms": { type: "string" },
  "no-reset-on-progress": { type: "boolean" },
  "client-wait-timeout-ms": { type: "string" },
  config: { type: "string" },
  records: { type: "string" },
  verbose: { type: "boolean" },
  otel: { type: "boolean" },
  "max-message-bytes": { type: "string" },
} as const;

/**
 * The arguments with `--` before the server's command when it has none: the command may follow
 * the proxy's flags directly (`proxy --timeout-ms 30000 node server.js`), because a host that
 * splits its own arguments at the first `--` (the MCP Inspector's CLI does) cannot pass one
 * through. The command starts at the first argument that is neither a flag nor a flag's value
 * (`valueFlags`: the flags, without dashes, that take a value). An argument list whose `--`
 * comes before any command is returned as it is (a `--` among the server's own arguments stays
 * theirs: `node server.js --stdio -- extra`).
 */
export function dashesBeforeCommand(argv: readonly string[], valueFlags: readonly string[]): string[] {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    // "--" before any command: the command follows it (a later "--" is the server's own).
    if (arg === "--") return [...argv];
    if (!arg.startsWith("-") || arg === "-") return [...argv.slice(0, i), "--", ...argv.slice(i)];
    if (arg.startsWith("--") && !arg.includes("=") && valueFlags.includes(arg.slice(2))) i++;
  }
  return [...argv];
}

/** The proxy's flags that take a value (without dashes). */
export const PROXY_VALUE_FLAGS: readonly string[] = Object.entries(PROXY_FLAGS)
  .filter(([, flag]) => flag.type === "string")
  .map(([name]) => name);

/**
 * Parses and validates the arguments that follow `proxy`.
 * @returns the options, or `"help"` when help was asked for.
 * @throws {UsageError} naming the flag and what is wrong with it.
 */
export function parseProxyArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): ProxyOptions | "help" {
  const dashes = argv.indexOf("--");
  const own = dashes === -1 ? [...argv] : argv.slice(0, dashes);
  const command = dashes === -1 ? [] : argv.slice(dashes + 1);
  const v = parseFlags(
    own,
    PROXY_FLAGS,
    (message) => (/positional/i.test(message) ? `${message}; put the server's command after "--"` : message),
    LISTEN_FLAG_NAMES,
  );
  if (v.help === true) return "help";

  const stdio = dashes !== -1;
  if (stdio === (v.url !== undefined)) {
    throw new UsageError('give exactly one upstream: "-- <command> [args...]" or --url <url>');
  }
  let upstream: ProxyOptions["upstream"];
  if (stdio) {
    if (v.header !== undefined || v.era !== undefined) {
      const given = v.header === undefined ? "--era is" : v.era === undefined ? "--header is" : "--header and --era are";
      throw new UsageError(
        `${given} for --url (an HTTP server)${v.header === undefined ? "" : "; use --env to give a stdio server what it needs"}`,
      );
    }
    const [program, ...args] = command;
    if (program === undefined || program === "") throw new UsageError('the server\'s command after "--" is empty');
    upstream = { kind: "stdio", command: program, args, ...stdioFlags(v.env, v.cwd) };
  } else {
    if (v.env !== undefined || v.cwd !== undefined) throw new UsageError("--env and --cwd are for a stdio server (after --)");
    upstream = { kind: "http", ...httpFlags(v.url!, v.header, env), era: eraFlag(v.era) };
  }

  const limits: Limits = {};
  const timeoutMs = msFlag("--timeout-ms", v["timeout-ms"], { min: 1, none: true });
  if (timeoutMs !== undefined) limits.timeoutMs = timeoutMs;
  const maxTotalTimeoutMs = msFlag("--max-total-timeout-ms", v["max-total-timeout-ms"], { min: 1, none: true });
  if (maxTotalTimeoutMs !== undefined) limits.maxTotalTimeoutMs = maxTotalTimeoutMs;
  if (v["no-reset-on-progress"] === true) limits.resetTimeoutOnProgress = false;
  const clientWaitTimeoutMs = msFlag("--client-wait-timeout-ms", v["client-wait-timeout-ms"], { min: 1, none: true });
  if (clientWaitTimeoutMs !== undefined) limits.clientWaitTimeoutMs = clientWaitTimeoutMs;
  return {
    upstream,
    limits,
    config: v.config,
    records: v.records,
    verbose: v.verbose === true,
    otel: v.otel === true,
    maxMessageBytes: bytesFlag("--max-message-bytes", v["max-message-bytes"]) ?? DEFAULT_MAX_MESSAGE_BYTES,
  };
}

/** A size flag: a whole number of bytes from `MIN_MESSAGE_BYTES` to `MAX_MESSAGE_BYTES_LIMIT`; `undefined` when absent. */
function bytesFlag(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) throw new UsageError(`${flag}: expected a whole number of bytes, got ${JSON.stringify(text)}`);
  const value = Number(trimmed);
  if (value < MIN_MESSAGE_BYTES || value > MAX_MESSAGE_BYTES_LIMIT) {
    throw new UsageError(`${flag}: expected ${MIN_MESSAGE_BYTES} to ${MAX_MESSAGE_BYTES_LIMIT} bytes, got ${value}`);
  }
  return value;
}
