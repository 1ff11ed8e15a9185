import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CallCancelledError, CallTimeoutError } from "../../src/index.js";
import { eventually, spawnServer } from "../helpers/stdio.js";

// Issue 16 item 4 and issue 11 item 1 on stdio, with a real child process
// (test/fixtures/scripted-server.mjs): the library's own cancel lines never add `drain`
// listeners when the server stops reading (Node warns past 10), and a cancel followed at once by
// client.close() is written before stdin ends.

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

const CALLS = 15;
const stdinOf = (transport: object) =>
  (transport as { _process: { stdin: NodeJS.WritableStream & { writableNeedDrain: boolean } } })._process.stdin;

/** CALLS silent calls in flight, then the server stops reading for blockMs and its stdin pipe is filled. */
async function backpressure(blockMs: number) {
  const server = await spawnServer("scripted-server.mjs");
  cleanup.push(() => server.client.close());
  const controllers = Array.from({ length: CALLS }, () => new AbortController());
  const calls = controllers.map((controller) => server.mcp.callTool({ name: "silent" }, { signal: controller.signal, timeoutMs: 20_000 }));
  for (const call of calls) call.catch(() => {});
  expect(await eventually(() => server.received().filter((m) => m.method === "tools/call").length === CALLS)).toBe(true);
  // The server blocks (reads nothing); one large call (256 KB, more than the pipe and the stream
  // buffer hold) fills the pipe: the SDK adds its own drain listener for it.
  void server.mcp.callTool({ name: "block", arguments: { ms: blockMs } }, { timeoutMs: 20_000 }).catch(() => {});
  expect(await eventually(() => server.stderrLines.some((l) => l.includes('"block"')))).toBe(true);
  void server.mcp.callTool({ name: "silent", arguments: { pad: "x".repeat(256 * 1024) } }, { timeoutMs: 20_000 }).catch(() => {});
  const stdin = stdinOf(server.transport);
  expect(stdin.writableNeedDrain).toBe(true);
  const sdkListeners = stdin.listenerCount("drain");
  return { server, controllers, calls, stdin, sdkListeners };
}

