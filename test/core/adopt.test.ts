import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CancellableCall } from "../../src/core.js";
import { CallTimeoutError, isConnectionClosedError } from "../../src/index.js";
import { resolveCallOptions } from "../../src/options/resolve.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";

// `promise: "adopt"` (src/core/cancellable-call.ts): a call whose request went out within the
// entry point's send has no promise of its own; the caller's follows the SDK's, whose wait every
// settle ends. A call not sent yet keeps a promise of its own, which a cancel settles at once
// (rule 6: the caller is released at once, never waiting on the SDK).

/** A call made as the runner makes it, and the SDK's promise for it (settled by the test). */
function makeCall(timeoutMs = 100) {
  const call = new CancellableCall<string>({
    method: "tools/call",
    name: "report",
    options: resolveCallOptions({}, { timeoutMs }),
    clock: () => Date.now(),
    timers: { setTimeout: (callback, ms) => setTimeout(callback, ms), clearTimeout: (handle) => clearTimeout(handle as never) },
    hooks: { cancel: () => "notification", settled: () => {} },
    promise: "adopt",
  });
  let resolve!: (value: unknown) => void;
  let reject!: (error: unknown) => void;
  const sent = new Promise<unknown>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { call, sent, resolve, reject };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  expect(vi.getTimerCount()).toBe(0);
  vi.useRealTimers();
});

describe("CancellableCall.adopt: the caller's promise follows the SDK's once the request is out", () => {
  it("sent within the send: the promise follows it; the answer is the result", async () => {
    const { call, sent, resolve } = makeCall();
    call.start();
    call.bind(1); // the SDK sent it within the send
    expect(call.adopt(sent)).toBe(true);
    expect(call.follows).toBe(true);
    const outcome = settleOf(call.promise);
    expect(call.responded()).toBe(true);
    resolve("the report");
    await flush();
    expect(outcome).toMatchObject({ status: "fulfilled", value: "the report" });
    expect(call.record?.status).toBe("succeeded");
  });

  it("a timeout: the caller gets the call's own error when the SDK's wait ends, whatever the SDK rejects or resolves with", async () => {
    for (const end of ["reject", "resolve"] as const) {
      const { call, sent, resolve, reject } = makeCall();
      call.start();
      call.bind(1);
      call.adopt(sent);
      const outcome = settleOf(call.promise);
      await vi.advanceTimersByTimeAsync(100);
      expect(call.settled).toBe(true);
      expect(call.follows).toBe(false); // settled: nothing left to release
      if (end === "reject") reject(new Error("Request settled by mcp-cancellable (local)"));
      else resolve("a late result");
      await flush();
      expect(outcome.status).toBe("rejected");
      expect(outcome.error).toBeInstanceOf(CallTimeoutError);
      expect((outcome.error as CallTimeoutError).record.status).toBe("cancelled");
    }
  });

  it("a result the call took before the SDK's wait ended (a listen the server ended) is what the caller gets", async () => {
    const { call, sent, reject } = makeCall();
    call.start();
    call.bind(1);
    call.adopt(sent);
    const outcome = settleOf(call.promise);
    expect(call.responded()).toBe(true);
    call.succeed("{}");
    reject(new Error("released"));
    await flush();
    expect(outcome).toMatchObject({ status: "fulfilled", value: "{}" });
  });

  it("not sent yet (the SDK awaits before its send): a promise of its own, which a cancel settles at once while the SDK's never does", async () => {
    const { call, sent } = makeCall();
    call.start();
    expect(call.adopt(sent)).toBe(false);
    expect(call.follows).toBe(false);
    const outcome = settleOf(call.promise);
    await vi.advanceTimersByTimeAsync(100);
    await flush();
    expect(outcome.status).toBe("rejected");
    expect(outcome.error).toBeInstanceOf(CallTimeoutError);
    expect(call.record?.outcome).toBe("not-sent");
  });

  it("settled before the send (an aborted signal): the promise is made settled, with the call's error", async () => {
    const controller = new AbortController();
    controller.abort();
    const call = new CancellableCall<string>({
      method: "tools/call",
      name: "report",
      options: resolveCallOptions({}, { signal: controller.signal }),
      clock: () => Date.now(),
      timers: { setTimeout: (callback, ms) => setTimeout(callback, ms), clearTimeout: (handle) => clearTimeout(handle as never) },
      hooks: { cancel: () => "none", settled: () => {} },
      promise: "adopt",
    });
    call.start();
    expect(call.settled).toBe(true);
    expect(call.adopt(undefined)).toBe(false);
    const outcome = settleOf(call.promise);
    await flush();
    expect(outcome.status).toBe("rejected");
    expect((outcome.error as { record: { summary: string } }).record.summary).toContain("never sent");
  });
});

describe("a v1 caller whose promise follows the SDK's, when the connection closes", () => {
  it("is released with ConnectionClosedError though the client's onclose hook throws (v1 then never rejects its own waits)", async () => {
    vi.useRealTimers();
    const { client, mcp, peer } = await connectPeer({ timeoutMs: 60_000 });
    client.onclose = () => {
      throw new Error("the bot's onclose hook failed");
    };
    peer.onRequest(() => {}); // never answers
    const calls = [0, 1, 2].map(() => settleOf(mcp.callTool({ name: "slow" })));
    await flush();
    expect(peer.requests("tools/call")).toHaveLength(3);
    await peer.close().catch(() => {}); // the hook's error surfaces here
    await flush();
    expect(calls.map((c) => c.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const call of calls) expect(isConnectionClosedError(call.error)).toBe(true);
    expect(mcp.pendingCount).toBe(0);
    const handlers = (client as unknown as { _responseHandlers: Map<unknown, unknown> })._responseHandlers;
    expect(handlers.size).toBe(0);
    vi.useFakeTimers(); // afterEach expects them
  });
});
