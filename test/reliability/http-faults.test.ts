import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CallTimeoutError, ConnectionClosedError } from "../../src/index.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import type { RawHttpServer } from "../fixtures/reliability/raw-http-server.js";
import { connectV1, connectV2 } from "../http/clients.js";
import { sleep, timed, watchProcess } from "../helpers/reliability.js";
import { eventually } from "../helpers/stdio.js";
import { SLACK_MS, EARLY_MS } from "../helpers/timing.js";

// Faults of a Streamable HTTP server, against a raw node:http server on 127.0.0.1 (port 0)
// (test/fixtures/reliability/raw-http-server.ts): the 2025-era with a session, with the v1 and
// the v2 SDK client, and 2026-07-28 stateless, with the v2 client pinned to it, all through the
// library's adapter. Each call settles once with the
// right trigger within its own deadline plus slack; where the server is still there the next call
// succeeds. Real time: bounds carry SLACK_MS for a loaded CI machine.

const process$ = watchProcess();
beforeAll(process$.start);
afterAll(() => {
  process$.stop();
  expect(process$.seen()).toEqual([]);
});

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await Promise.race([step().catch(() => {}), sleep(2_000)]);
});

const MODERN = "2026-07-28";
const SUBJECTS = [
  { sdk: "v1", era: "2025-11-25", connect: (url: URL) => connectV1(url) },
  { sdk: "v2", era: "2025-11-25", connect: (url: URL) => connectV2(url) },
  { sdk: "v2 pinned", era: MODERN, connect: (url: URL) => connectV2(url, { pin: true }) },
] as const;

