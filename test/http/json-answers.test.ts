import { afterEach, describe, expect, it } from "vitest";
import { ConnectionClosedError, CallTimeoutError } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { ANSWERED_FIRST } from "../../src/core/record.js";
import { connectV1, connectV2 } from "./clients.js";
import { eventually, sleep } from "./servers.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import type { RawHttpServer } from "../fixtures/reliability/raw-http-server.js";

// A server that answers a request's POST with plain JSON (no event stream) that is not the
// request's response: an answer for another id, the id as a string, or a body that stalls after
// its head. Found from outside (an adversarial raw server): v2 never tells a JSON body's end
// (`onRequestStreamEnd` is for event streams), so the call waited for its whole timeout, its
// stream stayed counted after it settled, and a cancel decided at once (the head said the answer
// follows) was lost from the record, which named a notification that was never sent.
// The reliability tests' raw node:http server on 127.0.0.1, in both eras.

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

/** The raw server of the reliability tests, in either era, stopped after the test; `cancels()`: the notifications/cancelled it was POSTed. */
async function rawServer(era: "2025" | "2026"): Promise<RawHttpServer & { cancels: () => number }> {
  const server = await startRawHttp({ era: era === "2026" ? "2026-07-28" : "2025-11-25" });
  cleanup.push(server.stop);
  const cancels = () => server.events.filter((event) => event.kind === "request" && event.rpc === "notifications/cancelled").length;
  return Object.assign(server, { cancels });
}

const clients = [
  ["v1 client", "2025", (url: URL) => connectV1(url)],
  ["v2 client (2025-era)", "2025", (url: URL) => connectV2(url)],
  ["v2 client (2026-07-28)", "2026", (url: URL) => connectV2(url, { pin: true })],
] as const;

const failure = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe("a plain JSON answer that is not the request's response", () => {
  for (const [name, era, connect] of clients) {
    it(`${name}: an answer for another id settles the call connection-closed at once, and nothing stays counted`, async () => {
      const server = await rawServer(era);
      const { mcp, adapter, close } = await connect(server.url);
      cleanup.push(close);
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const error = await failure(mcp.callTool({ name: "other-id", arguments: {} }, { timeoutMs: 5_000 }));
        // The body ended without the response: not the 5 s timeout (rule 7 cannot hold for an answer that never comes).
        expect(performance.now() - started).toBeLessThan(2_500);
        expect(error).toBeInstanceOf(ConnectionClosedError);
        expect((error as ConnectionClosedError).record).toMatchObject({
          status: "cancelled",
          outcome: "unverified",
          cancel: { trigger: "connection-closed", mechanism: "none" },
        });
        expect(adapter.stats()).toMatchObject({ streams: 0, sending: 0, checks: 0, flushing: 0 });
      }
      // The request ended with its body: nothing to cancel, so no notification was POSTed.
      expect(server.cancels()).toBe(0);
      expect(mcp.pendingCount).toBe(0);
    });
  }

  for (const [name, era, connect] of clients.slice(1)) {
    it(`${name}: the id as a string is the SDK's match (its result), and its stream is not left counted`, async () => {
      const server = await rawServer(era);
      const { mcp, adapter, close } = await connect(server.url);
      cleanup.push(close);
      for (let i = 0; i < 3; i++) {
        const outcome = await mcp.callTool({ name: "string-id", arguments: {} }, { timeoutMs: 5_000 }).then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
        // Whatever the SDK made of it, the call settled once and nothing of it stays.
        expect(outcome).toBeDefined();
        expect(await eventually(() => adapter.stats().streams === 0 && adapter.stats().checks === 0)).toBe(true);
      }
      expect(mcp.pendingCount).toBe(0);
    });
  }

  for (const [name, connect] of [
    ["v1 client", connectV1],
    ["v2 client (2025-era)", connectV2],
  ] as const) {
    it(`${name}: a cancel decided at once (the head said the answer follows) is in the record at the settle, and the stalled body is closed within flushTimeoutMs`, async () => {
      const server = await rawServer("2025");
      const records: RunRecord[] = [];
      const { mcp, adapter, close } = await connect(server.url, { onRecord: (record) => records.push(structuredClone(record)) });
      cleanup.push(close);
      const error = await failure(mcp.callTool({ name: "json-stall", arguments: {} }, { timeoutMs: 300 }));
      expect(error).toBeInstanceOf(CallTimeoutError);
      // The first record already says it: no notification went (rule 7: the head said the answer follows).
      expect(records[0]).toMatchObject({
        status: "cancelled",
        revision: 0,
        cancel: { trigger: "timeout", mechanism: "none", sentAt: null, undelivered: { mechanism: "notification", error: ANSWERED_FIRST } },
      });
      expect((error as CallTimeoutError).record.cancel?.mechanism).toBe("none");
      // The body that stalled is read no longer than flushTimeoutMs (250 ms by default), then closed.
      expect(
        await eventually(() => adapter.stats().streams === 0 && adapter.stats().checks === 0 && adapter.stats().flushing === 0, 2_000),
      ).toBe(true);
      await sleep(50);
      expect(server.cancels()).toBe(0);
      // Then the record names the close that went out (still no notification).
      expect(records).toHaveLength(2);
      expect(records[1]).toMatchObject({
        revision: 1,
        cancel: { mechanism: "stream-close", undelivered: { mechanism: "notification", error: ANSWERED_FIRST } },
      });
    });
  }
});
