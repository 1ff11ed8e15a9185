import { describe, expect, it } from "vitest";
import { parseProbeArgs } from "../../src/cli/args.js";
import type { ProbeOptions } from "../../src/cli/args.js";
import { evaluate } from "../../src/cli/checks.js";
import type { ProbeRun } from "../../src/cli/probe.js";
import { chooseTool } from "../../src/cli/probe.js";
import type { WireEvent } from "../../src/cli/recorder.js";
import type { Message } from "../../src/wire/messages.js";

// Synthetic timelines: the judging is pure, so edge cases are checked without processes.
const options = parseProbeArgs(["--stdio", "x", "--grace", "100", "--window", "1000"]) as ProbeOptions;

function timeline(entries: Array<[number, WireEvent["from"], Message]>): WireEvent[] {
  return entries.map(([at, from, message], seq) => ({ seq, at, from, kind: "message", message }));
}

const call: Message = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "t", _meta: { progressToken: 2 } } };
const cancel: Message = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2, reason: "r" } };
const progress = (value: number): Message => ({
  jsonrpc: "2.0",
  method: "notifications/progress",
  params: { progressToken: 2, progress: value },
});
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
      tool: "t",
      args: {},
      chosen: "test",
      id: 2,
      progressToken: 2,
      sentAt: 0,
      cancelAt: 500,
      windowEnd: 1500,
      endedBeforeCancel: undefined,
      record: undefined,
      fence: undefined,
      cpu: undefined,
    },
    baseline: undefined,
    concurrent: undefined,
    sessions: undefined,
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

const list = (id: number): Message => ({ jsonrpc: "2.0", id, method: "tools/list", params: {} });
const listed = (id: number): Message => ({ jsonrpc: "2.0", id, result: { tools: [] } });
const exchangeOf = (id: number, sentAt: number, answeredAt: number | undefined) => ({
  method: "tools/list",
  id,
  sentAt,
  endedAt: answeredAt ?? sentAt + 3000,
  outcome: answeredAt === undefined ? ("timeout" as const) : ("result" as const),
  text: answeredAt === undefined ? "no answer within 3000 ms" : "answered: 0 tool(s)",
  answeredAt,
});

/** A run whose cancel at 500 ms was followed by a fence (tools/list id 3) answered at `fenceAt`. */
function fenced(entries: Array<[number, WireEvent["from"], Message]>, fenceAt: number | undefined): ProbeRun {
  const all: Array<[number, WireEvent["from"], Message]> = [...entries, [501, "client", list(3)]];
  if (fenceAt !== undefined) all.push([fenceAt, "server", listed(3)]);
  all.sort((x, y) => x[0] - y[0]);
  const r = run(timeline(all));
  r.main!.fence = exchangeOf(3, 501, fenceAt);
  r.baseline = exchangeOf(1, 0, 3);
  r.survive = exchangeOf(4, 1600, 1603);
  return r;
}

