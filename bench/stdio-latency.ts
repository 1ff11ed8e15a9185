import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { fileURLToPath } from "node:url";
import { EventLog } from "./lib/events.js";
import type { Subject } from "./lib/subject.js";
import { round, rounded, summarize } from "./lib/stats.js";
import type { Summary } from "./lib/stats.js";

const repo = fileURLToPath(new URL("../", import.meta.url));
const wall = (): number => performance.timeOrigin + performance.now();

/** One side (ours or the raw SDK) of the stdio cancel-latency run. */
export interface StdioSide {
  /** Abort → the server read the stdin chunk holding `notifications/cancelled`, ms (clock-corrected). */
  read: Summary;
  /** Abort → the server's SDK dispatched the parsed notification, ms. */
  dispatched: Summary;
  /** Abort → the tool's `extra.signal` aborted on the server, ms. */
  toolAborted: Summary;
  /** Abort → the caller's promise rejected (local clock), ms. */
  callerReleased: Summary;
  /** What the caller's promise rejected with (the first call). */
  error: string;
  /**
   * Cross-check of the shared clock: the offset server − client estimated with the `clock` tool
   * (ms) and its error bound (± half the best round trip). The latencies do not use it: both
   * processes read the same kernel clock, so it should be 0 within its bound.
   */
  clockOffsetMs: number;
  clockErrorMs: number;
  /** Every sample of `read`, ms, for the chart. */
  samples: number[];
}

export interface StdioResult {
  method: string;
  calls: number;
  ours: StdioSide;
  raw: StdioSide;
}

interface Side {
  call(tag: string, signal: AbortSignal): Promise<unknown>;
  clock(): Promise<number>;
  log: EventLog;
  close(): Promise<void>;
  pending(): number;
}

async function openSide(kind: "ours" | "raw", subject: Subject): Promise<Side> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--import", "tsx", `${repo}bench/stdio-server.ts`],
    cwd: repo,
    env: process.env as Record<string, string>,
    stderr: "pipe",
  });
  const log = new EventLog();
  transport.stderr?.on(
    "data",
    log.lineReader((line) => process.stderr.write(`[stdio server ${kind}] ${line}\n`)),
  );
  const client = new Client({ name: `bench-stdio-${kind}`, version: "1.0.0" });
  const clockCall = async (): Promise<number> => {
    const result = (await client.callTool({ name: "clock", arguments: {} })) as { content: Array<{ text: string }> };
    return Number(result.content[0]!.text);
  };
  if (kind === "ours") {
    const mcp = subject.root.withCancellation(client, subject.stdio.stdioCancellation(transport));
    await client.connect(mcp.transport);
    return {
      call: (tag, signal) => mcp.callTool({ name: "hang", arguments: { tag } }, { signal }),
      clock: clockCall,
      log,
      close: () => client.close(),
      pending: () => mcp.pendingCount,
    };
  }
  await client.connect(transport);
  return {
    call: (tag, signal) => client.callTool({ name: "hang", arguments: { tag } }, undefined, { signal }),
    clock: clockCall,
    log,
    close: () => client.close(),
    pending: () => 0,
  };
}

/**
 * Clock offset (server − client, ms) from `rounds` calls of the `clock` tool: offset =
 * serverTime − (sent + received) / 2 for the call with the shortest round trip; error ≤ RTT / 2.
 */
async function calibrate(side: Side, rounds: number): Promise<{ offset: number; error: number }> {
  let best = { offset: 0, error: Number.POSITIVE_INFINITY };
  for (let i = 0; i < rounds; i++) {
    const sent = wall();
    const server = await side.clock();
    const received = wall();
    const error = (received - sent) / 2;
    if (error < best.error) best = { offset: server - (sent + received) / 2, error };
  }
  return best;
}

interface Sample {
  read: number;
  dispatched: number;
  toolAborted: number;
  released: number;
  error: string;
}

async function once(side: Side, tag: string): Promise<Sample> {
  const controller = new AbortController();
  let released = Number.NaN;
  let error = "";
  let abortedAt = 0;
  const call = side.call(tag, controller.signal).then(
    () => {
      error = "resolved (unexpected)";
    },
    (reason: unknown) => {
      released = performance.now() - abortedAt;
      error = reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason);
    },
  );
  const started = await side.log.wait((e) => e.event === "started" && e.tag === tag, 5_000, `start of ${tag}`);
  const abortedWall = wall();
  abortedAt = performance.now();
  controller.abort();
  await call;
  const read = await side.log.wait((e) => e.event === "cancel-read" && e.requestId === started.requestId, 5_000, `cancel of ${tag}`);
  const toolAborted = await side.log.wait((e) => e.event === "aborted" && e.tag === tag, 5_000, `abort of ${tag}`);
  return {
    read: read.t - abortedWall,
    dispatched: (read.dispatchedAt as number) - abortedWall,
    toolAborted: toolAborted.t - abortedWall,
    released,
    error,
  };
}

/**
 * Cancel latency on stdio, ours beside the raw v1 SDK: each side has its own child-process
 * server (bench/stdio-server.ts); calls alternate between the sides. Per call: wait until the
 * server reports the `hang` tool started (so it is idle), abort the caller's signal, and take
 * the server's timestamp of reading the `notifications/cancelled` line.
 */
export async function runStdioLatency(calls: number, subject: Subject, log: (line: string) => void): Promise<StdioResult> {
  const ours = await openSide("ours", subject);
  const raw = await openSide("raw", subject);
  const clocks = { ours: await calibrate(ours, 40), raw: await calibrate(raw, 40) };
  const warmup = 10;
  const samples: { ours: Sample[]; raw: Sample[] } = { ours: [], raw: [] };
  for (let i = 0; i < warmup + calls; i++) {
    const order: Array<"ours" | "raw"> = i % 2 === 0 ? ["ours", "raw"] : ["raw", "ours"];
    for (const kind of order) {
      const side = kind === "ours" ? ours : raw;
      const sample = await once(side, `${kind}-${i}`);
      if (i >= warmup) samples[kind].push(sample);
    }
  }
  if (ours.pending() !== 0) throw new Error(`stdio: ${ours.pending()} calls left pending`);
  await ours.close();
  await raw.close();
  const side = (kind: "ours" | "raw"): StdioSide => {
    const list = samples[kind];
    return {
      read: rounded(summarize(list.map((s) => s.read))),
      dispatched: rounded(summarize(list.map((s) => s.dispatched))),
      toolAborted: rounded(summarize(list.map((s) => s.toolAborted))),
      callerReleased: rounded(summarize(list.map((s) => s.released))),
      error: list[0]?.error ?? "",
      clockOffsetMs: round(clocks[kind].offset),
      clockErrorMs: round(clocks[kind].error),
      samples: list.map((s) => round(s.read)),
    };
  };
  const result: StdioResult = {
    method:
      "one child-process v1 McpServer per side (StdioServerTransport); latency = the server's timestamp of reading the stdin chunk " +
      "holding notifications/cancelled minus the client's timestamp of abort(), both performance.timeOrigin + performance.now() " +
      "(the same kernel clock in both processes); cross-checked with a `clock` tool (offset of the min-RTT call of 40, ± RTT/2); " +
      "sides alternate per call; 10 warm-up calls per side discarded",
    calls,
    ours: side("ours"),
    raw: side("raw"),
  };
  log(`  stdio: ours p50 ${result.ours.read.p50} ms, raw p50 ${result.raw.read.p50} ms`);
  return result;
}
