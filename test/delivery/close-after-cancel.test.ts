import { afterEach, describe, expect, it } from "vitest";
import { CallCancelledError } from "../../src/index.js";
import { connectV1, connectV2 } from "../http/clients.js";
import { eventually, seen, sleep, startV1, startV2 } from "../http/servers.js";
import type { TestServer } from "../http/servers.js";
import { SLACK_MS } from "../helpers/timing.js";

// Issue 11 item 1: a cancel followed at once by client.close() (not awaited) still reaches the
// server on every transport, bounded by flushTimeoutMs, without holding the caller, and the
// close's own echoes never reach onerror. stdio is in close-after-cancel-stdio.test.ts.

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

type Connected = Awaited<ReturnType<typeof connectV1>> | Awaited<ReturnType<typeof connectV2>>;

/** A silent call in flight (the handler runs), then abort and client.close() in the same tick. */
async function abortThenClose(server: TestServer, client: Connected) {
  const controller = new AbortController();
  const call = client.mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal, timeoutMs: 5_000 });
  call.catch(() => {});
  expect(await eventually(() => server.events.some((e) => e.kind === "handler-start"))).toBe(true);
  await sleep(100);
  const abortedAt = performance.now();
  controller.abort();
  const closing = client.client.close(); // not awaited by the bot
  await expect(call).rejects.toBeInstanceOf(CallCancelledError);
  const releasedAfter = performance.now() - abortedAt;
  const closedAfter = await closing.then(() => performance.now() - abortedAt);
  return { releasedAfter, closedAfter };
}

describe("a cancel followed at once by client.close()", () => {
  for (const [sdk, connect] of [
    ["v1", (url: URL) => connectV1(url)],
    ["v2 (2025 era)", (url: URL) => connectV2(url)],
  ] as const) {
    it(`${sdk}, 2025-11-25 server with sessions: the server gets the POSTed notification with the session header before the client goes; onerror stays empty`, async () => {
      const server = await startV1({ stateful: true });
      cleanup.push(() => server.stop());
      const client = await connect(server.url);
      cleanup.push(() => client.close());
      const { releasedAfter, closedAfter } = await abortThenClose(server, client);
      expect(releasedAfter).toBeLessThan(SLACK_MS); // the caller is never held
      expect(closedAfter).toBeLessThan(250 + SLACK_MS); // the close waits flushTimeoutMs (250) at most
      expect(await eventually(() => seen(server, "notifications/cancelled").length === 1)).toBe(true);
      const [cancel] = seen(server, "notifications/cancelled");
      expect(cancel!.http).toMatchObject({ session: true, cancelOf: 1 });
      expect(cancel!.close?.status).toBe(202); // answered: the server read it before the client went
      expect(await eventually(() => seen(server, "tools/call")[0]?.close !== undefined)).toBe(true);
      const tool = seen(server, "tools/call")[0]!;
      expect(tool.aborted).toBeDefined(); // the handler stopped on the notification
      expect(client.mcp.records()[0]!.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
      expect(client.errors.map((e) => e.message)).toEqual([]);
    });
  }

  // The v2 server's stateless 2025 fallback holds a request's response head until its first
  // event: the notification waits up to flushTimeoutMs for the request to reach the server. The
  // close ends that wait (the body was written: the notification goes at once), else its own
  // bound ran out as the notification's wait did and aborted it as it started (0 POSTs).
  for (const [sdk, connect] of [
    ["v1", (url: URL) => connectV1(url)],
    ["v2 (2025 era)", (url: URL) => connectV2(url)],
  ] as const) {
    it(`${sdk}, the v2 server's 2025 fallback (no head before the first event): the notification still reaches it within flushTimeoutMs; the record says what went`, async () => {
      const server = await startV2({ responseMode: "sse" });
      cleanup.push(() => server.stop());
      const client = await connect(server.url);
      cleanup.push(() => client.close());
      const { releasedAfter, closedAfter } = await abortThenClose(server, client);
      expect(releasedAfter).toBeLessThan(SLACK_MS);
      expect(closedAfter).toBeLessThan(250 + SLACK_MS);
      expect(await eventually(() => seen(server, "notifications/cancelled").length === 1)).toBe(true);
      const record = client.mcp.records()[0]!;
      expect(record.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
      expect(record.summary).toBe("cancelled (aborted), outcome unverified");
      expect(client.errors.map((e) => e.message)).toEqual([]);
    });
  }

  it("v2 pinned to 2026-07-28: the stream close is the cancel; the server sees it, no notification, onerror stays empty", async () => {
    const server = await startV2({ responseMode: "sse" });
    cleanup.push(() => server.stop());
    const client = await connectV2(server.url, { pin: true });
    cleanup.push(() => client.close());
    const { releasedAfter, closedAfter } = await abortThenClose(server, client);
    expect(releasedAfter).toBeLessThan(SLACK_MS);
    expect(closedAfter).toBeLessThan(SLACK_MS); // nothing to flush
    expect(await eventually(() => seen(server, "tools/call")[0]?.aborted !== undefined)).toBe(true);
    expect(seen(server, "notifications/cancelled")).toEqual([]);
    expect(client.mcp.records()[0]!.cancel).toMatchObject({ mechanism: "stream-close" });
    expect(client.errors.map((e) => e.message)).toEqual([]);
  });
});
