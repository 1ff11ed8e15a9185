import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CallCancelledError, CallTimeoutError, ConnectionClosedError, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { sleep, timed, watchProcess } from "../helpers/reliability.js";
import { alive, eventually, fixture, spawnServer } from "../helpers/stdio.js";
import { SLACK_MS, EARLY_MS } from "../helpers/timing.js";

// Faults of a real stdio server process (test/fixtures/reliability/bad-server.mjs): each pending
// call settles once, with the right trigger, within its own deadline plus slack; where the
// transport still works the next call succeeds, and where it does not the next call fails at
// once instead of hanging. (A server that stops reading its stdin is in test/e2e/stdio.test.ts.)
// Real time: bounds carry SLACK_MS for a loaded 2-core CI machine.

const process$ = watchProcess();
beforeAll(process$.start);
afterAll(() => {
  process$.stop();
  expect(process$.seen()).toEqual([]);
});

const open: Array<{ close(): Promise<void> }> = [];
const pids: number[] = [];
afterEach(async () => {
  for (const pid of pids.splice(0)) if (alive(pid)) process.kill(pid, "SIGKILL");
  await Promise.all(open.splice(0).map((c) => c.close()));
});

async function spawn() {
  const server = await spawnServer("reliability/bad-server.mjs");
  open.push(server.client);
  if (server.pid !== null) pids.push(server.pid);
  return server;
}

/**
 * When the server first logged a line that passes `test` (`performance.now()`, polled every 5 ms):
 * a bound counted from there leaves out the request's trip to a child process on a loaded machine.
 */
async function seenAt(lines: string[], test: (line: string) => boolean, withinMs = 10_000): Promise<number> {
  const deadline = performance.now() + withinMs;
  while (!lines.some(test)) {
    if (performance.now() > deadline) throw new Error(`no such line from the server within ${withinMs} ms`);
    await sleep(5);
  }
  return performance.now();
}

/** After the connection died: the next call fails at once as connection-closed and is never sent; it never hangs. */
async function nextCallFailsFast(mcp: Awaited<ReturnType<typeof spawn>>["mcp"]) {
  const next = await timed(mcp.callTool({ name: "echo" }, { timeoutMs: 5_000 }));
  expect(next.status).toBe("rejected");
  expect(next.at).toBeLessThan(SLACK_MS);
  expect(next.error).toMatchObject({ code: "CONNECTION_CLOSED", record: { requestId: null, outcome: "not-sent" } });
  expect(mcp.pendingCount).toBe(0);
}