describe("checks on synthetic timelines", () => {
  it("without a fence answer, a result within --grace of the cancel may have crossed it: WARN, not FAIL (rule 9)", () => {
    const checks = byId(
      evaluate(
        run(
          timeline([
            [10, "client", call],
            [200, "server", progress(1)],
            [500, "client", cancel],
            [560, "server", progress(2)],
            [590, "server", result],
          ]),
        ),
      ),
    );
    expect(checks["silent-after-cancel"]!.status).toBe("WARN");
    expect(checks["silent-after-cancel"]!.evidence.join()).toMatch(/got no answer, so the 100 ms --grace applies/);
    expect(checks["silent-after-cancel"]!.summary).toMatch(/the 1 result for #2 came \+90 ms after the cancel/);
    expect(checks["work-stops"]!.status).toBe("PASS");
  });

  it("a stdio server that exits as it reads the cancel: the verdicts say the watch ended with the connection, and name no HTTP server", () => {
    const events = timeline([
      [10, "client", call],
      [200, "server", progress(1)],
      [300, "server", progress(2)],
      [500, "client", cancel],
    ]);
    events.push({ seq: events.length, at: 531, from: "server", kind: "closed", text: "connection closed" });
    const r = run(events);
    r.closedAt = 531;
    r.lost = { how: "exited with code 5", running: false };
    const checks = byId(evaluate(r));
    expect(checks["silent-after-cancel"]!.status).toBe("PASS");
    expect(checks["silent-after-cancel"]!.summary).toMatch(
      /no result, error or progress for #2 after the cancel, watched until the connection closed, \+31 ms/,
    );
    expect(checks["work-stops"]!.status).toBe("PASS");
    expect(checks["work-stops"]!.summary).toMatch(/watched until the connection closed, \+31 ms/);
    expect(checks["work-stops"]!.summary).not.toMatch(/HTTP server/);
  });

  it("a stdio server that closes its stdout as it reads the cancel and runs on: silent-after-cancel and work-stops SKIP, nothing after could be seen", () => {
    const events = timeline([
      [10, "client", call],
      [200, "server", progress(1)],
      [300, "server", progress(2)],
      [500, "client", cancel],
    ]);
    events.push({ seq: events.length, at: 531, from: "server", kind: "closed", text: "connection closed" });
    const r = run(events);
    r.closedAt = 531;
    r.lost = { how: "closed its stdout", running: true };
    const checks = byId(evaluate(r));
    for (const id of ["silent-after-cancel", "work-stops"]) {
      expect(checks[id]!.status).toBe("SKIP");
      expect(checks[id]!.summary).toMatch(
        /^the connection closed \+31 ms after the cancel, before the \d+ ms watch ended \(the server closed its stdout, its process still running\)/,
      );
    }
  });

  it("progress slower than the window: WARN that the window was too short to judge, not a PASS", () => {
    // progress every 1,500 ms before the cancel; only 1,000 ms watched after it
    const slow = run(
      timeline([
        [0, "client", call],
        [1500, "server", progress(1)],
        [3000, "server", progress(2)],
        [3100, "client", cancel],
      ]),
    );
    slow.main = { ...slow.main!, cancelAt: 3100, windowEnd: 4100 };
    const check = byId(evaluate(slow))["work-stops"]!;
    expect(check.status).toBe("WARN");
    expect(check.summary).toMatch(
      /window was too short to judge: progress came every 1500 ms .* only 1000 ms were watched .* --window 3000/,
    );
    // the same run watched long enough passes
    slow.main = { ...slow.main, windowEnd: 4700 };
    expect(byId(evaluate(slow))["work-stops"]!.status).toBe("PASS");
  });

  it("the same messages after the grace FAIL", () => {
    const checks = byId(
      evaluate(
        run(
          timeline([
            [10, "client", call],
            [200, "server", progress(1)],
            [500, "client", cancel],
            [601, "server", progress(2)],
            [650, "server", result],
          ]),
        ),
      ),
    );
    expect(checks["silent-after-cancel"]!.status).toBe("FAIL");
    expect(checks["silent-after-cancel"]!.events).toEqual([3, 4]);
    expect(checks["work-stops"]!.status).toBe("FAIL");
    expect(checks["work-stops"]!.events).toEqual([3]);
    // No fence answer: the FAIL claims only what was seen, never that the server read the cancel (an outside tester's).
    for (const id of ["silent-after-cancel", "work-stops"]) {
      expect(checks[id]!.summary).toMatch(
        /more than the 100 ms --grace after the cancel \(whether the server read the cancel is not known: the request sent right after the cancel got no answer\)/,
      );
      expect(checks[id]!.summary).not.toMatch(/had read the cancel/);
    }
  });

  it("a message after the window still counts (the watch lasts to the end of the run)", () => {
    const checks = byId(
      evaluate(
        run(
          timeline([
            [10, "client", call],
            [500, "client", cancel],
            [4000, "server", result],
          ]),
        ),
      ),
    );
    expect(checks["silent-after-cancel"]!.status).toBe("FAIL");
  });

  it("equal progress values FAIL rule 21 (MUST increase); fewer than two SKIP", () => {
    const equal = byId(
      evaluate(
        run(
          timeline([
            [10, "client", call],
            [100, "server", progress(1)],
            [200, "server", progress(1)],
            [500, "client", cancel],
          ]),
        ),
      ),
    );
    expect(equal["progress-increases"]!.status).toBe("FAIL");
    const one = byId(
      evaluate(
        run(
          timeline([
            [10, "client", call],
            [100, "server", progress(1)],
            [500, "client", cancel],
          ]),
        ),
      ),
    );
    expect(one["progress-increases"]!.status).toBe("SKIP");
  });

  it("before 2026-07-28 a server may cancel a request it sent itself; never a client's (rule 12)", () => {
    const sampling: Message = { jsonrpc: "2.0", id: 7, method: "sampling/createMessage", params: {} };
    const ownCancel: Message = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } };
    const clientCancel: Message = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } };
    const own = byId(
      evaluate(
        run(
          timeline([
            [10, "client", call],
            [100, "server", sampling],
            [200, "server", ownCancel],
            [500, "client", cancel],
          ]),
        ),
      ),
    );
    expect(own["no-server-cancel"]!.status).toBe("PASS");
    const client = byId(
      evaluate(
        run(
          timeline([
            [10, "client", call],
            [500, "client", cancel],
            [520, "server", clientCancel],
          ]),
        ),
      ),
    );
    expect(client["no-server-cancel"]!.status).toBe("FAIL");
  });
});

