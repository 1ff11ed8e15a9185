// The mixed soak: one long-lived connection per transport (a stdio child, Streamable HTTP in
// the 2025-era with a session, Streamable HTTP 2026-07-28 stateless), thousands of concurrent
// calls whose outcomes are drawn at random from a seeded generator (succeed, time out, abort,
// maximum total timeout, late result, late progress, server error), and a server crash with a
// reconnect at a third and at two thirds of each run. At the end it checks what must always hold:
// every call settled exactly once with the error class and record its outcome calls for; nothing
// pending in the library, the adapter or the SDK client; no listener left on the long-lived
// signal; tombstones and records within their caps; no timer or socket beyond the baseline; the
// heap flat between the first and the last quarter; no `onerror` outside a crash window.
//
// Run: node --expose-gc --import tsx test/soak/soak.ts [--short | --long] [--replay N] [--json]
//   --short  (CI, test/soak/soak.test.ts) 3,000 calls per transport, 100 in flight
//   --long   (npm run soak) 30,000 calls per transport, 200 in flight
// Prints the figures per transport, then (with --json) one JSON line; exits 1 if a check failed.
// Only 127.0.0.1 and stdio; every loop is bounded by the call count, every wait by a deadline.
import { getEventListeners } from "node:events";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { CallCancelledError, CallTimeoutError, ConnectionClosedError, McpCancellableError, withCancellation } from "../../src/index.js";
import type { CancellableClient, RunRecord } from "../../src/index.js";
import type { TransportLike } from "../../src/core.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import type { StreamableHttpAdapter } from "../../src/adapters/streamable-http/index.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import type { RawHttpServer } from "../fixtures/reliability/raw-http-server.js";
import { fixture } from "../helpers/stdio.js";

const argv = process.argv.slice(2);
const LONG = argv.includes("--long");
const SEED = Number(argv[argv.indexOf("--replay") + 1] ?? NaN) || 20_261_130;
const CALLS = LONG ? 30_000 : 3_000;
const IN_FLIGHT = LONG ? 200 : 100;
const CAP = 2_000; // maxTombstones and maxRecords per connection
const HEAP_GROWTH_LIMIT = 8 * 1024 * 1024; // bytes, last quarter minus first
// Calls that should complete get a roomy idle timeout: on a loaded 2-core machine a POST can
// wait seconds for the CPU, and a starved process is not what this soak looks for.
const COMPLETE_MS = 30_000;
const SETTLE_DEADLINE_MS = 10_000; // slack on top of 20 ms per call for the whole run

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

type TransportName = "stdio" | "http-2025" | "http-2026-07-28";

interface Connection {
  readonly mcp: CancellableClient<TransportLike>;
  readonly client: object;
  /** Closes this connection only (on stdio the SDK Client is reused across reconnects). */
  close(): Promise<void>;
  readonly adapter?: StreamableHttpAdapter<TransportLike>;
  /** Set when the driver crashed the server under this connection: its errors are injected. */
  crashed: boolean;
}

interface Peer {
  connect(onRecord: (record: RunRecord) => void, onError: (error: Error) => void): Promise<Connection>;
  /** Kills the server under every call in flight; resolves once the client saw it (bounded). */
  crash(): Promise<void>;
  stop(): Promise<void>;
}

const issues: string[] = [];
// The v1 SDK's StdioClientTransport.send adds one 'drain' listener per write while stdin is
// over its high-water mark (16 KB: about 80 requests written in one tick), so a bot with that many
// calls in flight sees MaxListenersExceededWarning from the SDK's own request path. Known and
// documented; counted apart. Any other warning fails the soak.
let sdkDrainWarnings = 0;
process.on("warning", (w) => {
  // The soak's deadlines are tens of ms on purpose: the library's one-time "is that seconds?" warning is expected.
  if ((w as { code?: string }).code === "MCP_CANCELLABLE_SHORT_DURATION") return;
  if (
    w.name === "MaxListenersExceededWarning" &&
    /drain/.test(w.message) &&
    /StdioClientTransport\.send/.test(w.stack ?? "") &&
    !/cancel/i.test(w.stack ?? "")
  )
    sdkDrainWarnings++;
  else issues.push(`${w.name}: ${w.message}`);
});
process.on("unhandledRejection", (r) => issues.push(`unhandledRejection: ${String(r)}`));

