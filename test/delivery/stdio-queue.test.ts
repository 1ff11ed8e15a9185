import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { attachCancellation, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { eventually, fixture, spawnServer } from "../helpers/stdio.js";

// Issue 27, item 4: on stdio every message goes through the transport's own `send` (a logging
// wrapper on it sees each one), called only when the server's stdin can take the write; what
// cannot be written waits behind one `drain` listener. With 500 writes blocked behind a full pipe,
// through withCancellation and through attachCancellation, with a wrapped `send`, and with the
// server killed while they wait and a new one started: no MaxListenersExceededWarning, at most two
// `drain` listeners at any time (the SDK's one blocked write, and the queue's), every request seen
// by the wrapper once, every call settled once. A real child process (test/fixtures/scripted-server.mjs).

const BLOCKED = 500;
const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

const warnings: string[] = [];
const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
beforeEach(() => {
  warnings.length = 0;
  process.on("warning", onWarning);
});
afterEach(() => {
  process.off("warning", onWarning);
});

type Stdin = NodeJS.WritableStream & { writableNeedDrain: boolean; listenerCount(event: string): number };
const stdinOf = (transport: object) => (transport as { _process: { stdin: Stdin } })._process.stdin;

interface Connection {
  mcp: { callTool(params: { name: string; arguments?: Record<string, unknown> }, options?: object): Promise<unknown> };
  transport: StdioClientTransport;
  client: Client;
  /** Requests the wrapper on the transport's `send` saw, by method. */
  sent: string[];
}

/** A stdio connection whose transport's `send` is wrapped as a logging wrapper would (before or after the library). */
async function connect(
  entry: "withCancellation" | "withCancellation, the SDK transport as it is" | "attachCancellation",
): Promise<Connection> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [fixture("scripted-server.mjs")], stderr: "ignore" });
  const sent: string[] = [];
  const wrap = () => {
    const own = transport.send.bind(transport);
    transport.send = (message) => {
      if ("method" in message && "id" in message) sent.push(message.method);
      return own(message);
    };
  };
  const client = new Client({ name: "queue-bot", version: "1.0.0" });
  cleanup.push(() => client.close());
  if (entry !== "attachCancellation") {
    wrap();
    // As it is: the stdio adapter all the same (it got the plain notification, the SDK's send a
    // `drain` listener per blocked write: 500 of them, and Node's MaxListenersExceededWarning).
    const mcp = withCancellation(client, entry === "withCancellation" ? stdioCancellation(transport) : transport);
    await client.connect(mcp.transport);
    return { mcp, transport, client, sent };
  }
  wrap();
  await client.connect(transport);
  const mcp = attachCancellation(client);
  return { mcp, transport, client, sent };
}

/** Fills the server's stdin: the server stops reading for `ms`, and a 256 KB call fills the pipe. */
async function block(connection: Connection, ms: number): Promise<Stdin> {
  void connection.mcp.callTool({ name: "block", arguments: { ms } }, { timeoutMs: 20_000 }).catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 100));
  void connection.mcp.callTool({ name: "silent", arguments: { pad: "x".repeat(256 * 1024) } }, { timeoutMs: 20_000 }).catch(() => {});
  const stdin = stdinOf(connection.transport);
  expect(stdin.writableNeedDrain).toBe(true);
  return stdin;
}

