import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { notifyOnCancel } from "../adapters/notification.js";
import type { CancellationAdapter, TransportLike } from "../adapters/types.js";
import { stdioAdapter } from "../adapters/stdio/adapter.js";
import { cancellableFetch, streamableHttpCancellation } from "../adapters/streamable-http/index.js";
import { withCancellation } from "../client/with-cancellation.js";
import type { CancellableClient, ClientLike } from "../client/with-cancellation.js";
import type { Message } from "../wire/messages.js";
import { withLayersBelow } from "../wire/wire.js";
import type { Era, ProbeOptions } from "./args.js";
import { CLOSED_BEFORE_HEADERS } from "./recorder.js";
import type { Recorder } from "./recorder.js";
import { lostText } from "./run.js";
import type { ServerLost } from "./run.js";
import { ChildStdioTransport } from "./stdio-transport.js";
import { describeRequest, displayUrl, truncate } from "./describe.js";
import { processGroupCpuMs } from "./process-cpu.js";

/** The probe's client name and version, as sent in `initialize` (or the 2026 `_meta` envelope). */
export const PROBE_CLIENT_INFO = { name: "mcp-cancellable-probe", version: "0.1.0" } as const;

/** An open, initialized connection to the server under test. */
export interface Connection {
  readonly era: Era;
  /** The negotiated protocol version, as the server stated it. */
  readonly protocolVersion: string | undefined;
  readonly serverInfo: { name?: string; version?: string } | undefined;
  /** The library facade: calls with per-call timeouts and the transport's own cancel. */
  readonly mcp: CancellableClient<TransportLike>;
  /** Sends a message below the library, straight onto the recorded wire (the probe's hand-made cancels). */
  sendRaw(message: Message): Promise<void>;
  /** True once the connection closed (the server exited or hung up). */
  readonly closed: boolean;
  /** How a cancel goes on the wire on this connection, in words. */
  readonly cancelMechanism: string;
  /**
   * The CPU time, in ms, the server's process group has used so far (stdio on Linux, read from
   * `/proc`), or `undefined` where the probe does not own the process (HTTP) or cannot read it.
   */
  cpuTimeMs(): number | undefined;
  /** The `Mcp-Session-Id` the HTTP server assigned, if any (2025-era). */
  sessionId(): string | undefined;
  /** Lines that explain a failure: exit code, stderr tail, output that is not JSON-RPC. */
  diagnose(): string[];
  /** What the SDK client reported to its `onerror` (at most 20): noise the library should have kept away. */
  clientErrors(): string[];
  /** The wire anomalies the library reported (at most 20): rule 12 and rule 21 breaches, unknown progress tokens. */
  anomalies(): string[];
  /**
   * How the server went away on its own (a stdio server that exited, or closed its stdout or
   * stdin, before the probe ended it), or `undefined`. Waits up to `waitMs` for the exit of a
   * server whose pipe closed, to know its exit code.
   */
  lost(waitMs?: number): Promise<ServerLost | undefined>;
  /** Ends the connection and the server process; bounded, never rejects. */
  close(): Promise<void>;
}

/**
 * The probe could not get a working connection: the message says why, for a person. `serverLost`
 * (kind `exited`) says how the server went away on its own, as the report's `serverLost` does.
 */
export class StartupError extends Error {
  override name = "StartupError" as const;
  constructor(
    message: string,
    readonly kind: "spawn" | "exited" | "timeout" | "not-json-rpc" | "initialize-error" | "http" | "missing-sdk" | "tools-list",
    readonly details: string[],
    readonly serverLost?: string,
  ) {
    super(message);
  }
}

interface Opened {
  transport: TransportLike;
  cpuTimeMs(): number | undefined;
  adapter: (recorded: TransportLike) => CancellationAdapter<TransportLike>;
  mechanism: string;
  diagnose(): string[];
  spawnError(): Error | undefined;
  exited(): string | undefined;
  /** How a stdio server went away on its own, as it stands now. */
  lost(): ServerLost | undefined;
  /** Resolves once a stdio server's process exited, or after `ms`. */
  exitedWithin(ms: number): Promise<unknown>;
}

