// A connection whose transport starts its server (stdio) holds each request's idle timeout until
// the server's first message (its start is not its silence), at most START_HOLD_MS (60,000 ms)
// more, and runs it from that message; the maximum total timeout holds throughout. Here on the
// message-level transport (the proxy's path: no initialize of its own), over the SDK's in-memory
// pair, with an adapter marked as starting its server, and fake timers.
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MessageTransport } from "../../src/runner/message-transport.js";
import type { JsonRpcMessage } from "../../src/runner/message-transport.js";
import { START_HOLD_MS } from "../../src/wire/wire.js";
import { STARTS_SERVER } from "../../src/wire/port.js";
import type { CancelMechanism } from "../../src/index.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

async function open(startsServer: boolean, limits: { timeoutMs: number; maxTotalTimeoutMs?: number }) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const received: JsonRpcMessage[] = [];
  serverSide.onmessage = (message) => void received.push(message as JsonRpcMessage);
  await serverSide.start();
  const adapter = {
    transport: clientSide,
    cancel: (): CancelMechanism => "notification",
    ...(startsServer ? { [STARTS_SERVER]: true } : {}),
  };
  const transport = new MessageTransport(adapter, { defaults: { ...limits, clock: () => Date.now() } });
  const answers: JsonRpcMessage[] = [];
  transport.onmessage = (message) => void answers.push(message);
  await transport.start();
  const answerOf = (id: number) => answers.find((m) => (m as { id?: unknown }).id === id) as { error?: { code: number } } | undefined;
  const call = (id: number) =>
    void transport.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "t", arguments: {} } } as JsonRpcMessage);
  const say = () => serverSide.send({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "up" } } as never);
  /** Request `id` is still unanswered `ms - 1` ms from now, and failed -32001 (timed out) by `ms + 1`. */
  const timesOutAt = async (id: number, ms: number) => {
    await vi.advanceTimersByTimeAsync(ms - 1);
    expect(answerOf(id)).toBeUndefined();
    await vi.advanceTimersByTimeAsync(2);
    expect(answerOf(id)?.error?.code).toBe(-32001);
  };
  return { call, answerOf, timesOutAt, say, received, close: () => transport.close() };
}

describe("the idle timeout waits for a starting server's first message", () => {
  it("held until the server speaks, then runs from that message", async () => {
    const peer = await open(true, { timeoutMs: 1_000 });
    peer.call(1);
    await vi.advanceTimersByTimeAsync(5_000); // the server is starting: 5 s, no word
    expect(peer.answerOf(1)).toBeUndefined();
    await peer.say(); // its first message
    await peer.timesOutAt(1, 1_000);
    // A request after it has spoken is timed as ever.
    peer.call(2);
    await vi.advanceTimersByTimeAsync(1_001);
    expect(peer.answerOf(2)?.error?.code).toBe(-32001);
    await peer.close();
  });

  it("a server that never speaks: the hold ends START_HOLD_MS after the send (plus the idle timeout)", async () => {
    const peer = await open(true, { timeoutMs: 1_000, maxTotalTimeoutMs: 600_000 });
    peer.call(1);
    await peer.timesOutAt(1, START_HOLD_MS + 1_000);
    await peer.close();
  });

  it("a server silent START_HOLD_MS after the first held request is not starting: a request made then is not held", async () => {
    const peer = await open(true, { timeoutMs: 1_000, maxTotalTimeoutMs: 600_000 });
    peer.call(1);
    await vi.advanceTimersByTimeAsync(START_HOLD_MS + 1);
    peer.call(2);
    await vi.advanceTimersByTimeAsync(1_001);
    expect(peer.answerOf(2)?.error?.code).toBe(-32001);
    await peer.close();
  });

  it("the maximum total timeout holds while the idle timeout is held", async () => {
    const peer = await open(true, { timeoutMs: 1_000, maxTotalTimeoutMs: 3_000 });
    peer.call(1);
    await peer.timesOutAt(1, 3_000);
    await peer.close();
  });

  it("a transport that starts no server (HTTP, a user's): nothing held", async () => {
    const peer = await open(false, { timeoutMs: 1_000 });
    peer.call(1);
    await vi.advanceTimersByTimeAsync(1_001);
    expect(peer.answerOf(1)?.error?.code).toBe(-32001);
    await peer.close();
  });
});
