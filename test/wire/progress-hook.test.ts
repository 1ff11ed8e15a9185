import { afterEach, describe, expect, it, vi } from "vitest";
import { connectPeer, flush } from "../helpers/peer.js";

// docs/api.md, `onprogress`: an error the hook throws does not change the call (its idle timeout
// is still reset by the progress, rule 22) and reaches the SDK client's `onerror`, with the
// thrown value as `cause`, once per throw; the call then settles with its answer.
afterEach(() => vi.useRealTimers());

describe("onprogress that throws", () => {
  it("the call goes on (the progress still resets its idle timeout) and settles with its answer; each throw reaches client.onerror with its cause", async () => {
    vi.useFakeTimers();
    const { mcp, peer, errors } = await connectPeer();
    let seen = 0;
    const thrown = new Error("hook bug");
    const call = mcp.callTool(
      { name: "slow" },
      {
        timeoutMs: 1_000,
        resetTimeoutOnProgress: true,
        onprogress: () => {
          seen++;
          throw thrown;
        },
      },
    );
    await flush();
    const [request] = peer.requests("tools/call");
    const token = (request!.params as { _meta: { progressToken: unknown } })._meta.progressToken;
    for (let i = 1; i <= 3; i++) {
      await vi.advanceTimersByTimeAsync(800);
      await peer.progress(token, i);
      await flush();
    }
    // 2,400 ms after the call started, past its 1,000 ms idle timeout had the progress not reset it.
    await peer.result(request!.id);
    await expect(call).resolves.toMatchObject({ content: [{ text: "done" }] });
    expect(seen).toBe(3);
    const hookErrors = errors.filter((error) => /^onprogress threw: hook bug/.test(error.message));
    expect(hookErrors).toHaveLength(3);
    expect(hookErrors[0]!.cause).toBe(thrown);
    expect(peer.cancels()).toEqual([]);
  });

  it("an async onprogress whose promise rejects: the rejection reaches client.onerror, never unhandled, and the call goes on (a second pass: the process died of it)", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const { mcp, peer, errors } = await connectPeer();
      const rejected = new Error("async hook bug");
      const call = mcp.callTool({ name: "slow" }, { onprogress: async () => Promise.reject(rejected) });
      await flush();
      const [request] = peer.requests("tools/call");
      const token = (request!.params as { _meta: { progressToken: unknown } })._meta.progressToken;
      await peer.progress(token, 1);
      await flush();
      await peer.result(request!.id);
      await expect(call).resolves.toMatchObject({ content: [{ text: "done" }] });
      await new Promise((resolve) => setTimeout(resolve, 20)); // an unhandled rejection is reported after the microtasks
      expect(errors.filter((error) => error.message === "onprogress threw: async hook bug").map((error) => error.cause)).toEqual([
        rejected,
      ]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