/**
 * Starts the server (stdio) or reaches it (HTTP), and runs the handshake of the asked era
 * within `timeoutMs`: `initialize` (2025-era, `--era legacy`, v1 SDK client) or `server/discover` pinned to
 * 2026-07-28 (v2 SDK client). Every message is recorded with its time.
 *
 * @throws {StartupError} with a readable message: the program could not start, exited, never
 *   answered, does not speak JSON-RPC, refused the handshake, or the v2 SDK is not installed.
 */
export async function openConnection(options: ProbeOptions, recorder: Recorder): Promise<Connection> {
  type V2 = typeof import("@modelcontextprotocol/client");
  let v2: V2 | undefined;
  if (options.era !== "legacy") {
    try {
      v2 = await import("@modelcontextprotocol/client");
    } catch {
      throw new StartupError("--era 2026-07-28 needs the v2 SDK client: npm install @modelcontextprotocol/client", "missing-sdk", []);
    }
  }
  const opened = openTransport(options, recorder, v2);
  // When the SDK gives up on the handshake it closes the transport itself: remember when, so
  // a server that exited before that is told apart from one we ended.
  let closeRequestedAt = Number.POSITIVE_INFINITY;
  const innerClose = opened.transport.close.bind(opened.transport);
  (opened.transport as { close(): Promise<void> }).close = () => {
    closeRequestedAt = Math.min(closeRequestedAt, recorder.now());
    return innerClose();
  };
  const recorded = opened.transport;
  /** The probe's SDK client (either line): what it calls of it. */
  let client: ClientLike & {
    connect(transport: TransportLike, options?: { timeout?: number }): Promise<void>;
    close(): Promise<void>;
    onerror?: ((error: Error) => void) | undefined;
    getServerVersion?: () => { name?: string; version?: string } | undefined;
    getNegotiatedProtocolVersion?: () => string | undefined;
  };
  if (v2 === undefined) {
    client = new Client(PROBE_CLIENT_INFO, { capabilities: {} });
  } else {
    client = new v2.Client(PROBE_CLIENT_INFO, {
      capabilities: {},
      versionNegotiation: { mode: { pin: "2026-07-28" }, probe: { timeoutMs: options.timeoutMs } },
    });
  }
  const sdkErrors: string[] = [];
  client.onerror = (error) => {
    if (sdkErrors.length < 20) sdkErrors.push(error.message);
  };
  const anomalies: string[] = [];
  const mcp = withCancellation(client, withLayersBelow(opened.adapter(recorded), [recorder.layer()]), {
    timeoutMs: options.timeoutMs,
    onAnomaly: (anomaly) => {
      if (anomalies.length < 20) anomalies.push(`${anomaly.kind}: ${anomaly.message}`);
    },
  });
  let closed = false;
  void recorder.waitFor((event) => event.kind === "closed", 2_147_483_647).then(() => (closed = true));
  const close = async (): Promise<void> => {
    // A 2025-era session is ended (DELETE) before the close, as the probe's other two sessions
    // are: the close alone left it in the server's table, its work running (an outside tester's).
    const session = opened.transport as { sessionId?: unknown; terminateSession?: () => Promise<void> };
    const ending =
      typeof session.sessionId === "string" && typeof session.terminateSession === "function"
        ? session.terminateSession().catch(() => undefined)
        : undefined;
    await Promise.race([
      (async () => {
        await ending;
        await client.close().catch(() => undefined);
      })(),
      new Promise((resolve) => setTimeout(resolve, 3_000).unref()),
    ]);
    await opened.transport.close().catch(() => undefined);
  };

  const connectMark = recorder.mark(options.era === "legacy" ? "connect: initialize" : "connect: server/discover (2026-07-28)");
  const deadline = options.timeoutMs + 1_000;
  let failure: unknown;
  let timedOut = false;
  let exitedFirst = false;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        timedOut = true;
        reject(new Error("deadline"));
      }, deadline);
      client.connect(mcp.transport, { timeout: options.timeoutMs }).then(
        () => (clearTimeout(timer), resolve()),
        (error: unknown) => (clearTimeout(timer), reject(error)),
      );
    });
  } catch (error) {
    failure = error;
    // The SDK closes the transport itself when initialize fails, so a server that exits after
    // this moment was ended by us; one that closed before caused the failure.
    const closedEvent = recorder.events.find((event) => event.kind === "closed");
    // A server that answered the handshake with an error refused it, whatever it did next.
    const refused = recorder.events.some((event) => event.from === "server" && event.message?.error !== undefined);
    exitedFirst =
      (closedEvent !== undefined
        ? closedEvent.at <= closeRequestedAt
        : closeRequestedAt === Number.POSITIVE_INFINITY && /connection closed/i.test(String(error))) ||
      // Its stdout ended, or a write to its stdin failed (EPIPE), before the probe closed them.
      (!refused && opened.lost() !== undefined);
  }
  if (failure !== undefined) {
    // Let the exit code of a server that went away arrive (the close event trails the pipe).
    if (exitedFirst && opened.exited() === undefined) {
      await (options.target.kind === "stdio" ? opened.exitedWithin(500) : recorder.waitFor((event) => event.kind === "closed", 500));
    }
    // The v2 client's server/discover gives up after --timeout with "Version negotiation
    // failed", not a timeout error: a server that wrote nothing all that time was silent, not refusing.
    const silent =
      !recorder.events.some((event) => event.from === "server" && event.kind === "message") &&
      recorder.now() - connectMark.at >= options.timeoutMs;
    const error = startupError(options, opened, recorder, failure, timedOut || silent, sdkErrors, exitedFirst);
    await close();
    throw error;
  }

  const sdk = client;
  const protocolVersion = sdk.getNegotiatedProtocolVersion?.() ?? negotiatedVersion(recorder);
  return {
    era: options.era,
    protocolVersion,
    serverInfo: sdk.getServerVersion?.(),
    mcp: mcp as CancellableClient<TransportLike>,
    sendRaw: (message) => {
      recorder.add({ from: "client", kind: "message", message });
      return (recorded.send as (message: Message) => Promise<void>)(message);
    },
    get closed() {
      return closed;
    },
    cancelMechanism: opened.mechanism,
    cpuTimeMs: () => opened.cpuTimeMs(),
    sessionId: () => {
      const id = (opened.transport as { sessionId?: unknown }).sessionId;
      return typeof id === "string" && id !== "" ? id : undefined;
    },
    diagnose: () => opened.diagnose(),
    lost: async (waitMs = 0) => {
      if (opened.lost()?.running === true) await opened.exitedWithin(waitMs);
      return opened.lost();
    },
    clientErrors: () => [...sdkErrors],
    anomalies: () => [...anomalies],
    close,
  };
}

