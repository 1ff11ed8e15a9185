import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { inMemoryServer } from "./lib/servers.js";
import type { Subject } from "./lib/subject.js";
import { round, rounded, summarize } from "./lib/stats.js";
import type { Summary } from "./lib/stats.js";

/** Settle time minus deadline (ms) for one side. */
export interface MaxTimeoutSide {
  lateness: Summary;
  /** What the call settled with (the first call). */
  error: string;
  samples: number[];
}

export interface MaxTimeoutResult {
  method: string;
  calls: number;
  progressEveryMs: number;
  deadlinesMs: [number, number];
  ours: MaxTimeoutSide;
  raw: MaxTimeoutSide;
  /** A bare `setTimeout(deadline)`: the event loop's own lateness, the floor for any timer. */
  timerFloor: MaxTimeoutSide;
}

const PROGRESS_MS = 10;
const IDLE_MS = 1_000;

async function measure(deadline: number, call: () => Promise<unknown>): Promise<{ lateness: number; error: string }> {
  const start = performance.now();
  let error = "resolved (the deadline did not hold)";
  try {
    await call();
  } catch (reason) {
    error = reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason);
  }
  return { lateness: performance.now() - start - deadline, error };
}

/**
 * Maximum-timeout precision: calls to the `ticker` tool (progress every 10 ms) with an idle
 * timeout of 1 s that progress keeps resetting and a maximum total timeout D (100..109 ms,
 * varied so the deadline falls at every phase of the progress tick); lateness = settle − start − D.
 * Ours: `{timeoutMs, maxTotalTimeoutMs: D, resetTimeoutOnProgress: true}`; the raw v1 SDK:
 * `{timeout, maxTotalTimeout: D, resetTimeoutOnProgress: true, onprogress}`. The tool stops
 * on its own at D + 50 ms, so a side that misses its deadline cannot run on forever.
 */
export async function runMaxTimeout(calls: number, subject: Subject, log: (line: string) => void): Promise<MaxTimeoutResult> {
  const raw = new Client({ name: "bench-max-raw", version: "1.0.0" });
  raw.onerror = () => {}; // late results of calls it gave up on ("unknown message ID")
  await raw.connect((await inMemoryServer()).transport);
  const wrappedClient = new Client({ name: "bench-max-ours", version: "1.0.0" });
  const mcp = subject.root.withCancellation(wrappedClient, (await inMemoryServer()).transport);
  await wrappedClient.connect(mcp.transport);

  const samples = {
    ours: [] as Array<{ lateness: number; error: string }>,
    raw: [] as Array<{ lateness: number; error: string }>,
    timer: [] as Array<{ lateness: number; error: string }>,
  };
  for (let i = 0; i < calls; i++) {
    const deadline = 100 + (i % 10);
    const args = { name: "ticker", arguments: { intervalMs: PROGRESS_MS, stopAfterMs: deadline + 50 } };
    const order = i % 2 === 0 ? ["ours", "raw"] : ["raw", "ours"];
    for (const kind of order) {
      if (kind === "ours") {
        samples.ours.push(
          await measure(deadline, () =>
            mcp.callTool(args, { timeoutMs: IDLE_MS, maxTotalTimeoutMs: deadline, resetTimeoutOnProgress: true }),
          ),
        );
      } else {
        samples.raw.push(
          await measure(deadline, () =>
            raw.callTool(args, undefined, {
              timeout: IDLE_MS,
              maxTotalTimeout: deadline,
              resetTimeoutOnProgress: true,
              onprogress: () => {},
            }),
          ),
        );
      }
      // Let the ticker of the call that was given up run out (the raw SDK sends no cancel).
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    samples.timer.push(await measure(deadline, () => new Promise((_, reject) => setTimeout(() => reject(new Error("timer")), deadline))));
  }
  if (mcp.pendingCount !== 0) throw new Error(`max-timeout: ${mcp.pendingCount} calls left pending`);
  await raw.close();
  await wrappedClient.close();
  const side = (list: Array<{ lateness: number; error: string }>): MaxTimeoutSide => ({
    lateness: rounded(summarize(list.map((s) => s.lateness))),
    error: list[0]?.error ?? "",
    samples: list.map((s) => round(s.lateness)),
  });
  const result: MaxTimeoutResult = {
    method:
      "in-memory v1 McpServer, tool `ticker` sends notifications/progress every 10 ms; idle timeout 1,000 ms (reset by progress), " +
      "maximum total timeout D = 100..109 ms; lateness = settle − start − D; sides alternate per call",
    calls,
    progressEveryMs: PROGRESS_MS,
    deadlinesMs: [100, 109],
    ours: side(samples.ours),
    raw: side(samples.raw),
    timerFloor: side(samples.timer),
  };
  log(`  max timeout: ours p50 +${result.ours.lateness.p50} ms, raw p50 +${result.raw.lateness.p50} ms`);
  return result;
}
