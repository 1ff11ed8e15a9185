import { describe, expect, it } from "vitest";
import { CancellableCall } from "../../src/core.js";
import type { RunRecord } from "../../src/index.js";
import type { SettledRecord } from "../../src/core/settled-record.js";
import { resolveCallOptions } from "../../src/options/resolve.js";

// Every revision of a run record says something new (records.md: `revision` +1 per update): an
// update that changes nothing (a task watch that learned nothing more, a delivery report that
// repeats what the record says) is not a revision, and `onRecord` is not called for it (an
// outside tester saw revisions identical but for their number).

function cancelledCall(mechanism: "tasks/cancel" | "notification+stream-close" = "tasks/cancel") {
  const revisions: RunRecord[] = [];
  let kept: SettledRecord | undefined;
  const controller = new AbortController();
  const call = new CancellableCall<unknown>({
    method: "tools/call",
    name: "report",
    options: resolveCallOptions({}, { timeoutMs: 1_000, signal: controller.signal }),
    clock: () => performance.now(),
    timers: { setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (h) => clearTimeout(h as never) },
    ids: { callId: 1, connectionId: 1, sessionId: () => undefined },
    hooks: {
      cancel: () => mechanism,
      settled: () => {},
      record: (record: RunRecord) => void revisions.push(record),
      keep: (settled) => void (kept = settled),
    },
  });
  call.promise.catch(() => {});
  call.start();
  call.bind(1, undefined);
  controller.abort(new Error("stop"));
  return { revisions, settled: () => kept! };
}

describe("record revisions", () => {
  it("an update that changes nothing is no revision: onRecord is not called and the revision number stays", () => {
    const { revisions, settled } = cancelledCall();
    expect(revisions).toHaveLength(1);
    const task = { taskId: "t1", status: "working" as const, revision: "2025-11-25" as const };
    settled().update({ task });
    expect(revisions.map((r) => r.revision)).toEqual([0, 1]);
    settled().update({ task: { ...task } }); // the same task, seen again
    settled().update({ task: { ...task } }, "unverified"); // and no outcome raised
    expect(revisions.map((r) => r.revision)).toEqual([0, 1]);
    expect(settled().record.revision).toBe(1);
    settled().update({ task: { ...task, status: "cancelled" } }, "task-cancelled");
    expect(revisions.map((r) => [r.revision, r.outcome])).toEqual([
      [0, "unverified"],
      [1, "unverified"],
      [2, "task-cancelled"],
    ]);
  });
});

describe("a revision of when the cancel went", () => {
  it("only a later time is one: a time before the one recorded (a 2025-era POST attempted while the call settled) changes nothing (an outside tester's: sentAt moved before settledAt, in a revision of its own)", () => {
    const { revisions, settled } = cancelledCall("notification+stream-close");
    const recorded = Date.parse(revisions[0]!.cancel!.sentAt!);
    settled().delivery({ sent: "notification+stream-close", failed: null, sentWall: recorded - 5 });
    settled().delivery({ sent: "notification+stream-close", failed: null, sentWall: recorded });
    expect(revisions).toHaveLength(1);
    settled().delivery({ sent: "notification+stream-close", failed: null, sentWall: recorded + 3 });
    expect(revisions.map((r) => [r.revision, Date.parse(r.cancel!.sentAt!) - recorded])).toEqual([
      [0, 0],
      [1, 3],
    ]);
  });
});

describe("a response read after the stream's close, then the notification's fate", () => {
  it("a refused 2025-era notification reported after the late result names nothing that reached the server, and keeps the refusal (a second pass: it said stream-close again)", () => {
    const { revisions, settled } = cancelledCall("notification+stream-close");
    settled().late("result", true);
    expect(revisions.at(-1)!.cancel!.mechanism).toBe("notification");
    const refusal = { mechanism: "notification" as const, error: "the server refused the notification: HTTP 400" };
    settled().delivery({ sent: "stream-close", failed: refusal });
    expect(revisions.at(-1)).toMatchObject({
      outcome: "late-result-discarded",
      cancel: { mechanism: "none", sentAt: null, undelivered: refusal },
    });
    // Written but unanswered: it went, the close did not count.
    const second = cancelledCall("notification+stream-close");
    second.settled().late("error");
    const written = { mechanism: "notification" as const, error: "sent (its body written), but no answer came", written: true as const };
    second.settled().delivery({ sent: "notification+stream-close", failed: written });
    expect(second.revisions.at(-1)!.cancel).toMatchObject({ mechanism: "notification", undelivered: written });
  });
});

describe("a time-only report after a late response revised the mechanism", () => {
  it("an earlier time is still no revision (a second pass: the mechanism was compared with the settle's, so it got through)", () => {
    const { revisions, settled } = cancelledCall("notification+stream-close");
    const recorded = Date.parse(revisions[0]!.cancel!.sentAt!);
    settled().late("result", true); // notification+stream-close becomes notification
    expect(revisions).toHaveLength(2);
    settled().delivery({ sent: "notification+stream-close", failed: null, sentWall: recorded - 1 });
    expect(revisions).toHaveLength(2);
    expect(revisions.at(-1)!.cancel).toMatchObject({ mechanism: "notification", sentAt: revisions[0]!.cancel!.sentAt });
  });
});
