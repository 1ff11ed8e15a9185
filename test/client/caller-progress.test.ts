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

  it("a caller's number the SDK then picks as its own token (it uses the request id): the later request carries a token of the wire's own; each call keeps its own progress (rule 20)", async () => {
    // An audit's: both went out with one token, the later call got the first one's progress, and
    // the first timed out while its server still reported.
    vi.useFakeTimers();
    const { client, mcp, peer, records } = await connectPeer();
    const ids: unknown[] = [];
    peer.onRequest((message) => {
      if (message.method === "tools/call") ids.push(message.id);
    });
    // Request ids are counted from the handshake's: the caller's number is the second call's id.
    const first = mcp.callTool({ name: "mine", arguments: {} }, { timeoutMs: 5_000 });
    await flush();
    const next = (ids[0] as number) + 2;
    const seen: Record<string, number[]> = { own: [], sdk: [] };
    const own = mcp.callTool(
      { name: "own", arguments: {}, _meta: { progressToken: next } },
      { timeoutMs: 200, resetTimeoutOnProgress: true, onprogress: (p) => void seen.own!.push(p.progress) },
    );
    await flush();
    const sdk = mcp.callTool(
      { name: "sdk", arguments: {} },
      { timeoutMs: 200, resetTimeoutOnProgress: true, onprogress: (p) => void seen.sdk!.push(p.progress) },
    );
    await flush();
    expect(ids[2]).toBe(next);
    const tokens = peer.requests("tools/call").map((m) => (m.params as { _meta?: { progressToken?: unknown } })._meta?.progressToken);
    expect(tokens[1]).toBe(next); // the caller's, as it gave it
    expect(tokens[2]).toMatch(/^mcp-cancellable-progress-\d+$/);
    for (let step = 1; step <= 3; step++) {
      await peer.progress(next, step, 3);
      await peer.progress(tokens[2], step * 10, 30);
      await vi.advanceTimersByTimeAsync(150); // within each idle timeout only by the progress
    }
    await peer.result(ids[1]);
    await peer.result(ids[2]);
    await peer.result(ids[0]);
    await expect(own).resolves.toMatchObject({ content: [{ text: "done" }] });
    await expect(sdk).resolves.toMatchObject({ content: [{ text: "done" }] });
    await first;
    expect(seen).toEqual({ own: [1, 2, 3], sdk: [10, 20, 30] });
    expect(records.filter((r) => r.name !== "mine").map((r) => [r.name, r.progress.count])).toEqual([
      ["own", 3],
      ["sdk", 3],
    ]);
    await client.close();
  });

  it("reused after its call was cancelled, while that call's server may still report under it (rule 10): the new call carries a token of the wire's own; the old progress counts late on the old record, never reaches the new call; the caller's own handler still sees its token", async () => {
    // An audit's: the new call's onprogress got 15 of the cancelled one's messages, and they reset its idle timeout.
    const { client, mcp, peer, records } = await connectPeer();
    const handlerSaw: unknown[] = [];
    client.setNotificationHandler(ProgressNotificationSchema, (n) => void handlerSaw.push(n.params.progressToken));
    const ids: unknown[] = [];
    peer.onRequest((message) => {
      if (message.method === "tools/call") ids.push(message.id);
    });
    const controller = new AbortController();
    const old = mcp
      .callTool({ name: "old", arguments: {}, _meta: { progressToken: "job" } }, { signal: controller.signal })
      .catch((e: unknown) => e);
    await flush();
    controller.abort();
    await old;
    const again = mcp.callTool({ name: "again", arguments: {}, _meta: { progressToken: "job" } }, { timeoutMs: 5_000 });
    await flush();
    const wireToken = (peer.requests("tools/call")[1]!.params as { _meta: { progressToken: string } })._meta.progressToken;
    expect(wireToken).toMatch(/^mcp-cancellable-progress-\d+$/);
    await peer.progress("job", 4); // the old call's server, still at work
    await peer.progress(wireToken, 1); // the new call's
    await flush();
    expect(handlerSaw).toEqual(["job"]); // the new call's progress, under the token its caller gave
    await peer.result(ids[1]);
    await expect(again).resolves.toMatchObject({ content: [{ text: "done" }] });
    expect(records.filter((r) => r.name === "old").at(-1)).toMatchObject({ late: { progress: 1 } });
    expect(records.find((r) => r.name === "again")).toMatchObject({ progress: { count: 1 } });
    await client.close();
  });

  it("a request made on the SDK client directly whose token (its id) a pending call carries: it goes out with a token of the wire's own; the call keeps its progress and is kept alive by it; each handler sees only its own (rule 20)", async () => {
    // An audit's: the direct request took the call's token over, the call got no progress and
    // timed out while its server still reported, and the direct request's handler got the call's progress.
    vi.useFakeTimers();
    const { client, mcp, peer, records } = await connectPeer();
    const ids: unknown[] = [];
    peer.onRequest((message) => {
      if (message.method === "tools/call") ids.push(message.id);
    });
    const warm = mcp.callTool({ name: "warm", arguments: {} });
    await flush();
    const next = (ids[0] as number) + 2; // the id the SDK gives the direct request
    await peer.result(ids[0]);
    await warm;
    const seen: Record<string, number[]> = { call: [], direct: [] };
    const call = mcp.callTool(
      { name: "call", arguments: {}, _meta: { progressToken: next } },
      { timeoutMs: 200, resetTimeoutOnProgress: true, onprogress: (p) => void seen.call!.push(p.progress) },
    );
    await flush();
    const direct = client.callTool({ name: "direct", arguments: {} }, undefined, { onprogress: (p) => void seen.direct!.push(p.progress) });
    await flush();
    expect(ids[2]).toBe(next);
    const tokens = peer.requests("tools/call").map((m) => (m.params as { _meta?: { progressToken?: unknown } })._meta?.progressToken);
    expect(tokens[1]).toBe(next);
    expect(tokens[2]).toMatch(/^mcp-cancellable-progress-\d+$/);
    for (let step = 1; step <= 3; step++) {
      await peer.progress(next, step, 3);
      await peer.progress(tokens[2], step * 10, 30);
      await vi.advanceTimersByTimeAsync(150);
    }
    await peer.result(ids[1]);
    await peer.result(ids[2]);
    await expect(call).resolves.toMatchObject({ content: [{ text: "done" }] });
    await expect(direct).resolves.toMatchObject({ content: [{ text: "done" }] });
    expect(seen).toEqual({ call: [1, 2, 3], direct: [10, 20, 30] });
    expect(records.find((r) => r.name === "call")).toMatchObject({ status: "succeeded", progress: { count: 3 } });
    await client.close();
  });

  it("in use as given by a pending call whose wire carries a token of its own: refused as any token in use (rule 20), nothing sent; a token of the wire's own form that no caller gave goes out as another of the wire's own", async () => {
    // An audit's: the second call given "A" was sent (only the wire's token was looked at), and a
    // caller's "mcp-cancellable-progress-1" was refused as in use though no call of its had it.
    const { client, mcp, peer } = await connectPeer();
    const ids: unknown[] = [];
    peer.onRequest((message) => {
      if (message.method === "tools/call") ids.push(message.id);
    });
    const controller = new AbortController();
    const old = mcp.callTool({ name: "old", arguments: {}, _meta: { progressToken: "A" } }, { signal: controller.signal }).catch((e) => e);
    await flush();
    controller.abort();
    await old;
    const second = mcp.callTool({ name: "second", arguments: {}, _meta: { progressToken: "A" } });
    await flush();
    const tokenOf = (n: number) => (peer.requests("tools/call")[n]!.params as { _meta: { progressToken: unknown } })._meta.progressToken;
    const own = tokenOf(1);
    expect(own).toMatch(/^mcp-cancellable-progress-\d+$/);
    const third = await mcp.callTool({ name: "third", arguments: {}, _meta: { progressToken: "A" } }).catch((e: unknown) => e);
    expect(third).toBeInstanceOf(InvalidOptionError);
    expect(third).toMatchObject({ option: "params._meta.progressToken" });
    expect((third as Error).message).toContain("rule 20");
    expect(peer.requests("tools/call")).toHaveLength(2);
    const saw: unknown[] = [];
    const fourth = mcp.callTool(
      { name: "fourth", arguments: {}, _meta: { progressToken: own as string } },
      { onprogress: (p) => void saw.push(p.progress) },
    );
    await flush();
    expect(peer.requests("tools/call")).toHaveLength(3);
    const fourthToken = tokenOf(2);
    expect(fourthToken).toMatch(/^mcp-cancellable-progress-\d+$/);
    expect(fourthToken).not.toBe(own);
    await peer.progress(fourthToken, 5);
    await peer.progress(own, 1); // the second call's: not the fourth's
    await flush();
    expect(saw).toEqual([5]);
    await peer.result(ids[1]);
    await peer.result(ids[2]);
    await second;
    await fourth;
    // Free again once both settled.
    const fifth = mcp.callTool({ name: "fifth", arguments: {}, _meta: { progressToken: "A" } });
    await flush();
    await peer.result(ids[3]);
    await expect(fifth).resolves.toMatchObject({ content: [{ text: "done" }] });
    await client.close();
  });
});
