// `mcp-cancellable proxy --listen <host:port>`: the HTTP front's own flags. They are taken out of
// the command line here, and what is left (the upstream, the limits, the records) is parsed by
// the stdio proxy's own `parseProxyArgs`, so the two fronts share one meaning for every flag.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { MAX_MS, msFlag, UsageError } from "../../args.js";

/** The environment variable the bearer token may come from (instead of `--auth-token-file`). */
export const AUTH_TOKEN_ENV = "MCP_CANCELLABLE_PROXY_TOKEN";

/** Defaults of the HTTP front; durations in ms, sizes in bytes. */
export const FRONT_DEFAULTS = {
  path: "/mcp",
  /** 2025-era sessions open at once on one replica. */
  maxSessions: 256,
  /** Requests in flight at once in one 2025-era session. */
  maxSessionRequests: 64,
  /** Requests in flight at once on one replica, both eras together. */
  maxRequests: 4_096,
  /** A 2025-era session with no HTTP request and nothing in flight for this long is ended (its stdio server stopped), in ms. */
  sessionIdleMs: 15 * 60_000,
  /** The largest request body accepted, in bytes (413 above it). */
  maxBodyBytes: 1_048_576,
  /** Time a client has to send a request's headers, in ms (then the connection is closed). */
  headersTimeoutMs: 10_000,
  /** Time a client has to send a whole request (headers and body), in ms (then 408). */
  requestTimeoutMs: 30_000,
  /** How long an idle keep-alive connection is kept open, in ms. */
  keepAliveMs: 5_000,
  /** On SIGTERM: how long requests in flight may take to finish before they are cancelled upstream, in ms. */
  drainMs: 10_000,
  /** Events kept per 2025-era session for resumption with `Last-Event-ID`. */
  eventsPerSession: 256,
  /** The longest a response stream stays silent, in ms: a comment frame goes on one silent half that long (a load balancer's read timeout must be longer). */
  sseKeepAliveMs: 15_000,
  /** Open TCP connections at once (further ones are refused by the kernel's backlog / closed). */
  maxConnections: 8_192,
} as const;

/** What the HTTP front was asked to do, validated. Durations in ms. */
export interface ListenOptions {
  host: string;
  port: number;
  /** The MCP endpoint's path, such as `/mcp`. */
  path: string;
  /** Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost). */
  loopback: boolean;
  /** The bearer token clients must send (`Authorization: Bearer <token>`); `undefined`: none (loopback binds only). */
  token: string | undefined;
  /** Origins allowed besides the loopback ones (`https://app.example.com`), compared exactly. */
  allowOrigins: string[];
  /** Host header names allowed on a loopback bind besides localhost, 127.0.0.1 and [::1]. */
  allowHosts: string[];
  /** This replica's name: in every record, span and log line, and the prefix of its session ids. */
  replica: string;
  maxSessions: number;
  maxSessionRequests: number;
  maxRequests: number;
  sessionIdleMs: number;
  maxBodyBytes: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveMs: number;
  drainMs: number;
  eventsPerSession: number;
  /** See `FRONT_DEFAULTS.sseKeepAliveMs`. */
  sseKeepAliveMs: number;
  maxConnections: number;
}

const FLAGS = {
  listen: { type: "string" },
  path: { type: "string" },
  "auth-token-file": { type: "string" },
  "allow-origin": { type: "string", multiple: true },
  "allow-host": { type: "string", multiple: true },
  replica: { type: "string" },
  "max-sessions": { type: "string" },
  "max-session-requests": { type: "string" },
  "max-requests": { type: "string" },
  "session-idle-ms": { type: "string" },
  "max-body-bytes": { type: "string" },
  "headers-timeout-ms": { type: "string" },
  "request-timeout-ms": { type: "string" },
  "keep-alive-ms": { type: "string" },
  "drain-ms": { type: "string" },
  "events-per-session": { type: "string" },
  "sse-keep-alive-ms": { type: "string" },
  "max-connections": { type: "string" },
} as const;

/** The HTTP front's flags (without the dashes), for the proxy's "did you mean"; each takes a value. */
export const LISTEN_FLAG_NAMES: readonly string[] = Object.keys(FLAGS);

