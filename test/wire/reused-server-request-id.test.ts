// A server that sends a second request under the id of one of its own still unanswered (rule 1
// forbids it): the pause it puts on pending calls must stay balanced with the client's answers.
import { afterEach, describe, expect, it, vi } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { attachCancellation } from "../../src/index.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";

describe("a server request whose id is reused while unanswered (rule 1)", () => {
  afterEach(() => void vi.useRealTimers());

  it("pauses a pending call once: after the client's answers its idle timeout runs again, not clientWaitTimeoutMs; an anomaly names rule 1", async () => {
    // An audit's: two `roots/list` with id 99 paused the call twice; the second answer found no
    // request to end, and the call timed out at clientWaitTimeoutMs, "waiting for the client's
    // answer", which had gone out at once.
    vi.useFakeTimers();
    const anomalies: string[] = [];
    const { client, mcp, peer } = await connectPeer({ onAnomaly: (anomaly) => void anomalies.push(anomaly.message) });
    // The client's answer takes a moment (a handler that reads the roots): the second request comes first.
    client.fallbackRequestHandler = async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { roots: [] };
    };
    const state = settleOf(
      mcp.callTool({ name: "work", arguments: {} }, { timeoutMs: 300, clientWaitTimeoutMs: 4_000 }).catch((e: unknown) => e),
    );
    await flush();
    await peer.send({ jsonrpc: "2.0", id: 99, method: "roots/list", params: {} });
    await peer.send({ jsonrpc: "2.0", id: 99, method: "roots/list", params: {} });
    await vi.advanceTimersByTimeAsync(10);
    expect(peer.received.filter((m) => m.id === 99 && m.method === undefined)).toHaveLength(2); // the client answered both
    await vi.advanceTimersByTimeAsync(400);
    expect(state.status).toBe("fulfilled"); // settled by its idle timeout, not 4 s later
    expect(state.value).toMatchObject({ code: "REQUEST_TIMEOUT", limitName: "timeoutMs" });
    expect(anomalies).toEqual([expect.stringContaining("rule 1")]);
    await client.close();
  });
});

describe("a server's cancel of a request of its own the client just answered (crossed, rule 12), under a number a client call has too", () => {
  it("its id as a string (\"1\", the server's numbering): no anomaly (an audit's: read as the client's request 1)", async () => {
    const anomalies: string[] = [];
    const { client, mcp, peer } = await connectPeer({ onAnomaly: (anomaly) => void anomalies.push(anomaly.message) });
    const ids: unknown[] = [];
    peer.onRequest((message) => {
      if (message.method === "tools/call") ids.push(message.id);
    });
    const call = mcp.callTool({ name: "work", arguments: {} }, { timeoutMs: 5_000 });
    await flush();
    const clientId = ids[0] as number;
    await peer.send({ jsonrpc: "2.0", id: String(clientId), method: "ping" });
    await flush();
    expect(peer.received.some((m) => m.id === String(clientId) && m.method === undefined)).toBe(true); // answered
    await peer.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: String(clientId), reason: "crossed" } });
    await flush();
    expect(anomalies).toEqual([]);
    await peer.result(clientId);
    await expect(call).resolves.toMatchObject({ content: [{ text: "done" }] });
    // The same cancel under the number, with no request of the server's by it: the anomaly (rule 12).
    const second = mcp.callTool({ name: "work", arguments: {} }, { timeoutMs: 5_000 });
    await flush();
    await peer.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: ids[1], reason: "not yours" } });
    await flush();
    expect(anomalies).toEqual([expect.stringContaining("rule 12")]);
    await peer.result(ids[1]);
    await second;
    await client.close();
  });

  it("on a client attached after its handshake (the era not known): no anomaly either", async () => {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const received: Array<Record<string, unknown>> = [];
    serverTransport.onmessage = (raw) => {
      const message = raw as Record<string, unknown>;
      received.push(message);
      if (message.method === "initialize") {
        void serverTransport.send({
          jsonrpc: "2.0",
          id: message.id as number,
          result: { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "peer", version: "1" } },
        });
      }
    };
    await serverTransport.start();
    const client = new Client({ name: "attached", version: "1" });
    await client.connect(clientTransport);
    const anomalies: string[] = [];
    const mcp = attachCancellation(client, { onAnomaly: (anomaly) => void anomalies.push(anomaly.message) });
    const call = mcp.callTool({ name: "work", arguments: {} }, { timeoutMs: 5_000 });
    await flush();
    const id = received.find((m) => m.method === "tools/call")!.id as number;
    await serverTransport.send({ jsonrpc: "2.0", id, method: "ping" });
    await flush();
    await serverTransport.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "crossed" } });
    await flush();
    expect(anomalies).toEqual([]);
    await serverTransport.send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "done" }] } });
    await expect(call).resolves.toMatchObject({ content: [{ text: "done" }] });
    await client.close();
  });
});
