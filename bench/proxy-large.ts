/**
 * A large result through `mcp-cancellable proxy` beside a direct connection (issue 29, item 1):
 * the time from a `tools/call` written on the server's (or the proxy's) stdin to its answer read
 * whole and parsed by the client, for results of 10 MB and 40 MB, three sides taking turns:
 * direct (the client runs the server), through the proxy (built as it ships), and through a
 * byte-copying relay process (bench/proxy-relay.ts, the floor of one more process). The client
 * reads with a linear line reader, so what is measured is the server's write, the pipe(s) and
 * the proxy, not a client's own reading (the v1 SDK client's ReadBuffer copies its whole buffer
 * on every chunk, and refuses lines over 10 MB by default).
 * Alone: node --expose-gc --import tsx bench/proxy-large.ts [--rounds N] [--sizes 10,40] [--cli <path to a built cli.js>]
 */
import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";
import { JsonLineReader } from "../src/cli/json-lines.js";
import { round, summarize } from "./lib/stats.js";

const repo = fileURLToPath(new URL("../", import.meta.url));
const node = process.execPath;
const server = ["--import", "tsx", `${repo}bench/proxy-large-server.ts`];

export interface LargeResult {
  /** Result size, in MB (10^6 bytes of text). */
  sizeMb: number;
  rounds: number;
  /** Median ms from the call's write to its answer parsed, per side. */
  directMs: number;
  proxiedMs: number;
  relayMs: number;
  /** proxied / direct, and relay / direct. */
  ratio: number;
  relayRatio: number;
}

interface Side {
  call(bytes: number): Promise<number>;
  close(): Promise<void>;
}

/** A raw line client over a child process: initialize, then one `big` call at a time, timed. */
async function side(command: string, args: string[]): Promise<Side> {
  const child: ChildProcessWithoutNullStreams = spawn(command, args, { cwd: repo, stdio: ["pipe", "pipe", "pipe"] });
  child.stderr.resume();
  const waiting = new Map<unknown, (message: Record<string, unknown>) => void>();
  const reader = new JsonLineReader(
    {
      message: (message) => {
        const id = (message as { id?: unknown }).id;
        waiting.get(id)?.(message as unknown as Record<string, unknown>);
        waiting.delete(id);
      },
      invalid: () => {},
    },
    512 * 1024 * 1024,
  );
  child.stdout.on("data", (chunk: Buffer) => reader.push(chunk));
  let next = 0;
  const request = (method: string, params: unknown): Promise<Record<string, unknown>> => {
    const id = next++;
    const answer = new Promise<Record<string, unknown>>((resolve) => waiting.set(id, resolve));
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    return answer;
  };
  await request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench-large", version: "1.0.0" } });
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  return {
    async call(bytes) {
      const started = performance.now();
      const answer = await request("tools/call", { name: "big", arguments: { bytes } });
      const ms = performance.now() - started;
      const text = ((answer.result as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text ?? "").length;
      if (text !== bytes)
        throw new Error(`proxy bench (large): expected ${bytes} characters, got ${text}: ${JSON.stringify(answer).slice(0, 300)}`);
      return ms;
    },
    close: () =>
      new Promise((resolve) => {
        child.once("close", () => resolve());
        child.stdin.end();
        setTimeout(() => child.kill("SIGKILL"), 3_000).unref();
      }),
  };
}

/** Each size: one warm-up call per side, then `rounds` calls per side, the order rotating each round. */
export async function runLargeResults(
  cli: string,
  sizesMb: readonly number[],
  rounds: number,
  log: (line: string) => void,
): Promise<LargeResult[]> {
  const sides = {
    direct: await side(node, server),
    proxied: await side(node, [cli, "proxy", "--", node, ...server]),
    relay: await side(node, ["--import", "tsx", `${repo}bench/proxy-relay.ts`, "--", node, ...server]),
  };
  const names = Object.keys(sides) as Array<keyof typeof sides>;
  const results: LargeResult[] = [];
  try {
    for (const sizeMb of sizesMb) {
      const bytes = sizeMb * 1_000_000;
      for (const name of names) await sides[name].call(bytes);
      const samples: Record<string, number[]> = { direct: [], proxied: [], relay: [] };
      for (let r = 0; r < rounds; r++) {
        for (let k = 0; k < names.length; k++) {
          const name = names[(r + k) % names.length]!;
          (globalThis as { gc?: () => void }).gc?.();
          samples[name]!.push(await sides[name].call(bytes));
        }
      }
      const [direct, proxied, relay] = names.map((name) => summarize(samples[name]!).p50) as [number, number, number];
      const result = {
        sizeMb,
        rounds,
        directMs: round(direct),
        proxiedMs: round(proxied),
        relayMs: round(relay),
        ratio: round(proxied / direct),
        relayRatio: round(relay / direct),
      };
      log(
        `  a ${sizeMb} MB result: direct ${result.directMs} ms, through the proxy ${result.proxiedMs} ms (${result.ratio}x), a byte relay ${result.relayMs} ms (${result.relayRatio}x)`,
      );
      results.push(result);
    }
  } finally {
    for (const name of names) await sides[name].close();
  }
  return results;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const arg = (flag: string): string | undefined => {
    const i = process.argv.indexOf(flag);
    return i === -1 ? undefined : process.argv[i + 1];
  };
  const cli = arg("--cli") ?? `${repo}bench/.tmp/proxy-build/cli.js`;
  const sizes = (arg("--sizes") ?? "10,40").split(",").map(Number);
  await runLargeResults(cli, sizes, Number(arg("--rounds") ?? 3), (line) => console.log(line));
}