export const LISTEN_HELP = `
HTTP front (--listen): serve Streamable HTTP to any number of clients instead of one on stdio.
  --listen <host:port>         Listen on host:port (port 0 picks a free one). Prints
                               "listening on http://<host>:<port><path>" on stderr once it
                               accepts connections. 2026-07-28 requests are sessionless (closing
                               a request's response stream cancels it upstream); 2025-era clients
                               get a session (Mcp-Session-Id), one stdio server each.
  --path <path>                The MCP endpoint. Default: ${FRONT_DEFAULTS.path}. GET /healthz and
                               GET /readyz answer health and readiness (503 while draining).
  --auth-token-file <file>     Clients must send "Authorization: Bearer <token>" (the file's
                               content, trimmed; or the ${AUTH_TOKEN_ENV} variable).
                               Required when --listen is not a loopback address.
  --allow-origin <origin>      A browser Origin allowed besides localhost ones (its page gets CORS answers). Repeatable.
  --allow-host <name>          A Host header allowed on a loopback bind besides localhost. Repeatable.
  --replica <name>             This replica's name (records, spans, session id prefix).
                               Default: the host name.
  --max-sessions <n>           2025-era sessions at once. Default: ${FRONT_DEFAULTS.maxSessions}.
  --max-session-requests <n>   Requests in flight in one session. Default: ${FRONT_DEFAULTS.maxSessionRequests}.
  --max-requests <n>           Requests in flight on this replica. Default: ${FRONT_DEFAULTS.maxRequests}.
  --session-idle-ms <ms>       End a session idle this long (its server stopped). Default: ${FRONT_DEFAULTS.sessionIdleMs}.
  --max-body-bytes <n>         Largest request body. Default: ${FRONT_DEFAULTS.maxBodyBytes}.
  --headers-timeout-ms <ms>    Time to send a request's headers. Default: ${FRONT_DEFAULTS.headersTimeoutMs}.
  --request-timeout-ms <ms>    Time to send a whole request. Default: ${FRONT_DEFAULTS.requestTimeoutMs}.
  --keep-alive-ms <ms>         Idle keep-alive connections are closed after this. Default: ${FRONT_DEFAULTS.keepAliveMs}.
  --drain-ms <ms>              On SIGTERM, time for requests in flight before they are cancelled
                               upstream. Default: ${FRONT_DEFAULTS.drainMs}.
  --events-per-session <n>     Events kept per session for Last-Event-ID resumption (0: none).
                               Default: ${FRONT_DEFAULTS.eventsPerSession}.
  --sse-keep-alive-ms <ms>     The longest a response stream (both eras) stays silent: a comment
                               frame goes on one silent half that long; a load balancer's read
                               timeout must be longer. Default: ${FRONT_DEFAULTS.sseKeepAliveMs}.
  --max-connections <n>        Open connections at once. Default: ${FRONT_DEFAULTS.maxConnections}.
  With --listen, SIGTERM, SIGINT and SIGHUP drain the replica and it exits 0 (a graceful stop,
  what a load balancer or Kubernetes expects); a second signal during the drain exits 1 at once.
`;

/**
 * Takes the HTTP front's flags out of `argv` (the part before `--`).
 * @returns the front's options (`undefined` when `--listen` is absent: the stdio front) and the
 *   arguments left for `parseProxyArgs`.
 * @throws {UsageError} a front flag without `--listen`, or a bad value, naming the flag.
 */
