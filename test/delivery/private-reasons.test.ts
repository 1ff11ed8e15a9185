import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { CallCancelledError } from "../../src/index.js";
import type { Anomaly } from "../../src/index.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";

// Issue 11 item 2: nothing leaves the process that the bot did not choose to send. An abort
// reason is private text; by default the wire and the record carry only a text naming the
// trigger, and the abort reason stays local as the error's cause.

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const SECRET = "credentials revoked for connector acme-prod-billing";

describe("private abort reasons", () => {
  it("an abort with a private Error sends 'Cancelled by the client'; the record says the same; the error's cause keeps the secret", async () => {
    const anomalies: Anomaly[] = [];
    const { mcp, peer, records } = await connectPeer({ onAnomaly: (a) => anomalies.push(a) });
    const controller = new AbortController();
    const call = settleOf(mcp.callTool({ name: "silent" }, { signal: controller.signal }));
    await flush();
    controller.abort(new Error(SECRET));
    await flush();
    expect(peer.cancels()).toEqual([
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: "Cancelled by the client" } },
    ]);
    expect(JSON.stringify([peer.received, records, anomalies])).not.toContain("acme");
    expect((call.error as CallCancelledError).cause).toEqual(new Error(SECRET));
  });

  it("a private string abort reason is not sent either; forwardAbortReason: true sends it", async () => {
    const { mcp, peer } = await connectPeer();
    const first = new AbortController();
    settleOf(mcp.callTool({ name: "silent" }, { signal: first.signal }));
    await flush();
    first.abort("tenant 42 over quota (internal)");
    const second = new AbortController();
    settleOf(mcp.callTool({ name: "silent" }, { signal: second.signal, forwardAbortReason: true }));
    await flush();
    second.abort("the user chose to send this");
    await flush();
    expect(peer.cancels().map((m) => (m.params as { reason: string }).reason)).toEqual([
      "Cancelled by the client",
      "the user chose to send this",
    ]);
  });

  it("a call made on the SDK client directly and aborted with a private reason: the SDK's String(reason) is replaced by a text naming the trigger", async () => {
    const { client, peer } = await connectPeer();
    const controller = new AbortController();
    const direct = settleOf(client.callTool({ name: "silent" }, undefined, { signal: controller.signal }));
    await flush();
    controller.abort(new Error(SECRET));
    await flush();
    expect(direct.status).toBe("rejected");
    expect(peer.cancels()).toHaveLength(1);
    expect((peer.cancels()[0]!.params as { reason: string }).reason).toBe("Cancelled by the client");
  });

  it("the SDK's own timeout on a direct call is named as such; with forwardAbortReason the SDK's text goes as it is", async () => {
    const plain = await connectPeer();
    settleOf(plain.client.callTool({ name: "silent" }, undefined, { timeout: 100 }));
    await vi.advanceTimersByTimeAsync(100);
    await flush();
    expect((plain.peer.cancels()[0]!.params as { reason: string }).reason).toBe("Request timed out (the SDK's own timeout)");
    const forwarding = await connectPeer({ forwardAbortReason: true });
    const controller = new AbortController();
    settleOf(forwarding.client.callTool({ name: "silent" }, undefined, { signal: controller.signal }));
    await flush();
    controller.abort("the bot wants this sent");
    await flush();
    expect((forwarding.peer.cancels()[0]!.params as { reason: string }).reason).toBe("the bot wants this sent");
  });
});

describe("probe output", () => {
  it("the probe report shows a target URL without its password or query values (API keys travel there)", async () => {
    const { displayUrl } = await import("../../src/cli/describe.js");
    expect(displayUrl("https://bot:s3cret@mcp.example.com/mcp?api_key=abc123&x=1")).toBe(
      "https://bot:***@mcp.example.com/mcp?api_key=***&x=***",
    );
    expect(displayUrl("http://127.0.0.1:3000/mcp")).toBe("http://127.0.0.1:3000/mcp");
  });
});