describe("stdio server process faults", () => {
  it("SIGKILL mid-call: every pending call settles as connection-closed at the crash, none sends a cancel", async () => {
    const { mcp, pid, client, errors } = await spawn();
    const started = performance.now();
    const calls = [
      mcp.callTool({ name: "silent" }, { timeoutMs: 5_000 }),
      mcp.callTool({ name: "delayed", arguments: { ms: 10_000 } }, { timeoutMs: 3_000, maxTotalTimeoutMs: 4_000 }),
      mcp.callTool({ name: "silent" }, { timeoutMs: 2_000, resetTimeoutOnProgress: true, signal: new AbortController().signal }),
      mcp.request({ method: "tools/list" }, { timeoutMs: 1_500 }), // the fixture never answers tools/list
    ].map((p: Promise<unknown>) => timed(p, started));
    await sleep(100);
    const killedAt = performance.now() - started;
    process.kill(pid!, "SIGKILL");
    const outcomes = await Promise.all(calls);
    for (const outcome of outcomes) {
      expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
      expect(outcome.at).toBeGreaterThanOrEqual(killedAt);
      expect(outcome.at).toBeLessThan(killedAt + SLACK_MS);
    }
    expect(mcp.records().map((r) => [r.requestId, r.cancel?.trigger, r.cancel?.mechanism, r.outcome])).toEqual([
      [1, "connection-closed", "none", "unverified"],
      [2, "connection-closed", "none", "unverified"],
      [3, "connection-closed", "none", "unverified"],
      [4, "connection-closed", "none", "unverified"],
    ]);
    expect(errors).toEqual([]);
    await nextCallFailsFast(mcp);

    // The same SDK Client connects again through a new wrapper and transport, and works.
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [fixture("reliability/bad-server.mjs")],
      stderr: "pipe",
    });
    const again = withCancellation(client, stdioCancellation(transport));
    await client.connect(again.transport);
    if (transport.pid !== null) pids.push(transport.pid);
    await expect(again.callTool({ name: "echo" }, { timeoutMs: 2_000 })).resolves.toMatchObject({
      content: [{ text: expect.stringMatching(/^echo \d+$/) }],
    });
  });

  it("the server calls process.exit with stdin still open mid-call: pending calls settle as connection-closed at the exit", async () => {
    const { mcp, errors, stderrLines } = await spawn();
    const started = performance.now();
    const pending = timed(mcp.callTool({ name: "silent" }, { timeoutMs: 5_000 }), started);
    const exiting = timed(mcp.callTool({ name: "exit", arguments: { ms: 150, code: 3 } }, { timeoutMs: 3_000 }), started);
    const exitRead = seenAt(stderrLines, (line) => line.startsWith("RECV ") && line.includes('"exit"'));
    const outcomes = await Promise.all([pending, exiting]);
    const exitReadAt = await exitRead;
    for (const outcome of outcomes) {
      expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
      expect(outcome.at).toBeGreaterThanOrEqual(150 - EARLY_MS);
      expect(started + outcome.at - exitReadAt).toBeLessThan(150 + SLACK_MS);
    }
    expect(mcp.records().every((r) => r.cancel?.trigger === "connection-closed")).toBe(true);
    expect(errors).toEqual([]);
    await nextCallFailsFast(mcp);
  });

  it("the server dies after writing half a response: the half line is never delivered, the call settles as connection-closed", async () => {
    const { mcp, errors } = await spawn();
    const outcome = await timed(mcp.callTool({ name: "half" }, { timeoutMs: 5_000 }));
    expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
    expect(outcome.at).toBeLessThan(SLACK_MS * 2);
    expect(errors).toEqual([]);
    await nextCallFailsFast(mcp);
  });

  it("EPIPE: the server closed its stdin; the call in flight settles at its deadline with the failed cancel write recorded (never onerror), a call made after settles at once, never sent; nothing is unhandled", async () => {
    const { mcp, errors, stderrLines, pid } = await spawn();
    // deaf-pipe closes the server's stdin and keeps the process alive for 1,500 ms
    const first = await timed(mcp.callTool({ name: "deaf-pipe", arguments: { ms: 1_500 } }, { timeoutMs: 200 }));
    expect(first.error).toBeInstanceOf(CallTimeoutError);
    expect(first.at).toBeGreaterThanOrEqual(200 - EARLY_MS);
    expect(first.at).toBeLessThan(200 + SLACK_MS);
    expect(stderrLines).toContain("STDIN-CLOSED");
    // the cancel for the first call went into a pipe with no reader: recorded on its call, once
    expect(await eventually(() => mcp.records()[0]!.revision > 0, SLACK_MS * 2)).toBe(true);
    expect(mcp.records()[0]!.cancel).toMatchObject({
      mechanism: "none",
      sentAt: null,
      undelivered: { mechanism: "notification", error: expect.stringMatching(/EPIPE|destroyed|write after end/) },
    });
    expect(mcp.records()[0]!.summary).toBe("cancelled (timeout), outcome unverified, cancel notification not delivered");
    // a call made now cannot be written (the pipe is gone): released at once, recorded never sent
    const second = await timed(mcp.callTool({ name: "echo" }, { timeoutMs: 250 }));
    expect(second.error).toBeInstanceOf(ConnectionClosedError);
    expect(second.at).toBeLessThan(250);
    expect(mcp.records()[1]!.outcome).toBe("not-sent");
    // and so does every call until the process exits: none waits for a pipe that is gone
    const third = await timed(mcp.callTool({ name: "echo" }, { timeoutMs: 10_000 }));
    expect(third.error).toBeInstanceOf(ConnectionClosedError);
    expect(third.at).toBeLessThan(SLACK_MS);
    expect(mcp.records().map((r) => r.cancel?.trigger)).toEqual(["timeout", "connection-closed", "connection-closed"]);
    expect(await eventually(() => !alive(pid!), 1_500 + SLACK_MS * 2)).toBe(true);
    await sleep(50); // the transport's close follows the exit
    expect(mcp.records()[1]!.cancel).toMatchObject({ mechanism: "none", undelivered: null });
    expect(errors).toEqual([]); // the EPIPE of the cancel's own write is the record's, not onerror's
    await nextCallFailsFast(mcp);
  });

  it("EPIPE on a write in flight: the server stops reading and exits while an 8 MB request is being written", async () => {
    const { mcp, errors, stderrLines } = await spawn();
    const started = performance.now();
    const exiting = timed(mcp.callTool({ name: "exit", arguments: { ms: 150, pause: true } }, { timeoutMs: 3_000 }), started);
    const exitReadAt = await seenAt(stderrLines, (line) => line.startsWith("RECV ") && line.includes('"exit"'));
    await sleep(50);
    const big = timed(mcp.callTool({ name: "echo", arguments: { big: "x".repeat(8 * 1024 * 1024) } }, { timeoutMs: 5_000 }), started);
    for (const outcome of await Promise.all([exiting, big])) {
      expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
      expect(started + outcome.at - exitReadAt).toBeLessThan(150 + SLACK_MS);
    }
    expect(errors.every((e) => /EPIPE/.test(e.message))).toBe(true);
    await nextCallFailsFast(mcp);
  });

  it("an abort and a crash in the same tick, in either order: the abort (synchronous) settles the call, exactly once", async () => {
    for (let round = 0; round < 3; round++) {
      const { mcp, pid } = await spawn();
      const controller = new AbortController();
      const records: string[] = [];
      const call = timed(mcp.callTool({ name: "silent" }, { timeoutMs: 5_000, signal: controller.signal }));
      await sleep(50);
      if (round % 2 === 0) {
        process.kill(pid!, "SIGKILL");
        controller.abort();
      } else {
        controller.abort();
        process.kill(pid!, "SIGKILL");
      }
      const outcome = await call;
      // The process's exit reaches Node only on a later turn of the loop, so the abort comes first
      // whichever line ran first; the close that follows finds the call settled.
      expect(outcome.error).toBeInstanceOf(CallCancelledError);
      await sleep(100);
      for (const r of mcp.records()) records.push(`${r.requestId}:${r.status}:${r.cancel?.trigger}`);
      expect(records).toHaveLength(1);
      expect(records[0]).toMatch(/:cancelled:aborted$/);
      expect(mcp.pendingCount).toBe(0);
    }
  });
});