// Issue 15 item 1: a crossing is told from a violation by evidence, not by a fixed grace.
describe("silent-after-cancel: the fence (a tools/list sent right after the cancel) decides", () => {
  it("a result 585 ms after the cancel, before the fence's answer (a busy event loop): WARN with the evidence, not FAIL", () => {
    const checks = byId(
      evaluate(
        fenced(
          [
            [10, "client", call],
            [500, "client", cancel],
            [1085, "server", result],
          ],
          1090,
        ),
      ),
    );
    const silent = checks["silent-after-cancel"]!;
    expect(silent.status).toBe("WARN");
    expect(silent.summary).toMatch(/before the server showed it had read the cancel/);
    expect(silent.evidence[0]).toMatch(/the server answered tools\/list #3, sent right after the cancel, at \+590 ms/);
    expect(silent.events).toHaveLength(1);
  });

  it("the same result after the fence's answer: FAIL (the server had read the cancel)", () => {
    const checks = byId(
      evaluate(
        fenced(
          [
            [10, "client", call],
            [500, "client", cancel],
            [1085, "server", result],
          ],
          505,
        ),
      ),
    );
    expect(checks["silent-after-cancel"]!.status).toBe("FAIL");
    expect(checks["silent-after-cancel"]!.summary).toMatch(/after the server had read the cancel \(/);
  });

  it("only progress crossed: PASS with a note; progress after the fence's answer: FAIL", () => {
    const crossed = byId(
      evaluate(
        fenced(
          [
            [10, "client", call],
            [500, "client", cancel],
            [502, "server", progress(2)],
          ],
          504,
        ),
      ),
    );
    expect(crossed["silent-after-cancel"]!.status).toBe("PASS");
    expect(crossed["silent-after-cancel"]!.evidence.join()).toMatch(/may have crossed the cancel/);
    const after = byId(
      evaluate(
        fenced(
          [
            [10, "client", call],
            [500, "client", cancel],
            [520, "server", progress(2)],
          ],
          504,
        ),
      ),
    );
    expect(after["silent-after-cancel"]!.status).toBe("FAIL");
    expect(after["work-stops"]!.status).toBe("FAIL");
  });
});

// Issue 15 item 5: head-of-line blocking.
describe("connection-survives: the fence's latency against the same request before the call", () => {
  it("answered in 2334 ms against 3 ms before: WARN, the cancelled work held the queue", () => {
    const checks = byId(
      evaluate(
        fenced(
          [
            [10, "client", call],
            [500, "client", cancel],
          ],
          2835,
        ),
      ),
    );
    expect(checks["connection-survives"]!.status).toBe("WARN");
    expect(checks["connection-survives"]!.summary).toMatch(
      /answered in 2334 ms, against 3 ms before the call: the cancelled work held the queue/,
    );
  });

  it("answered in 4 ms: PASS, with both latencies in the evidence", () => {
    const checks = byId(
      evaluate(
        fenced(
          [
            [10, "client", call],
            [500, "client", cancel],
          ],
          505,
        ),
      ),
    );
    expect(checks["connection-survives"]!.status).toBe("PASS");
    expect(checks["connection-survives"]!.evidence.join()).toMatch(
      /answered in 4 ms \(the same request took 3 ms before the call was made\)/,
    );
  });

  it("no answer to the fence, but a later request answered: WARN", () => {
    const checks = byId(
      evaluate(
        fenced(
          [
            [10, "client", call],
            [500, "client", cancel],
          ],
          undefined,
        ),
      ),
    );
    expect(checks["connection-survives"]!.status).toBe("WARN");
  });
});

// Issue 15 item 2: silence is not proof that the work stopped.
describe("work-stops: what was seen, and the stdio server's CPU time", () => {
  const cpu = (afterMs: number) => ({
    at: { call: 0, cancel: 500, watchFrom: 600, end: 1500 },
    cpuMs: { call: 100, cancel: 380, watchFrom: 400, end: 400 + afterMs },
  });
  const entries: Array<[number, WireEvent["from"], Message]> = [
    [10, "client", call],
    [200, "server", progress(1)],
    [500, "client", cancel],
  ];

  it("progress stopped and the processes went quiet: PASS, worded as what was seen", () => {
    const r = fenced(entries, 504);
    r.main!.cpu = cpu(20);
    const check = byId(evaluate(r))["work-stops"]!;
    expect(check.status).toBe("PASS");
    expect(check.summary).toMatch(/the server stopped reporting progress, and its processes used little CPU after it/);
    expect(check.summary).not.toMatch(/the work stopped/);
  });

  it("progress stopped but the processes kept burning CPU: WARN, the work appears to go on", () => {
    const r = fenced(entries, 504);
    r.main!.cpu = cpu(800);
    const check = byId(evaluate(r))["work-stops"]!;
    expect(check.status).toBe("WARN");
    expect(check.summary).toMatch(/the work appears to go on/);
    expect(check.evidence.join()).toMatch(/800 ms in the 900 ms/);
  });

  it("HTTP (no process to watch): PASS says silence alone does not show the work stopped", () => {
    const check = byId(evaluate(fenced(entries, 504)))["work-stops"]!;
    expect(check.status).toBe("PASS");
    expect(check.summary).toMatch(/silence alone does not show that the work stopped/);
  });
});

// Issue 15 item 3: two concurrent calls.
/** A progress notification for `token`. Two calls at once (a cancelled, b left to end as `bEnd`) on the fenced timeline. */
const progressOf = (token: number, value: number): Message => ({
  jsonrpc: "2.0",
  method: "notifications/progress",
  params: { progressToken: token, progress: value },
});
const concurrentRun = (events: Array<[number, WireEvent["from"], Message]>, bEnd: "result" | "running" | "error") => {
  const r = fenced([[10, "client", call], [500, "client", cancel], ...events], 504);
  r.concurrent = {
    a: { id: 10, progressToken: 10, sentAt: 2000, end: { at: 2300, how: "cancelled", text: "" } },
    b: {
      id: 11,
      progressToken: 11,
      sentAt: 2000,
      end: { at: 2600, how: bEnd, text: bEnd === "error" ? "MCP error -32603: aborted" : "" },
    },
    cancelAt: 2300,
    windowEnd: 2700,
  };
  return byId(evaluate(r))["concurrent-calls"]!;
};

describe("concurrent-calls", () => {
  it("each token's progress rises on its own and the other call completes: PASS", () => {
    const check = concurrentRun(
      [
        [2100, "server", progressOf(10, 1)],
        [2110, "server", progressOf(11, 1)],
        [2200, "server", progressOf(10, 2)],
        [2210, "server", progressOf(11, 2)],
        [2400, "server", progressOf(11, 3)],
        [2600, "server", { jsonrpc: "2.0", id: 11, result: {} }],
      ],
      "result",
    );
    expect(check.status).toBe("PASS");
    expect(check.summary).toMatch(/completed with its result/);
  });

  it("both calls report on one token (state on a shared tool instance): FAIL", () => {
    const check = concurrentRun(
      [
        [2100, "server", progressOf(11, 1)],
        [2110, "server", progressOf(11, 1)],
        [2200, "server", progressOf(11, 2)],
        [2210, "server", progressOf(11, 2)],
      ],
      "running",
    );
    expect(check.status).toBe("FAIL");
    expect(check.evidence.join()).toMatch(/two calls' progress on one token/);
  });

  it("issue 29: no evidence either way (the other call showed nothing after the cancel) is a SKIP, not a PASS", () => {
    const check = concurrentRun([], "running");
    expect(check.status).toBe("SKIP");
    expect(check.summary).toMatch(/no evidence either way/);
  });

  it("issue 29: the other call completed before the cancel: SKIP (the cancel could not have touched it)", () => {
    const r = fenced(
      [
        [10, "client", call],
        [500, "client", cancel],
        [2250, "server", { jsonrpc: "2.0", id: 11, result: {} }],
      ],
      504,
    );
    r.concurrent = {
      a: { id: 10, progressToken: 10, sentAt: 2000, end: { at: 2300, how: "cancelled", text: "" } },
      b: { id: 11, progressToken: 11, sentAt: 2000, end: { at: 2250, how: "result", text: "" } },
      cancelAt: 2300,
      windowEnd: 2700,
    };
    const check = byId(evaluate(r))["concurrent-calls"]!;
    expect(check.status).toBe("SKIP");
    expect(check.summary).toMatch(/completed with its result before that cancel/);
  });

  it("issue 29: the other call completed after the cancel, no progress at all: PASS that says progress was not judged", () => {
    const check = concurrentRun([[2600, "server", { jsonrpc: "2.0", id: 11, result: {} }]], "result");
    expect(check.status).toBe("PASS");
    expect(check.summary).toMatch(/only the cancel was judged/);
    expect(check.summary).not.toMatch(/each token's progress rose/);
  });

  it("the cancel of one ends the other: FAIL", () => {
    const check = concurrentRun(
      [
        [2100, "server", progressOf(10, 1)],
        [2110, "server", progressOf(11, 1)],
      ],
      "error",
    );
    expect(check.status).toBe("FAIL");
    expect(check.summary).toMatch(/the call that was not cancelled/);
  });
});

// Issue 15 item 4: sessions whose request ids coincide.
describe("sessions-isolated", () => {
  const sessionsRun = (bReceives: Message[]) => {
    const r = fenced(
      [
        [10, "client", call],
        [500, "client", cancel],
      ],
      504,
    );
    r.transport = "http";
    r.sessions = {
      requestId: 2,
      cancelAt: 3000,
      windowEnd: 4000,
      sessions: [
        {
          label: "A",
          sessionId: "a",
          progressToken: "tA",
          received: [
            { at: 2900, message: { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "tA", progress: 1 } } },
          ],
        },
        { label: "B", sessionId: "b", progressToken: "tB", received: bReceives.map((message, i) => ({ at: 2950 + i, message })) },
      ],
    };
    return byId(evaluate(r))["sessions-isolated"]!;
  };
  const pb = (token: string): Message => ({
    jsonrpc: "2.0",
    method: "notifications/progress",
    params: { progressToken: token, progress: 1 },
  });

  it("each session gets only its own: PASS", () => {
    expect(sessionsRun([pb("tB"), { jsonrpc: "2.0", id: 2, result: {} }]).status).toBe("PASS");
  });

  it("session B receives session A's progress and a second answer for id 2: FAIL", () => {
    const check = sessionsRun([pb("tB"), pb("tA"), { jsonrpc: "2.0", id: 2, result: {} }, { jsonrpc: "2.0", id: 2, result: {} }]);
    expect(check.status).toBe("FAIL");
    expect(check.summary).toMatch(/2 message\(s\) of one session reached the other/);
  });
});

// Issue 15 item 6: annotations are the server's claim, and the probe says so.
describe("tool choice: annotations printed as the server's claim", () => {
  it("the default pick and --tool both say the annotations are a claim, not verified", () => {
    const tools = [{ name: "think", annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false } }, { name: "plain" }];
    const picked = chooseTool(tools, undefined, { tool: undefined, toolArgs: {}, allowSideEffects: false });
    expect(picked.name).toBe("think");
    expect(picked.why).toMatch(
      /the server's annotations claim readOnlyHint and idempotentHint, not destructive \(its claim, not verified\)/,
    );
    const named = chooseTool(tools, undefined, { tool: "think", toolArgs: {}, allowSideEffects: false });
    expect(named.why).toBe(
      "given with --tool; the server's annotations claim readOnlyHint: true, idempotentHint: true, destructiveHint: false (its claim, not verified)",
    );
    const bare = chooseTool(tools, undefined, { tool: "plain", toolArgs: {}, allowSideEffects: true });
    expect(bare.why).toBe("given with --tool; the server gives no annotations");
  });
});

describe("tool choice: --tool refuses a tool that may have side effects without --allow-side-effects", () => {
  const cases: Array<[string, Record<string, boolean> | undefined, boolean]> = [
    ["no annotations", undefined, true],
    ["readOnlyHint false", { readOnlyHint: false }, true],
    // Not destructive, but not read-only either (server-memory's create_entities): it writes.
    ["readOnlyHint false, destructiveHint false", { readOnlyHint: false, destructiveHint: false }, true],
    ["readOnlyHint true, destructiveHint true", { readOnlyHint: true, destructiveHint: true }, true],
    ["readOnlyHint true", { readOnlyHint: true }, false],
    ["readOnlyHint true, destructiveHint false", { readOnlyHint: true, destructiveHint: false }, false],
  ];
  for (const [label, annotations, refused] of cases) {
    it(`${label}: ${refused ? "refused" : "probed"}; with --allow-side-effects always probed`, () => {
      const tools = [{ name: "t", ...(annotations === undefined ? {} : { annotations }) }];
      const pick = () => chooseTool(tools, undefined, { tool: "t", toolArgs: {}, allowSideEffects: false });
      if (refused) expect(pick).toThrow(/may have side effects.*--allow-side-effects/);
      else expect(pick().name).toBe("t");
      expect(chooseTool(tools, undefined, { tool: "t", toolArgs: {}, allowSideEffects: true }).name).toBe("t");
    });
  }
});

// Issue 24 item 5: a verdict never contradicts the timeline it prints.
describe("verdicts judged from their own timeline (issue 24 item 5)", () => {
  it("work-stops on a serial server: 24 progress and the result after the cancel, the fence answered only after them: WARN, never PASS (the 23 past a round trip plus --grace are the evidence)", () => {
    const after: Array<[number, WireEvent["from"], Message]> = Array.from({ length: 24 }, (_, i) => [
      520 + i * 100,
      "server",
      progress(i + 2),
    ]);
    const r = fenced(
      [[10, "client", call], [200, "server", progress(1)], [500, "client", cancel], ...after, [2950, "server", result]],
      2960,
    );
    const check = byId(evaluate(r))["work-stops"]!;
    expect(check.status).toBe("WARN");
    // The first (+20 ms) came within a round trip (3 ms) plus --grace: it may have crossed the cancel.
    expect(check.summary).toMatch(
      /the work went on after the cancel had had time to reach the server: 23 progress notification\(s\) \(3 … 25\) came from \+120 ms to \+2320 ms after the cancel, later than a round trip of 3 ms, the latency of tools\/list before the call, plus the 100 ms --grace, then its result at \+2450 ms; the server answered tools\/list #3, sent right after the cancel, at \+2460 ms, only after them/,
    );
    expect(check.evidence).toContain(
      "1 within a round trip of 3 ms, the latency of tools/list before the call, plus the --grace (they may have crossed the cancel)",
    );
    expect(check.events).toHaveLength(23);
  });

  it("work-stops: one progress that crossed the cancel within --grace is still a PASS, and its text counts it", () => {
    const r = fenced(
      [
        [10, "client", call],
        [200, "server", progress(1)],
        [500, "client", cancel],
        [540, "server", progress(2)],
      ],
      560,
    );
    const check = byId(evaluate(r))["work-stops"]!;
    expect(check.status).toBe("PASS");
    expect(check.summary).toMatch(
      /1 progress notification\(s\) before the cancel, 1 after it that crossed it on the wire \(within a round trip of 3 ms, the latency of tools\/list before the call, plus the 100 ms --grace, before the server showed it had read it\), none after the server had read the cancel \(by \+60 ms/,
    );
    expect(check.summary).not.toMatch(/none in the/);
  });

  it("concurrent-calls on a serial server: the second call showed nothing while the first ran: WARN, and it is never called 'still running'", () => {
    const check = concurrentRun(
      [
        [2100, "server", progressOf(10, 1)],
        [2200, "server", progressOf(10, 2)],
      ],
      "running",
    );
    expect(check.status).toBe("WARN");
    expect(check.summary).toMatch(/did not run at the same time/);
    expect(check.summary).toMatch(/showed no progress and no answer/);
    expect(check.summary).not.toMatch(/still running/);
  });

  it("concurrent-calls: the second starts only after the first's cancel (queued behind it): WARN with when it started", () => {
    const check = concurrentRun(
      [
        [2100, "server", progressOf(10, 1)],
        [2200, "server", progressOf(10, 2)],
        [2400, "server", progressOf(11, 1)],
        [2600, "server", { jsonrpc: "2.0", id: 11, result: {} }],
      ],
      "result",
    );
    expect(check.status).toBe("WARN");
    expect(check.summary).toMatch(/first reported progress \+100 ms after the cancel of the other/);
  });

  it("a stray cancel behind a busy server: WARN 'busy' (not sent), never FAIL 'stopped serving requests'", () => {
    const r = fenced(
      [
        [10, "client", call],
        [500, "client", cancel],
      ],
      504,
    );
    const fence = exchangeOf(7, 3000, undefined);
    r.cancelCompleted = {
      kind: "completed",
      requestId: 4,
      cancelAt: 3000,
      windowEnd: 6000,
      followUp: undefined,
      fence,
      busy: "tools/list #7 sent first: no answer within 3000 ms",
    };
    r.cancelUnknown = {
      kind: "unknown",
      requestId: 99,
      cancelAt: 6000,
      windowEnd: 9000,
      followUp: undefined,
      fence,
      busy: "tools/list #7 sent first: no answer within 3000 ms",
    };
    const checks = byId(evaluate(r));
    for (const id of ["cancel-completed-ignored", "cancel-unknown-ignored"]) {
      expect(checks[id]!.status).toBe("WARN");
      expect(checks[id]!.summary).toMatch(/the server was busy, so no cancel for .* was sent: tools\/list #7 sent first: no answer/);
      expect(checks[id]!.summary).not.toMatch(/stopped serving/);
    }
  });
});

// Tester I's findings: each verdict follows the evidence the run has, and says only what it saw.
describe("verdicts that follow their evidence (tester I)", () => {
  /** `fenced`, with extra non-message events (HTTP lines) merged in by time. */
  function withEvents(r: ProbeRun, extra: Array<Omit<WireEvent, "seq">>): ProbeRun {
    const merged = [...r.events, ...extra.map((event) => ({ ...event, seq: -1 }))].sort((x, y) => x.at - y.at);
    r.events.splice(0, r.events.length, ...merged.map((event, seq) => ({ ...event, seq })));
    return r;
  }

  it("work-stops: progress sent before the cancel that a slow link delivers after it (within a round trip plus --grace) is a crossing: PASS, not WARN", () => {
    // A link with ~800 ms of delay: tools/list took 800 ms before the call; the progress the
    // server sent before it had the cancel arrives +700 ms after it, the fence's answer at +1700 ms.
    const r = fenced(
      [
        [10, "client", call],
        [500, "client", cancel],
        [1200, "server", progress(1)],
      ],
      2200,
    );
    r.baseline = exchangeOf(1, 0, 800);
    const check = byId(evaluate(r))["work-stops"]!;
    expect(check.status, check.summary).toBe("PASS");
    expect(check.summary).toMatch(
      /0 progress notification\(s\) before the cancel, 1 after it that crossed it on the wire \(within a round trip of 800 ms, the latency of tools\/list before the call, plus the 100 ms --grace/,
    );
    expect(check.summary).not.toMatch(/reads a cancel only once|went on/);
  });

  it("work-stops over 2025-era HTTP: the cancel's own POST answered late is the round trip too (crossed progress within it: PASS)", () => {
    const r = withEvents(
      fenced(
        [
          [10, "client", call],
          [500, "client", cancel],
          [1100, "server", progress(1)],
        ],
        2200,
      ),
      [{ at: 1300, from: "server", kind: "http", status: 202, text: "POST notifications/cancelled #2 → 202 (no content-type)" }],
    );
    r.transport = "http";
    const check = byId(evaluate(r))["work-stops"]!;
    expect(check.status, check.summary).toBe("PASS");
    expect(check.summary).toMatch(/within a round trip of 800 ms, the time the cancel's POST took to be answered, plus the 100 ms --grace/);
  });

  it("2025-era HTTP: a cancel POST that failed (its connection reset) is no answer: the fence's answer proves nothing of the cancel, and a FAIL says so (an audit's: 'after the server had read the cancel')", () => {
    const r = withEvents(
      fenced(
        [
          [10, "client", call],
          [500, "client", cancel],
          [520, "server", progress(1)],
          [900, "server", progress(2)],
        ],
        505,
      ),
      [{ at: 503, from: "server", kind: "http", text: "POST notifications/cancelled #2: fetch failed (other side closed)" }],
    );
    r.transport = "http";
    const checks = byId(evaluate(r));
    for (const id of ["silent-after-cancel", "work-stops"]) {
      expect(checks[id]!.status, checks[id]!.summary).toBe("FAIL");
      expect(checks[id]!.summary).toMatch(
        /more than the 100 ms --grace after the cancel \(whether the server read the cancel is not known: the cancel's own POST got no 2xx answer/,
      );
      expect(checks[id]!.summary).not.toMatch(/had read the cancel/);
    }
  });

  it("sessions-isolated: neither session received a message of its own call: SKIP saying why, never a PASS without evidence", () => {
    const r = fenced(
      [
        [10, "client", call],
        [500, "client", cancel],
      ],
      504,
    );
    r.transport = "http";
    const session = (label: "A" | "B", received: Array<{ at: number; message: Message }> = []) => ({
      label,
      sessionId: `s-${label}`,
      progressToken: `mcp-cancellable-probe-session-${label}`,
      received,
    });
    r.sessions = { requestId: 2, sessions: [session("A"), session("B")], cancelAt: 3000, windowEnd: 4000 };
    const skipped = byId(evaluate(r))["sessions-isolated"]!;
    expect(skipped.status).toBe("SKIP");
    expect(skipped.summary).toMatch(
      /^no evidence either way: sessions A and B both called with request id 2, and neither received progress on its token or an answer for its id in the 1000 ms watched after session A's cancel \(session A: 0 message\(s\), session B: 0 message\(s\)\)/,
    );
    // One message of its own in one session is the evidence a PASS needs.
    const own: Message = {
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: "mcp-cancellable-probe-session-B", progress: 1 },
    };
    r.sessions.sessions = [session("A"), session("B", [{ at: 3100, message: own }])];
    expect(byId(evaluate(r))["sessions-isolated"]!.status).toBe("PASS");
  });

  it("http-cancel-mechanism on 2026-07-28: a request closed before its response headers (a server that holds its head) is the cancel: PASS, worded so", () => {
    const r = withEvents(fenced([[10, "client", call]], 20), [
      { at: 501, from: "client", kind: "http", text: "closed the request of POST tools/call #2 before its response headers came" },
    ]);
    r.transport = "http";
    r.era = "2026-07-28";
    r.main!.fence = exchangeOf(3, 502, 520);
    r.events.push({ seq: r.events.length, at: 520, from: "server", kind: "message", message: listed(3) });
    const check = byId(evaluate(r))["http-cancel-mechanism"]!;
    expect(check.status, check.summary).toBe("PASS");
    expect(check.summary).toBe(
      "the client closed the request of #2 before its response headers came (closing the request closes its stream too) and sent no notification, and the server answered the next request",
    );
  });

  it("silent-after-cancel PASS says what was seen: on 2026-07-28 the fence cannot show the server read the cancel; without the fence's answer, nobody knows", () => {
    const modern = fenced(
      [
        [10, "client", call],
        [500, "client", cancel],
      ],
      520,
    );
    modern.transport = "http";
    modern.era = "2026-07-28";
    const onModern = byId(evaluate(modern))["silent-after-cancel"]!;
    expect(onModern.status).toBe("PASS");
    expect(onModern.summary).not.toMatch(/after the server had read the cancel/);
    expect(onModern.summary).toMatch(
      /^no result, error or progress for #2 after the cancel, watched to \+1000 ms: on 2026-07-28 the cancel closed the response stream of #2, so nothing for it could come on that stream; when the server noticed the close is not visible/,
    );
    // stdio, the server exited as it read the cancel: the fence got no answer.
    const events = timeline([
      [10, "client", call],
      [200, "server", progress(1)],
      [500, "client", cancel],
      [501, "client", list(3)],
    ]);
    events.push({ seq: events.length, at: 509, from: "server", kind: "closed", text: "connection closed" });
    const exited = run(events);
    exited.closedAt = 509;
    exited.lost = { how: "exited with code 5", running: false };
    exited.main!.fence = exchangeOf(3, 501, undefined);
    const checks = byId(evaluate(exited));
    for (const id of ["silent-after-cancel", "work-stops"]) {
      expect(checks[id]!.status).toBe("PASS");
      expect(checks[id]!.summary).not.toMatch(/after the server had read/);
      expect(checks[id]!.summary).toMatch(
        /the request sent right after the cancel got no answer, so whether, and when, the server read the cancel is not known/,
      );
    }
    expect(checks["silent-after-cancel"]!.summary).toMatch(
      /^no result, error or progress for #2 after the cancel, watched until the connection closed, \+9 ms/,
    );
    // With the fence answered on stdio, it does say so, and when.
    const read = byId(
      evaluate(
        fenced(
          [
            [10, "client", call],
            [500, "client", cancel],
          ],
          520,
        ),
      ),
    )["silent-after-cancel"]!;
    expect(read.summary).toMatch(
      /^no result, error or progress for #2 after the server had read the cancel \(by \+20 ms: it answered the request sent right after it\), watched to \+1000 ms$/,
    );
  });
});