for (const { sdk, era, connect } of SUBJECTS) {
  const modern = era === MODERN;
  // 2026-07-28: the stream close is the cancel, nothing is POSTed (rules 6, 28); the 2025-era
  // POSTs the notification first, then closes the request's own stream (rule 40).
  const mechanism = modern ? "stream-close" : "notification+stream-close";
  // Tests of one era only are not registered at all for the other (no skipped noise).
  type Define = (name: string, fn: () => Promise<void>) => void;
  const none: Define = () => {};
  const legacyIt: Define = modern ? none : it;
  const modernIt: Define = modern ? it : none;
  describe(`${sdk} client, ${era} Streamable HTTP server faults`, () => {
    async function setup() {
      const server = await startRawHttp({ era });
      cleanup.push(() => server.stop());
      const client = await connect(server.url);
      cleanup.push(() => client.close());
      return { server, ...client };
    }

    /** The next call on the same connection succeeds: the fault did not poison it. */
    async function nextCallWorks(mcp: Awaited<ReturnType<typeof setup>>["mcp"]) {
      await expect(mcp.callTool({ name: "echo" }, { timeoutMs: 2_000 })).resolves.toMatchObject({
        content: [{ text: expect.stringMatching(/^echo \d+$/) }],
      });
      await expect(mcp.callTool({ name: "sse-echo" }, { timeoutMs: 2_000 })).resolves.toMatchObject({
        content: [{ text: expect.stringMatching(/^sse-echo \d+$/) }],
      });
    }

    /** Nothing held for settled calls, in the wire, the adapter, or the SDK client itself. */
    function idle(client: Awaited<ReturnType<typeof setup>>) {
      expect(client.mcp.pendingCount).toBe(0);
      // Both SDK lines keep a response handler (and a timer) per request until it is answered.
      expect((client.client as unknown as { _responseHandlers: Map<unknown, unknown> })._responseHandlers.size).toBe(0);
      const { resumesRefused: _r, blockedTokens: _b, ...held } = client.adapter.stats();
      expect(held).toEqual({ streams: 0, sending: 0, flushing: 0, checks: 0, resuming: 0, holding: 0, cancelMarks: 0 });
    }

    const closesOf = (server: RawHttpServer, tool: string) => server.events.filter((e) => e.kind === "close" && e.tool === tool);
    const cancelPosts = (server: RawHttpServer) => server.events.filter((e) => e.kind === "request" && e.rpc === "notifications/cancelled");

    it("HTTP 500: the call fails at once with the SDK's error (not a timeout, not a cancel), the next call works", async () => {
      const client = await setup();
      const outcome = await timed(client.mcp.callTool({ name: "http-500" }, { timeoutMs: 5_000 }));
      expect(outcome.status).toBe("rejected");
      expect(outcome.at).toBeLessThan(SLACK_MS);
      expect(outcome.error).not.toBeInstanceOf(CallTimeoutError);
      expect(String((outcome.error as Error).message)).toContain("Internal Server Error");
      expect(client.mcp.records()[0]).toMatchObject({ status: "failed", outcome: "error", cancel: null });
      expect(cancelPosts(client.server)).toEqual([]);
      await nextCallWorks(client.mcp);
      idle(client);
    });

    legacyIt("404 for a lost session: the call and the next fail at once (never hang); a new connection works", async () => {
      const client = await setup();
      const lost = await timed(client.mcp.callTool({ name: "lose-session" }, { timeoutMs: 5_000 }));
      expect(lost.status).toBe("rejected");
      expect(lost.at).toBeLessThan(SLACK_MS);
      expect(String((lost.error as Error).message)).toContain("Session not found");
      const next = await timed(client.mcp.callTool({ name: "echo" }, { timeoutMs: 5_000 }));
      expect(next.status).toBe("rejected");
      expect(next.at).toBeLessThan(SLACK_MS);
      expect(client.mcp.records().map((r) => r.status)).toEqual(["failed", "failed"]);
      idle(client);
      const again = await connect(client.server.url);
      cleanup.push(() => again.close());
      await nextCallWorks(again.mcp);
    });

    it("a connection reset mid-stream (after a progress event): connection-closed at the reset, the next call works", async () => {
      const client = await setup();
      const progress: number[] = [];
      const outcome = await timed(
        client.mcp.callTool({ name: "reset" }, { timeoutMs: 5_000, onprogress: (p) => progress.push(p.progress) }),
      );
      expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
      expect(outcome.at).toBeLessThan(50 + SLACK_MS);
      expect(progress).toEqual([1]); // what came before the reset was delivered
      expect(client.mcp.records()[0]).toMatchObject({ cancel: { trigger: "connection-closed", mechanism: "none" } });
      expect(cancelPosts(client.server)).toEqual([]); // nothing to cancel on a dead stream
      expect(client.errors.every((e) => /terminated|disconnected/i.test(e.message))).toBe(true);
      await nextCallWorks(client.mcp);
      idle(client);
    });

    it("a body that ends without the response: connection-closed, the next call works", async () => {
      const client = await setup();
      const outcome = await timed(client.mcp.callTool({ name: "end" }, { timeoutMs: 5_000 }));
      expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
      expect(outcome.at).toBeLessThan(50 + SLACK_MS);
      await nextCallWorks(client.mcp);
      idle(client);
    });

    for (const tool of ["no-headers", "stall"]) {
      const what = tool === "no-headers" ? "headers never sent" : "a body that stalls mid-event";
      it(`${what}: released at its deadline, the era's cancel (2025: one POST and the close; 2026-07-28: the close alone), the stream closed on the server, the next call works`, async () => {
        const client = await setup();
        const outcome = await timed(client.mcp.callTool({ name: tool }, { timeoutMs: 300 }));
        expect(outcome.error).toBeInstanceOf(CallTimeoutError);
        expect(outcome.at).toBeGreaterThanOrEqual(300 - EARLY_MS);
        expect(outcome.at).toBeLessThan(300 + SLACK_MS);
        // 2025-era: the notification (rule 40) and the request's own stream closed, not held for its answer
        expect(await eventually(() => closesOf(client.server, tool).length === 1, 1_000)).toBe(true);
        expect(closesOf(client.server, tool)[0]!.finished).toBe(false); // closed by the client, not ended
        if (!modern) expect(await eventually(() => cancelPosts(client.server).length === 1, 1_000)).toBe(true);
        await sleep(50);
        expect(cancelPosts(client.server)).toHaveLength(modern ? 0 : 1);
        expect(client.mcp.records()[0]).toMatchObject({ cancel: { trigger: "timeout", mechanism } });
        expect(client.errors).toEqual([]);
        await nextCallWorks(client.mcp);
        idle(client);
        expect(client.server.open()).toBe(0);
      });
    }

    legacyIt(
      "the cancel POST answered 202 with a body that never ends: delivered at its head, not held to notificationTimeoutMs (an outside tester's: v2 waited for the body and recorded it unanswered)",
      async () => {
        const client = await setup();
        const outcome = await timed(client.mcp.callTool({ name: "no-headers", arguments: { cancelStall: true } }, { timeoutMs: 200 }));
        expect(outcome.error).toBeInstanceOf(CallTimeoutError);
        expect(await eventually(() => cancelPosts(client.server).length === 1, 1_000)).toBe(true);
        expect(await eventually(() => closesOf(client.server, "no-headers").length === 1, 1_000)).toBe(true);
        await sleep(100);
        const record = client.mcp.records()[0]!;
        expect(record.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
        expect(record.summary).toBe("cancelled (timeout), outcome unverified");
        expect(client.errors).toEqual([]);
        await nextCallWorks(client.mcp);
        idle(client);
      },
    );

    // 401 and 403 too, on a transport without an authProvider (nothing authorizes and sends again: an outside tester's, the 401 was recorded unanswered and reached onerror).
    for (const status of [500, 401, 403] as const)
      legacyIt(
        `the cancel POST itself gets a ${status}: the call was released at its deadline anyway, the stream still closes, the refusal is recorded once and never reaches onerror`,
        async () => {
          const client = await setup();
          const outcome = await timed(client.mcp.callTool({ name: "no-headers", arguments: { cancelStatus: status } }, { timeoutMs: 200 }));
          expect(outcome.error).toBeInstanceOf(CallTimeoutError);
          expect(outcome.at).toBeLessThan(200 + SLACK_MS);
          expect(await eventually(() => closesOf(client.server, "no-headers").length === 1, 1_000)).toBe(true);
          expect(await eventually(() => client.mcp.records()[0]!.revision > 0, 1_000)).toBe(true);
          const record = client.mcp.records()[0]!;
          expect(record.cancel).toMatchObject({
            mechanism: "stream-close",
            undelivered: { mechanism: "notification", error: `the server refused the notification: HTTP ${status}` },
          });
          expect(record.summary).toBe("cancelled (timeout), outcome unverified, cancel notification not delivered");
          await sleep(200);
          expect(cancelPosts(client.server)).toHaveLength(1); // refused: not retried
          expect(client.mcp.records()[0]!.revision).toBe(1); // revised exactly once
          expect(client.errors).toEqual([]);
          await nextCallWorks(client.mcp);
          idle(client);
        },
      );

    for (const [tool, status] of [
      ["bad-version", 400],
      ["not-found", 404],
    ] as const) {
      modernIt(
        `${status} on a live connection (${tool}): the call fails at once with the SDK's error, not a cancel; nothing is POSTed; the next call works`,
        async () => {
          const client = await setup();
          const outcome = await timed(client.mcp.callTool({ name: tool }, { timeoutMs: 5_000 }));
          expect(outcome.status).toBe("rejected");
          expect(outcome.at).toBeLessThan(SLACK_MS);
          expect(outcome.error).not.toBeInstanceOf(CallTimeoutError);
          expect(outcome.error).not.toBeInstanceOf(ConnectionClosedError);
          expect(client.mcp.records()[0]).toMatchObject({ status: "failed", cancel: null });
          expect(cancelPosts(client.server)).toEqual([]);
          await nextCallWorks(client.mcp);
          idle(client);
        },
      );
    }

    modernIt(
      "a server that does not support 2026-07-28 (400 to server/discover): connect fails at once, nothing is left open",
      async () => {
        const server = await startRawHttp({ era, refuseVersion: true });
        cleanup.push(() => server.stop());
        const attempt = await timed(connect(server.url) as Promise<unknown>);
        expect(attempt.status).toBe("rejected");
        expect(attempt.at).toBeLessThan(SLACK_MS);
        expect(await eventually(() => server.open() === 0, 1_000)).toBe(true);
        expect(server.events.filter((e) => e.kind === "request").map((e) => e.rpc)).toEqual(["server/discover"]);
      },
    );

    it("the server is gone (connection refused): the next call fails at once, never hangs", async () => {
      const client = await setup();
      await client.server.stop();
      const outcome = await timed(client.mcp.callTool({ name: "echo" }, { timeoutMs: 5_000 }));
      expect(outcome.status).toBe("rejected");
      expect(outcome.at).toBeLessThan(SLACK_MS);
      expect(client.mcp.pendingCount).toBe(0);
    });
  });
}
