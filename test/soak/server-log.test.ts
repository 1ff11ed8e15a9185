// The soak's server-log check (./server-log.ts) on logs made by hand: each kind of finding is
// found, each one a crash explains is explained and no more, and a clean log finds nothing.
import { describe, expect, it } from "vitest";
import type { CancelledRunRecord } from "../../src/index.js";
import { ServerLog } from "./server-log.js";
import type { Carrier } from "./server-log.js";

const STDIO: Carrier = { notifications: true, ordered: true, fifo: true };
const SSE: Carrier = { notifications: true, ordered: true, fifo: false };
const JSON_RESPONSE: Carrier = { notifications: true, ordered: false, fifo: false };
const MODERN: Carrier = { notifications: false, ordered: true, fifo: false };

type Mechanism = CancelledRunRecord["cancel"]["mechanism"];

/** A cancelled call's record (only what the check reads). */
function cancelled(
  requestId: number,
  mechanism: Mechanism,
  { undelivered = null, outcome = "unverified" }: { undelivered?: "notification" | null; outcome?: CancelledRunRecord["outcome"] } = {},
): CancelledRunRecord {
  return {
    requestId,
    method: "tools/call",
    name: "late",
    outcome,
    late: { results: 0, errors: 0, progress: 0 },
    cancel: {
      trigger: "timeout",
      reason: "timed out",
      mechanism,
      sentAt: mechanism === "none" ? null : "2026-12-02T00:00:00.000Z",
      undelivered: undelivered === null ? null : { mechanism: undelivered, error: "not sent" },
    },
  } as CancelledRunRecord;
}

const notify = (log: ServerLog, id: number, t: number) =>
  log.clientSent({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } } as never, t);
const request = (log: ServerLog, id: number, t: number) => log.clientSent({ method: "tools/call", id } as never, t);

/** A request sent, taken up, cancelled and the notification received in order: what every check accepts. */
function clean(label = "t#0"): ServerLog {
  const log = new ServerLog(label);
  request(log, 1, 0);
  log.took(1, 1);
  notify(log, 1, 2);
  log.cancelled(1, 3);
  log.record(cancelled(1, "notification"));
  return log;
}

