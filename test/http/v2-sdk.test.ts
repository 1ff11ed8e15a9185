import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { CallCancelledError, CallTimeoutError, ConnectionClosedError, withCancellation } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { connectV2 } from "./clients.js";
import { closedUnfinished, eventually, sawDisconnect, seen, sleep, startV1, startV2, started } from "./servers.js";
import type { TestServer } from "./servers.js";
import { SLACK_MS } from "../helpers/timing.js";
import { composedEntries } from "../../src/utils/composed-signals.js";

/** A full collection, in this process (the test runs without --expose-gc). */
function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

// The v2 SDK client (@modelcontextprotocol/client) over Streamable HTTP, pinned to 2026-07-28
// (the stream close is the cancel, rules 6, 28) and in the 2025-era (notification, then close,
// rule 40), against the v2 server (createMcpHandler) and the v1 server. Real timers; orders,
// counts and bounds with generous slack.

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

async function setup(server: TestServer, pin: boolean) {
  cleanup.push(() => server.stop());
  const client = await connectV2(server.url, { pin });
  cleanup.push(() => client.close());
  return { server, ...client };
}

const handlerStarts = (server: TestServer): number => server.events.filter((e) => e.kind === "handler-start").length;

/**
 * node#55351: 300 answered calls, then the transport's own signal holds (nearly) no entry for the
 * signals the v2 transport composed with it for each request (Node 20 kept one a request for the
 * connection's life); a cancel and the close still work after the sweeps.
 */
async function composedSignalsSwept(server: TestServer, pin: boolean): Promise<void> {
  const { mcp, transport, errors } = await setup(server, pin);
  const transportSignal = (transport as unknown as { _abortController: AbortController })._abortController.signal;
  const calls = 300;
  for (let i = 1; i <= calls; i++) {
    await mcp.callTool({ name: "slow", arguments: { ms: 0 } }, { timeoutMs: 5_000 });
    if (i % 50 === 0) collectGarbage();
  }
  collectGarbage();
  await mcp.callTool({ name: "slow", arguments: { ms: 0 } }, { timeoutMs: 5_000 }); // its fetch sweeps
  expect(composedEntries(transportSignal)).toBeLessThan(100); // Node 20 without the sweep: 301 and more
  const controller = new AbortController();
  const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal });
  call.catch(() => {});
  expect(await eventually(() => handlerStarts(server) === calls + 2)).toBe(true);
  controller.abort();
  await expect(call).rejects.toBeInstanceOf(CallCancelledError);
  expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[calls + 1]), 3_000)).toBe(true);
  expect(errors).toEqual([]);
}

