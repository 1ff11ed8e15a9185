import { afterEach, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/index.js";
import { ANSWERED_FIRST } from "../../src/core/record.js";
import { connectV1, connectV2 } from "./clients.js";
import { eventually, sleep } from "./servers.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";

// A 2025-era SSE server that holds a request's response head until its first event (as the v2
// SDK's server does): a cancel made before it waits for the head (rule 40: the notification must
// not overtake its request), and when the head comes, the event that came with it may be the
// answer. Found from outside (a rule-by-rule audit): the notification was POSTed after the answer,
// and the record named a notification and a stream close that the finished answer made moot.
// Rule 7: a cancel never names a request that already has its response. The reliability tests'
// raw node:http server on 127.0.0.1 (`late` and `progress` write their head with their first event).

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

const clients = [
  ["v1 client", (url: URL, onRecord: (r: RunRecord) => void) => connectV1(url, { onRecord })],
  ["v2 client (2025-era)", (url: URL, onRecord: (r: RunRecord) => void) => connectV2(url, { onRecord })],
] as const;

/**
 * A session with the raw server (known to answer in SSE first: the delivery then waits for a
 * head), and a call to `tool` aborted once the server read it: its body is written, its head held.
 */
async function abortWhileHeadHeld(connect: (typeof clients)[number][1], tool: string, args: Record<string, unknown>, holdCancelsMs = 0) {
  const server = await startRawHttp({ era: "2025-11-25" });
  server.control.holdCancelsMs = holdCancelsMs;
  cleanup.push(server.stop);
  const records: RunRecord[] = [];
  const { mcp, close } = await connect(server.url, (record) => records.push(record));
  cleanup.push(close);
  await mcp.callTool({ name: "sse-echo", arguments: {} });
  const controller = new AbortController();
  const call = mcp.callTool({ name: tool, arguments: args }, { signal: controller.signal });
  call.catch(() => {});
  // The server read the request (a fixed 60 ms could pass before its body was out on a loaded
  // machine, and the abort find it never sent).
  expect(await eventually(() => server.events.some((e) => e.kind === "request" && e.tool === tool), 10_000)).toBe(true);
  controller.abort();
  await expect(call).rejects.toThrow();
  const id = records.find((r) => r.name === tool)!.requestId;
  return { server, id, revisions: () => records.filter((r) => r.requestId === id) };
}

describe("2025-era: a cancel that waits for a held response head", () => {
  for (const [name, connect] of clients) {
    it(`${name}: the head comes with the answer: no notification is POSTed (rule 7), and the record says the response came first`, async () => {
      const { server, revisions } = await abortWhileHeadHeld(connect, "late", { ms: 150 });
      // The first record (the caller's error.record) never claims the notification went while it waits.
      expect(revisions()[0]!.cancel).toMatchObject({ mechanism: "notification+stream-close", sentAt: null, undelivered: null });
      const last = () => revisions().at(-1)!;
      expect(await eventually(() => last().late.results === 1, 2_000)).toBe(true);
      await sleep(300); // past flushTimeoutMs (250 ms): a notification that was to go has gone
      const cancels = server.events.filter((e) => e.kind === "request" && e.rpc === "notifications/cancelled");
      expect(cancels).toEqual([]);
      expect(last()).toMatchObject({
        status: "cancelled",
        outcome: "late-result-discarded",
        cancel: { mechanism: "none", sentAt: null, undelivered: { mechanism: "notification", error: ANSWERED_FIRST } },
      });
      // One revision after the first says both that nothing went and the late result (outside
      // testers': the late result's revision named "notification", the next took it back; then a
      // revision said "the response arrived first" beside "outcome unverified").
      expect(revisions().map((r) => [r.cancel!.mechanism, r.outcome, r.late.results])).toEqual([
        ["notification+stream-close", "unverified", 0],
        ["none", "late-result-discarded", 1],
      ]);
    });
    it(`${name}: the head comes with the answer under the id written as a string ("1" for 1): no notification is POSTed either (rule 7)`, async () => {
      const { server, revisions } = await abortWhileHeadHeld(connect, "late", { ms: 150, stringId: true });
      const last = () => revisions().at(-1)!;
      expect(await eventually(() => last().late.results === 1, 2_000)).toBe(true);
      await sleep(300); // past flushTimeoutMs (250 ms): a notification that was to go has gone
      expect(server.events.filter((e) => e.kind === "request" && e.rpc === "notifications/cancelled")).toEqual([]);
      expect(last()).toMatchObject({
        outcome: "late-result-discarded",
        cancel: { mechanism: "none", undelivered: { error: ANSWERED_FIRST } },
      });
    });

    it(`${name}: the head comes with a progress event: the notification goes then (the request is in progress)`, async () => {
      const { server, id, revisions } = await abortWhileHeadHeld(connect, "progress", { every: 150, steps: 20 }, 300);
      const cancels = () => server.events.filter((e) => e.kind === "request" && e.rpc === "notifications/cancelled" && e.cancelOf === id);
      expect(await eventually(() => cancels().length === 1, 2_000)).toBe(true);
      // Its answer held 300 ms: the record already says it went (an outside tester's: sentAt stayed
      // null until the 202 was read, after the server had the notification).
      expect(revisions().at(-1)!.cancel!.sentAt).not.toBeNull();
      expect(revisions()[0]!.cancel).toMatchObject({ mechanism: "notification+stream-close", sentAt: null });
      // The revision that says when it went follows the notification's answer, which the client
      // may read a little after the server logged the POST (a loaded machine).
      expect(await eventually(() => revisions().at(-1)!.cancel!.sentAt !== null, 2_000)).toBe(true);
      expect(revisions().at(-1)!.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
    });

    it(`${name}: a JSON head that came alone (its body later) is no answer: the notification goes (rule 40), the record never says the response came first`, async () => {
      const { server, id, revisions } = await abortWhileHeadHeld(connect, "json-head", { ms: 800 });
      const cancels = () => server.events.filter((e) => e.kind === "request" && e.rpc === "notifications/cancelled" && e.cancelOf === id);
      expect(await eventually(() => cancels().length === 1, 2_000)).toBe(true);
      expect(await eventually(() => revisions().at(-1)!.cancel!.sentAt !== null, 2_000)).toBe(true);
      expect(revisions()[0]!.cancel).toMatchObject({ mechanism: "notification+stream-close", sentAt: null });
      await sleep(300); // past flushTimeoutMs (250 ms): the stream closed once the notification was answered
      const last = revisions().at(-1)!;
      expect(last).toMatchObject({ status: "cancelled", outcome: "unverified", late: { results: 0 } });
      expect(last.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
      expect(cancels()).toHaveLength(1);
    });
  }
});