describe("the stdio write queue (issue 27, item 4)", () => {
  for (const entry of ["withCancellation", "withCancellation, the SDK transport as it is", "attachCancellation"] as const) {
    it(`${entry}, a wrapped send: 500 blocked writes wait behind one drain listener; the wrapper sees each request once; no warning`, async () => {
      const connection = await connect(entry);
      const stdin = await block(connection, 1_500);
      let most = stdin.listenerCount("drain");
      const watch = setInterval(() => (most = Math.max(most, stdin.listenerCount("drain"))), 5);
      const calls = Array.from({ length: BLOCKED }, () => connection.mcp.callTool({ name: "echo" }, { timeoutMs: 20_000 }));
      const results = await Promise.all(calls);
      clearInterval(watch);
      expect(results).toHaveLength(BLOCKED);
      expect(most).toBeLessThanOrEqual(2); // the SDK's one blocked write, and the queue's
      expect(connection.sent.filter((method) => method === "tools/call")).toHaveLength(BLOCKED + 2); // block, the pad, the echoes
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      expect(warnings.filter((w) => w.includes("MaxListenersExceeded"))).toEqual([]);
      expect(stdin.listenerCount("drain")).toBe(0);
    }, 30_000);
  }

  it("withCancellation, a wrapped send: the server killed while 500 writes wait, then a new server: every call settles once, no warning", async () => {
    for (let round = 0; round < 2; round++) {
      const connection = await connect("withCancellation");
      const stdin = await block(connection, 5_000);
      let most = stdin.listenerCount("drain");
      const watch = setInterval(() => (most = Math.max(most, stdin.listenerCount("drain"))), 5);
      let settled = 0;
      const calls = Array.from({ length: BLOCKED }, () =>
        connection.mcp.callTool({ name: "echo" }, { timeoutMs: 20_000 }).then(
          () => settled++,
          () => settled++,
        ),
      );
      process.kill(connection.transport.pid!, "SIGKILL");
      await Promise.all(calls);
      clearInterval(watch);
      expect(settled).toBe(BLOCKED); // each exactly once (a second settle would count twice)
      expect(most).toBeLessThanOrEqual(2);
      await connection.client.close();
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.includes("MaxListenersExceeded"))).toEqual([]);
    }
  }, 60_000);

  it("a request still waiting in the queue when its call is cancelled is never written: never sent, and no cancel line for it", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    const { mcp } = server;
    // The server stays blocked 3 s: the queued call and the one that times out (100 ms) must both
    // settle before it reads again, which takes a few hundred ms on a loaded machine (with 800 ms
    // the pipe could drain first, and the queued request be written).
    await block({ mcp, transport: server.transport, client: server.client, sent: [] }, 3_000);
    const controller = new AbortController();
    const call = mcp.callTool({ name: "echo", arguments: { marker: "queued" } }, { signal: controller.signal, timeoutMs: 20_000 });
    controller.abort();
    // The caller's error carries the first record: it says never sent already (an outside
    // tester's: it said "whether it ran is unknown" until a revision right after).
    await expect(call).rejects.toMatchObject({
      code: "CANCELLED",
      // Its signal was live at the call: the text says what happened, not "already aborted" (an audit's).
      message: expect.stringMatching(
        /^tools\/call was cancelled by the caller before it was sent \(never sent: request id \d+ was still waiting to be written, and was dropped\)$/,
      ),
      record: { revision: 0, outcome: "not-sent", cancel: { mechanism: "none" } },
    });
    expect(mcp.records().at(-1)).toMatchObject({ outcome: "not-sent", cancel: { mechanism: "none" } });
    // The same for one whose idle timeout fires while it waits.
    const timedOut = await mcp.callTool({ name: "echo", arguments: { marker: "queued" } }, { timeoutMs: 100 }).catch((e: unknown) => e);
    expect(timedOut).toMatchObject({
      code: "REQUEST_TIMEOUT",
      record: { revision: 0, outcome: "not-sent", cancel: { mechanism: "none" } },
    });
    expect((timedOut as Error).message).not.toMatch(/whether it ran is unknown/);
    // Once the server reads again it gets what came before and after, but neither the request nor a cancel for it.
    await expect(mcp.callTool({ name: "echo" }, { timeoutMs: 10_000 })).resolves.toBeDefined();
    const echoes = () => server.received().filter((m) => m.method === "tools/call" && m.params?.name === "echo");
    expect(await eventually(() => echoes().length === 1)).toBe(true);
    expect(server.received().filter((m) => JSON.stringify(m.params ?? {}).includes("queued"))).toEqual([]);
    expect(server.cancelsReceived()).toEqual([]);
  }, 20_000);
});