describe("v2 SDK client pinned to 2026-07-28 against the v2 server", () => {
  it("C11 a cancel before the first byte: settles at once, the server sees the close within 100 ms, no notification POST", async () => {
    const { server, mcp, adapter, client, errors } = await setup(await startV2({ responseMode: "json" }), true);
    expect(client.getProtocolEra()).toBe("modern");
    expect(adapter.era).toBe("modern");
    const controller = new AbortController();
    const sentAt = performance.now();
    const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal, timeoutMs: 3_000 });
    call.catch(() => {});
    expect(await eventually(() => handlerStarts(server) === 1)).toBe(true);
    await sleep(Math.max(0, 50 - (performance.now() - sentAt))); // cancel() at 50
    const abortedAt = performance.now();
    const abortedOnServerClock = server.now();
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    const released = performance.now() - abortedAt;
    expect(released).toBeLessThan(50 + SLACK_MS);
    expect(await eventually(() => seen(server, "tools/call")[0]?.close !== undefined)).toBe(true);
    const [tool] = seen(server, "tools/call");
    expect(tool!.close!.headersSent).toBe(false); // the server had sent nothing yet
    expect(sawDisconnect(tool)).toBe(true);
    expect(tool!.close!.t - abortedOnServerClock).toBeLessThan(100 + SLACK_MS);
    expect(await eventually(() => seen(server, "tools/call")[0]!.aborted !== undefined)).toBe(true); // toNodeHandler aborts it on the close
    await sleep(200);
    expect(server.events.filter((e) => e.kind === "http" && e.rpc === "notifications/cancelled")).toEqual([]);
    expect(mcp.records()[0]!.cancel).toMatchObject({ trigger: "aborted", mechanism: "stream-close" });
    expect(adapter.stats()).toMatchObject({ streams: 0, flushing: 0 });
    expect(errors).toEqual([]);
  });

  it("C12 (2026-07-28): the SSE response stream is closed and no cancel POST is made; the handler's signal fires", async () => {
    const { server, mcp, errors } = await setup(await startV2({ responseMode: "sse" }), true);
    const controller = new AbortController();
    let progress = 0;
    const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal, onprogress: () => progress++ });
    call.catch(() => {});
    expect(await eventually(() => mcp.records().length === 0 && handlerStarts(server) === 1)).toBe(true);
    // A progress event came (the tool reports every 500 ms): the stream is SSE, headers sent. A
    // fixed 700 ms could end before the first on a loaded machine.
    expect(await eventually(() => progress > 0, 10_000)).toBe(true);
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    expect(await eventually(() => seen(server, "tools/call")[0]?.aborted !== undefined)).toBe(true);
    const [tool] = seen(server, "tools/call");
    expect(sawDisconnect(tool)).toBe(true);
    expect(tool!.close!.headersSent).toBe(true);
    expect(tool!.aborted!.t).toBeGreaterThanOrEqual(tool!.close!.t); // the close is what stopped it
    await sleep(200);
    expect(server.events.filter((e) => e.kind === "http" && e.rpc === "notifications/cancelled")).toEqual([]);
    const record = mcp.records()[0]!;
    expect(record.cancel!.mechanism).toBe("stream-close");
    expect(record.progress.count).toBeGreaterThan(0);
    expect(errors).toEqual([]);
  });

  it("node#55351: the transport's signal keeps no entry for each request's composed signal (2026-07-28: the SDK's own per-request signal)", async () => {
    await composedSignalsSwept(await startV2({ responseMode: "json" }), true);
  }, 60_000);

  it("a timeout closes the stream the same way and is reported as REQUEST_TIMEOUT, not as the SDK's error", async () => {
    const { server, mcp, errors } = await setup(await startV2(), true);
    await expect(mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 200 })).rejects.toSatisfy(
      (error) => error instanceof CallTimeoutError && error.code === "REQUEST_TIMEOUT",
    );
    expect(await eventually(() => sawDisconnect(seen(server, "tools/call")[0]))).toBe(true);
    expect(mcp.records()[0]!.summary).toBe("cancelled (timeout), outcome unverified");
    expect(errors).toEqual([]);
  });

  it("cancelling one call leaves another in flight untouched; a server error stays the SDK's own", async () => {
    const { server, mcp, errors } = await setup(await startV2(), true);
    const controller = new AbortController();
    const a = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal });
    a.catch(() => {});
    const b = mcp.callTool({ name: "slow", arguments: { ms: 600 } });
    expect(await eventually(() => handlerStarts(server) === 2)).toBe(true);
    controller.abort();
    await expect(a).rejects.toBeInstanceOf(CallCancelledError);
    await expect(b).resolves.toMatchObject({ content: [{ text: "done after 600 ms" }] });
    const unknown = mcp.callTool({ name: "nope" });
    await expect(unknown).rejects.toBeInstanceOf(ProtocolError);
    const records = mcp.records();
    expect(records.map((r) => r.status)).toEqual(["cancelled", "succeeded", "failed"]);
    expect(records[2]!.error!.code).toBe(-32602);
    expect(seen(server, "tools/call").filter(sawDisconnect)).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it("a server that drops the connection mid-response settles the call as connection-closed", async () => {
    const server = await startV2({ responseMode: "sse" });
    const { mcp, adapter } = await setup(server, true);
    const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 3_000 });
    call.catch(() => {});
    expect(await eventually(() => handlerStarts(server) === 1)).toBe(true);
    await sleep(100);
    const droppedAt = performance.now();
    server.drop();
    await expect(call).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(performance.now() - droppedAt).toBeLessThan(SLACK_MS);
    expect(mcp.pendingCount).toBe(0);
    expect(adapter.stats().streams).toBe(0);
  });

  it("fifty calls cancelled in a row leave no open response on the server and nothing held in the client", async () => {
    const { server, mcp, adapter, errors } = await setup(await startV2(), true);
    for (let i = 0; i < 50; i++) {
      const controller = new AbortController();
      const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal });
      if (i % 2 === 0) await eventually(() => handlerStarts(server) > i / 2);
      controller.abort();
      await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    }
    expect(await eventually(() => server.openResponses().length === 0, 2_000)).toBe(true);
    expect(mcp.pendingCount).toBe(0);
    expect(adapter.stats()).toMatchObject({ streams: 0, sending: 0, flushing: 0, checks: 0, resuming: 0, blockedTokens: 0 });
    expect(seen(server, "tools/call").filter(sawDisconnect).length).toBeGreaterThanOrEqual(25);
    expect(server.events.filter((e) => e.kind === "http" && e.rpc === "notifications/cancelled")).toEqual([]);
    // A call aborted before the SDK handed its request to the transport was never sent: "none", "not-sent".
    const kinds = new Set(mcp.records().map((r) => `${r.cancel?.mechanism}/${r.outcome}`));
    expect([...kinds].every((k) => k === "stream-close/unverified" || k === "none/not-sent")).toBe(true);
    expect(mcp.records().filter((r) => r.cancel?.mechanism === "stream-close").length).toBeGreaterThanOrEqual(25);
    expect(errors).toEqual([]);
  });
});

