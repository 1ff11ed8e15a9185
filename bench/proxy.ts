/**
 * What `mcp-cancellable proxy` costs (issue 22, item 7), the proxy beside a direct connection in
 * one run, both driven by the bare v1 SDK client:
 * - latency per call (the `echo` tool, sequential, the sides alternating call by call): direct
 *   stdio to the server vs stdio to the proxy, which runs the same server as its child; and
 *   direct Streamable HTTP vs stdio to `proxy --url` on the same HTTP server (2025 era, stateful);
 * - 1,000 concurrent `echo` calls, direct vs through the proxy (stdio), time until all settled;
 * - heap per pending call in the proxy (the proxy in this process on in-memory streams, a hung
 *   call each, measured after a full collection);
 * - N concurrent calls each settled exactly once: a third answered, a third cancelled by the
 *   client, a third ended by the proxy's idle timeout; every client id answered as its kind says
 *   (once, or never for the client's own cancel) and exactly one settled record per call in the
 *   proxy's --records file.
 * The proxy is built the way it ships (tsup, bench/lib/build.ts), not run from src through tsx.
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Target } from "./report.js";
import { heapUsed } from "./lib/env.js";
import { runLargeResults } from "./proxy-large.js";
import type { LargeResult } from "./proxy-large.js";
import { round, rounded, summarize } from "./lib/stats.js";
import type { Summary } from "./lib/stats.js";

const repo = fileURLToPath(new URL("../", import.meta.url));
const buildDir = `${repo}bench/.tmp/proxy-build`;
const node = process.execPath;
const stdioServer = ["--import", "tsx", `${repo}bench/proxy-stdio-server.ts`];

export interface ProxyPlan {
  /** Sequential calls per side for the latency, after `warmup` discarded. */
  latencyCalls: number;
  warmup: number;
  /** Calls in flight at once, and how many rounds per side (the median is kept). */
  concurrent: number;
  concurrentRounds: number;
  /** Hung calls for the heap per pending call. */
  pendingCalls: number;
  /** Concurrent calls that must each settle exactly once, and the proxy's idle timeout for a third of them. */
  settleCalls: number;
  settleTimeoutMs: number;
  /** Large results (bench/proxy-large.ts): sizes in MB (default 10 and 40) and rounds per side (default 3 short, 5 full). */
  largeSizesMb?: readonly number[];
  largeRounds?: number;
}

export interface ProxyLatency {
  direct: Summary;
  proxied: Summary;
  /** proxied − direct, ms. */
  addedP50Ms: number;
  addedP99Ms: number;
  /** stdio only: a byte-copying relay process (bench/proxy-relay.ts) in the same place, the floor of any proxy; relay − direct, ms. */
  relay?: Summary;
  relayAddedP50Ms?: number;
}

export interface ProxyResult {
  method: string;
  stdio: ProxyLatency;
  http: ProxyLatency;
  /** `relayMs`/`relayRatio`: the byte-copying relay (bench/proxy-relay.ts) in the proxy's place, the floor of any proxy process. */
  concurrent: {
    calls: number;
    rounds: number;
    directMs: number;
    proxiedMs: number;
    ratio: number;
    relayMs?: number;
    relayRatio?: number;
    /** A relay that parses every line and maps request ids (bench/proxy-relay.ts --parse): the floor of any proxy that reads messages. */
    parsingRelayMs?: number;
    parsingRelayRatio?: number;
    allSettled: boolean;
  };
  heap: { pendingCalls: number; bytesPerPendingCall: number };
  settle: {
    calls: number;
    timeoutMs: number;
    answered: number;
    timedOut: number;
    cancelled: number;
    /** Client ids answered more often, or otherwise, than their kind says. */
    wrongAnswers: number;
    /** Calls with exactly one settled record (revision 0) in the proxy's records. */
    recordsSettledOnce: number;
    duplicateRecords: number;
    ms: number;
    exactlyOnce: boolean;
  };
  /** A large result through the proxy beside direct and a byte relay (bench/proxy-large.ts). */
  large: LargeResult[];
}

