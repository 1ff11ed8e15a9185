import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallCancelledError, CallTimeoutError, ConnectionClosedError, InvalidOptionError, withCancellation } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { linkedCount } from "../../src/adapters/streamable-http/fetch.js";
import { connectV1 } from "./clients.js";
import { closedUnfinished, eventually, sawDisconnect, seen, sleep, startV1, started } from "./servers.js";
import type { TestServer } from "./servers.js";
import { SLACK_MS } from "../helpers/timing.js";

// The v1 SDK client (@modelcontextprotocol/sdk) over Streamable HTTP against the v1 SDK's own
// server, on 127.0.0.1 with real timers. v1 always negotiates a 2025 revision (2025-11-25), so a
// cancel is the notification POST, answered, then the request's own stream closed (rule 40).
// Assertions are orders, counts and bounds with generous slack (SLACK_MS) for a loaded machine.

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

async function setup(options: Parameters<typeof startV1>[0]) {
  const server = await startV1(options);
  cleanup.push(() => server.stop());
  const client = await connectV1(server.url);
  cleanup.push(() => client.close());
  return { server, ...client };
}

/** Starts a slow call and waits until the server's handler runs it. */
async function inFlight(server: TestServer, mcp: Awaited<ReturnType<typeof setup>>["mcp"], id: number, ms = 5_000) {
  const controller = new AbortController();
  // The idle timeout is a backstop: a call that hangs fails the test as a timeout, not by hanging it.
  const call = mcp.callTool({ name: "slow", arguments: { ms } }, { signal: controller.signal, timeoutMs: 3_000 });
  call.catch(() => {});
  expect(await eventually(() => started(server, id))).toBe(true);
  return { call, controller };
}