describe("v2 SDK client pinned to 2026-07-28: a mass timeout", () => {
  it("200 calls timing out together: each caller is released with its request's fetch already aborted (the stream close is the cancel, then the release), and the server sees every close", async () => {
    const server = await startV2();
    cleanup.push(() => server.stop());
    // The fetch the transport was given: what the socket's own request sees (its signal aborts the socket).
    const signals = new Map<number, AbortSignal>();
    const fetch: typeof globalThis.fetch = (url, init) => {
      const id = /"id":(\d+)/.exec(String(init?.body ?? ""))?.[1];
      if (id !== undefined && init?.signal) signals.set(Number(id), init.signal);
      return globalThis.fetch(url, init);
    };
    const { mcp, client, errors } = await connectV2(server.url, { pin: true, fetch });
    cleanup.push(() => client.close());
    const calls = 200;
    const abortedAtRelease: boolean[] = [];
    const settled = Array.from({ length: calls }, () =>
      mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 300 }).then(
        () => "answered",
        (error: unknown) => {
          const id = (error as CallTimeoutError).requestId as number;
          abortedAtRelease.push(signals.get(id)?.aborted === true);
          return error;
        },
      ),
    );
    const results = await Promise.all(settled);
    expect(results.every((r) => r instanceof CallTimeoutError)).toBe(true);
    expect(abortedAtRelease).toEqual(Array.from({ length: calls }, () => true));
    const records = mcp.records();
    expect(records.filter((r) => r.cancel?.mechanism === "stream-close")).toHaveLength(calls);
    // Every request the server received sees its stream close. On a loaded machine a few of the 200
    // may not have been read by the server when their 300 ms ran out (the close took them with it).
    const received = () => seen(server, "tools/call");
    expect(await eventually(() => received().length > 0 && received().every(sawDisconnect), 10_000)).toBe(true);
    expect(received().length).toBeLessThanOrEqual(calls);
    expect(server.events.filter((e) => e.kind === "http" && e.rpc === "notifications/cancelled")).toEqual([]);
    expect(errors).toEqual([]);
  }, 30_000);
});