interface EchoSide {
  call(): Promise<unknown>;
  close(): Promise<void>;
}

async function sdkSide(transport: StdioClientTransport | StreamableHTTPClientTransport, name: string): Promise<EchoSide> {
  const client = new Client({ name, version: "1.0.0" });
  client.onerror = () => {};
  await client.connect(transport);
  return { call: () => client.callTool({ name: "echo", arguments: {} }), close: () => client.close() };
}

const stdioDirect = (): Promise<EchoSide> =>
  sdkSide(new StdioClientTransport({ command: node, args: stdioServer, cwd: repo, stderr: "ignore" }), "bench-proxy-direct");

const viaProxy = (cli: string, proxyArgs: string[]): Promise<EchoSide> =>
  sdkSide(
    new StdioClientTransport({ command: node, args: [cli, "proxy", ...proxyArgs], cwd: repo, stderr: "ignore" }),
    "bench-proxy-proxied",
  );

/** Sequential echo calls, the sides taking turns each call (the order rotating), warm-up discarded. */
async function latency(direct: EchoSide, proxied: EchoSide, plan: ProxyPlan, relay?: EchoSide): Promise<ProxyLatency> {
  const sides = { direct, proxied, ...(relay === undefined ? {} : { relay }) } as Record<string, EchoSide>;
  const names = Object.keys(sides);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (let i = 0; i < plan.warmup + plan.latencyCalls; i++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(i + k) % names.length]!;
      const started = performance.now();
      await sides[name]!.call();
      if (i >= plan.warmup) samples[name]!.push(performance.now() - started);
    }
  }
  const d = summarize(samples.direct!);
  const p = summarize(samples.proxied!);
  const result: ProxyLatency = {
    direct: rounded(d),
    proxied: rounded(p),
    addedP50Ms: round(p.p50 - d.p50),
    addedP99Ms: round(p.p99 - d.p99),
  };
  if (relay !== undefined) {
    const r = summarize(samples.relay!);
    result.relay = rounded(r);
    result.relayAddedP50Ms = round(r.p50 - d.p50);
  }
  return result;
}

async function concurrent(
  direct: EchoSide,
  proxied: EchoSide,
  plan: ProxyPlan,
  relay?: EchoSide,
  parsingRelay?: EchoSide,
): Promise<ProxyResult["concurrent"]> {
  const sides = {
    direct,
    proxied,
    ...(relay === undefined ? {} : { relay }),
    ...(parsingRelay === undefined ? {} : { parsingRelay }),
  } as Record<string, EchoSide>;
  const names = Object.keys(sides);
  const times: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  let allSettled = true;
  for (let r = 0; r < plan.concurrentRounds; r++) {
    // The order rotates each round, so no side always runs first (or right after another's burst).
    for (let k = 0; k < names.length; k++) {
      const name = names[(r + k) % names.length]!;
      const started = performance.now();
      const results = await Promise.allSettled(Array.from({ length: plan.concurrent }, () => sides[name]!.call()));
      times[name]!.push(performance.now() - started);
      if (results.some((result) => result.status !== "fulfilled")) allSettled = false;
    }
  }
  const directMs = summarize(times.direct!).p50;
  const proxiedMs = summarize(times.proxied!).p50;
  const relayMs = relay === undefined ? undefined : summarize(times.relay!).p50;
  const parsingRelayMs = parsingRelay === undefined ? undefined : summarize(times.parsingRelay!).p50;
  return {
    calls: plan.concurrent,
    rounds: plan.concurrentRounds,
    directMs: round(directMs),
    proxiedMs: round(proxiedMs),
    ratio: round(proxiedMs / directMs),
    ...(relayMs === undefined ? {} : { relayMs: round(relayMs), relayRatio: round(relayMs / directMs) }),
    ...(parsingRelayMs === undefined ? {} : { parsingRelayMs: round(parsingRelayMs), parsingRelayRatio: round(parsingRelayMs / directMs) }),
    allSettled,
  };
}