describe("a limit that fires late or on time, its answer already in the pipe (soak finding: the answer crossed the cancel)", () => {
  it("the event loop busy past the deadline while the server answers: no notifications/cancelled goes out, the answer is late, the caller gets its timeout", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    const { mcp } = server;
    // The server answers 300 ms after it read the call; the idle timeout is 40 ms; the bot's event
    // loop is busy from 20 ms to 2 s (a long synchronous task), so the timer fires almost 2 s late,
    // with the answer waiting unread in the pipe. The busy time is long because the answer must be
    // in the pipe when it ends: the child reading the call and its 300 ms timer are late on a
    // loaded machine (with 280 ms, a server that read the call 200 ms late would answer after it: the
    // cancel would go out and the test fail); the 300 ms keep the answer out of the pipe until the
    // loop is busy, even when the 20 ms timer fires late.
    const call = mcp.callTool({ name: "late", arguments: { ms: 300 } }, { timeoutMs: 40 });
    call.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 20));
    const until = performance.now() + 2_000;
    while (performance.now() < until) {
      // busy
    }
    await expect(call).rejects.toMatchObject({ code: "REQUEST_TIMEOUT" });
    expect(await eventually(() => (mcp.records().at(-1)?.late.results ?? 0) === 1)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.cancelsReceived()).toEqual([]); // rule 7: the request was answered
    expect(mcp.records().at(-1)).toMatchObject({ status: "cancelled", outcome: "late-result-discarded", cancel: { trigger: "timeout" } });
  });

  it("the event loop busy until the very deadline (the timer on time, not late) while the server answered: still no notifications/cancelled", async () => {
    // The long soak's case: the loop busy 70 ms, the answer written meanwhile, the timer due just
    // as the loop came back (0 to 2 ms late, so a check for a late timer saw nothing). Node runs
    // due timers before it reads input: the cancel line must wait for the input of this turn.
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    const { mcp } = server;
    // The server answers 300 ms after it read the call, the deadline is at 1,500 ms: the answer is
    // in the pipe by the deadline even when the child reads the call late on a loaded machine (with
    // an answer at 40 ms and a deadline at 150 ms, a server 110 ms late would answer after the
    // deadline, and the cancel would go out), and not before the loop is busy.
    const timeoutMs = 1_500;
    const start = performance.now();
    const call = mcp.callTool({ name: "late", arguments: { ms: 300 } }, { timeoutMs });
    call.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Busy in the check phase (after this turn's timers and input), so the next turn updates its
    // clock, runs the due timer first, and only then reads the pipe.
    await new Promise((resolve) => setImmediate(resolve));
    const until = start + timeoutMs + 0.5;
    while (performance.now() < until) {
      // busy until just past the deadline
    }
    await expect(call).rejects.toMatchObject({ code: "REQUEST_TIMEOUT" });
    expect(await eventually(() => (mcp.records().at(-1)?.late.results ?? 0) === 1)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.cancelsReceived()).toEqual([]); // rule 7: the request was answered
    expect(mcp.records().at(-1)).toMatchObject({
      status: "cancelled",
      outcome: "late-result-discarded",
      cancel: { trigger: "timeout", mechanism: "none" },
    });
  });

  it("a timer-fired cancel with no answer waiting still goes out at once (one check phase later)", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    const { mcp } = server;
    const call = mcp.callTool({ name: "late", arguments: { ms: 2_000 } }, { timeoutMs: 60 });
    await expect(call).rejects.toMatchObject({ code: "REQUEST_TIMEOUT" });
    expect(await eventually(() => server.cancelsReceived().length === 1)).toBe(true);
    expect(mcp.records().at(-1)).toMatchObject({ status: "cancelled", cancel: { trigger: "timeout", mechanism: "notification" } });
  });
});
