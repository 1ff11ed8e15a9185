import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Anomaly } from "../../src/index.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";

// A 2025-era server may cancel a request of its own (rule 12 allows it before 2026-07-28), and
// may do so just after the client answered it: the answer and the cancel cross. The two
// directions number their requests apart, so a cancel naming the server's ping 1 is not about
// the client's tools/call 1 (found from outside: it was reported as
// `server-cancelled-client-request` for the client's request). An in-memory peer, fake timers.

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

async function callPending() {
  const anomalies: Anomaly[] = [];
  const connected = await connectPeer({ onAnomaly: (anomaly) => anomalies.push(anomaly) });
  let id: number | undefined;
  connected.peer.onRequest((message) => {
    if (message.method === "tools/call") id = message.id as number;
  });
  const call = settleOf(connected.mcp.callTool({ name: "slow", arguments: {} }, { timeoutMs: 10_000 }));
  await flush();
  expect(typeof id).toBe("number");
  return { ...connected, anomalies, call, id: id! };
}

/** The peer sends a ping with this id; the client's SDK answers it. */
async function pingAnswered(peer: Awaited<ReturnType<typeof connectPeer>>["peer"], id: number) {
  await peer.send({ jsonrpc: "2.0", id, method: "ping" });
  await flush();
  expect(peer.received.some((m) => m.id === id && m.method === undefined)).toBe(true);
}

const cancel = (requestId: number) => ({
  jsonrpc: "2.0",
  method: "notifications/cancelled",
  params: { requestId, reason: "no longer needed" },
});

describe("a 2025-era server cancelling its own request with the id of a pending client request", () => {
  it("its ping was just answered: no anomaly, and the client's call with the same id goes on", async () => {
    const { peer, anomalies, call, id } = await callPending();
    const initialize = peer.received.find((m) => m.method === "initialize")!;
    expect((initialize.params as { protocolVersion: string }).protocolVersion < "2026-07-28").toBe(true); // the peer answers with it
    await pingAnswered(peer, id);
    await peer.send(cancel(id));
    await flush();
    expect(anomalies).toEqual([]);
    expect(peer.cancels()).toEqual([]);
    await peer.result(id);
    await flush();
    expect(call.status).toBe("fulfilled");
  });

  it("a cancel naming an id the server never used for a request of its own is still reported (rule 12)", async () => {
    const { peer, anomalies, id } = await callPending();
    await peer.send(cancel(id));
    await flush();
    expect(anomalies.map((anomaly) => anomaly.kind)).toEqual(["server-cancelled-client-request"]);
  });

  it("the answered ids it remembers are bounded: one answered 256 server requests ago is forgotten", async () => {
    const { peer, anomalies, id } = await callPending();
    await pingAnswered(peer, id);
    for (let i = 1; i <= 256; i++) await peer.send({ jsonrpc: "2.0", id: 100_000 + i, method: "ping" });
    await flush();
    await peer.send(cancel(id));
    await flush();
    expect(anomalies.map((anomaly) => anomaly.kind)).toEqual(["server-cancelled-client-request"]);
  });
});
