import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CallTimeoutError } from "../../src/index.js";
import { awaitVerifiedText } from "../../src/runner/verified-outcome.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import type { RawHttpServer } from "../fixtures/reliability/raw-http-server.js";
import { connectV1, connectV2 } from "../http/clients.js";
import { sleep, timed, watchProcess } from "../helpers/reliability.js";
import { eventually } from "../helpers/stdio.js";
import { SLACK_MS, until } from "../helpers/timing.js";

// Issue 16 items 1 and 2: on 2025-era Streamable HTTP the cancel's notification never reaches the
// server before its request, a notification POST that fails on the network is retried once, and
// what the record says is what happened. Against a raw 2025-era node:http server that can take a
// tools/call up late (as if it read the body late) and drop a notification's connection.
// Real timers; orders, counts and bounds with slack.

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

/** A fetch of the user's own, passed to the v2 transport: the library cannot see its request bodies written. */
const usersFetch: typeof globalThis.fetch = (url, init) => globalThis.fetch(url, init);

for (const [sdk, connect] of [
  ["v1", connectV1],
  ["v2 (2025 era)", connectV2],
  [
    "v2 (2025 era) on the user's own fetch",
    (url: URL, options = {}, adapter = {}) => connectV2(url, { ...options, fetch: usersFetch }, adapter),
  ],
] as const) {
  describe(`${sdk} client, 2025-era cancel delivery`, () => {
    async function setup(flushTimeoutMs?: number) {
      const server = await startRawHttp();
      cleanup.push(() => server.stop());
      const client = await connect(server.url, {}, flushTimeoutMs === undefined ? {} : { flushTimeoutMs });
      cleanup.push(() => client.close());
      return { server, ...client };
    }
    const requestsOf = (server: RawHttpServer, rpc: string) => server.events.filter((e) => e.kind === "request" && e.rpc === rpc);
    const droppedCancels = (server: RawHttpServer) => server.events.filter((e) => e.kind === "dropped");
    const toolClosed = (server: RawHttpServer, tool: string) => server.events.some((e) => e.kind === "close" && e.tool === tool);

    // The library's own fetch (v1 through cancellableFetch(), v2 given it when wrapped) sees the
    // request's body written (undici's onRequestSent) and sends the notification then; over a
    // fetch of the user's own it cannot, and waits for the headers (bounded by flushTimeoutMs).
    // The raw server takes the tools/call up 400 ms after its body arrived: only the headers wait
    // covers such a server (docs/delivery.md).
    const observesBody = !sdk.includes("own fetch");
    it(
      observesBody
        ? "the notification goes out once the request's body was written, not held until a server that takes it up late answers"
        : "without a body signal the notification waits for the headers: the server takes it up after the tools/call it cancels",
      async () => {
        // The wait for the request is bounded by flushTimeoutMs: give it room on a loaded machine.
        const { server, mcp, errors, adapter } = await setup(2_000);
        server.control.delayToolCallMs = 400; // the request is taken up late; the cancel comes at 30
        const outcome = await timed(mcp.callTool({ name: "hang" }, { timeoutMs: 30 }));
        expect(outcome.error).toBeInstanceOf(CallTimeoutError);
        expect(outcome.at).toBeLessThan(30 + SLACK_MS); // the caller is not held
        expect(await eventually(() => requestsOf(server, "notifications/cancelled").length === 1, 2_000)).toBe(true);
        expect(await eventually(() => requestsOf(server, "tools/call").length === 1, 2_000)).toBe(true);
        const [tool] = requestsOf(server, "tools/call");
        const [cancel] = requestsOf(server, "notifications/cancelled");
        if (observesBody) {
          expect(cancel!.t).toBeLessThan(tool!.t); // not held for the late take-up
          expect(await eventually(() => adapter.stats().streams === 0 && adapter.stats().flushing === 0, 1_000)).toBe(true); // then the stream closed
        } else {
          expect(cancel!.t).toBeGreaterThanOrEqual(tool!.t);
          expect(await eventually(() => toolClosed(server, "hang"), 1_000)).toBe(true); // then the stream closed
        }
        expect(mcp.records()[0]!.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
        expect(errors).toEqual([]);
      },
    );

    it.skipIf(!observesBody)(
      "a request whose body was not even written within flushTimeoutMs (a server behind on reading): no notification (it would overtake the request), the stream closed, and the record says it was never sent",
      async () => {
        const { server, mcp, errors, adapter } = await setup(150);
        server.control.holdLargeBodiesMs = 2_000; // the server reads no large body for 2 s
        const outcome = await timed(mcp.callTool({ name: "hang", arguments: { pad: "x".repeat(8 * 1024 * 1024) } }, { timeoutMs: 30 }));
        expect(outcome.error).toBeInstanceOf(CallTimeoutError);
        expect(await eventually(() => adapter.stats().flushing === 0 && adapter.stats().streams === 0, 2_000)).toBe(true);
        await sleep(2_200); // past the hold: the server reads what it got
        expect(requestsOf(server, "notifications/cancelled")).toEqual([]);
        // At the bound no notification went and the stream closed; then its POST failed with its
        // body never written: it never reached the server.
        expect(mcp.records().at(-1)).toMatchObject({
          outcome: "not-sent",
          summary: "cancelled (timeout), never sent",
          cancel: { mechanism: "none", sentAt: null, undelivered: null },
        });
        expect(errors).toEqual([]);
      },
      10_000,
    );

    it.skipIf(!observesBody)(
      "a call learned never sent after its settle is not verified: the verifier never runs, the verification resolves with the not-sent record, and awaitVerification says never received",
      async () => {
        const { server, mcp, errors } = await setup(150);
        server.control.holdLargeBodiesMs = 2_000; // the server reads no large body for 2 s
        let reads = 0;
        const verify = () => {
          reads++;
          return "not-applied" as const;
        };
        const outcome = await timed(
          mcp.callTool({ name: "hang", arguments: { pad: "x".repeat(8 * 1024 * 1024) } }, { timeoutMs: 30, verify, verifyDelayMs: 800 }),
        );
        const error = outcome.error as CallTimeoutError;
        expect(error).toBeInstanceOf(CallTimeoutError);
        expect(error.record.outcome).toBe("unverified"); // at the settle, not yet known
        const text = awaitVerifiedText(error, true);
        const record = await error.verification;
        expect(reads).toBe(0);
        expect(record).toMatchObject({ outcome: "not-sent", verification: null, cancel: { mechanism: "none", sentAt: null } });
        expect(await text).toMatch(
          /^The tool call "hang" was cancelled after \d+\.\d s \(timed out\) before the server received it: its effect was not applied/,
        );
        expect(mcp.records().at(-1)).toMatchObject({ outcome: "not-sent", verification: null });
        expect(errors).toEqual([]);
      },
      10_000,
    );

    it.skipIf(!observesBody)(
      "a call learned never sent while its verify read runs keeps no verification: what the read found is dropped",
      async () => {
        const { server, mcp, errors } = await setup(150);
        server.control.holdLargeBodiesMs = 2_000; // the server reads no large body for 2 s
        let reads = 0;
        const verify = async () => {
          reads++;
          // Still reading when not-sent is learned: the read answers once the record says not-sent
          // (a timed read of 600 ms could end first on a loaded machine, its "applied" then kept).
          await until(() => mcp.records().at(-1)?.outcome === "not-sent", 10_000);
          return "applied" as const;
        };
        const error = (await mcp
          .callTool({ name: "hang", arguments: { pad: "x".repeat(8 * 1024 * 1024) } }, { timeoutMs: 30, verify, verifyDelayMs: 0 })
          .catch((e: unknown) => e)) as CallTimeoutError;
        expect(error).toBeInstanceOf(CallTimeoutError);
        const record = await error.verification;
        expect(reads).toBe(1);
        expect(record).toMatchObject({ outcome: "not-sent", verification: null });
        expect(mcp.records().at(-1)).toMatchObject({ outcome: "not-sent", verification: null });
        expect(errors).toEqual([]);
      },
      20_000,
    );

    it("a notification POST whose connection drops once is retried and delivered; onerror stays empty", async () => {
      const { server, mcp, errors, adapter } = await setup();
      server.control.dropCancels = 1;
      const outcome = await timed(mcp.callTool({ name: "hang" }, { timeoutMs: 100 }));
      expect(outcome.error).toBeInstanceOf(CallTimeoutError);
      expect(await eventually(() => requestsOf(server, "notifications/cancelled").length === 1, 2_000)).toBe(true);
      expect(droppedCancels(server)).toHaveLength(1);
      expect(await eventually(() => adapter.stats().flushing === 0, 1_000)).toBe(true);
      const record = mcp.records()[0]!;
      expect(record.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
      // The retry went 1 ms or more after the settle (a round trip on a dropped connection): sentAt says when the delivered one went.
      expect(record.revision).toBeLessThanOrEqual(1);
      expect(Date.parse(record.cancel!.sentAt!)).toBeGreaterThanOrEqual(Date.parse(record.settledAt));
      expect(errors).toEqual([]);
    });

    it("a notification POST whose connection drops twice after its body was written is recorded as sent with no answer (undelivered), never as onerror noise", async () => {
      const { server, mcp, errors, adapter } = await setup();
      server.control.dropCancels = 2;
      const outcome = await timed(mcp.callTool({ name: "hang" }, { timeoutMs: 100 }));
      expect(outcome.error).toBeInstanceOf(CallTimeoutError);
      expect(await eventually(() => mcp.records()[0]!.revision > 0, 2_000)).toBe(true);
      const record = mcp.records()[0]!;
      // Its body was written both times (the server read it, then dropped the connection): it went
      // out, and no answer came. Where the fetch reports bodies written, the record says that, not
      // that only the stream close went; a user's own fetch cannot tell, so only the close is known.
      const failed = /(fetch failed|other side closed|terminated|socket)/i;
      expect(record.cancel).toMatchObject(
        observesBody
          ? {
              trigger: "timeout",
              mechanism: "notification+stream-close",
              undelivered: {
                mechanism: "notification",
                error: expect.stringMatching(/^sent \(its body written\), but no answer came: /),
                written: true,
              },
            }
          : {
              trigger: "timeout",
              mechanism: "stream-close",
              undelivered: { mechanism: "notification", error: expect.stringMatching(failed) },
            },
      );
      expect(record.cancel!.undelivered!.error).toMatch(failed);
      expect(record.cancel!.sentAt).not.toBeNull();
      // Its body written, it may have reached the server: the summary does not say it did not.
      expect(record.summary).toBe(
        `cancelled (timeout), outcome unverified, cancel notification ${observesBody ? "sent, unanswered" : "not delivered"}`,
      );
      expect(droppedCancels(server)).toHaveLength(2); // one retry, no more
      expect(requestsOf(server, "notifications/cancelled")).toHaveLength(0);
      expect(await eventually(() => toolClosed(server, "hang"), 1_000)).toBe(true);
      expect(await eventually(() => adapter.stats().flushing === 0, 1_000)).toBe(true);
      expect(errors).toEqual([]);
      // the connection is fine for the next call
      await expect(mcp.callTool({ name: "echo" }, { timeoutMs: 2_000 })).resolves.toMatchObject({
        content: [{ text: expect.stringMatching(/^echo/) }],
      });
    });

    it("a request whose POST the server read and then dropped (no answer) is not 'never sent': it may run, so it gets its notification", async () => {
      const { server, mcp, errors, adapter } = await setup();
      server.control.delayToolCallMs = 150;
      const outcome = await timed(mcp.callTool({ name: "drop" }, { timeoutMs: 30 }));
      expect(outcome.error).toBeInstanceOf(CallTimeoutError);
      expect(outcome.at).toBeLessThan(30 + SLACK_MS);
      expect(await eventually(() => requestsOf(server, "notifications/cancelled").length === 1, 2_000)).toBe(true);
      expect(await eventually(() => requestsOf(server, "tools/call").length === 1, 1_000)).toBe(true); // the server had it
      expect(mcp.records()[0]).toMatchObject({
        outcome: "unverified",
        cancel: { mechanism: "notification+stream-close", undelivered: null },
      });
      expect(mcp.records()[0]!.summary).toBe("cancelled (timeout), outcome unverified");
      expect(await eventually(() => adapter.stats().flushing === 0, 1_000)).toBe(true);
      expect(errors.filter((e) => /cancel/i.test(e.message))).toEqual([]);
    });
  });
}
