// The mixed soak: one long-lived connection per transport (a stdio child; Streamable HTTP in the
// 2025-era with a session, on the v1 SDK's own server answering in SSE and on one answering in
// JSON; 2026-07-28 stateless), many concurrent calls whose outcomes are drawn at random from a
// seeded generator (succeed, time out, abort, maximum total timeout, late result, late progress,
// server error), and a server crash with a reconnect at a third and at two thirds of each run. At
// the end it checks what must always hold: every call settled exactly once with the error class
// and record its outcome calls for; nothing pending in the library, the adapter or the SDK client;
// no listener left on the long-lived signal; tombstones and records within their caps; no timer or
// socket beyond the baseline; the heap flat between the first and the last quarter; no `onerror`
// outside a crash window; no warning at all (the stdio transport's `send` is wrapped, as a logging
// wrapper would); and each record against what its server logged (./server-log.ts): no
// notification after its response, none before its request where the server shows it took the
// request up (stdio, SSE), and no record whose `sentAt`, `undelivered` or `not-sent` contradicts
// the server's log (issue 27).
//
// Run: node --expose-gc --import tsx test/soak/soak.ts [--short | --long [--seconds N]] [--replay N] [--only T] [--json] [--dump DIR]
//   --short  (CI: npm run soak:short) 3,000 calls on stdio and 1,500 on each HTTP server, 100 in flight
//   --long   (npm run soak) 120 s per transport (--seconds N to change it), 200 in flight
// Prints the figures per transport, then (with --json) one JSON line; exits 1 if a check failed.
// Only 127.0.0.1 and stdio; every loop is bounded by the call count or the duration, every wait by a deadline.
import { getEventListeners } from "node:events";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { CallCancelledError, CallTimeoutError, ConnectionClosedError, McpCancellableError, withCancellation } from "../../src/index.js";
import type { CancellableClient } from "../../src/index.js";
import type { TransportLike } from "../../src/core.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import type { StreamableHttpAdapter } from "../../src/adapters/streamable-http/index.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import { fixture } from "../helpers/stdio.js";
import { CONNECTION_HEADER, startSdkHttp } from "./sdk-http-server.js";
import { ServerLog, addCounts, noCounts } from "./server-log.js";
import type { Carrier, Counts } from "./server-log.js";

const argv = process.argv.slice(2);
const LONG = argv.includes("--long");
const SEED = Number(argv[argv.indexOf("--replay") + 1] ?? NaN) || 20_261_130;
/** --dump DIR: each connection's server log beside its records, as CSV (DIR/<transport>-<n>.csv). */
const DUMP = argv.includes("--dump") ? argv[argv.indexOf("--dump") + 1] : undefined;
if (DUMP !== undefined) mkdirSync(DUMP, { recursive: true });
/** Short mode: calls per transport (HTTP calls cost the 2-core machine about ten times a stdio call). */
const SHORT_CALLS = { stdio: 3_000, http: 1_500 };
/** Long mode: each transport runs this long, ms (`--seconds N` to change it). */
const DURATION_MS = argv.includes("--seconds") ? Number(argv[argv.indexOf("--seconds") + 1]) * 1_000 : 120_000;
if (!(DURATION_MS > 0)) {
  process.stderr.write("--seconds takes a number of seconds\n");
  process.exit(2);
}
const IN_FLIGHT = LONG ? 200 : 100;
const CAP = 2_000; // maxTombstones and maxRecords per connection
const HEAP_GROWTH_LIMIT = 8 * 1024 * 1024; // bytes, last quarter minus first
// Calls that should complete get a roomy idle timeout: on a loaded 2-core machine a POST can
// wait seconds for the CPU, and a starved process is not what this soak looks for.
const COMPLETE_MS = 30_000;
const SETTLE_DEADLINE_MS = 10_000; // slack on top of 20 ms per call (short) or the duration (long)
/**
 * How long, at most, the end of a run waits for what is still on its way (ms): a 2025-era
 * notification POST is bounded by undici's connect timeout (10 s), and retried once.
 */
const QUIET_DEADLINE_MS = 25_000;
/** How long a server's own log may take to be read to its end once its connection closed, ms. */
const LOG_DEADLINE_MS = 5_000;

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  process.stderr.write("run with node --expose-gc\n");
  process.exit(2);
}

