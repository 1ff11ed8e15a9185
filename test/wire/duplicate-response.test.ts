// A server that answers one request twice: the second response is dropped before the SDK sees it,
// counted on the call's record, and said (an outside tester's: the probe, which reports what the
// wire's anomalies say, showed nothing of it).
import { describe, expect, it } from "vitest";
import type { Anomaly } from "../../src/index.js";
import { connectPeer, flush } from "../helpers/peer.js";

describe("a second response to an answered request", () => {
  it("is dropped, counted late on its record, and raises one invalid-message anomaly naming the request; a late response to a cancelled call raises none", async () => {
    const anomalies: Anomaly[] = [];
    const { client, mcp, peer, errors } = await connectPeer({ onAnomaly: (anomaly) => void anomalies.push(anomaly) });
    const ids: unknown[] = [];
    peer.onRequest((message) => {
      if (message.method === "tools/call") ids.push(message.id);
    });
    const answered = mcp.callTool({ name: "twice", arguments: {} });
    await flush();
    await peer.result(ids[0]);
    await expect(answered).resolves.toMatchObject({ content: [{ text: "done" }] });
    await peer.result(ids[0]);
    await flush();
    expect(anomalies).toEqual([
      expect.objectContaining({
        kind: "invalid-message",
        requestId: ids[0],
        message: expect.stringContaining("a second response for request"),
      }),
    ]);
    expect(mcp.records().at(-1)).toMatchObject({ status: "succeeded", late: { results: 1 } });
    // Both in one read (an outside tester's: the first had not settled the call yet, and no anomaly came).
    const both = mcp.callTool({ name: "twice-at-once", arguments: {} });
    await flush();
    const id = ids.at(-1) as number;
    // Back to back, in one turn: the second comes before the first has settled the call.
    void peer.send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "done" }] } });
    void peer.send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "again" }] } });
    await expect(both).resolves.toMatchObject({ content: [{ text: "done" }] });
    await flush();
    expect(anomalies.filter((a) => a.requestId === id)).toHaveLength(1);
    anomalies.length = 1;
    // Cancelled, then answered: the answer is a late result (rules 8, 9), no fault of the server's.
    const controller = new AbortController();
    const cancelled = mcp.callTool({ name: "late", arguments: {} }, { signal: controller.signal }).catch((e: unknown) => e);
    await flush();
    controller.abort();
    await cancelled;
    await peer.result(ids.at(-1));
    await flush();
    expect(anomalies).toHaveLength(1);
    expect(errors).toEqual([]);
    await client.close();
  });
});
