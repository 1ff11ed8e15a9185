/**
 * What `mcp-cancellable proxy --listen` (the HTTP front, issue 31) costs, in one run:
 * - latency added per call: the bare SDK clients (v1: a 2025-era session; v2 pinned to
 *   2026-07-28) calling `echo` on a Streamable HTTP server (the v2 SDK's createMcpHandler, its
 *   own process) directly, and through the front (`--url ... --era 2026-07-28`, its own process),
 *   sequential, the two sides alternating call by call;
 * - 1,000 clients with a call each in flight through one replica (the front in this process on a
 *   stdio server; the clients in their own process, one connection each): heap per pending call
 *   after a full collection, beside the upstream connection's own (the same calls sent straight
 *   into the front's relay, no HTTP) and a bare node:http server holding as many requests (the
 *   HTTP floor); then the front drains and every call is answered exactly once;
 * - a 2026-07-28 client's stream close to the upstream's cancel: the time from `abort()` of the
 *   fetch to the stdio server reading `notifications/cancelled` (both stamped with
 *   CLOCK_MONOTONIC, one clock across processes);
 * - two replicas behind HAProxy (when installed), one killed (SIGKILL) with `killInFlight` calls
 *   in flight over both: every call settled once, the killed replica's at once and never re-sent,
 *   the survivor's answered.
 * Never fails on speed; the fronts run from src through tsx.
 */
import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import type { Target } from "./report.js";
import { heapUsed, sleep } from "./lib/env.js";
import { round, rounded, summarize } from "./lib/stats.js";
import type { Summary } from "./lib/stats.js";

const repo = fileURLToPath(new URL("../", import.meta.url));
const node = process.execPath;
const PEER = `${repo}bench/front-stdio-peer.mjs`;
const HTTP_SERVER = `${repo}test/fixtures/runtime/server.mjs`;

export interface FrontPlan {
  latencyCalls: number;
  warmup: number;
  /** Clients with a call each in flight through one replica. */
  clients: number;
  /** Stream closes timed. */
  cancels: number;
  /** Calls in flight over two replicas when one is killed (needs HAProxy). */
  killInFlight: number;
}

export interface FrontResult {
  latency: { v1: Side; v2: Side };
  pending: {
    clients: number;
    frontBytesPerCall: number;
    upstreamOwnBytesPerCall: number;
    httpFloorBytesPerCall: number;
    /** front − upstream connection's own. */
    aboveUpstreamBytesPerCall: number;
    answeredOnce: number;
    answeredOther: number;
  };
  cancel: Summary;
  fleet: null | {
    inFlight: number;
    onKilled: number;
    /** Calls that failed between the kill and the survivor's drain (all must be the killed replica's). */
    failedAtOnce: number;
    /** Of those, how many as the library's ConnectionClosedError (the rest: the balancer's 502 for a call whose headers had not left yet). */
    asConnectionClosed: number;
    answered: number;
    settledOnce: boolean;
    resent: number;
    lastFailureMs: number;
  };
}

interface Side {
  direct: Summary;
  front: Summary;
  /** Through a byte-copying node:http reverse proxy (bench/front-http-relay.mjs): the floor of any HTTP proxy in Node. */
  relay: Summary;
  addedP50Ms: number;
  addedP99Ms: number;
  relayAddedP50Ms: number;
}