describe("v1 SDK client over Streamable HTTP (2025-11-25)", () => {
  it("C12 (2025-era), stateful server: exactly one notification POST, answered 202, and then the stream closed; the caller not held for any of it; the handler stops", async () => {
    const { server, mcp, adapter, errors } = await setup({ stateful: true });
    const { call, controller } = await inFlight(server, mcp, 1);
    const abortedAt = performance.now();
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS); // released at once, not after the flush
    // The notification may stop the handler before the close arrives: the response must not have ended.
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[0]), 3_000)).toBe(true);
    await sleep(200); // nothing more arrives later
    const [tool] = seen(server, "tools/call");
    const cancels = seen(server, "notifications/cancelled");
    expect(cancels).toHaveLength(1);
    expect(cancels[0]!.http.cancelOf).toBe(tool!.http.id);
    expect(cancels[0]!.http).toMatchObject({ session: true, pv: "2025-11-25" });
    expect(cancels[0]!.close!.status).toBe(202);
    // Rule 40 and C12's order: the server got the POST and answered it 202 before the stream closed.
    expect(cancels[0]!.http.t).toBeLessThan(tool!.close!.t);
    expect(cancels[0]!.close!.t).toBeLessThanOrEqual(tool!.close!.t);
    expect(tool!.aborted).toBeDefined(); // a stateful v1 server stops on the notification
    expect(mcp.records()[0]!.cancel).toMatchObject({ trigger: "aborted", mechanism: "notification+stream-close" });
    // the record names the MCP session the server gave (Mcp-Session-Id), as the transport has it
    expect(mcp.records()[0]!.sessionId).toMatch(/\S/);
    expect(mcp.records()[0]!.sessionId).toBe(adapter.transport.sessionId);
    expect(errors).toEqual([]); // our own abort never reaches onerror
    expect(adapter.stats()).toMatchObject({ streams: 0, sending: 0, flushing: 0, checks: 0 });
  });

  it("stateless server (SSE): the stream close is what stops the handler; no error surfaces", async () => {
    const { server, mcp, errors } = await setup({ stateful: false });
    const { call, controller } = await inFlight(server, mcp, 1);
    controller.abort("user-cancel");
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    expect(await eventually(() => seen(server, "tools/call")[0]?.aborted !== undefined)).toBe(true);
    const [tool] = seen(server, "tools/call");
    expect(sawDisconnect(tool)).toBe(true);
    expect(tool!.close!.headersSent).toBe(true);
    expect(await eventually(() => seen(server, "notifications/cancelled").length > 0)).toBe(true); // its POST may land after the close
    expect(seen(server, "notifications/cancelled")).toHaveLength(1);
    expect(mcp.records()[0]!.cancel).toMatchObject({ reason: "Cancelled by the client", mechanism: "notification+stream-close" }); // the abort reason stays local
    expect(errors).toEqual([]);
  });

  it("a JSON response (headers not sent yet) is cancelled the same way: the server sees the close before any header", async () => {
    const { server, mcp, errors } = await setup({ stateful: false, json: true });
    const { call } = await inFlight(server, mcp, 1);
    await sleep(0);
    const timedOut = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 150 });
    await expect(timedOut).rejects.toBeInstanceOf(CallTimeoutError);
    expect(await eventually(() => seen(server, "tools/call")[1]?.aborted !== undefined)).toBe(true);
    const second = seen(server, "tools/call")[1]!;
    expect(sawDisconnect(second)).toBe(true);
    expect(second.close!.headersSent).toBe(false);
    expect(mcp.records()[0]!.cancel).toMatchObject({ trigger: "timeout", mechanism: "notification+stream-close" });
    expect(errors).toEqual([]); // the fetch rejecting with our reason is swallowed too
    // The first call, still in flight on its own connection, was not touched.
    expect(seen(server, "tools/call")[0]!.close).toBeUndefined();
    void call;
  });

  it("cancelling one call leaves another in flight untouched", async () => {
    const { server, mcp, errors } = await setup({ stateful: true });
    const a = await inFlight(server, mcp, 1);
    const b = mcp.callTool({ name: "slow", arguments: { ms: 600 } });
    expect(await eventually(() => started(server, 2))).toBe(true);
    a.controller.abort();
    await expect(a.call).rejects.toBeInstanceOf(CallCancelledError);
    await expect(b).resolves.toMatchObject({ content: [{ text: "done after 600 ms" }] });
    const [first, second] = seen(server, "tools/call");
    expect(closedUnfinished(first)).toBe(true);
    expect(second!.close!.writableFinished).toBe(true);
    expect(second!.end).toMatchObject({ aborted: false });
    expect(mcp.records().map((r) => r.status)).toEqual(["cancelled", "succeeded"]);
    expect(errors).toEqual([]);
  });

  it("with an event store the SDK's automatic resume (GET Last-Event-ID) of the cancelled stream is refused, silently", async () => {
    const { server, mcp, adapter, errors } = await setup({ stateful: true, eventStore: true });
    const { call, controller } = await inFlight(server, mcp, 1);
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    // The v1 SDK schedules its resume 1000 ms after the stream broke.
    expect(await eventually(() => adapter.stats().resumesRefused === 1, 1_000 + SLACK_MS * 3)).toBe(true);
    await sleep(100);
    expect(server.events.filter((e) => e.kind === "http" && e.lastEventId !== undefined)).toEqual([]);
    expect(closedUnfinished(seen(server, "tools/call")[0])).toBe(true);
    expect(adapter.stats()).toMatchObject({ streams: 0, blockedTokens: 0, resuming: 0 });
    expect(errors).toEqual([]);
  });

  it("a call cancelled while the SDK resumes its broken stream (GET Last-Event-ID, no event on it yet): the SDK's next try carries the token and is refused silently; no bare GET reaches the server, onerror stays empty", async () => {
    const { server, mcp, adapter, errors } = await setup({ stateful: true, eventStore: true, breakToolCallAfterMs: 150 });
    const { call, controller } = await inFlight(server, mcp, 1);
    const resumes = () => server.events.filter((e) => e.kind === "http" && e.http === "GET" && e.lastEventId !== undefined);
    // The v1 SDK resumes a broken stream 1000 ms after it broke.
    expect(await eventually(() => resumes().length === 1, 1_000 + SLACK_MS * 3)).toBe(true);
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/SSE stream disconnected/)]); // the break itself, the server's doing
    const abortedAt = server.now();
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    // Its next try comes 1000 ms after the resumed stream ended: refused in the client, never sent.
    expect(await eventually(() => adapter.stats().resumesRefused === 1, 1_000 + SLACK_MS * 3)).toBe(true);
    await sleep(200);
    expect(server.events.filter((e) => e.kind === "http" && e.http === "GET" && e.t >= abortedAt)).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(adapter.stats()).toMatchObject({ streams: 0, resuming: 0 });
  }, 10_000);

  it("a notification the server is slow to answer holds nothing: the caller is released at once, the notification arrives first, the stream closes at most flushTimeoutMs after it", async () => {
    const server = await startV1({ stateful: false, holdCancelMs: 1_000 });
    cleanup.push(() => server.stop());
    const { mcp, adapter, errors, close } = await connectV1(server.url, {}, { flushTimeoutMs: 150 });
    cleanup.push(close);
    const { call, controller } = await inFlight(server, mcp, 1);
    const abortedOnServerClock = server.now();
    const abortedAt = performance.now();
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
    expect(await eventually(() => sawDisconnect(seen(server, "tools/call")[0]))).toBe(true);
    // Rule 40: the POSTed cancel, then the close. The stream closed without waiting for the
    // notification's answer (1 s away), at flushTimeoutMs (150) at most.
    const closedAt = seen(server, "tools/call")[0]!.close!.t;
    expect(closedAt - abortedOnServerClock).toBeLessThan(150 + SLACK_MS);
    expect(seen(server, "notifications/cancelled")).toHaveLength(1);
    expect(seen(server, "notifications/cancelled")[0]!.http.t).toBeLessThan(closedAt);
    expect(seen(server, "notifications/cancelled")[0]!.close).toBeUndefined(); // still unanswered
    expect(adapter.stats().flushing).toBe(1); // the notification is still on its way
    expect(await eventually(() => seen(server, "notifications/cancelled")[0]!.close?.status === 202, 1_000 + SLACK_MS)).toBe(true);
    expect(await eventually(() => adapter.stats().flushing === 0)).toBe(true);
    expect(mcp.records().at(-1)!.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
    expect(errors).toEqual([]);
  });

  it("a notification the server never answers is given up after notificationTimeoutMs: its POST aborted, the record says sent with no answer, nothing left held", async () => {
    const server = await startV1({ stateful: false, holdCancelMs: 20_000 });
    cleanup.push(() => server.stop());
    const { mcp, adapter, errors, close } = await connectV1(server.url, {}, { flushTimeoutMs: 100, notificationTimeoutMs: 400 });
    cleanup.push(close);
    const { call, controller } = await inFlight(server, mcp, 1);
    const abortedAt = performance.now();
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    expect(await eventually(() => seen(server, "notifications/cancelled").length === 1)).toBe(true);
    expect(mcp.records().at(-1)!.cancel!.undelivered).toBeNull(); // not answered yet, not given up yet
    expect(adapter.stats().flushing).toBe(1);
    expect(await eventually(() => adapter.stats().flushing === 0, 400 + SLACK_MS)).toBe(true);
    expect(performance.now() - abortedAt).toBeGreaterThanOrEqual(400 - 5); // not before the bound
    const record = mcp.records().at(-1)!;
    expect(record.cancel).toMatchObject({
      mechanism: "notification+stream-close",
      undelivered: {
        mechanism: "notification",
        error: "sent (its body written), but no answer came within notificationTimeoutMs (400 ms)",
        written: true,
      },
    });
    // It may have reached the server (its body was written): not "not delivered".
    expect(record.summary).toMatch(/cancel notification sent, unanswered$/);
    // The POST was given up: the server saw its connection close without an answer.
    expect(await eventually(() => closedUnfinished(seen(server, "notifications/cancelled")[0]))).toBe(true);
    expect(adapter.stats()).toMatchObject({ streams: 0, sending: 0, flushing: 0, checks: 0 });
    expect(errors).toEqual([]);
  });

  it("closing the client past flushTimeoutMs with a notification unanswered: the close resolves after the record says so (undelivered), nothing left flushing", async () => {
    const server = await startV1({ stateful: false, holdCancelMs: 20_000 });
    cleanup.push(() => server.stop());
    const { mcp, adapter, close } = await connectV1(server.url, {}, { flushTimeoutMs: 100 });
    const { call, controller } = await inFlight(server, mcp, 1);
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    expect(await eventually(() => seen(server, "notifications/cancelled").length === 1)).toBe(true);
    expect(mcp.records().at(-1)!.cancel!.undelivered).toBeNull(); // unanswered, not given up yet
    await close();
    // Right after the close, not some milliseconds later (an outside tester's).
    expect(adapter.stats().flushing).toBe(0);
    const record = mcp.records().at(-1)!;
    expect(record.cancel!.undelivered).toMatchObject({ mechanism: "notification", written: true });
    expect(record.summary).toMatch(/cancel notification sent, unanswered$/);
  });

  it("closing the client while a notification is unanswered waits at most flushTimeoutMs, and clears that wait's timer", async () => {
    // A value no other timer in the process uses (the server in this process, the test runner).
    const FLUSH_MS = 4_321;
    const server = await startV1({ stateful: false, holdCancelMs: 1_000 });
    cleanup.push(() => server.stop());
    const flushTimers: Array<{ _destroyed?: boolean }> = [];
    const realSetTimeout = globalThis.setTimeout;
    const spy = vi.spyOn(globalThis, "setTimeout").mockImplementation(((callback: () => void, ms?: number) => {
      const timer = realSetTimeout(callback, ms);
      if (ms === FLUSH_MS) flushTimers.push(timer as unknown as { _destroyed?: boolean }); // flushTimeoutMs below
      return timer;
    }) as typeof setTimeout);
    try {
      const { mcp, adapter, close } = await connectV1(server.url, {}, { flushTimeoutMs: FLUSH_MS });
      const { call, controller } = await inFlight(server, mcp, 1);
      controller.abort();
      await expect(call).rejects.toBeInstanceOf(CallCancelledError);
      expect(adapter.stats().flushing).toBe(1);
      const closing = performance.now();
      await close();
      expect(performance.now() - closing).toBeLessThan(FLUSH_MS);
      expect(adapter.stats().flushing).toBe(0);
      // The close's bound, and on a loaded machine the bound of a retried notification POST too:
      // each cleared, none left to fire 4 s later.
      expect(flushTimers.length).toBeGreaterThanOrEqual(1);
      expect(flushTimers.map((timer) => timer._destroyed)).toEqual(flushTimers.map(() => true));
    } finally {
      spy.mockRestore();
    }
  });

  it("a server that drops the connection mid-response settles the call as connection-closed, not hanging", async () => {
    const { server, mcp, adapter } = await setup({ stateful: true });
    const { call } = await inFlight(server, mcp, 1);
    const droppedAt = performance.now();
    server.drop();
    await expect(call).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(performance.now() - droppedAt).toBeLessThan(SLACK_MS);
    expect(mcp.records()[0]!.cancel).toMatchObject({ trigger: "connection-closed", mechanism: "none" });
    expect(mcp.pendingCount).toBe(0);
    expect(adapter.stats()).toMatchObject({ streams: 0, checks: 0 });
  });

  it("a drop before the response headers (JSON mode) settles as connection-closed too", async () => {
    const { server, mcp } = await setup({ stateful: false, json: true });
    const { call } = await inFlight(server, mcp, 1);
    server.drop();
    await expect(call).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(mcp.records()[0]!.cancel!.trigger).toBe("connection-closed");
  });

  it("fifty calls cancelled in a row leave no open response on the server and nothing held in the client", async () => {
    const { server, mcp, adapter, transport, errors } = await setup({ stateful: true, eventStore: true });
    const signal = (transport as unknown as { _abortController: AbortController })._abortController.signal;
    const listenersBefore = getEventListeners(signal, "abort").length;
    const linkedBefore = linkedCount(signal); // the session's standalone GET stream
    for (let i = 0; i < 50; i++) {
      const controller = new AbortController();
      const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal, timeoutMs: 5_000 });
      // Half are cancelled once the server runs them, half at once: their POST has not left the
      // process yet (the SDK's send awaits its headers before its fetch), so it never does.
      if (i % 2 === 0) await eventually(() => started(server, i + 1));
      controller.abort();
      await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    }
    const calls = (): number => seen(server, "tools/call").filter((c) => c.close === undefined).length;
    expect(await eventually(() => calls() === 0, 2_000)).toBe(true);
    // Only the session's standalone GET stream stays open.
    expect(server.openResponses().map((r) => r.http)).toEqual(["GET"]);
    expect(seen(server, "tools/call").filter(closedUnfinished).length).toBeGreaterThanOrEqual(25);
    expect(mcp.pendingCount).toBe(0);
    // Resumes of the cancelled streams are refused as the SDK tries them (1 s after each).
    expect(await eventually(() => adapter.stats().blockedTokens === 0, 1_000 + SLACK_MS * 3)).toBe(true);
    expect(adapter.stats()).toMatchObject({ streams: 0, sending: 0, flushing: 0, checks: 0, resuming: 0, blockedTokens: 0 });
    expect(getEventListeners(signal, "abort").length).toBe(listenersBefore);
    expect(linkedCount(signal)).toBe(linkedBefore);
    expect(seen(server, "notifications/cancelled").length).toBe(25);
    expect(seen(server, "tools/call").length).toBe(25);
    const records = mcp.records();
    expect(records.filter((r) => r.cancel?.mechanism === "notification+stream-close" && r.outcome === "unverified")).toHaveLength(25);
    expect(records.filter((r) => r.cancel?.mechanism === "none" && r.outcome === "not-sent")).toHaveLength(25);
    expect(errors).toEqual([]);
  });
});