describe("stdio delivery", () => {
  it("a caller that retries in its timeout's own continuation: each timed-out call's notifications/cancelled reaches the server before the retry", async () => {
    // An outside tester's (through LangChain, Mastra and a plain retry loop): the timer-fired line
    // waited for the check phase, and the retry, written at once, got there first, every time.
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    for (let attempt = 0; attempt < 3; attempt++) {
      await expect(server.mcp.callTool({ name: "silent" }, { timeoutMs: 100 })).rejects.toBeInstanceOf(CallTimeoutError);
    }
    await server.mcp.callTool({ name: "echo" }, { timeoutMs: 5_000 });
    expect(await eventually(() => server.cancelsReceived().length === 3)).toBe(true);
    const order = server
      .received()
      .filter((m) => m.method === "tools/call" || m.method === "notifications/cancelled")
      .map((m) => (m.method === "tools/call" ? `call ${m.id}` : `cancel ${(m.params as { requestId: number }).requestId}`));
    expect(order).toEqual(["call 1", "cancel 1", "call 2", "cancel 2", "call 3", "cancel 3", "call 4"]);
  });

  it("under stdin backpressure the library's cancel lines add at most one drain listener, no warning, and all reach the server once it reads again", async () => {
    const { server, controllers, calls, stdin, sdkListeners } = await backpressure(800);
    for (const controller of controllers) controller.abort();
    for (const call of calls) await expect(call).rejects.toBeInstanceOf(CallCancelledError); // never held
    expect(stdin.listenerCount("drain") - sdkListeners).toBeLessThanOrEqual(1);
    expect(await eventually(() => server.cancelsReceived().length === CALLS, 10_000)).toBe(true);
    expect(server.cancelsReceived().map((m) => m.params!.requestId)).toEqual(calls.map((_, i) => i + 1)); // in order
    expect(stdin.listenerCount("drain")).toBe(0);
    expect(warnings.filter((w) => w.includes("MaxListenersExceeded"))).toEqual([]);
    expect(server.errors).toEqual([]);
  }, 20_000);

  it("500 of the SDK's own request writes blocked behind a full pipe wait behind one drain listener: no warning, and all go out in order", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    const BLOCKED = 500;
    // The server blocks (reads nothing); one 256 KB call fills the pipe and the stream's buffer.
    void server.mcp.callTool({ name: "block", arguments: { ms: 1_500 } }, { timeoutMs: 20_000 }).catch(() => {});
    expect(await eventually(() => server.stderrLines.some((l) => l.includes('"block"')))).toBe(true);
    void server.mcp.callTool({ name: "silent", arguments: { pad: "x".repeat(256 * 1024) } }, { timeoutMs: 20_000 }).catch(() => {});
    const stdin = stdinOf(server.transport);
    expect(stdin.writableNeedDrain).toBe(true);
    const calls = Array.from({ length: BLOCKED }, () => server.mcp.callTool({ name: "echo" }, { timeoutMs: 20_000 }));
    let most = stdin.listenerCount("drain");
    const watch = setInterval(() => (most = Math.max(most, stdin.listenerCount("drain"))), 5);
    const results = await Promise.all(calls);
    clearInterval(watch);
    expect(most).toBeLessThanOrEqual(2); // the SDK's one blocked write, and the adapter's
    expect(results).toHaveLength(BLOCKED);
    const echoes = () => server.received().filter((m) => m.method === "tools/call" && (m.params as { name?: string }).name === "echo");
    expect(await eventually(() => echoes().length === BLOCKED)).toBe(true); // its stderr log trails its answers
    const echoed = echoes().map((m) => m.id!);
    expect(echoed).toEqual([...echoed].sort((a, b) => a - b)); // in the order they were sent
    expect(results.map((r) => (r as { content: Array<{ text: string }> }).content[0]!.text)).toEqual(echoed.map((id) => `echo ${id}`));
    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    expect(warnings.filter((w) => w.includes("MaxListenersExceeded"))).toEqual([]);
    expect(stdin.listenerCount("drain")).toBe(0);
    expect(server.errors).toEqual([]);
  }, 30_000);

  it("a cancel followed at once by client.close() reaches the server before stdin ends", async () => {
    const server = await spawnServer("scripted-server.mjs");
    const controller = new AbortController();
    const call = server.mcp.callTool({ name: "silent" }, { signal: controller.signal, timeoutMs: 5_000 });
    call.catch(() => {});
    expect(await eventually(() => server.received().some((m) => m.method === "tools/call"))).toBe(true);
    controller.abort();
    const closing = server.client.close(); // not awaited by the bot
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    await closing;
    expect(await eventually(() => server.cancelsReceived().length === 1)).toBe(true);
    expect(server.errors).toEqual([]);
  });

  it("under backpressure too: cancels then client.close() at once, every waiting cancel line is written before stdin ends", async () => {
    const { server, controllers, stdin, sdkListeners } = await backpressure(800);
    const order: string[] = [];
    const write = stdin.write.bind(stdin);
    const end = stdin.end.bind(stdin);
    stdin.write = ((chunk: unknown, ...rest: never[]) => {
      if (typeof chunk === "string" && chunk.includes("notifications/cancelled")) order.push("cancel");
      return write(chunk as string, ...rest);
    }) as typeof stdin.write;
    stdin.end = ((...args: never[]) => {
      order.push("end");
      return end(...args);
    }) as typeof stdin.end;
    for (const controller of controllers) controller.abort();
    expect(order).toEqual([]); // all waiting behind the full pipe
    expect(stdin.listenerCount("drain") - sdkListeners).toBeLessThanOrEqual(1);
    const closing = server.client.close(); // not awaited by the bot
    expect(stdin.listenerCount("drain") - sdkListeners).toBeLessThanOrEqual(0); // our listener went with the flush
    await closing;
    // The CALLS aborted calls' lines, then the two calls still pending at the close (the block and
    // the padded one), which the close cancels itself; all before stdin ends.
    expect(order).toEqual([...Array.from({ length: CALLS + 2 }, () => "cancel"), "end"]);
    expect(warnings.filter((w) => w.includes("MaxListenersExceeded"))).toEqual([]);
  }, 20_000);
});