function child(args: string[], env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  return spawn(node, args, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
}

/** Resolves with the first match of `pattern` in the child's stream. */
function waitFor(
  proc: ChildProcessWithoutNullStreams,
  stream: "stdout" | "stderr",
  pattern: RegExp,
  ms = 30_000,
): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${ms} ms:\n${text}`)), ms);
    proc[stream].on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const match = pattern.exec(text);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match);
      }
    });
  });
}

async function startFrontChild(args: string[]): Promise<{ proc: ChildProcessWithoutNullStreams; url: URL }> {
  const proc = child(["--import", "tsx", `${repo}src/cli/index.ts`, "proxy", "--listen", "127.0.0.1:0", ...args]);
  const match = await waitFor(proc, "stderr", /listening on (\S+)/);
  return { proc, url: new URL(match[1]!) };
}

async function stop(proc: ChildProcessWithoutNullStreams): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill("SIGKILL");
  await new Promise((resolve) => proc.once("close", resolve));
}

async function latency(plan: FrontPlan): Promise<FrontResult["latency"]> {
  const upstream = child([HTTP_SERVER]);
  const port = (await waitFor(upstream, "stdout", /LISTENING (\d+)/))[1]!;
  const direct = new URL(`http://127.0.0.1:${port}/mcp`);
  const front = await startFrontChild(["--url", direct.href, "--era", "2026-07-28"]);
  const relayProc = child([`${repo}bench/front-http-relay.mjs`, port]);
  const relayUrl = new URL(`http://127.0.0.1:${(await waitFor(relayProc, "stdout", /LISTENING (\d+)/))[1]!}/mcp`);
  try {
    const measure = async (call: (url: URL) => Promise<() => Promise<unknown>>): Promise<Side> => {
      const sides = { direct: await call(direct), front: await call(front.url), relay: await call(relayUrl) };
      const samples = { direct: [] as number[], front: [] as number[], relay: [] as number[] };
      const order = ["direct", "front", "relay"] as const;
      for (let i = 0; i < plan.warmup + plan.latencyCalls; i++) {
        for (let k = 0; k < 3; k++) {
          const side = order[(i + k) % 3]!;
          const t0 = performance.now();
          await sides[side]();
          if (i >= plan.warmup) samples[side].push(performance.now() - t0);
        }
      }
      const d = rounded(summarize(samples.direct));
      const f = rounded(summarize(samples.front));
      const r = rounded(summarize(samples.relay));
      return {
        direct: d,
        front: f,
        relay: r,
        addedP50Ms: round(f.p50 - d.p50),
        addedP99Ms: round(f.p99 - d.p99),
        relayAddedP50Ms: round(r.p50 - d.p50),
      };
    };
    const closers: Array<() => Promise<void>> = [];
    const v1 = await measure(async (url) => {
      const client = new Client({ name: "bench-v1", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(url));
      closers.push(() => client.close());
      return () => client.callTool({ name: "echo", arguments: { text: "hi" } });
    });
    const v2 = await measure(async (url) => {
      const client = new ClientV2({ name: "bench-v2", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
      await client.connect(new TransportV2(url));
      closers.push(() => client.close());
      return () => client.callTool({ name: "echo", arguments: { text: "hi" } });
    });
    for (const close of closers) await close().catch(() => {});
    return { v1, v2 };
  } finally {
    await stop(front.proc);
    await stop(relayProc);
    await stop(upstream);
  }
}

/** 1,000 clients with a call in flight each: heap per pending call in the front (this process), beside the upstream connection's own and the HTTP floor. */
async function pending(plan: FrontPlan): Promise<FrontResult["pending"]> {
  const n = plan.clients;
  const { startFront } = await import("../src/cli/proxy/listen/front.js");
  const { splitListenArgs } = await import("../src/cli/proxy/listen/args.js");
  const { parseProxyArgs } = await import("../src/cli/proxy/args.js");
  const { frontUpstreams } = await import("../src/cli/proxy/listen/command.js");
  const argv = [
    "--listen",
    "127.0.0.1:0",
    "--max-requests",
    String(n * 2),
    "--drain-ms",
    "1",
    "--timeout-ms",
    "none",
    "--max-total-timeout-ms",
    "none",
    "--",
    node,
    PEER,
    "--quiet",
  ];
  const { listen, rest } = splitListenArgs(argv);
  const options = parseProxyArgs(rest);
  if (options === "help" || listen === undefined) throw new Error("bad front arguments");
  const quiet = (): void => {};
  const front = await startFront(options, listen, { log: quiet, makeUpstream: frontUpstreams(options, quiet) });
  await sleep(500); // the shared stdio server is up

  // The upstream connection's own: the same 2026-07-28 calls sent straight into a relay over its own stdio server.
  const { Relay, InFlightGauge } = await import("../src/cli/proxy/listen/relay.js");
  const { NO_CONFIG } = await import("../src/cli/proxy/config.js");
  const upstream = await frontUpstreams(options, quiet)("2026-07-28")!;
  const relay = new Relay(
    {
      options,
      config: NO_CONFIG,
      replica: "bench",
      records: undefined,
      observer: undefined,
      maxHandleRequests: 1,
      inFlight: new InFlightGauge(1e9),
      log: quiet,
      redact: Object.assign((t: string) => t, { active: false }),
    },
    upstream,
  );
  await relay.start();
  await sleep(300);
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
  const before0 = heapUsed();
  const handles = [];
  for (let i = 0; i < n; i++) {
    const handle = relay.open({ deliver: () => {} }, { session: null });
    handle.fromClient({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "hang", arguments: {}, _meta: meta } });
    handles.push(handle);
  }
  await sleep(200);
  const upstreamOwn = (heapUsed() - before0) / n;
  for (const handle of handles) handle.close("bench done");
  handles.length = 0;
  await relay.close();

  // The HTTP floor: a bare node:http server holding n requests open.
  const held: http.ServerResponse[] = [];
  const bare = http.createServer((req, res) => {
    req.resume();
    held.push(res);
  });
  await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
  const barePort = (bare.address() as AddressInfo).port;
  const floorBefore = heapUsed();
  const bareClients = child([`${repo}bench/front-clients.mjs`, `http://127.0.0.1:${barePort}/mcp`, String(n)]);
  await until(() => held.length >= n, 60_000, `the bare server got ${held.length} of ${n} requests`);
  await sleep(200);
  const floor = (heapUsed() - floorBefore) / n;
  for (const res of held) res.end();
  held.length = 0;
  await waitFor(bareClients, "stdout", /DONE/);
  await new Promise<void>((resolve) => bare.close(() => resolve()));
  bare.closeAllConnections();

  // The front: n clients, a call each in flight.
  await sleep(300);
  const frontBefore = heapUsed();
  const clients = child([`${repo}bench/front-clients.mjs`, front.url.href, String(n)]);
  await waitFor(clients, "stdout", /OPEN \d+/, 60_000);
  await until(() => front.stats().inFlight >= n, 60_000, `the front had ${front.stats().inFlight} of ${n} requests in flight`);
  await sleep(200);
  const frontBytes = (heapUsed() - frontBefore) / n;
  const done = waitFor(clients, "stdout", /DONE (\[.*\])/, 60_000);
  await front.drain();
  const answers = JSON.parse((await done)[1]!) as number[];
  return {
    clients: n,
    frontBytesPerCall: Math.round(frontBytes),
    upstreamOwnBytesPerCall: Math.round(upstreamOwn),
    httpFloorBytesPerCall: Math.round(floor),
    aboveUpstreamBytesPerCall: Math.round(frontBytes - upstreamOwn),
    answeredOnce: answers.filter((a) => a === 1).length,
    answeredOther: answers.filter((a) => a !== 1).length,
  };
}

/** A 2026-07-28 client's stream close to the stdio server reading its notifications/cancelled. */
async function cancelLatency(plan: FrontPlan): Promise<Summary> {
  const front = await startFrontChild(["--", node, PEER]);
  let stderr = "";
  front.proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const lines = (kind: string) => stderr.split("\n").filter((l) => l.startsWith(`${kind} `));
  const samples: number[] = [];
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
  try {
    for (let i = 0; i < plan.cancels + 5; i++) {
      const controller = new AbortController();
      const calls = lines("CALL").length;
      const cancels = lines("CANCELLED").length;
      const response = await fetch(front.url, {
        method: "POST",
        signal: controller.signal,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": "tools/call",
          "mcp-name": "hang",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "hang", arguments: {}, _meta: meta } }),
      });
      for (const end = performance.now() + 10_000; lines("CALL").length === calls; ) {
        if (performance.now() > end) throw new Error("bench/front.ts: the stdio server never read a tools/call within 10 s");
        await sleep(1);
      }
      const t0 = process.hrtime.bigint();
      controller.abort();
      void response.body?.cancel().catch(() => {});
      for (const end = performance.now() + 5_000; lines("CANCELLED").length === cancels && performance.now() < end; ) await sleep(1);
      const at = lines("CANCELLED").at(-1)?.split(" ")[2];
      if (i >= 5 && at !== undefined) samples.push(Number(BigInt(at) - t0) / 1e6);
    }
  } finally {
    await stop(front.proc);
  }
  return rounded(summarize(samples));
}