describe("the soak's server-log check", () => {
  it("finds nothing in a clean log, and counts it", () => {
    const verdict = clean().judge(STDIO);
    expect(verdict.failures).toEqual([]);
    expect(verdict.counts).toMatchObject({ requests: 1, cancelsReceived: 1, cancelsClaimed: 1, contradictions: 0, overtakes: 0 });
  });

  it("an overtake fails where the server shows the order (stdio, SSE), is counted on a JSON-response server", () => {
    for (const [carrier, fails] of [
      [SSE, true],
      [JSON_RESPONSE, false],
    ] as const) {
      const log = new ServerLog("t#0");
      log.cancelled(1, 1);
      log.took(1, 2);
      log.record(cancelled(1, "notification+stream-close"));
      const verdict = log.judge(carrier);
      expect(verdict.counts.overtakes).toBe(1);
      expect(verdict.failures.length).toBe(fails ? 1 : 0);
      expect(verdict.overtakes.length).toBe(fails ? 0 : 1);
    }
    const orphan = new ServerLog("t#0");
    orphan.cancelled(2, 1);
    orphan.record(cancelled(2, "notification+stream-close"));
    expect(orphan.judge(SSE).counts).toMatchObject({ overtakes: 1, orphans: 1 });
  });

  it("a notification after its response: sent after the client had read the response fails (rule 7); crossed unread and in flight are counted, not failed; each with its timeline", () => {
    const log = new ServerLog("t#0");
    // 1: crossed, and the client had read the response 0.5 ms before it sent the notification.
    request(log, 1, 0);
    log.took(1, 1);
    log.answered(1, 5);
    log.clientRead({ id: 1 }, 5.5);
    notify(log, 1, 6);
    log.cancelled(1, 7);
    log.record(cancelled(1, "notification"));
    // 2: in flight.
    request(log, 2, 0);
    log.took(2, 1);
    notify(log, 2, 4);
    log.answered(2, 5);
    log.clientRead({ id: 2 }, 5.5);
    log.cancelled(2, 7);
    log.record(cancelled(2, "notification"));
    // 3: crossed, the response not yet read when the notification went.
    request(log, 3, 0);
    log.took(3, 1);
    log.answered(3, 5);
    notify(log, 3, 6);
    log.clientRead({ id: 3 }, 6.5);
    log.cancelled(3, 7);
    log.record(cancelled(3, "notification"));
    const verdict = log.judge(STDIO);
    expect(verdict.counts).toMatchObject({ afterResponse: 3, crossed: 2 });
    expect(verdict.failures).toEqual(["t#0 id 1 (late): the client sent the notification after it had read the response (rule 7)"]);
    expect(verdict.afterResponse[0]).toContain(
      "crossed: the response was written 1.0 ms before the client sent the notification (read by the client 0.5 ms before it sent the notification)",
    );
    expect(verdict.afterResponse[1]).toContain("in flight: the notification was on its way 1.0 ms when the server wrote the response");
    expect(verdict.afterResponse[2]).toContain("(not yet read by the client, which read it 0.5 ms later)");
  });

  it("a record claiming a notification the server never got is a contradiction; on stdio a crash explains a line written after the last one read", () => {
    const log = new ServerLog("t#0");
    request(log, 1, 0);
    log.took(1, 1);
    notify(log, 1, 2);
    request(log, 2, 3);
    log.record(cancelled(1, "notification"));
    expect(log.judge(STDIO).counts.contradictions).toBe(1);
    log.crashedAt = 10;
    expect(log.judge(STDIO).counts).toMatchObject({ contradictions: 0, explainedByCrash: 1 });
    // The server read a line written after it: the pipe is read in order, so the crash does not explain it.
    log.took(2, 4);
    expect(log.judge(STDIO).counts).toMatchObject({ contradictions: 1, explainedByCrash: 0 });
    // HTTP: a notification answered 2xx reached the server: a crash explains nothing there.
    const http = new ServerLog("h#0");
    http.took(1, 1);
    notify(http, 1, 2);
    http.record(cancelled(1, "notification+stream-close"));
    http.crashedAt = 10;
    expect(http.judge(SSE).counts).toMatchObject({ contradictions: 1, explainedByCrash: 0 });
  });

  it("undelivered when the server got it is a contradiction, unless the notification's own answer died in a crash", () => {
    const log = new ServerLog("h#0");
    log.took(1, 1);
    log.cancelled(1, 2);
    log.record(cancelled(1, "stream-close", { undelivered: "notification" }));
    expect(log.judge(SSE).counts.contradictions).toBe(1);
    log.unanswered(1);
    expect(log.judge(SSE).counts.contradictions).toBe(1); // no crash: nothing to explain it
    log.crashedAt = 3;
    expect(log.judge(SSE).counts).toMatchObject({ contradictions: 0, explainedByCrash: 1 });
  });

  it("a notification the record does not mention, a not-sent request the server took, a cancel with no record: contradictions", () => {
    const silent = new ServerLog("t#0");
    silent.took(1, 1);
    silent.cancelled(1, 2);
    silent.record(cancelled(1, "none"));
    expect(silent.judge(STDIO).failures.join()).toContain("record says none, the server got a notifications/cancelled");

    const notSent = new ServerLog("t#0");
    notSent.took(1, 1);
    notSent.record(cancelled(1, "none", { outcome: "not-sent" }));
    expect(notSent.judge(STDIO).failures.join()).toContain("record says not-sent, the server took the request up");

    const noRecord = new ServerLog("t#0");
    noRecord.took(0, 1);
    noRecord.cancelled(0, 2);
    expect(noRecord.judge(STDIO).failures.join()).toContain("for a request with no record");
  });

  it("a record whose sentAt disagrees with its mechanism is a contradiction", () => {
    const log = new ServerLog("t#0");
    log.took(1, 1);
    log.cancelled(1, 2);
    log.record({ ...cancelled(1, "notification"), cancel: { ...cancelled(1, "notification").cancel, sentAt: null } });
    expect(log.judge(STDIO).failures.join()).toContain("mechanism notification with sentAt null");
  });

  it("any notification on 2026-07-28 fails; a duplicate fails on stdio and on HTTP unless a crash made the retry", () => {
    const modern = new ServerLog("m#0");
    modern.took(1, 1);
    modern.cancelled(1, 2);
    modern.record(cancelled(1, "stream-close"));
    expect(modern.judge(MODERN).failures.join()).toContain("notifications/cancelled on a connection whose cancel is the stream close");

    const twice = clean();
    twice.cancelled(1, 4);
    expect(twice.judge(STDIO).counts.duplicates).toBe(1);
    expect(twice.judge(STDIO).failures.length).toBe(1);
    expect(twice.judge(SSE).failures.length).toBe(1);
    twice.crashedAt = 5;
    expect(twice.judge(SSE).failures.length).toBe(0);
  });

  it("keeps growing past its first rows and sums late messages over the last revisions", () => {
    const log = new ServerLog("t#0");
    log.took(50_000, 1);
    log.record({ ...cancelled(50_000, "notification"), late: { results: 1, errors: 0, progress: 3 } });
    log.record({ ...cancelled(50_000, "notification"), late: { results: 2, errors: 0, progress: 4 } });
    log.cancelled(50_000, 2);
    expect(log.late()).toEqual({ results: 2, errors: 0, progress: 4 });
    expect(log.judge(STDIO).failures).toEqual([]);
    expect(log.csv().split("\n")[1]).toMatch(/^50000,/);
  });
});