async function stdioPeer(): Promise<Peer> {
  let transport: StdioClientTransport | undefined;
  const client = new ClientV1({ name: "soak", version: "1.0.0" });
  return {
    async connect(onRecord, onError) {
      transport = new StdioClientTransport({ command: process.execPath, args: [fixture("scripted-server.mjs")], stderr: "ignore" });
      const mcp = withCancellation(client, stdioCancellation(transport), { onRecord, maxTombstones: CAP, maxRecords: CAP });
      client.onerror = onError;
      await client.connect(mcp.transport);
      const own = transport;
      return { mcp, client, crashed: false, close: () => own.close() };
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

async function httpPeer(era: "2025-11-25" | "2026-07-28"): Promise<Peer> {
  const server: RawHttpServer = await startRawHttp({ era });
  return {
    async connect(onRecord, onError) {
      const options = { onRecord, maxTombstones: CAP, maxRecords: CAP };
      if (era === "2026-07-28") {
        const client = new ClientV2({ name: "soak", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
        const adapter = streamableHttpCancellation(new TransportV2(server.url));
        const mcp = withCancellation(client, adapter, options);
        client.onerror = onError;
        await client.connect(mcp.transport);
        return { mcp, client, adapter, crashed: false, close: () => client.close() };
      }
      const client = new ClientV1({ name: "soak", version: "1.0.0" });
      const adapter = streamableHttpCancellation(new TransportV1(server.url, { fetch: cancellableFetch() }));
      const mcp = withCancellation(client, adapter, options);
      client.onerror = onError;
      await client.connect(mcp.transport);
      return { mcp, client, adapter, crashed: false, close: () => client.close() };
    },
    crash: async () => server.crash(),
    stop: () => server.stop(),
  };
}

/** The tool call and options that produce `kind` on this transport. */
function callFor(kind: Kind, http: boolean, next: () => number, signal: AbortSignal) {
  const between = (lo: number, hi: number) => Math.round(lo + next() * (hi - lo));
  switch (kind) {
    case "succeed":
      return { params: { name: http && next() < 0.5 ? "sse-echo" : "echo" }, options: { timeoutMs: COMPLETE_MS, signal } };
    case "server-error":
      return { params: { name: "fail" }, options: { timeoutMs: COMPLETE_MS, signal } };
    case "timeout":
      return { params: { name: http ? "no-headers" : "silent" }, options: { timeoutMs: between(20, 100), signal } };
    case "abort":
      return { params: { name: http ? "no-headers" : "silent" }, options: { timeoutMs: COMPLETE_MS }, abortAfterMs: between(1, 60) };
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
  settleErrors: string[];
  unexpectedErrors: string[];
  injectedErrors: number;
  lateDiscarded: { results: number; errors: number; progress: number };
  heapQuarters: number[];
  leftovers: string[];
  elapsedMs: number;
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
    unexpectedErrors: [],
    injectedErrors: 0,
    lateDiscarded: { results: 0, errors: 0, progress: 0 },
    heapQuarters: [],
    leftovers: [],
    elapsedMs: 0,
  };
  const fail = (what: string) => void (figures.settleErrors.length < 20 && figures.settleErrors.push(what));
  const session = new AbortController(); // the bot's long-lived signal, never aborted
  const connections: Connection[] = [];
  // Final records by connection and request id; late messages update them after the settle.
  const records = new Map<string, RunRecord>();
  const connect = async (): Promise<Connection> => {
    const index = connections.length;
    let connection: Connection | undefined;
    const onError = (error: Error) => {
      if (connection?.crashed) figures.injectedErrors++;
      else if (figures.unexpectedErrors.length < 20) figures.unexpectedErrors.push(`${name}#${index}: ${error.message}`);
    };
    connection = await peer.connect((record) => {
      if (record.requestId !== null) records.set(`${index}:${String(record.requestId)}`, record);
    }, onError);
    connections.push(connection);
    return connection;
  };

  let current = await connect();
  const started = performance.now();
  const crashAt = new Set([Math.floor(CALLS / 3), Math.floor((2 * CALLS) / 3)]);
  const quarter = Math.floor(CALLS / 4);
  let issued = 0;
  let settledCount = 0;

  async function one(index: number): Promise<void> {
    const kind = KINDS[Math.floor(next() * KINDS.length)]!;
    figures.byKind[kind] = (figures.byKind[kind] ?? 0) + 1;
    const connection = current;
    const controller = new AbortController();
    const call = callFor(kind, name !== "stdio", next, session.signal);
    const signal = "abortAfterMs" in call ? controller.signal : undefined;
    const timer = signal === undefined ? undefined : setTimeout(() => controller.abort(new Error("the bot gave up")), call.abortAfterMs);
    let settles = 0;
    let error: unknown;
    try {
      await connection.mcp.callTool(call.params, signal === undefined ? call.options : { ...call.options, signal });
      settles++;
    } catch (e) {
      settles++;
      error = e;
    } finally {
      clearTimeout(timer);
    }
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
      if (kind === "succeed" && error !== undefined) fail(`#${index} ${kind}: rejected ${String(error)}`);
      if (kind === "server-error" && (error === undefined || error instanceof McpCancellableError))
        fail(`#${index} ${kind}: ${String(error)}`);
      return;
    }
    if (!(error instanceof want.error) || (error as McpCancellableError).code !== want.code) {
      fail(`#${index} ${kind}: got ${error === undefined ? "a result" : `${(error as Error).name} ${(error as { code?: string }).code}`}`);
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
    void old.close().catch(() => {});
  }

  async function lane(): Promise<void> {
    while (issued < CALLS) {
      const index = issued++;
      if (crashAt.has(index)) reconnecting = crashAndReconnect().finally(() => (reconnecting = undefined));
      if (reconnecting !== undefined) await reconnecting;
      await one(index);
      settledCount++;
      if (settledCount % quarter === 0 && figures.heapQuarters.length < 4) {
        gc!();
        figures.heapQuarters.push(process.memoryUsage().heapUsed);
      }
    }
  }

  // Bounded: every call's own limits are far below this; a call that never settles shows here.
  let stuck: ReturnType<typeof setTimeout> | undefined;
  const done = await Promise.race([
    Promise.all(Array.from({ length: IN_FLIGHT }, lane)).then(() => true),
    new Promise<false>((resolve) => (stuck = setTimeout(resolve, CALLS * 20 + SETTLE_DEADLINE_MS, false))),
  ]);
  clearTimeout(stuck);
  if (!done) fail(`calls still unsettled after ${CALLS * 20 + SETTLE_DEADLINE_MS} ms`);
  figures.elapsedMs = Math.round(performance.now() - started);
  if (figures.calls !== CALLS) fail(`${figures.calls} of ${CALLS} calls settled`);

  // Late messages land after the settle, and 2025-era cancel notifications may still be on their
  // way (each bounded by flushTimeoutMs, plus one retry): give them their time (bounded), then read.
  const quiet = () =>
    connections.every((c) => {
      if (c.adapter === undefined) return true;
      const { resumesRefused: _r, blockedTokens: _b, ...held } = c.adapter.stats();
      return Object.values(held).every((n) => n === 0);
    });
  await new Promise((resolve) => setTimeout(resolve, 400));
  for (let i = 0; i < 30 && !quiet(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  for (const record of records.values()) {
    figures.lateDiscarded.results += record.late.results;
    figures.lateDiscarded.errors += record.late.errors;
    figures.lateDiscarded.progress += record.late.progress;
  }
  const live = connections.filter((c) => !c.crashed);
  for (const [i, c] of connections.entries()) {
    if (c.mcp.pendingCount !== 0) figures.leftovers.push(`connection ${i}: ${c.mcp.pendingCount} pending`);
    if (c.mcp.tombstoneCount > CAP) figures.leftovers.push(`connection ${i}: ${c.mcp.tombstoneCount} tombstones > ${CAP}`);
    if (c.mcp.records().length > CAP) figures.leftovers.push(`connection ${i}: ${c.mcp.records().length} records > ${CAP}`);
    const handlers = (c.client as unknown as { _responseHandlers?: Map<unknown, unknown> })._responseHandlers?.size ?? 0;
    if (handlers !== 0) figures.leftovers.push(`connection ${i}: ${handlers} SDK response handlers`);
    if (c.adapter !== undefined) {
      const { resumesRefused: _r, blockedTokens: _b, ...held } = c.adapter.stats();
      if (Object.values(held).some((n) => n !== 0)) figures.leftovers.push(`connection ${i}: adapter ${JSON.stringify(held)}`);
    }
  }
  const listeners = getEventListeners(session.signal, "abort").length;
  if (listeners !== 0) figures.leftovers.push(`${listeners} listeners on the long-lived signal`);
  for (const c of live) await c.close();
  const growth = figures.heapQuarters.at(-1)! - figures.heapQuarters[0]!;
  if (figures.heapQuarters.length === 4 && growth > HEAP_GROWTH_LIMIT)
    figures.leftovers.push(`heap grew ${growth} B from the first quarter to the last`);
  return figures;
}

const kinds = (p: string[] = process.getActiveResourcesInfo()) =>
  p.filter((k) => k === "Timeout" || k === "TCPSocketWrap" || k === "PipeWrap" || k === "ProcessWrap").sort();

const results: Figures[] = [];
await new Promise((resolve) => setTimeout(resolve, 200));
const baseline = kinds();
for (const [name, make] of [
  ["stdio", stdioPeer],
  ["http-2025", () => httpPeer("2025-11-25")],
  ["http-2026-07-28", () => httpPeer("2026-07-28")],
] as const) {
  if (argv.includes("--only") && argv[argv.indexOf("--only") + 1] !== name) continue;
  const peer = await make();
  results.push(await soak(name, peer));
  await peer.stop();
}
await new Promise((resolve) => setTimeout(resolve, 300));
const after = kinds();
const resources = after.length > baseline.length ? [`resources: ${after.join(",")} (baseline ${baseline.join(",")})`] : [];

const mb = (n: number) => `${(n / 1_048_576).toFixed(1)} MB`;
for (const f of results) {
  process.stderr.write(
    `${f.transport.padEnd(16)} ${f.calls} calls in ${f.elapsedMs} ms, ${f.crashes} crashes (${f.connectionClosedByCrash + f.transportErrorsByCrash} calls ended by them), ` +
      `settle errors ${f.settleErrors.length}, onerror unexpected ${f.unexpectedErrors.length} / injected ${f.injectedErrors}, ` +
      `late discarded ${JSON.stringify(f.lateDiscarded)}, heap per quarter ${f.heapQuarters.map(mb).join(" ")}, leftovers ${f.leftovers.length}\n`,
  );
  for (const line of [...f.settleErrors, ...f.unexpectedErrors, ...f.leftovers]) process.stderr.write(`  ${line}\n`);
}
for (const line of [...issues, ...resources]) process.stderr.write(`  ${line}\n`);
const ok =
  issues.length === 0 &&
  resources.length === 0 &&
  results.every((f) => f.settleErrors.length + f.unexpectedErrors.length + f.leftovers.length === 0);
if (sdkDrainWarnings > 0)
  process.stderr.write(
    `  ${sdkDrainWarnings} MaxListenersExceededWarning from the SDK's own stdio writes under backpressure (docs: backpressure)\n`,
  );
process.stderr.write(`soak ${ok ? "passed" : "FAILED"} (${LONG ? "long" : "short"} mode; replay with --replay ${SEED})\n`);
if (argv.includes("--json")) process.stdout.write(`${JSON.stringify({ ok, seed: SEED, issues, resources, sdkDrainWarnings, results })}\n`);
process.exit(ok ? 0 : 1);