export function splitListenArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): { listen: ListenOptions | undefined; rest: string[] } {
  const dashes = argv.indexOf("--");
  const own = dashes === -1 ? [...argv] : argv.slice(0, dashes);
  const tail = dashes === -1 ? [] : argv.slice(dashes);
  const { tokens } = parseArgs({ args: own, options: FLAGS, strict: false, allowPositionals: true, tokens: true });
  const values: Record<string, string[]> = {};
  const taken = new Set<number>();
  for (const token of tokens) {
    if (token.kind !== "option" || !Object.hasOwn(FLAGS, token.name)) continue;
    if (token.value === undefined) throw new UsageError(`--${token.name}: expected a value`);
    taken.add(token.index);
    if (token.inlineValue === false) taken.add(token.index + 1);
    (values[token.name] ??= []).push(token.value);
  }
  const rest = [...own.filter((_, index) => !taken.has(index)), ...tail];
  const one = (name: keyof typeof FLAGS): string | undefined => {
    const list = values[name];
    if (list === undefined) return undefined;
    if (list.length > 1 && FLAGS[name].type === "string" && !("multiple" in FLAGS[name])) throw new UsageError(`--${name}: given twice`);
    return list[0];
  };
  const listen = one("listen");
  if (listen === undefined) {
    const stray = Object.keys(values)[0];
    if (stray !== undefined) throw new UsageError(`--${stray} is an option of the HTTP front: give --listen <host:port> too`);
    return { listen: undefined, rest };
  }
  const { host, port } = hostPort(listen);
  const path = one("path") ?? FRONT_DEFAULTS.path;
  if (!/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(path) || path === "/healthz" || path === "/readyz") {
    throw new UsageError(`--path: expected an absolute path such as /mcp (not /healthz or /readyz), got ${JSON.stringify(path)}`);
  }
  const loopback = isLoopback(host);
  const token = readToken(one("auth-token-file"), env);
  if (!loopback && token === undefined) {
    throw new UsageError(
      `--listen ${listen} is not a loopback address: clients must authenticate. Give --auth-token-file <file> or set ${AUTH_TOKEN_ENV}`,
    );
  }
  const allowOrigins = (values["allow-origin"] ?? []).map(originFlag);
  const allowHosts = (values["allow-host"] ?? []).map((name) => {
    if (!/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$/.test(name))
      throw new UsageError(`--allow-host: expected a host name, got ${JSON.stringify(name)}`);
    return name.toLowerCase();
  });
  const replica = one("replica") ?? (env.HOSTNAME?.trim() || hostname());
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(replica)) {
    throw new UsageError(`--replica: expected 1 to 63 letters, digits, ".", "_" or "-", got ${JSON.stringify(replica)}`);
  }
  const count = (name: keyof typeof FLAGS, fallback: number, min = 1): number => {
    const text = one(name);
    if (text === undefined) return fallback;
    if (!/^\d+$/.test(text.trim())) throw new UsageError(`--${name}: expected a whole number, got ${JSON.stringify(text)}`);
    const value = Number(text.trim());
    if (value < min || value > MAX_MS) throw new UsageError(`--${name}: expected ${min} to ${MAX_MS}, got ${value}`);
    return value;
  };
  const ms = (name: keyof typeof FLAGS, fallback: number): number => msFlag(`--${name}`, one(name), { min: 1 }) ?? fallback;
  return {
    listen: {
      host,
      port,
      path,
      loopback,
      token,
      allowOrigins,
      allowHosts,
      replica,
      maxSessions: count("max-sessions", FRONT_DEFAULTS.maxSessions),
      maxSessionRequests: count("max-session-requests", FRONT_DEFAULTS.maxSessionRequests),
      maxRequests: count("max-requests", FRONT_DEFAULTS.maxRequests),
      sessionIdleMs: ms("session-idle-ms", FRONT_DEFAULTS.sessionIdleMs),
      maxBodyBytes: count("max-body-bytes", FRONT_DEFAULTS.maxBodyBytes, 64),
      headersTimeoutMs: ms("headers-timeout-ms", FRONT_DEFAULTS.headersTimeoutMs),
      requestTimeoutMs: ms("request-timeout-ms", FRONT_DEFAULTS.requestTimeoutMs),
      keepAliveMs: ms("keep-alive-ms", FRONT_DEFAULTS.keepAliveMs),
      drainMs: ms("drain-ms", FRONT_DEFAULTS.drainMs),
      eventsPerSession: count("events-per-session", FRONT_DEFAULTS.eventsPerSession, 0),
      sseKeepAliveMs: ms("sse-keep-alive-ms", FRONT_DEFAULTS.sseKeepAliveMs),
      maxConnections: count("max-connections", FRONT_DEFAULTS.maxConnections),
    },
    rest,
  };
}

/**
 * `host:port`, `[v6]:port`, or `:port` / `port` (127.0.0.1). The port is never optional: a bare
 * address (`127.0.0.1`, `[::1]`) is refused, not read as an address whose last digits are the port.
 */
function hostPort(text: string): { host: string; port: number } {
  const value = text.trim();
  const match = /^(?:(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):)?(\d{1,5})$/.exec(value);
  const port = match === null ? Number.NaN : Number(match[3]);
  if (match === null || !(port >= 0 && port <= 65_535)) {
    const why = match !== null ? `: ${port} is not a port` : /:\d+$/.test(value) ? "" : ": the port is missing";
    throw new UsageError(
      `--listen: expected <host:port> such as 127.0.0.1:8080 or [::1]:8080 (port 0 to 65535; 0 picks a free one), got ${JSON.stringify(text)}${why}`,
    );
  }
  const host = match[1] ?? (match[2] === undefined || match[2] === "" ? "127.0.0.1" : match[2]);
  return { host, port };
}

/** Whether a bind address is loopback only. `0.0.0.0` and `::` are every interface: not loopback. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

function readToken(file: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  let token: string | undefined;
  if (file !== undefined) {
    try {
      token = readFileSync(file, "utf8").trim();
    } catch (error) {
      throw new UsageError(
        `--auth-token-file ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
    if (token === "") throw new UsageError(`--auth-token-file ${file}: the file is empty`);
  } else {
    const fromEnv = env[AUTH_TOKEN_ENV]?.trim();
    token = fromEnv === undefined || fromEnv === "" ? undefined : fromEnv;
  }
  // Never echoed: the messages above name the file, not its content.
  if (token !== undefined && (token.length < 16 || /\s/.test(token))) {
    throw new UsageError(
      `${file === undefined ? AUTH_TOKEN_ENV : `--auth-token-file ${file}`}: the token must be at least 16 characters, with no white space`,
    );
  }
  return token;
}

function originFlag(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--allow-origin: expected an origin such as https://app.example.com, got ${JSON.stringify(text)}`);
  }
  if (url.origin === "null" || url.origin !== text.replace(/\/$/, "")) {
    throw new UsageError(`--allow-origin: expected an origin (scheme://host[:port], no path), got ${JSON.stringify(text)}`);
  }
  return url.origin;
}