describe("v2 SDK client 2025-era (its default)", () => {
  it("C12 (2025-era) against the stateful v1 server: one notification POST, answered 202, and then the stream closed", async () => {
    const server = await startV1({ stateful: true, eventStore: true });
    const { mcp, adapter, client, errors } = await setup(server, false);
    expect(client.getProtocolEra()).toBe("legacy");
    expect(adapter.era).toBe("legacy");
    const controller = new AbortController();
    const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal });
    call.catch(() => {});
    expect(await eventually(() => started(server, 1))).toBe(true);
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[0]), 3_000)).toBe(true);
    await sleep(1_000 + SLACK_MS); // past the SDK's resume delay: no GET Last-Event-ID comes
    const [tool] = seen(server, "tools/call");
    const cancels = seen(server, "notifications/cancelled");
    expect(cancels).toHaveLength(1);
    expect(cancels[0]!.http).toMatchObject({ cancelOf: tool!.http.id, session: true, pv: "2025-11-25" });
    expect(cancels[0]!.close!.status).toBe(202);
    expect(cancels[0]!.http.t).toBeLessThan(tool!.close!.t); // the POST, then the close (rule 40)
    expect(cancels[0]!.close!.t).toBeLessThanOrEqual(tool!.close!.t);
    expect(tool!.aborted).toBeDefined();
    expect(server.events.filter((e) => e.kind === "http" && e.lastEventId !== undefined)).toEqual([]);
    expect(mcp.records()[0]!.cancel!.mechanism).toBe("notification+stream-close");
    expect(adapter.stats()).toMatchObject({ streams: 0, flushing: 0, blockedTokens: 0 });
    expect(errors).toEqual([]);
  });

  it("a transport given the user's own fetch: each cancel's marks go with its delivery, none stays for the connection's life (an audit's: one a cancel stayed)", async () => {
    const server = await startV1({ stateful: true });
    cleanup.push(() => server.stop());
    // The user's own fetch: the library cannot see its bodies written, so it never asks whether a
    // cancel may take a pooled connection (the mark that said so was left behind).
    const { mcp, adapter, errors, close } = await connectV2(server.url, { fetch: (url, init) => globalThis.fetch(url, init) });
    cleanup.push(close);
    const calls = 5;
    for (let id = 1; id <= calls; id++) {
      const controller = new AbortController();
      const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal, timeoutMs: 3_000 });
      call.catch(() => {});
      expect(await eventually(() => started(server, id))).toBe(true); // its head came: the server has it
      controller.abort();
      await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    }
    expect(await eventually(() => seen(server, "notifications/cancelled").length === calls, 3_000)).toBe(true);
    expect(await eventually(() => adapter.stats().flushing === 0, 3_000)).toBe(true);
    expect(mcp.records().map((record) => record.cancel?.mechanism)).toEqual(Array(calls).fill("notification+stream-close"));
    expect(adapter.stats()).toMatchObject({ cancelMarks: 0, streams: 0, flushing: 0 });
    expect(errors).toEqual([]);
  });

  it("node#55351: the transport's signal keeps no entry for each request's composed signal (2025-era: the library's per-request signal)", async () => {
    await composedSignalsSwept(await startV1({ stateful: true }), false);
  }, 60_000);

  it("against the v2 server's stateless 2025 fallback the stream close stops the handler", async () => {
    const server = await startV2({ responseMode: "sse" });
    const { mcp, errors } = await setup(server, false);
    const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 300 });
    await expect(call).rejects.toBeInstanceOf(CallTimeoutError);
    expect(await eventually(() => seen(server, "tools/call")[0]?.aborted !== undefined)).toBe(true);
    expect(sawDisconnect(seen(server, "tools/call")[0])).toBe(true);
    expect(await eventually(() => seen(server, "notifications/cancelled").length > 0)).toBe(true); // its POST may land after the close
    expect(seen(server, "notifications/cancelled")).toHaveLength(1);
    expect(mcp.records()[0]!.cancel!.mechanism).toBe("notification+stream-close");
    expect(errors).toEqual([]);
  });

  it("against the v2 server's 2025 fallback (its head held until the first event) the notification waits flushTimeoutMs, and the record's sentAt says when it went, not the settle", async () => {
    const server = await startV2({ responseMode: "sse" });
    const { mcp, errors } = await setup(server, false);
    const controller = new AbortController();
    const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal });
    expect(await eventually(() => seen(server, "tools/call").length === 1)).toBe(true);
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    expect(await eventually(() => seen(server, "notifications/cancelled").length === 1)).toBe(true);
    expect(await eventually(() => mcp.records()[0]!.revision > 0)).toBe(true);
    const record = mcp.records()[0]!;
    expect(record.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
    // The wait is a 250 ms timer from the cancel: the notification cannot have gone earlier.
    expect(Date.parse(record.cancel!.sentAt!) - Date.parse(record.settledAt)).toBeGreaterThanOrEqual(240);
    expect(errors).toEqual([]);
  });

  it("a fetch option the transport does not send with is refused, naming fetch: a plain one at once, another cancellableFetch() at the first request (an outside tester's: accepted, nothing observed, a cancelled call the server ran recorded never sent)", async () => {
    const url = new URL("http://127.0.0.1:9/mcp");
    let refused: unknown;
    try {
      streamableHttpCancellation(new StreamableHTTPClientTransport(url), { fetch: globalThis.fetch });
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ name: "InvalidOptionError", option: "fetch" });
    expect((refused as Error).message).toMatch(/a v2 transport needs no fetch option: leave it out/);
    // Its own fetch, named again: taken.
    const own = cancellableFetch();
    expect(() => streamableHttpCancellation(new StreamableHTTPClientTransport(url, { fetch: own }), { fetch: own })).not.toThrow();
    // Another cancellableFetch(): the transport's fetch might wrap it (as the proxy's does), so it is checked at the first request.
    const server = await startV1({ stateful: true });
    cleanup.push(() => server.stop());
    const transport = new StreamableHTTPClientTransport(server.url);
    const client = new Client({ name: "http-test", version: "1.0.0" });
    const mcp = withCancellation(client, streamableHttpCancellation(transport, { fetch: cancellableFetch() }));
    cleanup.push(() => client.close());
    const error = await client.connect(mcp.transport).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "InvalidOptionError", option: "fetch" });
    expect((error as Error).message).toMatch(/the transport's initialize did not go through it/);
  });

  it("a v2 transport created with cancellableFetch() (for its timeouts) cancels the same way", async () => {
    const server = await startV1({ stateful: false, json: true });
    cleanup.push(() => server.stop());
    const transport = new StreamableHTTPClientTransport(server.url, { fetch: cancellableFetch() });
    const client = new Client({ name: "http-test", version: "1.0.0" });
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    const mcp = withCancellation(client, streamableHttpCancellation(transport));
    await client.connect(mcp.transport);
    cleanup.push(() => client.close());
    await expect(mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 200 })).rejects.toBeInstanceOf(CallTimeoutError);
    expect(await eventually(() => seen(server, "tools/call")[0]?.aborted !== undefined)).toBe(true);
    expect(seen(server, "tools/call")[0]!.close!.headersSent).toBe(false);
    await expect(mcp.callTool({ name: "slow", arguments: { ms: 100 } })).resolves.toMatchObject({
      content: [{ text: "done after 100 ms" }],
    });
    expect(errors).toEqual([]);
  });
});
