import { ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { connectPeer, flush } from "../helpers/peer.js";

// A caller that puts its own progress token on a request and reads progress with a handler of its
// own (Mastra's `enableProgressTracking`: `_meta.progressToken` and a `notifications/progress`
// handler on the client; an outside tester's: the handler got nothing with the library). The
// request keeps the caller's token, its live progress reaches that handler as without the
// library, and also resets the call's idle timeout; progress after the call settled does not.

describe("a caller's own progress token", () => {
  afterEach(() => void vi.useRealTimers());

  it("is the token on the wire; its live progress reaches the caller's handler and keeps the call alive; late progress is dropped", async () => {
    vi.useFakeTimers();
    const { client, mcp, peer, records } = await connectPeer();
    const seen: unknown[] = [];
    client.setNotificationHandler(ProgressNotificationSchema, (notification) => void seen.push(notification.params.progress));
    let id: unknown;
    peer.onRequest((message) => {
      if (message.method === "tools/call") id = message.id;
    });
    const call = mcp.callTool(
      { name: "work", arguments: {}, _meta: { progressToken: "run-7" } },
      { timeoutMs: 300, resetTimeoutOnProgress: true },
    );
    await flush();
    const sent = peer.requests("tools/call")[0]!;
    expect((sent.params as { _meta?: { progressToken?: unknown } })._meta?.progressToken).toBe("run-7");
    for (let step = 1; step <= 3; step++) {
      await vi.advanceTimersByTimeAsync(200); // past half the idle timeout each time
      await peer.progress("run-7", step, 3);
    }
    await peer.result(id);
    await expect(call).resolves.toMatchObject({ content: [{ text: "done" }] });
    await peer.progress("run-7", 4, 3); // late
    await flush();
    expect(seen).toEqual([1, 2, 3]);
    expect(records.at(-1)).toMatchObject({ status: "succeeded", progress: { count: 3 } });
    await client.close();
  });

  it("given with an onprogress of the library's, its progress goes to that onprogress only: the SDK, which knows no such token, reports nothing to onerror", async () => {
    // An outside tester's: each live progress also reached the SDK's own progress handler, which
    // called `client.onerror` ("unknown token") four times; without the library, the SDK puts its
    // own token in place of the caller's when given `onprogress`, and reports nothing.
    const { client, mcp, peer } = await connectPeer();
    const errors: Error[] = [];
    client.onerror = (error) => void errors.push(error);
    const got: number[] = [];
    let id: unknown;
    peer.onRequest((message) => {
      if (message.method === "tools/call") id = message.id;
    });
    const call = mcp.callTool(
      { name: "work", arguments: {}, _meta: { progressToken: "mine" } },
      { onprogress: (progress) => void got.push(progress.progress) },
    );
    await flush();
    for (let step = 1; step <= 4; step++) await peer.progress("mine", step, 4);
    await peer.result(id);
    await expect(call).resolves.toMatchObject({ content: [{ text: "done" }] });
    await flush();
    expect(got).toEqual([1, 2, 3, 4]);
    expect(errors).toEqual([]);
    await client.close();
  });
});
