/**
 * N calls queued behind a stdio server that reads nothing (stopped with SIGSTOP once connected,
 * so its stdin fills and the stdio adapter's write queue holds the rest), each with its own
 * `AbortController`, all aborted in one loop (in call order, or `--reverse`: last first). Prints
 * what the server's stdin holds, the abort loop's wall and CPU time, when the callers were
 * released after it (p0, p50, p99, max), and the event loop's longest block; then lets the server
 * run again and closes. The wrapped v1 SDK only (the tsup build, bench/lib/subject.ts); the peer
 * is bench/silent-stdio-peer.mjs. Never fails on speed.
 *
 * Run: node --expose-gc --import tsx bench/stopped-abort.ts [calls] [--reverse]   (default 10,000)
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { loadSubject } from "./lib/subject.js";

const calls = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 10_000);
const reverse = process.argv.includes("--reverse");
const subject = await loadSubject();
const peer = fileURLToPath(new URL("./silent-stdio-peer.mjs", import.meta.url));
const transport = new StdioClientTransport({ command: process.execPath, args: [peer] });
const client = new Client({ name: "stopped-abort", version: "1.0.0" });
const mcp = subject.root.withCancellation(client, subject.stdio.stdioCancellation(transport));
await client.connect(mcp.transport);
const pid = transport.pid!;
process.kill(pid, "SIGSTOP");
try {
  const controllers = Array.from({ length: calls }, () => new AbortController());
  const releasedAt = new Float64Array(calls);
  const all = controllers.map((controller, i) =>
    mcp
      .callTool({ name: "never", arguments: { pad: "x".repeat(100) } }, { signal: controller.signal, timeoutMs: 600_000 })
      .catch(() => void (releasedAt[i] = performance.now())),
  );
  await new Promise((resolve) => setTimeout(resolve, 200)); // every request written or queued
  const stdin = (transport as unknown as { _process: { stdin: { writableLength: number } } })._process.stdin;
  console.log(`${calls} calls; the server's stdin holds ${stdin.writableLength} B, the write queue the rest`);
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  await new Promise((resolve) => setTimeout(resolve, 20)); // samples before the loop below
  const start = performance.now();
  const cpu = process.cpuUsage();
  for (const controller of reverse ? [...controllers].reverse() : controllers) controller.abort();
  const used = process.cpuUsage(cpu);
  const loopMs = performance.now() - start;
  await Promise.all(all);
  await new Promise((resolve) => setTimeout(resolve, 15));
  loop.disable();
  const after = Array.from(releasedAt, (at) => at - start).sort((a, b) => a - b);
  const at = (q: number): string => after[Math.min(calls - 1, Math.floor(calls * q))]!.toFixed(1);
  console.log(
    `aborted ${reverse ? "last first" : "in call order"}: the loop ${loopMs.toFixed(0)} ms wall, ${((used.user + used.system) / 1000).toFixed(0)} ms CPU; ` +
      `released after it p0 ${at(0)} p50 ${at(0.5)} p99 ${at(0.99)} max ${at(1)} ms; event loop's longest block ${(loop.max / 1e6).toFixed(0)} ms`,
  );
} finally {
  process.kill(pid, "SIGCONT");
  await client.close().catch(() => {});
}
