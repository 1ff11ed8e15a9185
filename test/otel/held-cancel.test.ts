// A cancel that had not gone out when its call settled (the record's `sentAt` null: a 2025-era
// notification waiting for its request to reach the server, a stdio line behind a full pipe): the
// call span's `mcp_cancellable.cancel` event is at the settle, and a `cancel` follow-up span marks
// when it left (an outside tester's: no span ever carried the later time, and the trace disagreed
// with the record). A `sentAt` moved by a millisecond alone still adds no span.
import { describe, expect, it } from "vitest";
import { otelRecorder } from "../../src/otel/index.js";
import type { CancelledRunRecord } from "../../src/index.js";
import { ANSWERED_FIRST } from "../../src/core/record.js";
import { otelHarness } from "./harness.js";

const SETTLED = Date.parse("2026-12-05T10:00:00.000Z");

function cancelled(sentAt: string | null, revision: number): CancelledRunRecord {
  const cancel = { trigger: "timeout" as const, reason: "Request timed out after 150 ms", mechanism: "notification+stream-close" as const };
  return {
    callId: 1,
    connectionId: 1,
    sessionId: null,
    requestId: 7,
    method: "tools/call",
    name: "slow",
    startedAt: new Date(SETTLED - 150).toISOString(),
    settledAt: new Date(SETTLED).toISOString(),
    elapsedMs: 150,
    status: "cancelled",
    cancel: { ...cancel, sentAt, undelivered: null },
    outcome: "unverified",
    error: null,
    late: { results: 0, errors: 0, progress: 0 },
    progress: { count: 0, last: null },
    verification: null,
    revision,
    summary: "cancelled (timeout), outcome unverified",
  };
}

function observe() {
  const otel = otelHarness();
  const observation = otelRecorder({ tracer: otel.tracer, meter: otel.meter }).start({
    method: "tools/call",
    name: "slow",
    params: { name: "slow" },
    client: null,
    transport: {},
  });
  return { otel, observation: observation! };
}

describe("otel: a cancel that went out after the settle", () => {
  it("sentAt null at the settle, then its time: a `cancel` follow-up span whose event is at the time it left", async () => {
    const { otel, observation } = observe();
    const left = new Date(SETTLED + 250).toISOString();
    observation.record!(cancelled(null, 0));
    observation.record!(cancelled(left, 1));
    const spans = otel.spans();
    expect(spans.map((s) => s.name)).toEqual(["tools/call slow", "cancel tools/call slow"]);
    const [call, followUp] = spans;
    expect(followUp!.parentSpanId).toBe(call!.spanId);
    expect(followUp!.attributes).toMatchObject({
      "mcp_cancellable.cancel.mechanism": "notification+stream-close",
      "mcp_cancellable.record.revision": 1,
    });
    expect(followUp!.status.code).not.toBe(2); // delivered: no error
    expect(otel.eventTimes("cancel tools/call slow")).toEqual([{ name: "mcp_cancellable.cancel_delivery", atMs: SETTLED + 250 }]);
    await otel.shutdown();
  });

  it("the `cancel` follow-up span starts no later than its event (the time it left, which the revision reports afterwards)", async () => {
    // An outside tester's: the span started at the revision, 10 to 16 ms after its own event.
    const { otel, observation } = observe();
    const leftMs = Date.now() - 500;
    observation.record!(cancelled(null, 0));
    observation.record!(cancelled(new Date(leftMs).toISOString(), 1));
    const followUp = otel.spans().find((s) => s.name === "cancel tools/call slow")!;
    expect(otel.eventTimes("cancel tools/call slow")).toEqual([{ name: "mcp_cancellable.cancel_delivery", atMs: leftMs }]);
    expect(followUp.startMs).toBeLessThanOrEqual(leftMs);
    expect(followUp.endMs).toBeGreaterThanOrEqual(leftMs);
    await otel.shutdown();
  });

  it("sentAt at the settle, then moved a millisecond or more: no span (the event is already at a time it left)", async () => {
    const { otel, observation } = observe();
    observation.record!(cancelled(new Date(SETTLED).toISOString(), 0));
    observation.record!(cancelled(new Date(SETTLED + 3).toISOString(), 1));
    expect(otel.spans().map((s) => s.name)).toEqual(["tools/call slow"]);
    expect(otel.eventTimes("tools/call slow")).toEqual([{ name: "mcp_cancellable.cancel", atMs: SETTLED }]);
    await otel.shutdown();
  });
});

describe("otel: what the settle already knows of the cancel", () => {
  it("the response came first (rule 7), known at the settle: the call span carries cancel.undelivered, on the span and its cancel event (an outside tester's: mechanism none read as never sent)", async () => {
    const { otel, observation } = observe();
    const record = cancelled(null, 0);
    observation.record!({
      ...record,
      cancel: { ...record.cancel, mechanism: "none", undelivered: { mechanism: "notification", error: ANSWERED_FIRST } },
      outcome: "late-result-discarded",
      late: { results: 1, errors: 0, progress: 0 },
      summary: "cancelled (timeout), late result discarded",
    });
    const [call] = otel.spans();
    const undelivered = `notification: ${ANSWERED_FIRST}`;
    expect(call!.attributes).toMatchObject({
      "mcp_cancellable.call.outcome": "late-result-discarded",
      "mcp_cancellable.cancel.mechanism": "none",
      "mcp_cancellable.cancel.undelivered": undelivered,
    });
    expect(call!.events.find((e) => e.name === "mcp_cancellable.cancel")!.attributes).toMatchObject({
      "mcp_cancellable.cancel.undelivered": undelivered,
    });
    expect(call!.events.map((e) => e.name)).toEqual(["mcp_cancellable.cancel", "mcp_cancellable.late_message"]);
    await otel.shutdown();
  });

  it("a task call's tasks/cancel that left after the settle (a late CreateTaskResult's task): a `task` span and a `cancel` span whose event is at the time it left", async () => {
    const { otel, observation } = observe();
    const record = cancelled(null, 0);
    const settled = { ...record, cancel: { ...record.cancel, mechanism: "none" as const } };
    observation.record!(settled);
    const left = new Date(SETTLED + 40).toISOString();
    observation.record!({
      ...settled,
      revision: 1,
      cancel: { ...settled.cancel, mechanism: "tasks/cancel", sentAt: left },
      task: { taskId: "t1", status: "working", revision: "2025-11-25", createdAfterCancel: true },
    });
    expect(otel.spans().map((s) => s.name)).toEqual(["tools/call slow", "task tools/call slow", "cancel tools/call slow"]);
    expect(otel.eventTimes("cancel tools/call slow")).toEqual([{ name: "mcp_cancellable.cancel_delivery", atMs: SETTLED + 40 }]);
    expect(otel.spans()[2]!.attributes).toMatchObject({ "mcp_cancellable.cancel.mechanism": "tasks/cancel" });
    await otel.shutdown();
  });
});
