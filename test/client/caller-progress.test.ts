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
});
