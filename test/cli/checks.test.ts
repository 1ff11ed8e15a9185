import { describe, expect, it } from "vitest";
import { parseProbeArgs } from "../../src/cli/args.js";
import type { ProbeOptions } from "../../src/cli/args.js";
import { evaluate } from "../../src/cli/checks.js";
import type { ProbeRun } from "../../src/cli/probe.js";
import type { WireEvent } from "../../src/cli/recorder.js";
import type { Message } from "../../src/wire/messages.js";

// Synthetic timelines: the judging is pure, so edge cases are checked without processes.
const options = parseProbeArgs(["--stdio", "x", "--grace", "100", "--window", "1000"]) as ProbeOptions;

function timeline(entries: Array<[number, WireEvent["from"], Message]>): WireEvent[] {
  return entries.map(([at, from, message], seq) => ({ seq, at, from, kind: "message", message }));
}

const call: Message = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "t", _meta: { progressToken: 2 } } };
const cancel: Message = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2, reason: "r" } };
const progress = (value: number): Message => ({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 2, progress: value } });
const result: Message = { jsonrpc: "2.0", id: 2, result: { content: [] } };

function run(events: WireEvent[]): ProbeRun {
  return {
    options,
    transport: "stdio",
    era: "legacy",
    protocolVersion: "2025-11-25",
    serverInfo: undefined,
    cancelMechanism: "notification",
    events,
    droppedEvents: 0,
    main: {
      tool: "t", args: {}, chosen: "test", id: 2, progressToken: 2, sentAt: 0, cancelAt: 500, windowEnd: 1500,
      endedBeforeCancel: undefined, record: undefined,
    },
    survive: undefined,
    cancelCompleted: undefined,
    cancelUnknown: undefined,
    closedAt: undefined,
    clientErrors: [],
    anomalies: [],
    diagnosis: [],
  };
}

const byId = (checks: ReturnType<typeof evaluate>) => Object.fromEntries(checks.map((c) => [c.id, c]));

describe("checks on synthetic timelines", () => {
  it("a message within --grace of the cancel crossed it on the wire: noted, not failed (rule 9)", () => {
    const checks = byId(evaluate(run(timeline([[10, "client", call], [200, "server", progress(1)], [500, "client", cancel], [560, "server", progress(2)], [590, "server", result]]))));
    expect(checks["silent-after-cancel"]!.status).toBe("PASS");
    expect(checks["silent-after-cancel"]!.evidence.join()).toMatch(/2 message\(s\) within the 100 ms grace crossed the cancel/);
    expect(checks["work-stops"]!.status).toBe("PASS");
  });

  it("progress slower than the window: WARN that the window was too short to judge, not a PASS", () => {
    // progress every 1,500 ms before the cancel; only 1,000 ms watched after it
    const slow = run(timeline([[0, "client", call], [1500, "server", progress(1)], [3000, "server", progress(2)], [3100, "client", cancel]]));
    slow.main = { ...slow.main!, cancelAt: 3100, windowEnd: 4100 };
    const check = byId(evaluate(slow))["work-stops"]!;
    expect(check.status).toBe("WARN");
    expect(check.summary).toMatch(/window was too short to judge: progress came every 1500 ms .* only 1000 ms were watched .* --window 3000/);
    // the same run watched long enough passes
    slow.main = { ...slow.main, windowEnd: 4700 };
    expect(byId(evaluate(slow))["work-stops"]!.status).toBe("PASS");
  });

  it("the same messages after the grace FAIL", () => {
    const checks = byId(evaluate(run(timeline([[10, "client", call], [200, "server", progress(1)], [500, "client", cancel], [601, "server", progress(2)], [650, "server", result]]))));
    expect(checks["silent-after-cancel"]!.status).toBe("FAIL");
    expect(checks["silent-after-cancel"]!.events).toEqual([3, 4]);
    expect(checks["work-stops"]!.status).toBe("FAIL");
    expect(checks["work-stops"]!.events).toEqual([3]);
  });

  it("a message after the window still counts (the watch lasts to the end of the run)", () => {
    const checks = byId(evaluate(run(timeline([[10, "client", call], [500, "client", cancel], [4000, "server", result]]))));
    expect(checks["silent-after-cancel"]!.status).toBe("FAIL");
  });

  it("equal progress values FAIL rule 21 (MUST increase); fewer than two SKIP", () => {
    const equal = byId(evaluate(run(timeline([[10, "client", call], [100, "server", progress(1)], [200, "server", progress(1)], [500, "client", cancel]]))));
    expect(equal["progress-increases"]!.status).toBe("FAIL");
    const one = byId(evaluate(run(timeline([[10, "client", call], [100, "server", progress(1)], [500, "client", cancel]]))));
    expect(one["progress-increases"]!.status).toBe("SKIP");
  });

  it("before 2026-07-28 a server may cancel a request it sent itself; never a client's (rule 12)", () => {
    const sampling: Message = { jsonrpc: "2.0", id: 7, method: "sampling/createMessage", params: {} };
    const ownCancel: Message = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } };
    const clientCancel: Message = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } };
    const own = byId(evaluate(run(timeline([[10, "client", call], [100, "server", sampling], [200, "server", ownCancel], [500, "client", cancel]]))));
    expect(own["no-server-cancel"]!.status).toBe("PASS");
    const client = byId(evaluate(run(timeline([[10, "client", call], [500, "client", cancel], [520, "server", clientCancel]]))));
    expect(client["no-server-cancel"]!.status).toBe("FAIL");
  });
});
