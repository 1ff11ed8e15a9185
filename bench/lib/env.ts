import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";

/** Where and with what a benchmark ran: printed in results.md, results.json and the chart's caption. */
export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  sdk: string;
  tinybench: string;
  commit: string;
  date: string;
}

const repo = fileURLToPath(new URL("../../", import.meta.url));

/** The installed version of a package (read from node_modules: some export maps hide package.json). */
function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(`${repo}node_modules/${name}/package.json`, "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
}

function gitCommit(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { encoding: "utf8" }).trim();
    return dirty.length > 0 ? `${head} (src/ modified)` : head;
  } catch {
    return "unknown";
  }
}

/** Reads the machine, the Node version and the versions under test. */
export function machine(): Machine {
  return {
    cpu: os.cpus()[0]?.model.trim() ?? "unknown",
    cores: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    sdk: `@modelcontextprotocol/sdk ${packageVersion("@modelcontextprotocol/sdk")}`,
    tinybench: packageVersion("tinybench"),
    commit: gitCommit(),
    date: new Date().toISOString(),
  };
}

/** Runs the garbage collector (the bench runs with --expose-gc) a few times so heap readings settle. */
export function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run the bench with `node --expose-gc --import tsx bench/run.ts`");
  for (let i = 0; i < 4; i++) gc();
}

/** Heap used after a full collection, in bytes. */
export function heapUsed(): number {
  collect();
  return process.memoryUsage().heapUsed;
}

/** `process.getActiveResourcesInfo()` as counts by kind (Timeout, TCPWRAP, ...). */
export function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/** What `after` holds beyond `before`, by kind; empty when nothing was left behind. */
export function resourceDiff(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const diff: Record<string, number> = {};
  for (const [kind, count] of Object.entries(after)) {
    const extra = count - (before[kind] ?? 0);
    if (extra > 0) diff[kind] = extra;
  }
  return diff;
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Lets pending I/O callbacks and microtasks run. */
export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