/** Two replicas behind HAProxy, one killed with `killInFlight` calls in flight over both. */
async function fleet(plan: FrontPlan): Promise<FrontResult["fleet"]> {
  const { haproxyBinary, startFleet } = await import("../test/fleet/harness.js");
  const binary = haproxyBinary();
  if (binary === undefined) return null;
  const { connectV2 } = await import("../test/http/clients.js");
  const { isConnectionClosedError } = await import("../src/index.js");
  const args = [
    "--max-requests",
    String(plan.killInFlight * 2),
    "--drain-ms",
    "500",
    "--timeout-ms",
    "none",
    "--max-total-timeout-ms",
    "none",
  ];
  const f = await startFleet(["r1", "r2"], [...args, "--", node, PEER], binary);
  try {
    const r1 = f.replicas.get("r1")!;
    const r2 = f.replicas.get("r2")!;
    const calls = (front: typeof r1): number =>
      front
        .stderr()
        .split("\n")
        .filter((l) => l.startsWith("CALL ")).length;
    // Wrapped v2 clients (2026-07-28), 50 calls each, each call a request of its own (round robin over the replicas).
    const clients = await Promise.all(Array.from({ length: Math.ceil(plan.killInFlight / 50) }, () => connectV2(f.url, { pin: true })));
    let settledCount = 0;
    /** Set when the survivor is told to drain: what settles after that was the survivor's. */
    let draining = false;
    const outcomes = Array.from({ length: plan.killInFlight }, (_, i) =>
      clients[i % clients.length]!.mcp.callTool({ name: "hang", arguments: {} })
        .then(
          () => ({ ok: true, at: performance.now(), closed: false, beforeDrain: !draining }),
          (error: unknown) => ({ ok: false, at: performance.now(), closed: isConnectionClosedError(error), beforeDrain: !draining }),
        )
        .finally(() => settledCount++),
    );
    for (const end = performance.now() + 60_000; calls(r1) + calls(r2) < plan.killInFlight && performance.now() < end; ) await sleep(20);
    const onKilled = calls(r1);
    const survivorBefore = calls(r2);
    const killedAt = performance.now();
    r1.child.kill("SIGKILL");
    for (const end = performance.now() + 5_000; settledCount < onKilled && performance.now() < end; ) await sleep(5);
    await sleep(300);
    const settledBeforeDrain = settledCount;
    const resent = calls(r2) - survivorBefore;
    // The survivor's calls are still in flight; its drain answers each (-32000) to settle them.
    draining = true;
    r2.child.kill("SIGTERM");
    const settled = await Promise.all(outcomes);
    const killed = settled.filter((o) => o.beforeDrain);
    for (const c of clients) await c.close().catch(() => {});
    return {
      inFlight: plan.killInFlight,
      onKilled,
      failedAtOnce: killed.filter((o) => !o.ok).length,
      asConnectionClosed: killed.filter((o) => o.closed).length,
      answered: settled.length - killed.length,
      settledOnce: settled.length === plan.killInFlight && settledBeforeDrain === onKilled && killed.length === onKilled,
      resent,
      lastFailureMs: Math.round(Math.max(0, ...killed.map((o) => o.at - killedAt))),
    };
  } finally {
    await f.stop();
  }
}

