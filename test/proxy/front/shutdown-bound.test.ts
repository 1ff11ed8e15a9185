import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { SHUTDOWN_BOUND_MS } from "../../../src/cli/proxy/session.js";
import { alive, eventually, fixture, server } from "../helpers.js";
import { messagesOf, openSession, post2026, startFront, stopFronts } from "./helpers.js";

// The front's shutdown after its drain (an outside tester's: the servers were stopped one after
// another, each spending its whole SIGTERM-then-SIGKILL wait, so the exit came about 2.7 s after
// the drain where --help and docs/proxy.md promise 1,800 ms).
const STUBBORN = fixture("probe/raw-server.mjs");
const DRAIN_MS = 1_000;
/** Slack over the bound for a loaded machine, as shutdown.test.ts gives its own whole-shutdown bound. */
const SLACK_MS = 400;

/** The servers' pids: they survive their stdin's end and SIGTERM, so a failed test must not leave them (nor their hold on the front's stderr). */
const servers: number[] = [];
let serversNow: (() => number[]) | undefined;
afterEach(async () => {
  for (const pid of [...servers.splice(0), ...(serversNow?.() ?? [])]) if (alive(pid)) process.kill(pid, "SIGKILL");
  serversNow = undefined;
  await stopFronts();
});

describe("proxy --listen: the shutdown after the drain", () => {
  it(`servers that ignore SIGTERM (a 2025-era session's and the 2026-07-28 one), a call in flight on each: all are stopped together, exit 0 within --drain-ms + ${SHUTDOWN_BOUND_MS} ms, the calls answered -32000 and their spans exported`, async () => {
    const front = await startFront(["--otel", "--drain-ms", String(DRAIN_MS), ...server(STUBBORN, "--stubborn", "--interval=100")], {
      env: { OTEL_TRACES_EXPORTER: "console", OTEL_BSP_SCHEDULE_DELAY: "60000" },
    });
    // The front's stdio servers (tsx may have an esbuild child of its own).
    const children = (): number[] =>
      spawnSync("pgrep", ["-P", String(front.child.pid), "-f", "raw-server"], { encoding: "utf8" })
        .stdout.trim()
        .split("\n")
        .filter(Boolean)
        .map(Number);
    serversNow = children;

    // A 2026-07-28 call on the shared server: its response's headers come once it is sent upstream.
    const modern = await post2026(front.url, { id: "m", method: "tools/call", params: { name: "count", arguments: { steps: 1_000_000 } } });
    expect(modern.status).toBe(200);

    // A 2025-era session (its own server) and a call on it, seen running by its first progress.
    const { headers } = await openSession(front.url, "2025-06-18", "bound");
    expect(headers["mcp-session-id"]).toBeTruthy();
    const legacy = await fetch(front.url, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "count", arguments: { steps: 1_000_000 }, _meta: { progressToken: "p" } },
      }),
    });
    const reader = legacy.body!.getReader();
    const decoder = new TextDecoder();
    let legacyText = "";
    const firstProgress = (async () => {
      while (!legacyText.includes("notifications/progress")) {
        const { done, value } = await reader.read();
        if (done) return false;
        legacyText += decoder.decode(value, { stream: true });
      }
      return true;
    })();
    expect(await Promise.race([firstProgress, new Promise((resolve) => setTimeout(() => resolve(false), 5_000))])).toBe(true);
    expect(await eventually(() => children().length === 2), `the front's servers: ${children().join(", ")}`).toBe(true);
    servers.push(...children());

    const signalled = performance.now();
    front.child.kill("SIGTERM");
    const exit = await front.exited;
    const tookMs = performance.now() - signalled;
    expect(exit).toEqual({ code: 0, signal: null });
    // The servers did spend their SIGTERM wait (they ignore it): the drain, then 300 + 1,000 ms at least.
    expect(tookMs).toBeGreaterThanOrEqual(DRAIN_MS + 1_200);
    // Stopped one after another they took 2 x 1.3 s after the drain.
    expect(tookMs).toBeLessThan(DRAIN_MS + SHUTDOWN_BOUND_MS + SLACK_MS);
    for (const pid of servers) expect(alive(pid)).toBe(false);

    // What was in flight past --drain-ms was answered -32000, in both eras.
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      legacyText += decoder.decode(value, { stream: true });
    }
    const answer = legacyText
      .split("\n")
      .filter((line) => line.startsWith("data: ") && line.length > 6)
      .map((line) => JSON.parse(line.slice(6)) as { id?: unknown; error?: { code: number } })
      .find((message) => message.id === 2);
    expect(answer).toMatchObject({ error: { code: -32000 } });
    expect((await messagesOf(modern)).at(-1)).toMatchObject({ id: "m", error: { code: -32000 } });
    // Their spans were exported by the shutdown (held until then: OTEL_BSP_SCHEDULE_DELAY).
    const spans = front
      .stderr()
      .split("\n")
      .filter((line) => line.includes("mcp-cancellable proxy: span "))
      .map((line) => JSON.parse(line.slice(line.indexOf("span ") + 5)) as { name: string });
    expect(spans.filter((span) => span.name === "tools/call count")).toHaveLength(2);
  });
});