/** mulberry32: a small seeded generator, so a failing run can be replayed with --replay N. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type Kind = "succeed" | "server-error" | "timeout" | "abort" | "max-timeout" | "late-result" | "late-progress";
const KINDS: readonly Kind[] = ["succeed", "succeed", "server-error", "timeout", "abort", "max-timeout", "late-result", "late-progress"];

type TransportName = "stdio" | "http-2025-sse" | "http-2025-json" | "http-2026-07-28";

interface Connection {
  readonly mcp: CancellableClient<TransportLike>;
  readonly client: object;
  /** Closes this connection only (on stdio the SDK Client is reused across reconnects). */
  close(): Promise<void>;
  readonly adapter?: StreamableHttpAdapter<TransportLike>;
  /** What its server logged, side by side with its records. */
  readonly log: ServerLog;
  /** Resolves once the server's log of this connection is complete (stdio: its stderr ended). */
  logged(): Promise<void>;
  /** Set when the driver crashed the server under this connection: its errors are injected. */
  crashed: boolean;
}

interface Peer {
  /** How its transport carries a cancel (what its server's log must show). */
  readonly carrier: Carrier;
  /** Its tool that never answers (the server holds the request until it is cancelled). */
  readonly silentTool: string;
  /** `index`: the connection's number; `log`: where the server and the client log what they see of it. */
  connect(index: number, log: ServerLog, onError: (error: Error) => void): Promise<Connection>;
  /** Kills the server under every call in flight; resolves once the client saw it (bounded). */
  crash(): Promise<void>;
  /** Exchanges the server holds after the client closed them (the v1 SDK in JSON mode; see SdkHttpServer.held). */
  held?(): number;
  stop(): Promise<void>;
}

const issues: string[] = [];
/** The transport being soaked (they run one after the other): its warnings are counted on it. */
let soaking: TransportName | undefined;
const warnings: Partial<Record<TransportName | "none", string[]>> = {};
// Any warning fails the soak (issue 27: a MaxListenersExceededWarning from stdio writes under
// backpressure, through a wrapped send, is what the write queue exists to prevent).
process.on("warning", (w) => {
  // The soak's deadlines are tens of ms on purpose: the library's one-time "is that seconds?" warning is expected.
  if ((w as { code?: string }).code === "MCP_CANCELLABLE_SHORT_DURATION") return;
  (warnings[soaking ?? "none"] ??= []).push(`${w.name}: ${w.message}${w.stack === undefined ? "" : `\n${w.stack}`}`);
});
process.on("unhandledRejection", (r) => issues.push(`unhandledRejection: ${String(r)}`));

type Sendable = { send(message: { method?: unknown; id?: unknown; params?: unknown }, options?: unknown): Promise<void> };

/**
 * A logging wrapper on the transport's `send`, as bots put on transports: it tells `log` each
 * message the client hands to its transport (the cancel lines, in order, and when).
 */
function watchSend(transport: Sendable, log: ServerLog): void {
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    log.clientSent(message, performance.now());
    return send(message, options);
  };
}

type Receiving = { onmessage?: (message: { method?: unknown; id?: unknown }, extra?: unknown) => void };

/**
 * A wrapper on the transport's `onmessage` (set by the library when the client connected): tells
 * `log` when each response reached the client, the earliest it could know its request was over.
 */
function watchReceive(transport: Receiving, log: ServerLog): void {
  const deliver = transport.onmessage;
  if (deliver === undefined) throw new Error("the soak's transport has no onmessage after connect");
  transport.onmessage = (message, extra) => {
    log.clientRead(message, performance.now());
    deliver.call(transport, message, extra);
  };
}

/**
 * stdio: the scripted server (test/fixtures/scripted-server.mjs, `--log-times`) logs each line it
 * reads (`RECV@<ms> <json>`) and each response it writes (`SENT@<ms> <id>`) on its stderr, in the
 * order it did them: that order is the log's (a line number); the times are its own (wall clock),
 * put on this process's performance.now().
 */