/** Waits for `test`, polling every 50 ms, at most `ms`; then fails with `what`. */
async function until(test: () => boolean, ms: number, what: string): Promise<void> {
  for (const end = performance.now() + ms; !test(); ) {
    if (performance.now() > end) throw new Error(`bench/front.ts: gave up after ${ms} ms: ${what}`);
    await sleep(50);
  }
}

export async function runFront(plan: FrontPlan, log: (line: string) => void): Promise<FrontResult> {
  log(`front: latency, ${plan.latencyCalls} calls per side and era`);
  const lat = await latency(plan);
  log(`front: ${plan.clients} clients with a call each in flight through one replica`);
  const pend = await pending(plan);
  log(`front: ${plan.cancels} stream closes to the upstream's cancel`);
  const cancel = await cancelLatency(plan);
  log(`front: two replicas behind HAProxy, one killed with ${plan.killInFlight} calls in flight`);
  const fl = await fleet(plan).catch((error: unknown) => {
    log(`front: the fleet step failed: ${(error as Error).message}`);
    return null;
  });
  return { latency: lat, pending: pend, cancel, fleet: fl };
}

export function frontTargets(r: FrontResult): Target[] {
  const added = Math.max(r.latency.v1.addedP50Ms, r.latency.v2.addedP50Ms);
  const p = r.pending;
  return [
    {
      name: "front: latency added per call through the HTTP front, median",
      target: "≤ 0.5 ms",
      value: `2025-era (v1 client) +${r.latency.v1.addedP50Ms} ms p50, +${r.latency.v1.addedP99Ms} ms p99; 2026-07-28 (v2 client) +${r.latency.v2.addedP50Ms} ms p50, +${r.latency.v2.addedP99Ms} ms p99 (${r.latency.v1.front.n} calls per side); a byte-copying node:http reverse proxy in the same place adds +${r.latency.v1.relayAddedP50Ms} / +${r.latency.v2.relayAddedP50Ms} ms`,
      met: added <= 0.5,
      raw: `${r.latency.v1.direct.p50} / ${r.latency.v2.direct.p50} ms direct`,
      wrapped: `${r.latency.v1.front.p50} / ${r.latency.v2.front.p50} ms through the front`,
      ratio: null,
    },
    {
      name: `front: ${p.clients.toLocaleString("en-US")} clients with a call each in flight through one replica`,
      target: "every call settled once; heap per pending call ≤ 1 KB above the upstream connection's own",
      value: `${p.answeredOnce}/${p.clients} answered exactly once (${p.answeredOther} otherwise); ${p.frontBytesPerCall} B per pending call in the front, the upstream connection's own ${p.upstreamOwnBytesPerCall} B, +${p.aboveUpstreamBytesPerCall} B above it (a bare node:http server holding as many requests: ${p.httpFloorBytesPerCall} B; the front's own above that floor and the upstream connection's own: ${p.frontBytesPerCall - p.httpFloorBytesPerCall - p.upstreamOwnBytesPerCall} B)`,
      met: p.answeredOnce === p.clients && p.aboveUpstreamBytesPerCall <= 1_024,
      raw: `${p.upstreamOwnBytesPerCall} B`,
      wrapped: `${p.frontBytesPerCall} B`,
      ratio: null,
    },
    {
      name: "front: a 2026-07-28 client's stream close to the upstream's cancel, median",
      target: "≤ 2 ms",
      value: `${r.cancel.p50} ms p50, ${r.cancel.p99} ms p99 (${r.cancel.n} closes; stdio upstream: notifications/cancelled read by the server)`,
      met: r.cancel.p50 <= 2,
      raw: "n/a",
      wrapped: `${r.cancel.p50} ms`,
      ratio: null,
    },
    r.fleet === null
      ? {
          name: "front: two replicas behind HAProxy, one killed",
          target: "every call settled once, 0 re-sent",
          value: "not run (no HAProxy)",
          met: null,
          raw: "n/a",
          wrapped: "n/a",
          ratio: null,
        }
      : {
          name: `front: two replicas behind HAProxy, one killed with ${r.fleet.inFlight} calls in flight`,
          target: "every call settled once, 0 re-sent, the survivor's calls unaffected",
          value: `${r.fleet.onKilled} on the killed replica: ${r.fleet.failedAtOnce} failed (${r.fleet.asConnectionClosed} as connection closed, the rest as the balancer's 502), the last ${r.fleet.lastFailureMs} ms after the kill; the survivor's ${r.fleet.answered} untouched until its own drain answered them; ${r.fleet.resent} re-sent; every call settled once: ${r.fleet.settledOnce}`,
          met: r.fleet.settledOnce && r.fleet.resent === 0 && r.fleet.failedAtOnce === r.fleet.onKilled && r.fleet.lastFailureMs < 1_000,
          raw: "n/a",
          wrapped: `${r.fleet.failedAtOnce} + ${r.fleet.answered}`,
          ratio: null,
        },
  ];
}
