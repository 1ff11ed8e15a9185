// A server that sends a second request under the id of one of its own still unanswered (rule 1
// forbids it): the pause it puts on pending calls must stay balanced with the client's answers.
import { afterEach, describe, expect, it, vi } from "vitest";
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