describe("misuse is a clear error", () => {
  it("a v1 transport created without cancellableFetch() is refused, naming the fix", () => {
    const transport = new StreamableHTTPClientTransport(new URL("http://127.0.0.1:9/mcp"));
    expect(() => streamableHttpCancellation(transport)).toThrow(InvalidOptionError);
    expect(() => streamableHttpCancellation(transport)).toThrow(/fetch: cancellableFetch\(\)/);
  });

  it("one cancellableFetch() shared by two transports is refused", () => {
    const fetch = cancellableFetch();
    const url = new URL("http://127.0.0.1:9/mcp");
    streamableHttpCancellation(new StreamableHTTPClientTransport(url, { fetch }));
    expect(() => streamableHttpCancellation(new StreamableHTTPClientTransport(url, { fetch }))).toThrow(/one per transport/);
  });

  it("with redirectPolicy 'follow' (the SDK wraps the fetch) it is passed explicitly", () => {
    const fetch = cancellableFetch();
    const transport = new StreamableHTTPClientTransport(new URL("http://127.0.0.1:9/mcp"), { fetch, redirectPolicy: "follow" });
    expect(() => streamableHttpCancellation(transport)).toThrow(InvalidOptionError);
    expect(streamableHttpCancellation(transport, { fetch }).era).toBe("legacy");
  });

  // An outside tester's: a second cancellableFetch() as the option was taken; no stream could be
  // closed, the records said they were, and the transport's pool outlived its close.
  it("a fetch option other than the transport's own cancellableFetch() is refused, naming fetch", () => {
    const transport = new StreamableHTTPClientTransport(new URL("http://127.0.0.1:9/mcp"), { fetch: cancellableFetch() });
    expect(() => streamableHttpCancellation(transport, { fetch: cancellableFetch() })).toThrow(
      expect.objectContaining({ name: "InvalidOptionError", option: "fetch", message: expect.stringMatching(/created with another one/) }),
    );
  });

  it("behind redirectPolicy 'follow', a fetch option the transport does not send with fails connect() at its initialize, naming fetch", async () => {
    const server = await startV1({ stateful: true });
    onTestFinished(() => server.stop());
    const transport = new StreamableHTTPClientTransport(server.url, { fetch: cancellableFetch(), redirectPolicy: "follow" });
    const mcp = withCancellation(
      new Client({ name: "wrong-fetch", version: "1" }),
      streamableHttpCancellation(transport, { fetch: cancellableFetch() }),
    );
    const error = await mcp.sdkClient.connect(mcp.transport).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "InvalidOptionError", option: "fetch" });
    expect((error as Error).message).toMatch(/initialize did not go through it/);
    await mcp.sdkClient.close();
  });

  it("flushTimeoutMs out of range is refused", () => {
    const transport = new StreamableHTTPClientTransport(new URL("http://127.0.0.1:9/mcp"), { fetch: cancellableFetch() });
    expect(() => streamableHttpCancellation(transport, { flushTimeoutMs: -1 })).toThrow(/flushTimeoutMs/);
  });
});
