// The three wire faults of issue 10, fixed as kinds, on the v1 SDK client against a scripted
// in-memory peer: a task's progress token lives until its task is terminal (the 2025-11-25 Tasks specification); a
// CreateTaskResult is never recorded as succeeded; every subscriptions/listen entry is released
// however the listen ends (server cancel naming it, listen result, stream end), and a server's
// notifications/cancelled ends only the listen it names (rule 12).
import { describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { z } from "zod";
import { withCancellation } from "../../src/index.js";
import type { Anomaly } from "../../src/index.js";
import type { Message, WireHooks } from "../../src/core.js";
import { connectPeer, flush } from "../helpers/peer.js";

const anySchema = z.looseObject({});

describe("a task's progress token (2025-11-25 Tasks)", () => {
  it("stays valid for the SDK's own task-augmented call until a terminal status passes by", async () => {
    const anomalies: Anomaly[] = [];
    const { client, peer } = await connectPeer({ onAnomaly: (a) => anomalies.push(a) });
    const seen: number[] = [];
    peer.onRequest((m) => {
      if (m.method === "tools/call") {
        void peer.result(m.id, { task: { taskId: "t1", status: "working", ttl: 60_000, createdAt: "", lastUpdatedAt: "" } });
      }
    });
    const created = await client.request({ method: "tools/call", params: { name: "report", task: { ttl: 60_000 } } }, anySchema, {
      onprogress: (p) => seen.push(p.progress),
    });
    expect(created).toMatchObject({ task: { taskId: "t1" } });
    const token = (peer.requests("tools/call")[0]!.params!._meta as { progressToken: number }).progressToken;
    await peer.progress(token, 1);
    await peer.progress(token, 2);
    await flush();
    expect(seen).toEqual([1, 2]);
    expect(anomalies).toEqual([]);
    await peer.send({ jsonrpc: "2.0", method: "notifications/tasks/status", params: { taskId: "t1", status: "completed" } });
    await peer.progress(token, 3);
    await flush();
    expect(seen).toEqual([1, 2]);
    expect(anomalies.map((a) => a.kind)).toEqual(["unknown-progress-token"]);
    await client.close();
  });
});

describe("a CreateTaskResult alone", () => {
  it("is recorded as task-created, never succeeded, for a call that does not follow its task", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m) => {
      void peer.result(m.id, { task: { taskId: "t2", status: "working", ttl: null, createdAt: "", lastUpdatedAt: "" } });
    });
    await mcp.request({ method: "tools/call", params: { name: "report", task: {} } });
    const record = records.at(-1)!;
    expect(record.status).toBe("task-created");
    expect(record.task).toEqual({ taskId: "t2", status: "working", revision: "2025-11-25" });
    expect(record.summary).toMatch(/^task created, not followed/);
    await client.close();
  });
});