/** JSON lines from a stream, handed to `onMessage` one by one. */
function lines(stream: NodeJS.ReadableStream, onMessage: (message: Record<string, unknown>) => void): void {
  let buffer = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    buffer += chunk;
    let newline = buffer.indexOf("\n");
    while (newline !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (line.trim() !== "") onMessage(JSON.parse(line) as Record<string, unknown>);
      newline = buffer.indexOf("\n");
    }
  });
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: "init",
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench-proxy-raw", version: "1.0.0" } },
};
const hang = (id: string | number): string =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "hang", arguments: { tag: String(id) } } });

/** Waits for `test`, polling every 10 ms, at most `ms`. */
async function until(test: () => boolean, ms: number, what: string): Promise<void> {
  for (const end = performance.now() + ms; !test(); ) {
    if (performance.now() > end) throw new Error(`proxy bench: ${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Heap per pending call of the proxy, in this process (the built command on in-memory streams). */
async function heapPerPending(pendingCalls: number): Promise<ProxyResult["heap"]> {
  const { runProxyCommand } = (await import(
    pathToFileURL(`${buildDir}/proxy-command.js`).href
  )) as typeof import("../src/cli/proxy/command.js");
  const input = new PassThrough();
  const output = new PassThrough();
  const answered = new Set<unknown>();
  lines(output, (message) => {
    if (typeof message.id === "string" && message.id.startsWith("p")) answered.add(message.id);
  });
  const quiet = { stdout: () => {}, stderr: () => {} };
  const exit = runProxyCommand(["--timeout-ms", "none", "--max-total-timeout-ms", "none", "--", node, ...stdioServer], quiet, {
    input,
    output,
  });
  const write = (text: string): void => void input.write(`${text}\n`);
  write(JSON.stringify({ ...INITIALIZE, id: "pinit" }));
  await until(() => answered.has("pinit"), 30_000, "initialize");
  write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
  let pings = 0;
  const ping = async (): Promise<void> => {
    const id = `pping${pings++}`;
    write(JSON.stringify({ jsonrpc: "2.0", id, method: "ping" }));
    await until(() => answered.has(id), 60_000, id);
  };
  // Warm-up: the same path once, then cancelled.
  const warm = Array.from({ length: 200 }, (_, i) => `w${i}`);
  write(warm.map(hang).join("\n"));
  await ping();
  write(warm.map((id) => JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } })).join("\n"));
  await ping();
  const before = heapUsed();
  write(Array.from({ length: pendingCalls }, (_, i) => hang(i)).join("\n"));
  // The server answers the ping after it read every request before it, and the proxy relayed them all.
  await ping();
  const after = heapUsed();
  input.end(); // the client goes away: every call cancelled upstream, the server stopped
  await exit;
  return { pendingCalls, bytesPerPendingCall: Math.round((after - before) / pendingCalls) };
}

/** N concurrent calls through the proxy (a child process): each settled exactly once. */
async function settleOnce(cli: string, calls: number, timeoutMs: number): Promise<ProxyResult["settle"]> {
  const dir = mkdtempSync(join(tmpdir(), "mcp-proxy-bench-"));
  const recordsFile = join(dir, "records.jsonl");
  try {
    const child: ChildProcessWithoutNullStreams = spawn(
      node,
      [
        cli,
        "proxy",
        "--timeout-ms",
        String(timeoutMs),
        "--max-total-timeout-ms",
        "none",
        "--records",
        recordsFile,
        "--",
        node,
        ...stdioServer,
      ],
      { cwd: repo, stdio: ["pipe", "pipe", "pipe"] },
    );
    child.stderr.resume();
    const exited = new Promise<number | null>((done) => child.once("close", done));
    const answers = new Map<unknown, Array<Record<string, unknown>>>();
    lines(child.stdout, (message) => {
      const list = answers.get(message.id) ?? [];
      list.push(message);
      answers.set(message.id, list);
    });
    const write = (text: string): void => void child.stdin.write(`${text}\n`);
    write(JSON.stringify(INITIALIZE));
    await until(() => answers.has("init"), 30_000, "initialize");
    write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
    const kind = (i: number): "answered" | "cancelled" | "timedOut" => (i % 3 === 0 ? "answered" : i % 3 === 1 ? "cancelled" : "timedOut");
    const started = performance.now();
    const requests: string[] = [];
    for (let i = 0; i < calls; i++) {
      requests.push(
        kind(i) === "answered"
          ? JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "echo", arguments: {} } })
          : hang(i),
      );
    }
    write(requests.join("\n"));
    const cancels: string[] = [];
    for (let i = 0; i < calls; i++) {
      if (kind(i) === "cancelled")
        cancels.push(JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: i, reason: "bench" } }));
    }
    write(cancels.join("\n"));
    const expected = Array.from({ length: calls }, (_, i) => i).filter((i) => kind(i) !== "cancelled").length;
    await until(() => [...answers.keys()].filter((id) => typeof id === "number").length >= expected, timeoutMs + 120_000, "every answer");
    const ms = performance.now() - started;
    await new Promise((r) => setTimeout(r, 500)); // room for a duplicate to show
    child.stdin.end();
    await exited;
    let answered = 0;
    let timedOut = 0;
    let wrongAnswers = 0;
    for (let i = 0; i < calls; i++) {
      const got = answers.get(i) ?? [];
      const k = kind(i);
      if (k === "cancelled") {
        if (got.length !== 0) wrongAnswers++;
      } else if (got.length !== 1) {
        wrongAnswers++;
      } else if (k === "answered" && got[0]!.result !== undefined) {
        answered++;
      } else if (k === "timedOut" && (got[0]!.error as { code?: number } | undefined)?.code === -32001) {
        timedOut++;
      } else {
        wrongAnswers++;
      }
    }
    const settled = new Map<unknown, number>();
    for (const line of readFileSync(recordsFile, "utf8").split("\n")) {
      if (line.trim() === "") continue;
      const record = JSON.parse(line) as { revision: number; clientRequestId?: unknown; method: string };
      if (record.revision === 0 && record.method === "tools/call")
        settled.set(record.clientRequestId, (settled.get(record.clientRequestId) ?? 0) + 1);
    }
    let recordsSettledOnce = 0;
    let duplicateRecords = 0;
    for (let i = 0; i < calls; i++) {
      const n = settled.get(i) ?? 0;
      if (n === 1) recordsSettledOnce++;
      if (n > 1) duplicateRecords += n - 1;
    }
    const cancelled = Math.floor((calls + 1) / 3);
    return {
      calls,
      timeoutMs,
      answered,
      timedOut,
      cancelled,
      wrongAnswers,
      recordsSettledOnce,
      duplicateRecords,
      ms: round(ms),
      exactlyOnce: wrongAnswers === 0 && recordsSettledOnce === calls && duplicateRecords === 0,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts bench/proxy-http-server.ts; resolves with its URL and a stop. */
async function httpServer(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(node, ["--import", "tsx", `${repo}bench/proxy-http-server.ts`], { cwd: repo, stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const match = /PORT (\d+)/.exec(text);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", () => reject(new Error("proxy bench: the HTTP server exited before listening")));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => child.kill() };
}

export async function runProxy(plan: ProxyPlan, log: (line: string) => void): Promise<ProxyResult> {
  execFileSync(
    node,
    [
      "--import",
      "tsx",
      `${repo}bench/lib/build.ts`,
      buildDir,
      `cli=${repo}src/cli/index.ts`,
      `proxy-command=${repo}src/cli/proxy/command.ts`,
    ],
    {
      cwd: repo,
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  const cli = `${buildDir}/cli.js`;

  const direct = await stdioDirect();
  const proxied = await viaProxy(cli, ["--", node, ...stdioServer]);
  const relay = await sdkSide(
    new StdioClientTransport({
      command: node,
      args: ["--import", "tsx", `${repo}bench/proxy-relay.ts`, "--", node, ...stdioServer],
      cwd: repo,
      stderr: "ignore",
    }),
    "bench-proxy-relay",
  );
  const parsingRelay = await sdkSide(
    new StdioClientTransport({
      command: node,
      args: ["--import", "tsx", `${repo}bench/proxy-relay.ts`, "--parse", "--", node, ...stdioServer],
      cwd: repo,
      stderr: "ignore",
    }),
    "bench-proxy-parsing-relay",
  );
  const stdio = await latency(direct, proxied, plan, relay);
  log(
    `  stdio: direct p50 ${stdio.direct.p50} ms, through the proxy ${stdio.proxied.p50} ms (+${stdio.addedP50Ms} ms; p99 +${stdio.addedP99Ms} ms); ` +
      `a byte-copying relay ${stdio.relay!.p50} ms (+${stdio.relayAddedP50Ms} ms)`,
  );
  const many = await concurrent(direct, proxied, plan, relay, parsingRelay);
  await relay.close();
  await parsingRelay.close();
  log(
    `  ${plan.concurrent} concurrent: direct ${many.directMs} ms, through the proxy ${many.proxiedMs} ms (${many.ratio}x), ` +
      `a byte-copying relay ${many.relayMs} ms (${many.relayRatio}x), a parsing relay ${many.parsingRelayMs} ms (${many.parsingRelayRatio}x)`,
  );
  await direct.close();
  await proxied.close();

  const server = await httpServer();
  let http: ProxyLatency;
  try {
    const httpDirect = await sdkSide(new StreamableHTTPClientTransport(new URL(server.url)), "bench-proxy-http-direct");
    const httpProxied = await viaProxy(cli, ["--url", server.url]);
    http = await latency(httpDirect, httpProxied, plan);
    await httpDirect.close();
    await httpProxied.close();
  } finally {
    server.stop();
  }
  log(
    `  HTTP: direct p50 ${http.direct.p50} ms, stdio to proxy --url ${http.proxied.p50} ms (+${http.addedP50Ms} ms; p99 +${http.addedP99Ms} ms)`,
  );

  const heap = await heapPerPending(plan.pendingCalls);
  log(`  heap per pending call in the proxy: ${heap.bytesPerPendingCall} B (${heap.pendingCalls} calls)`);
  const large = await runLargeResults(cli, plan.largeSizesMb ?? [10, 40], plan.largeRounds ?? (plan.latencyCalls >= 1_000 ? 5 : 3), log);
  const settle = await settleOnce(cli, plan.settleCalls, plan.settleTimeoutMs);
  log(
    `  ${settle.calls} concurrent: ${settle.answered} answered, ${settle.cancelled} cancelled by the client, ${settle.timedOut} timed out; ` +
      `${settle.wrongAnswers} wrong answers, ${settle.recordsSettledOnce} settled once, ${settle.duplicateRecords} duplicates (${settle.ms} ms)`,
  );
  return {
    method:
      "the bare v1 SDK client; `echo` calls, sequential, direct and proxied taking turns call by call (10 % warm-up discarded); stdio: the " +
      "same server script direct, as the proxy's child, and as the child of a byte-copying relay (bench/proxy-relay.ts: the floor of one more process); HTTP: one stateful v1 server process, direct Streamable HTTP vs stdio to " +
      "`proxy --url`; the proxy built with tsup as it ships; heap: the proxy in this process on in-memory streams, hung calls, after a full GC; " +
      "settle: a raw line client, a third echo, a third hang cancelled by the client, a third hang ended by --timeout-ms, counted from the " +
      "client's answers and the proxy's --records; large: a raw line client with a linear reader, one `big` call at a time (10 and 40 MB of text, " +
      "one line), from its write to its answer parsed, direct / through the proxy / through the byte relay taking turns, the median",
    stdio,
    http,
    concurrent: many,
    heap,
    settle,
    large,
  };
}

/** The proxy's targets of issue 22, in results.json's `targets`. */
export function proxyTargets(p: ProxyResult): Target[] {
  const s = p.settle;
  return [
    {
      name: "proxy: latency added per call, stdio, median",
      target: "at most 0.1 ms above the byte relay at the median (issue 29)",
      value: `+${p.stdio.addedP50Ms} ms at the median, +${p.stdio.addedP99Ms} ms at p99 (${p.stdio.proxied.n} calls per side; a byte-copying relay process adds +${p.stdio.relayAddedP50Ms ?? "n/a"} ms); HTTP via proxy --url +${p.http.addedP50Ms} ms median, +${p.http.addedP99Ms} ms p99; ${p.concurrent.calls} concurrent ${p.concurrent.ratio}×; heap ${p.heap.bytesPerPendingCall} B per pending call`,
      met: p.stdio.relayAddedP50Ms === undefined ? null : p.stdio.addedP50Ms - p.stdio.relayAddedP50Ms <= 0.1,
      raw: `${p.stdio.direct.p50} ms direct`,
      wrapped: `${p.stdio.proxied.p50} ms through the proxy`,
      ratio: Math.round((p.stdio.proxied.p50 / p.stdio.direct.p50) * 1_000) / 1_000,
    },
    {
      name: `proxy: ${s.calls.toLocaleString("en-US")} concurrent calls, each settled exactly once`,
      target: "every call settled exactly once",
      value: `${s.answered} answered, ${s.cancelled} cancelled by the client (no answer), ${s.timedOut} -32001 at ${s.timeoutMs} ms; ${s.wrongAnswers} wrong or duplicate answers; ${s.recordsSettledOnce}/${s.calls} with exactly one settled record, ${s.duplicateRecords} duplicate; all in ${s.ms} ms`,
      met: s.exactlyOnce,
      raw: "n/a",
      wrapped: `${s.recordsSettledOnce}/${s.calls}`,
      ratio: null,
    },
    {
      name: "proxy: heap per pending call",
      target: "≤ 1 KB (issue 29)",
      value: `${p.heap.bytesPerPendingCall} B over ${p.heap.pendingCalls} hung calls`,
      met: p.heap.bytesPerPendingCall <= 1_024,
      raw: "n/a",
      wrapped: `${p.heap.bytesPerPendingCall} B`,
      ratio: null,
    },
    {
      name: `proxy: ${p.concurrent.calls.toLocaleString("en-US")} concurrent calls, over direct`,
      target: "≤ 1.2x (issue 29)",
      value: `${p.concurrent.ratio}x (${p.concurrent.proxiedMs} ms against ${p.concurrent.directMs} ms direct; a byte-copying relay ${p.concurrent.relayRatio ?? "n/a"}x, a relay that parses every line and maps ids ${p.concurrent.parsingRelayRatio ?? "n/a"}x), median of ${p.concurrent.rounds}`,
      met: p.concurrent.ratio <= 1.2,
      raw: `${p.concurrent.directMs} ms direct`,
      wrapped: `${p.concurrent.proxiedMs} ms through the proxy`,
      ratio: p.concurrent.ratio,
    },
    ...p.large.map(
      (l): Target => ({
        name: `proxy: a ${l.sizeMb} MB result through the proxy, over direct`,
        target: "≤ 1.5x",
        value: `${l.ratio}x (${l.proxiedMs} ms against ${l.directMs} ms direct; a byte-copying relay ${l.relayRatio}x), median of ${l.rounds}`,
        met: l.ratio <= 1.5,
        raw: `${l.directMs} ms direct`,
        wrapped: `${l.proxiedMs} ms through the proxy`,
        ratio: l.ratio,
      }),
    ),
  ];
}
