import { describe, expect, it } from "vitest";
import { MessageTransport } from "../../src/runner/message-transport.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { notificationCancellation } from "../../src/adapters/notification.js";
import { eventually } from "../helpers/timing.js";

// A `subscriptions/listen` that runs as a call (the proxy relays a client's through a
// MessageTransport): the server may end it with notifications/cancelled (rule 12). The call is
// over then, without its result: failed once with the server's reason (an outside tester's: it
// was recorded succeeded), nothing left pending, no cancel sent back (rule 7), and the server's
// notification still reaches the client.

describe("a call's subscriptions/listen ended by the server (rule 12)", () => {
  it("fails the call with the server's reason, leaves nothing pending, sends no cancel, and passes the server's notification on", async () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const fromClient: Array<{ method?: string; id?: unknown }> = [];
    serverSide.onmessage = (message) => void fromClient.push(message as { method?: string; id?: unknown });
    await serverSide.start();
    const transport = new MessageTransport(notificationCancellation(clientSide), { defaults: { timeoutMs: 5_000 } });
    const toClient: Array<{ method?: string; params?: unknown }> = [];
    transport.onmessage = (message) => void toClient.push(message as { method?: string; params?: unknown });
    await transport.start();
    await transport.send({ jsonrpc: "2.0", id: "L1", method: "subscriptions/listen", params: {} });
    expect(transport.pendingCount).toBe(1);
    await serverSide.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: "L1", reason: "server ends the listen" },
    });
    expect(await eventually(() => transport.pendingCount === 0)).toBe(true);
    expect(toClient.filter((m) => m.method === "notifications/cancelled")).toHaveLength(1);
    expect(fromClient.filter((m) => m.method === "notifications/cancelled")).toEqual([]);
    expect(transport.records()).toHaveLength(1);
    expect(transport.records()[0]).toMatchObject({
      method: "subscriptions/listen",
      status: "failed",
      error: {
        code: null,
        message:
          "subscriptions/listen ended by the server (notifications/cancelled: server ends the listen; rule 12 in docs/spec-rules.md)",
      },
    });
    // The client hears the server's own notification; the library adds no answer of its own.
    expect(toClient.filter((m) => (m as { id?: unknown }).id === "L1")).toEqual([]);
    await transport.close();
  });
});