async function stdioPeer(): Promise<Peer> {
  let transport: StdioClientTransport | undefined;
  const client = new ClientV1({ name: "soak", version: "1.0.0" });
  return {
    carrier: { notifications: true, ordered: true, fifo: true },
    silentTool: "silent",
    async connect(_index, log, onError) {
      transport = new StdioClientTransport({
        command: process.execPath,
        args: [fixture("scripted-server.mjs"), "--log-times"],
        stderr: "pipe",
      });
      const ended = readServerLog(transport, log);
      watchSend(transport as unknown as Sendable, log);
      const mcp = withCancellation(client, stdioCancellation(transport), {
        onRecord: (r) => log.record(r),
        maxTombstones: CAP,
        maxRecords: CAP,
      });
      client.onerror = onError;
      await client.connect(mcp.transport);
      watchReceive(transport as unknown as Receiving, log);
      const own = transport;
      return { mcp, client, log, logged: () => ended, crashed: false, close: () => own.close() };
    },
    async crash() {
      if (transport?.pid != null) process.kill(transport.pid, "SIGKILL");
      // The SDK Client can connect again only once it has seen the old transport close.
      for (let i = 0; i < 500 && client.transport !== undefined; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    },
    async stop() {
      await client.close();
    },
  };
}

/** Feeds the scripted server's stderr into `log`; resolves when it ended. */
function readServerLog(transport: StdioClientTransport, log: ServerLog): Promise<void> {
  const stderr = transport.stderr;
  if (stderr === null) throw new Error("the stdio transport has no stderr pipe");
  let carry = "";
  let line = 0;
  stderr.on("data", (chunk: Buffer) => {
    const lines = (carry + chunk.toString("utf8")).split("\n");
    carry = lines.pop()!;
    for (const text of lines) {
      line++;
      const space = text.indexOf(" ");
      const [what, at] = text.slice(0, space).split("@");
      const t = Number(at) - performance.timeOrigin;
      if (what === "SENT") {
        log.answered(JSON.parse(text.slice(space + 1)) as unknown, line, t);
      } else if (what === "RECV") {
        let message: { method?: string; id?: unknown; params?: { requestId?: unknown } };
        try {
          message = JSON.parse(text.slice(space + 1)) as typeof message;
        } catch {
          continue;
        }
        if (message.method === "tools/call") log.took(message.id, line, t);
        else if (message.method === "notifications/cancelled") log.cancelled(message.params?.requestId, line, t);
      }
    }
  });
  return new Promise((resolve) => stderr.once("end", resolve));
}

/** The 2025-era: the v1 SDK's own server (stateful), answering in SSE or in JSON, and the v1 client. */
async function sdkHttpPeer(json: boolean): Promise<Peer> {
  const logs: ServerLog[] = [];
  const server = await startSdkHttp({
    json,
    log: {
      arrived: (c, id, t, cancel) => logs[c]?.arrived(id, t, cancel),
      took: (c, id, t) => logs[c]?.took(id, t),
      answered: (c, id, t) => logs[c]?.answered(id, t),
      cancelled: (c, id, t) => logs[c]?.cancelled(id, t),
      unanswered: (c, id) => logs[c]?.unanswered(id),
    },
  });
  return {
    carrier: { notifications: true, ordered: !json, fifo: false },
    silentTool: "silent",
    async connect(index, log, onError) {
      logs[index] = log;
      const client = new ClientV1({ name: "soak", version: "1.0.0" });
      const transport = new TransportV1(server.url, {
        fetch: cancellableFetch(),
        requestInit: { headers: { [CONNECTION_HEADER]: String(index) } },
      });
      watchSend(transport as unknown as Sendable, log);
      const adapter = streamableHttpCancellation(transport);
      const mcp = withCancellation(client, adapter, { onRecord: (r) => log.record(r), maxTombstones: CAP, maxRecords: CAP });
      client.onerror = onError;
      await client.connect(mcp.transport);
      watchReceive(transport as unknown as Receiving, log);
      return { mcp, client, adapter, log, logged: async () => {}, crashed: false, close: () => client.close() };
    },
    crash: () => server.crash(),
    held: () => server.held(),
    stop: () => server.stop(),
  };
}

/** 2026-07-28: the raw server (stateless), the v2 client pinned to 2026-07-28; no notification may arrive. */
async function modernPeer(): Promise<Peer> {
  const logs: ServerLog[] = [];
  const server = await startRawHttp({
    era: "2026-07-28",
    tagHeader: CONNECTION_HEADER,
    onEvent: (event) => {
      const log = logs[Number(event.tag ?? -1)];
      if (log === undefined) return;
      const t = performance.now();
      if (event.kind === "request" && event.rpc === "tools/call") log.took(event.id, t);
      else if (event.kind === "request" && event.rpc === "notifications/cancelled") log.cancelled(event.cancelOf, t);
      else if (event.kind === "close" && event.rpc === "tools/call" && event.finished === true) log.answered(event.id, t);
    },
  });
  return {
    carrier: { notifications: false, ordered: true, fifo: false },
    silentTool: "no-headers",
    async connect(index, log, onError) {
      logs[index] = log;
      const client = new ClientV2({ name: "soak", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
      const transport = new TransportV2(server.url, { requestInit: { headers: { [CONNECTION_HEADER]: String(index) } } });
      watchSend(transport as unknown as Sendable, log);
      const adapter = streamableHttpCancellation(transport);
      const mcp = withCancellation(client, adapter, { onRecord: (r) => log.record(r), maxTombstones: CAP, maxRecords: CAP });
      client.onerror = onError;
      await client.connect(mcp.transport);
      watchReceive(transport as unknown as Receiving, log);
      return { mcp, client, adapter, log, logged: async () => {}, crashed: false, close: () => client.close() };
    },
    crash: async () => server.crash(),
    stop: () => server.stop(),
  };
}

/** The tool call and options that produce `kind` on this transport. */
function callFor(kind: Kind, peer: Peer, http: boolean, next: () => number, signal: AbortSignal) {
  const between = (lo: number, hi: number) => Math.round(lo + next() * (hi - lo));
  switch (kind) {
    case "succeed":
      return { params: { name: http && next() < 0.5 ? "sse-echo" : "echo" }, options: { timeoutMs: COMPLETE_MS, signal } };
    case "server-error":
      return { params: { name: "fail" }, options: { timeoutMs: COMPLETE_MS, signal } };
    case "timeout":
      return { params: { name: peer.silentTool }, options: { timeoutMs: between(20, 100), signal } };
    case "abort":
      return { params: { name: peer.silentTool }, options: { timeoutMs: COMPLETE_MS }, abortAfterMs: between(1, 60) };
    case "max-timeout":
      return {
        params: { name: "progress", arguments: { every: 10, steps: 40 } },
        options: { timeoutMs: 1_000, resetTimeoutOnProgress: true, maxTotalTimeoutMs: between(40, 120), signal },
      };
    case "late-result": // the server answers 150 ms after it read the call, ignoring the cancel at 30 ms
      return { params: { name: "late", arguments: { ms: 150 } }, options: { timeoutMs: 30, signal } };
    case "late-progress": // progress goes on after the timeout at 30 ms
      return { params: { name: "progress", arguments: { every: 10, steps: 15 } }, options: { timeoutMs: 30, signal } };
  }
}

/** What a call of this kind must end as: the error class and code, and the record's status and trigger. */
function expected(kind: Kind): { error?: new (...args: never[]) => Error; code?: string; status: string; trigger?: string } {
  switch (kind) {
    case "succeed":
      return { status: "succeeded" };
    case "server-error":
      return { status: "failed" };
    case "abort":
      return { error: CallCancelledError, code: "CANCELLED", status: "cancelled", trigger: "aborted" };
    case "max-timeout":
      return { error: CallTimeoutError, code: "MAX_TOTAL_TIMEOUT", status: "cancelled", trigger: "max-total-timeout" };
    default:
      return { error: CallTimeoutError, code: "REQUEST_TIMEOUT", status: "cancelled", trigger: "timeout" };
  }
}

interface Figures {
  transport: TransportName;
  calls: number;
  byKind: Record<string, number>;
  crashes: number;
  connectionClosedByCrash: number;
  transportErrorsByCrash: number;
  /** The first 20 settle errors, and how many there were. */
  settleErrors: string[];
  settleErrorCount: number;
  unexpectedErrors: string[];
  unexpectedErrorCount: number;
  injectedErrors: number;
  lateDiscarded: { results: number; errors: number; progress: number };
  heapQuarters: number[];
  /** The server's held exchanges at each heap sample (see `Peer.held`). */
  heldQuarters: number[];
  /** What the run noted without failing on it. */
  notes: string[];
  leftovers: string[];
  elapsedMs: number;
  /** What the server logged against the records (./server-log.ts), summed over the connections. */
  server: Counts;
  /** Server-log findings that fail the run (contradictions, overtakes where the server shows the order, after-response, duplicates). */
  serverFailures: string[];
  /** Timelines of the notifications that arrived after their response. */
  afterResponse: string[];
  /** Overtakes counted but not failed (a JSON-response server), with their timelines. */
  overtakes: string[];
  warnings: string[];
  /** The event loop's delay over the run (ms): what stalls the client (and the in-process HTTP servers) saw. */
  loopDelayMs: { p99: number; max: number };
  /** The soak's own full GCs before each heap sample: when (ms, performance.now()) and how long they held the loop. */
  gcPauses: { at: number; ms: number }[];
}

async function soak(name: TransportName, peer: Peer): Promise<Figures> {
  const next = random(SEED ^ name.length);
  const figures: Figures = {
    transport: name,
    calls: 0,
    byKind: {},
    crashes: 0,
    connectionClosedByCrash: 0,
    transportErrorsByCrash: 0,
    settleErrors: [],
    settleErrorCount: 0,
    unexpectedErrors: [],
    unexpectedErrorCount: 0,
    injectedErrors: 0,
    lateDiscarded: { results: 0, errors: 0, progress: 0 },
    heapQuarters: [],
    heldQuarters: [],
    notes: [],
    leftovers: [],
    elapsedMs: 0,
    server: noCounts(),
    serverFailures: [],
    afterResponse: [],
    overtakes: [],
    warnings: [],
    loopDelayMs: { p99: 0, max: 0 },
    gcPauses: [],
  };
  const http = name !== "stdio";
  const calls = LONG ? Number.POSITIVE_INFINITY : http ? SHORT_CALLS.http : SHORT_CALLS.stdio;
  const fail = (what: string) => {
    figures.settleErrorCount++;
    if (figures.settleErrors.length < 20) figures.settleErrors.push(what);
  };
  const session = new AbortController(); // the bot's long-lived signal, never aborted
  // The connections still held; a crashed one is checked and let go once it is quiet (see `retire`),
  // so the heap compared from the first quarter to the last holds one connection's capped
  // records and tombstones, not one per crash. Every connection's log is kept (off the heap).
  const connections: Connection[] = [];
  const logs: { log: ServerLog; logged: Promise<void> }[] = [];
  const retiring: Promise<void>[] = [];
  const connect = async (): Promise<Connection> => {
    const index = logs.length;
    const log = new ServerLog(`${name}#${index}`);
    let connection: Connection | undefined;
    const onError = (error: Error) => {
      if (connection?.crashed) figures.injectedErrors++;
      else if (figures.unexpectedErrorCount++ < 20) figures.unexpectedErrors.push(`${name}#${index}: ${error.message}`);
    };
    connection = await peer.connect(index, log, onError);
    connections.push(connection);
    // The promise, not the function: a closure made beside `close` would hold the connection's transport.
    logs.push({ log, logged: connection.logged() });
    return connection;
  };
  /** Nothing of it is on its way any more: no call pending, nothing held by its adapter. */
  const quiet = (c: Connection): boolean => {
    if (c.mcp.pendingCount !== 0) return false;
    if (c.adapter === undefined) return true;
    const { resumesRefused: _r, blockedTokens: _b, ...held } = c.adapter.stats();
    return Object.values(held).every((n) => n === 0);
  };
  /** What a connection must not hold once it is quiet (the SDK client's handlers: only for a client of its own). */
  const leftovers = (c: Connection, sdkHandlers: boolean): void => {
    const name = c.log.label;
    if (c.mcp.pendingCount !== 0) figures.leftovers.push(`${name}: ${c.mcp.pendingCount} pending`);
    if (c.mcp.tombstoneCount > CAP) figures.leftovers.push(`${name}: ${c.mcp.tombstoneCount} tombstones > ${CAP}`);
    if (c.mcp.records().length > CAP) figures.leftovers.push(`${name}: ${c.mcp.records().length} records > ${CAP}`);
    const handlers = (c.client as unknown as { _responseHandlers?: Map<unknown, unknown> })._responseHandlers?.size ?? 0;
    if (sdkHandlers && handlers !== 0) figures.leftovers.push(`${name}: ${handlers} SDK response handlers`);
    if (c.adapter !== undefined) {
      const { resumesRefused: _r, blockedTokens: _b, ...held } = c.adapter.stats();
      if (Object.values(held).some((n) => n !== 0)) figures.leftovers.push(`${name}: adapter ${JSON.stringify(held)}`);
    }
  };
  /** A crashed connection: closed, given its time to become quiet (bounded), checked, and let go. */
  const retire = async (old: Connection): Promise<void> => {
    await old.close().catch(() => {});
    for (let i = 0; i < QUIET_DEADLINE_MS / 100 && !quiet(old); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    await new Promise((resolve) => setTimeout(resolve, 400)); // late messages and revisions still on their way
    leftovers(old, old.client !== current.client);
    connections.splice(connections.indexOf(old), 1);
  };

  let current = await connect();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const started = performance.now();
  const deadline = started + DURATION_MS;
  // Short: by call count; long: by time (the crashes at a third and two thirds of either).
  const progress = (): number => (LONG ? (performance.now() - started) / DURATION_MS : settledCount / calls);
  const crashAt = [1 / 3, 2 / 3];
  let issued = 0;
  let settledCount = 0;

  async function one(index: number): Promise<void> {
    const kind = KINDS[Math.floor(next() * KINDS.length)]!;
    figures.byKind[kind] = (figures.byKind[kind] ?? 0) + 1;
    const connection = current;
    const controller = new AbortController();
    const call = callFor(kind, peer, http, next, session.signal);
    const signal = "abortAfterMs" in call ? controller.signal : undefined;
    const timer = signal === undefined ? undefined : setTimeout(() => controller.abort(new Error("the bot gave up")), call.abortAfterMs);
    let settles = 0;
    let error: unknown;
    const sent = performance.now();
    try {
      await connection.mcp.callTool(call.params, signal === undefined ? call.options : { ...call.options, signal });
      settles++;
    } catch (e) {
      settles++;
      error = e;
    } finally {
      clearTimeout(timer);
    }
    const took = `after ${Math.round(performance.now() - sent)} ms`;
    if (settles !== 1) fail(`#${index} ${kind}: settled ${settles} times`);
    figures.calls++;
    const want = expected(kind);
    // A crash under the call may end it first: as a connection-closed cancel, or with the
    // transport's own error (a 2025-era server that lost the session answers 404).
    if (connection.crashed && error instanceof ConnectionClosedError) {
      figures.connectionClosedByCrash++;
      if (error.record.status !== "cancelled" || error.record.cancel?.trigger !== "connection-closed")
        fail(`#${index} ${kind}: crash record ${error.record.summary}`);
      return;
    }
    if (connection.crashed && error !== undefined && !(error instanceof McpCancellableError) && kind !== "server-error") {
      figures.transportErrorsByCrash++;
      return;
    }
    if (want.error === undefined) {
      if (kind === "succeed" && error !== undefined) fail(`#${index} ${kind}: rejected ${took}: ${String(error)}`);
      if (kind === "server-error" && (error === undefined || error instanceof McpCancellableError))
        fail(`#${index} ${kind}: ${String(error)}`);
      return;
    }
    if (!(error instanceof want.error) || (error as McpCancellableError).code !== want.code) {
      const got = error === undefined ? "a result" : `${(error as Error).name} ${(error as { code?: string }).code}`;
      fail(`#${index} ${kind}: got ${got} ${took} (timeoutMs ${call.options.timeoutMs})`);
      return;
    }
    const record = (error as McpCancellableError).record;
    if (record.status !== want.status || record.cancel?.trigger !== want.trigger) fail(`#${index} ${kind}: record ${record.summary}`);
  }

  let reconnecting: Promise<void> | undefined;
  async function crashAndReconnect(): Promise<void> {
    // The server dies under every call in flight on this connection; the bot reconnects, and
    // sends nothing meanwhile (a call on the dead connection would fail at once, as never sent).
    current.crashed = true;
    figures.crashes++;
    current.log.crashedAt = performance.now();
    await peer.crash();
    const old = current;
    // A reconnect right after a crash may meet a pooled socket the server just closed: retry a
    // few times, as a bot would (bounded).
    for (let attempt = 1; ; attempt++) {
      try {
        current = await connect();
        break;
      } catch (error) {
        if (attempt === 5) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    retiring.push(retire(old));
  }

  const sample = (): void => {
    const at = performance.now();
    gc!();
    figures.gcPauses.push({ at: Math.round(at), ms: Math.round(performance.now() - at) });
    figures.heapQuarters.push(process.memoryUsage().heapUsed);
    figures.heldQuarters.push(peer.held?.() ?? 0);
  };
  async function lane(): Promise<void> {
    while (issued < calls && (!LONG || performance.now() < deadline)) {
      const index = issued++;
      const at = LONG ? (performance.now() - started) / DURATION_MS : index / calls;
      if (crashAt.length > 0 && at >= crashAt[0]! && reconnecting === undefined) {
        crashAt.shift();
        reconnecting = crashAndReconnect().finally(() => (reconnecting = undefined));
      }
      if (reconnecting !== undefined) await reconnecting;
      await one(index);
      settledCount++;
      // Heap at the first three quarters here, the fourth once every lane is done.
      if (figures.heapQuarters.length < 3 && progress() >= (figures.heapQuarters.length + 1) / 4) sample();
    }
  }

  // Bounded: every call's own limits are far below this; a call that never settles shows here.
  const limit = LONG ? DURATION_MS + COMPLETE_MS + SETTLE_DEADLINE_MS : calls * 20 + SETTLE_DEADLINE_MS;
  let stuck: ReturnType<typeof setTimeout> | undefined;
  const done = await Promise.race([
    Promise.all(Array.from({ length: IN_FLIGHT }, lane)).then(() => true),
    new Promise<false>((resolve) => (stuck = setTimeout(resolve, limit, false))),
  ]);
  clearTimeout(stuck);
  if (!done) fail(`calls still unsettled after ${limit} ms`);
  loop.disable();
  figures.loopDelayMs = { p99: Math.round(loop.percentile(99) / 1e6), max: Math.round(loop.max / 1e6) };
  sample();
  figures.elapsedMs = Math.round(performance.now() - started);
  if (figures.calls !== issued || (!LONG && figures.calls !== calls)) fail(`${figures.calls} of ${LONG ? issued : calls} calls settled`);

  // Late messages land after the settle, and 2025-era cancel notifications may still be on their
  // way (each bounded by the connect timeout, plus one retry): give them their time (bounded), then read.
  await Promise.all(retiring);
  await new Promise((resolve) => setTimeout(resolve, 400));
  for (let i = 0; i < QUIET_DEADLINE_MS / 100 && !connections.every(quiet); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  const live = connections.filter((c) => !c.crashed);
  for (const c of connections) leftovers(c, true);
  const listeners = getEventListeners(session.signal, "abort").length;
  if (listeners !== 0) figures.leftovers.push(`${listeners} listeners on the long-lived signal`);
  for (const c of live) await c.close();
  const growth = figures.heapQuarters.at(-1)! - figures.heapQuarters[0]!;
  const heldGrowth = figures.heldQuarters.at(-1)! - figures.heldQuarters[0]!;
  if (figures.heapQuarters.length === 4 && growth > HEAP_GROWTH_LIMIT) {
    // The server shares this process: exchanges the SDK server holds (JSON mode) grow its heap, not the client's.
    if (heldGrowth > 0)
      figures.notes.push(
        `heap grew ${growth} B from the first quarter to the last, while the SDK server's held exchanges went from ${figures.heldQuarters[0]} to ${figures.heldQuarters.at(-1)} (server memory, not judged)`,
      );
    else figures.leftovers.push(`heap grew ${growth} B from the first quarter to the last`);
  }

  // The servers' logs, complete (bounded), against the records' last revisions.
  let wait: ReturnType<typeof setTimeout> | undefined;
  const logged = await Promise.race([
    Promise.all(logs.map((l) => l.logged)).then(() => true),
    new Promise<false>((resolve) => (wait = setTimeout(resolve, LOG_DEADLINE_MS, false))),
  ]);
  clearTimeout(wait);
  if (!logged) figures.leftovers.push(`a server's log did not end within ${LOG_DEADLINE_MS} ms of its connection's close`);
  for (const { log } of logs) {
    if (DUMP !== undefined) writeFileSync(join(DUMP, `${log.label.replace("#", "-")}.csv`), log.csv());
    const verdict = log.judge(peer.carrier);
    addCounts(figures.server, verdict.counts);
    figures.serverFailures.push(...verdict.failures);
    figures.afterResponse.push(...verdict.afterResponse);
    figures.overtakes.push(...verdict.overtakes);
    const late = log.late();
    figures.lateDiscarded.results += late.results;
    figures.lateDiscarded.errors += late.errors;
    figures.lateDiscarded.progress += late.progress;
  }
  return figures;
}

const kinds = (p: string[] = process.getActiveResourcesInfo()) =>
  p.filter((k) => k === "Timeout" || k === "TCPSocketWrap" || k === "PipeWrap" || k === "ProcessWrap").sort();

const results: Figures[] = [];
await new Promise((resolve) => setTimeout(resolve, 200));
const baseline = kinds();
for (const [name, make] of [
  ["stdio", stdioPeer],
  ["http-2025-sse", () => sdkHttpPeer(false)],
  ["http-2025-json", () => sdkHttpPeer(true)],
  ["http-2026-07-28", modernPeer],
] as const) {
  if (argv.includes("--only") && argv[argv.indexOf("--only") + 1] !== name) continue;
  soaking = name;
  const peer = await make();
  const figures = await soak(name, peer);
  await peer.stop();
  // A warning is emitted on the next tick: let those of this transport land on it.
  await new Promise((resolve) => setImmediate(resolve));
  figures.warnings = warnings[name] ?? [];
  results.push(figures);
}
soaking = undefined;
await new Promise((resolve) => setTimeout(resolve, 300));
const after = kinds();
const resources = after.length > baseline.length ? [`resources: ${after.join(",")} (baseline ${baseline.join(",")})`] : [];
const strayWarnings = warnings.none ?? [];

const mb = (n: number) => `${(n / 1_048_576).toFixed(1)} MB`;
const SHOWN = 20;
const show = (title: string, lines: string[]) => {
  if (lines.length === 0) return;
  process.stderr.write(`  ${title} (${lines.length}${lines.length > SHOWN ? `, first ${SHOWN}` : ""}):\n`);
  for (const line of lines.slice(0, SHOWN)) process.stderr.write(`    ${line}\n`);
};
for (const f of results) {
  const s = f.server;
  process.stderr.write(
    `${f.transport.padEnd(16)} ${f.calls} calls in ${f.elapsedMs} ms, ${f.crashes} crashes (${f.connectionClosedByCrash + f.transportErrorsByCrash} calls ended by them), ` +
      `settle errors ${f.settleErrorCount}, onerror unexpected ${f.unexpectedErrorCount} / injected ${f.injectedErrors}, ` +
      `late discarded ${JSON.stringify(f.lateDiscarded)}, heap per quarter ${f.heapQuarters.map(mb).join(" ")}, leftovers ${f.leftovers.length}\n` +
      `${"".padEnd(17)}server log: requests ${s.requests}, notifications received ${s.cancelsReceived} / claimed ${s.cancelsClaimed}, ` +
      `overtakes ${s.overtakes} (${s.orphans} naming a request it never took up), after response ${s.afterResponse} (${s.crossed} crossed), duplicates ${s.duplicates}, contradictions ${s.contradictions}, ` +
      `explained by a crash ${s.explainedByCrash}, not-sent ${s.notSent}; warnings ${f.warnings.length}\n` +
      `${"".padEnd(17)}event loop delay p99 ${f.loopDelayMs.p99} ms, max ${f.loopDelayMs.max} ms; the soak's own full GCs ${f.gcPauses.map((p) => `${p.ms} ms at ${p.at}`).join(", ")}\n`,
  );
  for (const line of [...f.settleErrors, ...f.unexpectedErrors, ...f.leftovers]) process.stderr.write(`  ${line}\n`);
  for (const line of f.notes) process.stderr.write(`  noted: ${line}\n`);
  show("server log failures", f.serverFailures);
  show("notifications after their response", f.afterResponse);
  show("overtakes on a JSON-response server (counted, not failed)", f.overtakes);
  show("warnings", f.warnings);
}
for (const line of [...issues, ...resources]) process.stderr.write(`  ${line}\n`);
show("warnings outside a transport's run", strayWarnings);
const ok =
  issues.length === 0 &&
  resources.length === 0 &&
  strayWarnings.length === 0 &&
  results.every(
    (f) => f.settleErrors.length + f.unexpectedErrors.length + f.leftovers.length + f.serverFailures.length + f.warnings.length === 0,
  );
process.stderr.write(`soak ${ok ? "passed" : "FAILED"} (${LONG ? "long" : "short"} mode; replay with --replay ${SEED})\n`);
if (argv.includes("--json")) process.stdout.write(`${JSON.stringify({ ok, seed: SEED, issues, resources, results })}\n`);
process.exit(ok ? 0 : 1);
