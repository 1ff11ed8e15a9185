import { ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { InvalidOptionError } from "../../src/index.js";
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

  it("already in use by a pending call is refused, naming params._meta.progressToken and rule 20: nothing sent, the first call keeps its progress; free again once it settled", async () => {
    // An audit's: two pending calls given one token; the second took the first one's progress,
    // the first one's timeout then took the token from the second, which timed out while its
    // server still reported, and its progress counted late on the first one's record.
    vi.useFakeTimers();
    const { client, mcp, peer, records } = await connectPeer();
    const ids: unknown[] = [];
    peer.onRequest((message) => {
      if (message.method === "tools/call") ids.push(message.id);
    });
    const first = mcp.callTool(
      { name: "work", arguments: {}, _meta: { progressToken: "job" } },
      { timeoutMs: 300, resetTimeoutOnProgress: true },
    );
    const refused = (await mcp
      .callTool({ name: "other", arguments: {}, _meta: { progressToken: "job" } }, { timeoutMs: 300 })
      .catch((e: unknown) => e)) as InvalidOptionError;
    expect(refused).toBeInstanceOf(InvalidOptionError);
    expect(refused.option).toBe("params._meta.progressToken");
    expect(refused.message).toContain('progress token "job" is already in use');
    expect(refused.message).toContain('tools/call "other" was not sent');
    expect(refused.message).toContain("rule 20");
    await flush();
    expect(peer.requests("tools/call")).toHaveLength(1);
    for (let step = 1; step <= 3; step++) {
      await vi.advanceTimersByTimeAsync(200);
      await peer.progress("job", step, 3);
    }
    await peer.result(ids[0]);
    await expect(first).resolves.toMatchObject({ content: [{ text: "done" }] });
    expect(records.at(-1)).toMatchObject({ name: "work", status: "succeeded", progress: { count: 3 } });
    const again = mcp.callTool({ name: "other", arguments: {}, _meta: { progressToken: "job" } }, { timeoutMs: 300 });
    await flush();
    expect(peer.requests("tools/call")).toHaveLength(2);
    await peer.result(ids[1]);
    await expect(again).resolves.toMatchObject({ content: [{ text: "done" }] });
    await client.close();
  });

  it("a call's end takes its token off only if it is still its own: a later request given the same number (the SDK's own token is its request id) keeps its progress", async () => {
    vi.useFakeTimers();
    const { client, mcp, peer, records } = await connectPeer();
    const ids: unknown[] = [];
    peer.onRequest((message) => {
      if (message.method === "tools/call") ids.push(message.id);
    });
    // The next request ids are counted from the handshake's; the caller's number is the second call's id.
    const first = mcp.callTool({ name: "mine", arguments: {} }, { timeoutMs: 100 }).catch((e: unknown) => e);
    await flush();
    const next = (ids[0] as number) + 2;
    const own = mcp.callTool({ name: "own", arguments: {}, _meta: { progressToken: next } }, { timeoutMs: 200 }).catch((e: unknown) => e);
    await flush();
    const progressed = mcp.callTool({ name: "sdk", arguments: {} }, { timeoutMs: 400, resetTimeoutOnProgress: true });
    await flush();
    expect(ids[2]).toBe(next);
    expect((peer.requests("tools/call")[2]!.params as { _meta?: { progressToken?: unknown } })._meta?.progressToken).toBe(next);
    await vi.advanceTimersByTimeAsync(250); // the first two time out; the caller's numbered call with them
    expect(await first).toMatchObject({ code: "REQUEST_TIMEOUT" });
    expect(await own).toMatchObject({ code: "REQUEST_TIMEOUT" });
    for (let step = 1; step <= 3; step++) {
      await peer.progress(next, step, 3);
      await vi.advanceTimersByTimeAsync(300); // within the idle timeout only by the progress
    }
    await peer.result(ids[2]);
    await expect(progressed).resolves.toMatchObject({ content: [{ text: "done" }] });
    expect(records.find((r) => r.name === "sdk")).toMatchObject({ status: "succeeded", progress: { count: 3 } });
    await client.close();
  });
});