function openTransport(options: ProbeOptions, recorder: Recorder, v2: typeof import("@modelcontextprotocol/client") | undefined): Opened {
  const target = options.target;
  if (target.kind === "stdio") {
    const transport = new ChildStdioTransport(
      {
        command: target.command,
        args: target.args,
        env: target.env,
        ...(target.cwd === undefined ? {} : { cwd: target.cwd }),
      },
      { closeOnStdoutEnd: true },
    );
    let invalid = 0;
    let firstInvalid = "";
    transport.oninvalid = (line, why) => {
      if (invalid++ === 0) firstInvalid = `${why}: ${truncate(line, 120)}`;
      recorder.add({ from: "server", kind: "invalid", text: `${why}: ${truncate(line, 200)}` });
    };
    return {
      transport,
      // The write queue reads the child's stdin, as the proxy's upstream does (upstream.ts): a
      // cancel line behind a full pipe is not taken as sent until the pipe took it.
      adapter: (recorded) => stdioAdapter(recorded, () => transport.stdin, { holdMessages: false, sendSettlesAtWrite: true }),
      mechanism: "notifications/cancelled on the server's stdin (rules 6, 31)",
      cpuTimeMs: () => {
        const pid = transport.pid;
        // The server runs as the leader of its own process group (not on Windows, where /proc is absent anyway).
        return pid === undefined || transport.exit !== undefined || process.platform === "win32" ? undefined : processGroupCpuMs(pid);
      },
      spawnError: () => transport.spawnError,
      exited: () =>
        transport.exit === undefined
          ? undefined
          : transport.exit.signal !== null
            ? `was killed by ${transport.exit.signal}`
            : `exited with code ${transport.exit.code}`,
      lost: () => {
        const pipe = transport.hungUp;
        if (pipe === undefined) return undefined;
        const exit = transport.exit;
        if (exit === undefined) return { how: `closed its ${pipe}`, running: true };
        return { how: exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`, running: false };
      },
      exitedWithin: (ms) => transport.exitedWithin(ms),
      diagnose: () => {
        const lines: string[] = [];
        if (transport.exit !== undefined) {
          lines.push(
            transport.exit.signal !== null
              ? `the process was killed by ${transport.exit.signal}`
              : `the process exited with code ${transport.exit.code}`,
          );
        } else if (transport.hungUp !== undefined) {
          lines.push(`the process closed its ${transport.hungUp} and was still running (the probe stops it)`);
        }
        if (invalid > 0) lines.push(`${invalid} line(s) on stdout were not JSON-RPC; the first: ${firstInvalid}`);
        const tail = transport.stderrTail.trim();
        if (tail !== "") {
          const last = tail
            .split(/\r?\n/)
            .slice(-6)
            .map((line) => `  ${truncate(line, 160)}`);
          lines.push("the end of its stderr:", ...last);
        }
        return lines;
      },
    };
  }
  // 2025-era: the POSTed notification only (rule 40), and the request's stream is left open for
  // the window, so the probe sees whether the server stops (a client using the library's
  // streamable-http adapter would close it right after the 202). 2026-07-28: the library's
  // streamable-http adapter closes that request's own stream (rule 6) and sends nothing (rule 28).
  const init = { requestInit: { headers: target.headers } };
  const transport =
    v2 === undefined
      ? new StreamableHTTPClientTransport(new URL(target.url), { ...init, fetch: recordingFetch(recorder) })
      : new v2.StreamableHTTPClientTransport(new URL(target.url), {
          ...init,
          fetch: cancellableFetch({ fetch: recordingFetch(recorder) }),
        });
  return {
    transport,
    adapter: (recorded) => (v2 === undefined ? notifyOnCancel(recorded) : streamableHttpCancellation(recorded)),
    mechanism:
      options.era === "legacy"
        ? "notifications/cancelled POSTed to the endpoint (2025-era, rule 40)"
        : "closing the request's response stream (2026-07-28, rule 6)",
    cpuTimeMs: () => undefined,
    spawnError: () => undefined,
    exited: () => undefined,
    lost: () => undefined,
    exitedWithin: async () => undefined,
    diagnose: () => [],
  };
}

/**
 * A `fetch` that records each HTTP exchange: the method and the JSON-RPC message it carried, the
 * status, and the client closing a POST: its response stream, or the request itself before the
 * response headers came (a server that holds its response head until its first event, as the v2
 * SDK's `createMcpHandler` does, is cancelled that way; it sees the request close unfinished). The
 * abort listener is added before the request starts, so it runs before the fetch implementation's
 * own (which does its work synchronously) and the recorded time is the moment of the abort.
 */
export function recordingFetch(recorder: Recorder, base: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    const method = init?.method ?? "GET";
    const what = describeBody(init?.body);
    const signal = init?.signal ?? undefined;
    let stage: "headers" | "body" | "ended" = "headers";
    let abortedBeforeHeaders = false;
    const onAbort = (): void => {
      if (method !== "POST") return;
      if (stage === "body") recorder.add({ from: "client", kind: "http", text: `closed the response stream of POST ${what}` });
      else if (stage === "headers") {
        abortedBeforeHeaders = true;
        recorder.add({ from: "client", kind: "http", text: `${CLOSED_BEFORE_HEADERS} POST ${what} before its response headers came` });
      }
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = (): void => {
      stage = "ended";
      signal?.removeEventListener("abort", onAbort);
    };
    let response: Response;
    try {
      response = await base(input, init);
    } catch (error) {
      done();
      const aborted = signal?.aborted === true;
      // Recorded already, by the client, at the moment of the abort.
      if (aborted && abortedBeforeHeaders) throw error;
      recorder.add({
        from: "server",
        kind: "http",
        text: `${method} ${what}: ${aborted ? "aborted by the client before the response headers" : withCause(error)}`,
      });
      throw error;
    }
    const type = response.headers.get("content-type") ?? "no content-type";
    recorder.add({ from: "server", kind: "http", status: response.status, text: `${method} ${what} → ${response.status} (${type})` });
    if (response.body === null || method !== "POST") {
      done();
      return response;
    }
    stage = "body";
    const body = response.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: done }));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

function describeBody(body: unknown): string {
  if (typeof body !== "string") return "(no JSON-RPC body)";
  try {
    const parsed = JSON.parse(body) as Message | Message[];
    const first = Array.isArray(parsed) ? parsed[0] : parsed;
    return first === undefined ? "(empty batch)" : describeRequest(first);
  } catch {
    return "(body not JSON)";
  }
}

/** The protocol version from the recorded `initialize` answer. */
function negotiatedVersion(recorder: Recorder): string | undefined {
  for (const event of recorder.events) {
    const result = event.message?.result as { protocolVersion?: unknown } | undefined;
    if (event.from === "server" && typeof result?.protocolVersion === "string") return result.protocolVersion;
  }
  return undefined;
}

function startupError(
  options: ProbeOptions,
  opened: Opened,
  recorder: Recorder,
  failure: unknown,
  timedOut: boolean,
  sdkErrors: string[],
  exitedFirst: boolean,
): StartupError {
  const target = options.target;
  const who = target.kind === "stdio" ? `\`${target.line}\`` : displayUrl(target.url);
  const handshake = options.era === "legacy" ? "initialize" : "server/discover (2026-07-28)";
  // An exit the probe itself caused (by closing stdin) explains nothing.
  const details = opened.diagnose().filter((line) => exitedFirst || !line.startsWith("the process "));
  const spawnError = opened.spawnError();
  if (spawnError !== undefined) {
    const code = (spawnError as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such program" : code === "EACCES" ? "permission denied" : spawnError.message;
    return new StartupError(`could not start ${who}: ${why}`, "spawn", details);
  }
  const answered = recorder.events.some((event) => event.from === "server" && event.kind === "message");
  if (exitedFirst) {
    // After its answer the handshake was still under way (the client's notifications/initialized).
    const lost = opened.lost() ?? { how: opened.exited() ?? "closed the connection", running: false };
    const text = lostText(lost, answered ? `during ${handshake}` : `before answering ${handshake}`);
    return new StartupError(text, "exited", details, text);
  }
  const invalid = recorder.events.some((event) => event.kind === "invalid");
  if (!answered && invalid) {
    return new StartupError(`the server does not speak JSON-RPC: nothing it wrote was a JSON-RPC message`, "not-json-rpc", details);
  }
  const http = recorder.events.filter((event) => event.kind === "http" && (event.status === undefined || event.status >= 400));
  const message = failure instanceof Error ? failure.message : String(failure);
  // What the wire shows of the handshake: its requests' ids, and whether a response to one came.
  const handshakeIds = new Set<unknown>();
  for (const event of recorder.events) {
    const sent = event.from === "client" ? event.message : undefined;
    if (sent?.method === "initialize" || sent?.method === "server/discover") handshakeIds.add(sent.id);
  }
  const responses = recorder.events.filter(
    (event) =>
      event.from === "server" && event.message !== undefined && event.message.method === undefined && event.message.id !== undefined,
  );
  const answeredHandshake = responses.some((event) => handshakeIds.has(event.message!.id));
  // The client gave up (its --timeout): by the probe's own deadline, or the SDK's timeout with no
  // answer to the handshake on the wire. Never from a server's own error, whatever its words or
  // code (an audit's: "upstream database timed out" was told as no answer within --timeout).
  const gaveUp =
    timedOut || (!answeredHandshake && ((failure as { code?: unknown } | null)?.code === -32001 || /timed? ?out/i.test(message)));
  // Responses that answered no request of the client's (the handshake answered under another id).
  const strays = responses.filter((event) => !handshakeIds.has(event.message!.id));
  const stray =
    !answeredHandshake && strays.length > 0
      ? `; it answered with id ${JSON.stringify(strays[0]!.message!.id)}, which names no request of the client's (a response carries the id of the request it answers)`
      : "";
  const timeout = `did not answer ${handshake} within --timeout (${options.timeoutMs} ms)${stray}`;
  if (target.kind === "http" && (http.length > 0 || !answered)) {
    const last = http.at(-1);
    const extra = [...details, ...sdkErrors.slice(0, 3)];
    // The probe gave up waiting (its --timeout) and closed the request itself: the server was
    // reached, or at least not refused, and did not answer in time. Not "could not reach".
    const closedByUs =
      last?.from === "client" || (last !== undefined && (last.text ?? "").includes("aborted by the client before the response headers"));
    const head = recorder.events.filter((event) => event.kind === "http" && event.status !== undefined).at(-1);
    // A head that came with an MCP content type and no answer in it in time is a slow answer too;
    // one with another type (a web page) was answered, not as an MCP server (below).
    const mcpHead = head === undefined || /→ 2\d\d \((text\/event-stream|application\/json)/.test(head.text ?? "");
    if (last?.status === undefined && (closedByUs || gaveUp) && mcpHead) {
      return new StartupError(
        `${who} ${timeout}${head === undefined ? " (no response headers came)" : ` (${head.text ?? ""}, but no answer in it)`}`,
        "timeout",
        extra,
      );
    }
    if (last?.status !== undefined) {
      // The server answered: say what it answered, never "could not reach".
      const hint =
        options.era === "legacy"
          ? ""
          : last.status === 400 || last.status === 404 || last.status === 405
            ? ": it does not speak 2026-07-28 (a 2025-era server? try --era legacy)"
            : "";
      return new StartupError(`${who} answered ${handshake} with HTTP ${last.status}${hint} (${last.text ?? ""})`, "http", extra);
    }
    // An answer with a success status but not an MCP one (a web page, a proxy's login form): it
    // was reached, and the status says so.
    if (head?.status !== undefined) {
      return new StartupError(
        `${who} answered ${handshake} with HTTP ${head.status}, but not as an MCP server: ${truncate(last?.text ?? head.text ?? message, 300)}`,
        "http",
        extra,
      );
    }
    return new StartupError(`could not reach ${who}: ${last?.text ?? message}`, "http", extra);
  }
  if (gaveUp) return new StartupError(`the server ${timeout}`, "timeout", details);
  const hint = options.era === "legacy" ? "" : " (a 2025-era server? try --era legacy)";
  return new StartupError(`the server refused ${handshake}: ${truncate(message, 300)}${hint}`, "initialize-error", details);
}

/**
 * A fetch error's message with its cause: undici says only "fetch failed", and why (connection
 * refused, no such host, a reset) is in its `cause` (`ECONNREFUSED 127.0.0.1:38419`).
 */
function withCause(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (cause === undefined || cause === null) return message;
  const why =
    typeof cause.message === "string" && cause.message !== "" ? cause.message : typeof cause.code === "string" ? cause.code : undefined;
  return why === undefined || message.includes(why) ? message : `${message} (${why})`;
}