describe("subscriptions/listen entries", () => {
  async function connect() {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const received: Message[] = [];
    serverTransport.onmessage = (raw) => {
      const message = raw as Message;
      received.push(message);
      if (message.method === "initialize") {
        void serverTransport.send({
          jsonrpc: "2.0",
          id: message.id as number,
          result: { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "peer", version: "1" } },
        } as never);
      }
    };
    await serverTransport.start();
    let hooks: WireHooks | undefined;
    const client = new Client({ name: "listen-bot", version: "1.0.0" });
    client.onerror = () => {};
    const mcp = withCancellation(client, {
      transport: clientTransport,
      cancel: () => "notification",
      attach: (wire) => void (hooks = wire),
    });
    await client.connect(mcp.transport);
    return { client, mcp, serverTransport, received, streamLost: (id: number) => hooks!.streamLost(id) };
  }

  it("a long-lived connection with 1,000 listens opened and ended (server cancel, result, stream end) holds no entry", async () => {
    const { client, mcp, serverTransport, received, streamLost } = await connect();
    for (let i = 0; i < 1_000; i++) {
      void client.request({ method: "subscriptions/listen", params: {} }, anySchema, { timeout: 600_000 }).catch(() => {});
    }
    await flush();
    const ids = received.filter((m) => m.method === "subscriptions/listen").map((m) => m.id as number);
    expect(ids).toHaveLength(1_000);
    expect(mcp.pendingCount).toBe(1_000);
    for (const [index, id] of ids.entries()) {
      if (index % 3 === 0) {
        await serverTransport.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } } as never);
      } else if (index % 3 === 1) {
        await serverTransport.send({ jsonrpc: "2.0", id, result: { resultType: "complete" } } as never);
      } else {
        streamLost(id);
      }
    }
    await flush();
    expect(mcp.pendingCount).toBe(0);
    await client.close();
  });

  it("what the server still sends under a listen it ended with its result is late: dropped, never handed to the client (rules 33, 34)", async () => {
    const { client, mcp, serverTransport, received } = await connect();
    const delivered: unknown[] = [];
    client.fallbackNotificationHandler = async (notification) => void delivered.push(notification);
    for (let i = 0; i < 2; i++) {
      void client.request({ method: "subscriptions/listen", params: {} }, anySchema, { timeout: 600_000 }).catch(() => {});
    }
    await flush();
    const [ended, open] = received.filter((m) => m.method === "subscriptions/listen").map((m) => m.id as number);
    const changed = (id: number) =>
      serverTransport.send({
        jsonrpc: "2.0",
        method: "notifications/tools/list_changed",
        params: { _meta: { "io.modelcontextprotocol/subscriptionId": id } },
      } as never);
    await serverTransport.send({
      jsonrpc: "2.0",
      id: ended,
      result: { resultType: "complete", _meta: { "io.modelcontextprotocol/subscriptionId": ended } },
    } as never);
    await flush();
    await changed(ended!); // late: its listen ended
    await changed(open!); // the other listen's: delivered
    await flush();
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ params: { _meta: { "io.modelcontextprotocol/subscriptionId": open } } });
    expect(mcp.pendingCount).toBe(1);
    await client.close();
  });

  it("what the server still sends under a listen that ended any other way is dropped too (an outside tester's: four ways reached the client)", async () => {
    const { client, mcp, serverTransport, received } = await connect();
    const delivered: unknown[] = [];
    client.fallbackNotificationHandler = async (notification) => void delivered.push(notification);
    const closing = new AbortController();
    // The SDK's own listens: one the server cancels, one the client closes.
    void client.request({ method: "subscriptions/listen", params: {} }, anySchema, { timeout: 600_000 }).catch(() => {});
    void client
      .request({ method: "subscriptions/listen", params: {} }, anySchema, { timeout: 600_000, signal: closing.signal })
      .catch(() => {});
    // Listens made as calls of the library: one the server answers, one it cancels.
    const answered = mcp.request({ method: "subscriptions/listen", params: {} }, { timeoutMs: 600_000 });
    const cancelled = mcp.request({ method: "subscriptions/listen", params: {} }, { timeoutMs: 600_000 }).catch((e: unknown) => e);
    await flush();
    const [sdkCancelled, sdkClosed, callAnswered, callCancelled] = received
      .filter((m) => m.method === "subscriptions/listen")
      .map((m) => m.id as number);
    const serverCancels = (id: number, reason: string) =>
      serverTransport.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason } } as never);
    await serverCancels(sdkCancelled!, "server done");
    closing.abort("the client closes it");
    await serverTransport.send({ jsonrpc: "2.0", id: callAnswered, result: { resultType: "complete" } } as never);
    await serverCancels(callCancelled!, "server restarts");
    await flush();
    for (const id of [sdkCancelled, sdkClosed, callAnswered, callCancelled]) {
      await serverTransport.send({
        jsonrpc: "2.0",
        method: "notifications/tools/list_changed",
        params: { _meta: { "io.modelcontextprotocol/subscriptionId": id } },
      } as never);
    }
    await flush();
    expect(delivered).toEqual([]);
    await expect(answered).resolves.toMatchObject({ resultType: "complete" });
    // Ended by the server without its result: failed with the server's reason, not succeeded with {}.
    expect((await cancelled) as Error).toMatchObject({
      message: "subscriptions/listen ended by the server (notifications/cancelled: server restarts; rule 12 in docs/spec-rules.md)",
    });
    const record = mcp.records().find((r) => r.requestId === callCancelled)!;
    expect(record).toMatchObject({ status: "failed", error: { code: null, message: expect.stringContaining("server restarts") } });
    expect(mcp.pendingCount).toBe(0);
    await client.close();
  });

  it('a listen the server names by its id written as a string ("1" for 1, as answers are matched): its cancel ends the call, and what comes after is dropped (an outside tester\'s)', async () => {
    const { client, mcp, serverTransport, received } = await connect();
    const delivered: unknown[] = [];
    client.fallbackNotificationHandler = async (notification) => void delivered.push(notification);
    const listen = mcp
      .request({ method: "subscriptions/listen", params: {} }, { timeoutMs: Number.POSITIVE_INFINITY })
      .catch((e: unknown) => e);
    await flush();
    const id = received.find((m) => m.method === "subscriptions/listen")!.id as number;
    await serverTransport.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: String(id), reason: "bye" },
    } as never);
    await flush();
    expect((await listen) as Error).toMatchObject({
      message: "subscriptions/listen ended by the server (notifications/cancelled: bye; rule 12 in docs/spec-rules.md)",
    });
    await serverTransport.send({
      jsonrpc: "2.0",
      method: "notifications/tools/list_changed",
      params: { _meta: { "io.modelcontextprotocol/subscriptionId": String(id) } },
    } as never);
    await flush();
    expect(delivered).toEqual([]);
    expect(mcp.pendingCount).toBe(0);
    await client.close();
  });

  it("a server's notifications/cancelled ends only the listen it names (rule 12)", async () => {
    const { client, mcp, serverTransport, received } = await connect();
    for (let i = 0; i < 3; i++) {
      void client.request({ method: "subscriptions/listen", params: {} }, anySchema, { timeout: 600_000 }).catch(() => {});
    }
    await flush();
    const ids = received.filter((m) => m.method === "subscriptions/listen").map((m) => m.id as number);
    await serverTransport.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: ids[1] } } as never);
    await flush();
    expect(mcp.pendingCount).toBe(2);
    await client.close();
    expect(mcp.pendingCount).toBe(0);
  });
});
