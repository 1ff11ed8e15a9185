// A timer-fired 2025-era cancel whose request's answer is already waiting unread in the socket
// (rule 7): a client whose event loop was held past the deadline runs the timer before it reads
// its sockets. The notification waits for the check phase of that turn, as stdio's timer-fired
// lines do: the answer, read first, ends the request, and no `notifications/cancelled` is POSTed;
// the call settles a timeout all the same, and its record says the late result was discarded and
// the notification was not sent because the answer came first. An outside tester's: 6 of 6 runs
// POSTed the cancel about 1 ms after the settle, then read the answer. The server runs in a process
// of its own (the held loop must not hold it too), sends its SSE head at once (a held head is
// another path: the notification waits for it), and the test holds its loop until the server's
// own log says it answered. (On 2026-07-28 the stream close is the cancel, and it is made before
// the caller is released: test/http/v2-sdk.test.ts, a mass timeout.)
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CallTimeoutError } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { tempDir } from "../proxy/helpers.js";
import { connectV1 } from "./clients.js";
import { eventually } from "../helpers/timing.js";

interface LoggedEvent {
  kind: string;
  rpc?: string;
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** Starts `fixture` (test/fixtures/http) in a child process; its events are read from its log file. */
async function startLogged(fixture: string) {
  const dir = tempDir();
  const log = join(dir.dir, "events.jsonl");
  const child = spawn(process.execPath, [new URL(`../fixtures/http/${fixture}`, import.meta.url).pathname, log], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  stops.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    dir.cleanup();
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the server printed no LISTENING line within 20 s")), 20_000);
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (text: string) => {
      const match = /LISTENING (\d+)/.exec(text);
      if (match === null) return;
      clearTimeout(timer);
      resolve(Number(match[1]));
    });
  });
  const logged = (): LoggedEvent[] => {
    let text = "";
    try {
      text = readFileSync(log, "utf8");
    } catch {
      return [];
    }
    return text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as LoggedEvent);
  };
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), logged };
}

/**
 * Calls `slow` (answers 100 ms in) with a 1,000 ms idle timeout; once the server's log says the
 * call reached it, holds the event loop, from the check phase (the next phase is the timers'),
 * until both the deadline has passed and the log says it answered (plus 50 ms for the answer's
 * bytes to reach this process's socket), at most 10 s: the timer then runs before the socket is
 * read. Resolves to the settled error once the late result was read.
 */
async function answeredWhileHeld(
  mcp: { callTool: (params: { name: string; arguments: Record<string, unknown> }, options: { timeoutMs: number }) => Promise<unknown> },
  logged: () => LoggedEvent[],
  records: RunRecord[],
) {
  const count = (kind: string) => logged().filter((event) => event.kind === kind).length;
  const [startedBefore, answeredBefore] = [count("handler-start"), count("handler-end")];
  const start = performance.now();
  const call = mcp.callTool({ name: "slow", arguments: { ms: 100 } }, { timeoutMs: 1_000 }).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(await eventually(() => count("handler-start") > startedBefore, 5_000)).toBe(true);
  expect(performance.now() - start, "the call reached the server before its deadline").toBeLessThan(900);
  const answeredAt = await new Promise<number | undefined>((resolve) =>
    setImmediate(() => {
      let at: number | undefined;
      for (const bound = performance.now() + 10_000; performance.now() < bound; ) {
        if (at === undefined && count("handler-end") > answeredBefore) at = performance.now();
        if (at !== undefined && performance.now() - at >= 50 && performance.now() - start >= 1_050) break;
      }
      resolve(at);
    }),
  );
  expect(answeredAt, "the server answered while the loop was held").toBeDefined();
  const error = await call;
  expect(await eventually(() => records.some((record) => record.late.results === 1), 5_000)).toBe(true);
  return error;
}

describe("a timer-fired cancel whose answer is waiting unread is not sent (rule 7)", () => {
  it("2025-era (v1 client, SSE head sent at once): no notifications/cancelled POST; the record says the answer came first, late result discarded", async () => {
    const { url, logged } = await startLogged("raw-sse-logged.mjs");
    const records: RunRecord[] = [];
    const { mcp, close } = await connectV1(url, { onRecord: (record) => records.push(record) });
    try {
      const error = await answeredWhileHeld(mcp, logged, records);
      expect(error).toBeInstanceOf(CallTimeoutError);
      const last = records.at(-1)!;
      expect(last.outcome).toBe("late-result-discarded");
      expect(last.cancel?.mechanism).toBe("none");
      expect(last.cancel?.undelivered?.error).toMatch(/the response arrived first \(rule 7/);
      await new Promise((resolve) => setTimeout(resolve, 300)); // a POST would have reached the server by now
      expect(logged().filter((event) => event.rpc === "notifications/cancelled")).toEqual([]);
    } finally {
      await close();
    }
  });
});
