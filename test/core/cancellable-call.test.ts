import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CancellableCall } from "../../src/core.js";
import { CallCancelledError, CallTimeoutError, ConnectionClosedError } from "../../src/index.js";
import type { CallOptions, CancelMechanism, RunRecord } from "../../src/index.js";
import { resolveCallOptions } from "../../src/options/resolve.js";
import { settleOf } from "../helpers/peer.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { ProtocolError } from "@modelcontextprotocol/client";

/** A call with recording hooks, driven by fake timers; the clock is the faked Date. */
function makeCall(options: CallOptions = {}, mechanism: CancelMechanism = "notification") {
  const cancels: string[] = [];
  const records: RunRecord[] = [];
  let settledCount = 0;
  const setTimeoutSpy = vi.fn((callback: () => void, ms: number) => setTimeout(callback, ms));
  const call = new CancellableCall<string>({
    method: "tools/call",
    name: "report",
    options: resolveCallOptions({}, options),
    clock: () => Date.now(),
    timers: { setTimeout: setTimeoutSpy, clearTimeout: (handle) => clearTimeout(handle as never) },
    hooks: {
      cancel: (_call, reason) => {
        cancels.push(reason);
        return mechanism;
      },
      settled: () => void settledCount++,
      record: (record) => void records.push(record),
    },
  });
  const outcome = settleOf(call.promise);
  return { call, cancels, records, outcome, setTimeoutSpy, settled: () => settledCount };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  expect(vi.getTimerCount()).toBe(0); // no call leaves a timer behind
  vi.useRealTimers();
});

describe("CancellableCall: idle timeout (rules 14, 15)", () => {
  it("times out exactly at timeoutMs, cancels once, and rejects with REQUEST_TIMEOUT", async () => {
    const { call, cancels, outcome, records } = makeCall({ timeoutMs: 100 });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(99);
    expect(outcome.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome.status).toBe("rejected");
    const error = outcome.error as CallTimeoutError;
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(error.code).toBe("REQUEST_TIMEOUT");
    expect(error.timeoutMs).toBe(100);
    expect(cancels).toEqual(["Request timed out after 100 ms"]);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      requestId: 1,
      status: "cancelled",
      outcome: "unverified",
      elapsedMs: 100,
      cancel: { trigger: "timeout", mechanism: "notification", reason: "Request timed out after 100 ms" },
      summary: "cancelled (timeout), outcome unverified",
    });
  });

  it("Infinity arms no timer at all (never a 0 or overflowing delay)", () => {
    const { call, setTimeoutSpy } = makeCall({ timeoutMs: Number.POSITIVE_INFINITY, maxTotalTimeoutMs: Number.POSITIVE_INFINITY });
    call.start();
    expect(setTimeoutSpy).not.toHaveBeenCalled();
    call.succeed("ok");
  });

  it("clamps delays to 2_147_483_647 ms", () => {
    const { call, setTimeoutSpy } = makeCall({ timeoutMs: 2_147_483_647, maxTotalTimeoutMs: Number.POSITIVE_INFINITY });
    call.start();
    expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
    expect(setTimeoutSpy.mock.calls[0]![1]).toBe(2_147_483_647);
    call.succeed("ok");
  });
});

describe("CancellableCall: maximum total timeout (rule 17)", () => {
  it("holds without any progress (the SDK checks it only when progress arrives)", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 1000, maxTotalTimeoutMs: 150 });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(149);
    expect(outcome.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect((outcome.error as CallTimeoutError).code).toBe("MAX_TOTAL_TIMEOUT");
  });

  it("progress resets the idle timeout only when asked, and only for increasing values (rule 21)", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 100, resetTimeoutOnProgress: true, maxTotalTimeoutMs: 1000 });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(90);
    expect(call.progress({ progress: 1 })).toBe(true);
    await vi.advanceTimersByTimeAsync(90); // t=180: alive thanks to the reset at 90
    expect(outcome.status).toBe("pending");
    expect(call.progress({ progress: 1 })).toBe(false); // not increasing: no reset
    await vi.advanceTimersByTimeAsync(10); // t=190 = 90 + 100
    expect((outcome.error as CallTimeoutError).code).toBe("REQUEST_TIMEOUT");
    expect((outcome.error as CallTimeoutError).record.progress).toEqual({ count: 2, last: { progress: 1 } });
  });

  it("without resetTimeoutOnProgress progress does not extend the call", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 100 });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(60);
    call.progress({ progress: 1 });
    await vi.advanceTimersByTimeAsync(40);
    expect((outcome.error as CallTimeoutError).code).toBe("REQUEST_TIMEOUT");
  });
});

describe("CancellableCall: the caller's AbortSignal", () => {
  it("an abort is CANCELLED with the signal's reason as cause, never a timeout", async () => {
    const controller = new AbortController();
    const { call, outcome, cancels } = makeCall({ timeoutMs: 100, signal: controller.signal });
    call.start();
    call.bind(7);
    await vi.advanceTimersByTimeAsync(40);
    const reason = new Error("user pressed stop");
    controller.abort(reason);
    await Promise.resolve();
    const error = outcome.error as CallCancelledError;
    expect(error).toBeInstanceOf(CallCancelledError);
    expect(error.code).toBe("CANCELLED");
    expect(error.cause).toBe(reason);
    expect(cancels).toEqual(["Cancelled by the client"]); // the abort reason stays local (the cause)
    expect(error.record.summary).toBe("cancelled (aborted), outcome unverified");
  });

  it("a signal that timed out (its reason a TimeoutError: AbortSignal.timeout, a framework's own timeout) is a timeout, never a user abort (issue 28, item 4)", async () => {
    const controller = new AbortController();
    const { call, outcome, cancels } = makeCall({ timeoutMs: 1_000, signal: controller.signal });
    call.start();
    call.bind(7);
    await vi.advanceTimersByTimeAsync(250);
    const reason = new DOMException("The operation was aborted due to timeout", "TimeoutError");
    controller.abort(reason);
    await Promise.resolve();
    const error = outcome.error as CallTimeoutError;
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(error.code).toBe("REQUEST_TIMEOUT");
    expect(error.cause).toBe(reason);
    // The signal's own limit is not readable: the time the call had run when it fired.
    expect(error.timeoutMs).toBe(250);
    expect(cancels).toEqual(["Request timed out after 250 ms (the caller's signal)"]);
    expect(error.record).toMatchObject({ cancel: { trigger: "timeout" }, summary: "cancelled (timeout), outcome unverified" });
    expect(error.message).toContain("timed out after 250 ms (the caller's signal timed out");
    // Already timed out before the call starts: the same, nothing sent.
    const before = makeCall({ signal: AbortSignal.abort(reason) });
    before.call.start();
    await Promise.resolve();
    expect(before.outcome.error).toBeInstanceOf(CallTimeoutError);
    expect((before.outcome.error as CallTimeoutError).record.cancel?.trigger).toBe("timeout");
  });
  it("a private abort reason never goes on the wire nor into the record by default; it stays the error's cause", async () => {
    for (const secret of [new Error("credentials revoked for connector acme-prod-billing"), "tenant 42 over quota (internal)"]) {
      const controller = new AbortController();
      const { call, cancels, records, outcome } = makeCall({ signal: controller.signal });
      call.start();
      call.bind(1);
      controller.abort(secret);
      await Promise.resolve();
      expect(cancels).toEqual(["Cancelled by the client"]);
      expect(JSON.stringify(records)).not.toMatch(/acme|tenant/);
      expect(records[0]!.cancel!.reason).toBe("Cancelled by the client");
      expect((outcome.error as CallCancelledError).cause).toBe(secret);
    }
  });

  it("forwardAbortReason: true sends the abort reason's text (readable, not String(reason)); an explicit reason still wins", () => {
    const controller = new AbortController();
    const forwarded = makeCall({ signal: controller.signal, forwardAbortReason: true });
    forwarded.call.start();
    forwarded.call.bind(1);
    controller.abort(new Error("user pressed stop"));
    expect(forwarded.cancels).toEqual(["user pressed stop"]); // not "Error: user pressed stop"
    const other = new AbortController();
    const explicit = makeCall({ signal: other.signal, forwardAbortReason: true, reason: "budget spent" });
    explicit.call.start();
    explicit.call.bind(1);
    other.abort("private text");
    expect(explicit.cancels).toEqual(["budget spent"]);
  });

  it("the default reasons name only the trigger", async () => {
    const idle = makeCall({ timeoutMs: 30_000, maxTotalTimeoutMs: 120_000 });
    idle.call.start();
    idle.call.bind(1);
    await vi.advanceTimersByTimeAsync(30_000);
    const total = makeCall({ timeoutMs: 100_000, maxTotalTimeoutMs: 120_000, resetTimeoutOnProgress: true });
    total.call.start();
    total.call.bind(2);
    for (let t = 0; t < 12; t++) {
      await vi.advanceTimersByTimeAsync(10_000);
      total.call.progress({ progress: t });
    }
    expect(idle.cancels).toEqual(["Request timed out after 30000 ms"]);
    expect(total.cancels).toEqual(["Request exceeded its maximum total timeout of 120000 ms"]);
  });

  it("a signal aborted before the call starts sends nothing and says so", () => {
    const { call, outcome, records } = makeCall({ signal: AbortSignal.abort("stop"), timeoutMs: 100 });
    call.start();
    expect(outcome.status).toBe("pending"); // settles on the next microtask
    expect(call.settled).toBe(true);
    expect(records[0]).toMatchObject({ requestId: null, outcome: "not-sent", summary: "cancelled (aborted), never sent" });
  });

  it("the error of a call whose signal was already aborted says it was never sent, not 'request id null' (issue 15 item 9)", async () => {
    const { call, outcome } = makeCall({ signal: AbortSignal.abort("stop"), timeoutMs: 100 });
    call.start();
    await Promise.resolve();
    const error = outcome.error as CallCancelledError;
    expect(error).toBeInstanceOf(CallCancelledError);
    expect(error.message).toBe(
      "tools/call was cancelled by the caller before it was sent (never sent: the abort came before its request was made)",
    );
    expect(error.message).not.toMatch(/request id null/);
  });

  it("adds exactly one listener per call and removes it on every settle path", async () => {
    const controller = new AbortController();
    const add = vi.spyOn(controller.signal, "addEventListener");
    const remove = vi.spyOn(controller.signal, "removeEventListener");
    const paths: Array<(call: CancellableCall<string>) => void | Promise<void>> = [
      (call) => call.succeed("ok"),
      (call) => call.fail(new Error("boom")),
      (call) => call.cancel("connection-closed"),
      async () => void (await vi.advanceTimersByTimeAsync(100)),
      (call) => call.responded(),
    ];
    for (const settle of paths) {
      const { call } = makeCall({ timeoutMs: 100, signal: controller.signal });
      call.start();
      call.bind(1);
      await settle(call);
      if (!call.settled) call.succeed("ok");
    }
    expect(add).toHaveBeenCalledTimes(paths.length);
    expect(remove.mock.calls.filter(([type]) => type === "abort").length).toBeGreaterThanOrEqual(paths.length);
    for (const [, listener] of add.mock.calls) {
      expect(remove.mock.calls.some(([, removed]) => removed === listener)).toBe(true);
    }
  });

  it("String(reason) never reaches the wire: objects and AbortErrors get a plain sentence", () => {
    for (const reason of [{ some: "object" }, new DOMException("x", "AbortError"), undefined]) {
      const controller = new AbortController();
      const { call, cancels } = makeCall({ signal: controller.signal, forwardAbortReason: true });
      call.start();
      call.bind(1);
      controller.abort(reason);
      expect(cancels).toEqual(["Cancelled by the client"]);
    }
  });

  it("cuts reasons to 1,000 characters", () => {
    const { call, cancels } = makeCall({ reason: "x".repeat(5000) });
    call.start();
    call.bind(1);
    call.cancel("aborted");
    expect(cancels[0]!.length).toBe(1000);
  });
});

describe("CancellableCall: settles exactly once", () => {
  it("the first event wins; later ones are no-ops", async () => {
    const { call, outcome, cancels, settled, records } = makeCall({ timeoutMs: 100 });
    call.start();
    call.bind(1);
    call.succeed("result");
    call.fail(new Error("late"));
    call.cancel("aborted");
    await vi.advanceTimersByTimeAsync(500);
    expect(outcome).toMatchObject({ status: "fulfilled", value: "result" });
    expect(cancels).toEqual([]);
    expect(settled()).toBe(1);
    expect(records.map((r) => r.summary)).toEqual(["succeeded"]);
  });

  it("once the response arrived, neither a timer nor an abort can win over it (rule 9)", async () => {
    const controller = new AbortController();
    const { call, outcome, cancels } = makeCall({ timeoutMs: 100, signal: controller.signal });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(99);
    call.responded();
    controller.abort();
    await vi.advanceTimersByTimeAsync(10);
    call.succeed("result");
    await Promise.resolve();
    expect(outcome.status).toBe("fulfilled");
    expect(cancels).toEqual([]);
  });

  it("connection close settles as CONNECTION_CLOSED without sending a cancel", () => {
    const { call, outcome, cancels, records } = makeCall();
    call.start();
    call.bind(3);
    call.cancel("connection-closed");
    return Promise.resolve().then(() => {
      expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
      expect(cancels).toEqual([]);
      expect(records[0]!.cancel).toMatchObject({ trigger: "connection-closed", mechanism: "none", sentAt: null });
    });
  });

  it("a JSON-RPC error from the server is passed on untouched and recorded as failed", async () => {
    const { call, outcome, records } = makeCall();
    call.start();
    call.bind(1);
    const error = new McpError(-32602, "Invalid params");
    call.fail(error);
    await Promise.resolve();
    expect(outcome.error).toBe(error);
    expect(records[0]).toMatchObject({ status: "failed", outcome: "error", summary: "failed (-32602 Invalid params)" });
  });

  // Issue 15 item 7: the server itself wrote "MCP error -32601: Unknown tool: nope" (a server built
  // on the v1 SDK does). v1's McpError adds its own prefix in front, v2's ProtocolError adds none:
  // the record keeps the server's words on both lines.
  for (const [line, error] of [
    ["v1 McpError", new McpError(-32601, "MCP error -32601: Unknown tool: nope")],
    ["v2 ProtocolError", new ProtocolError(-32601, "MCP error -32601: Unknown tool: nope")],
  ] as const) {
    it(`${line}: the record keeps the server's own words, prefix included`, async () => {
      const { call, records } = makeCall();
      call.start();
      call.bind(1);
      call.fail(error);
      await Promise.resolve();
      expect(records[0]!.error).toEqual({ code: -32601, message: "MCP error -32601: Unknown tool: nope" });
      expect(records[0]!.summary).toBe("failed (-32601 MCP error -32601: Unknown tool: nope)");
    });
  }
});

describe("CancellableCall: after the cancel (rules 8, 11)", () => {
  it("late results and errors become 'late result discarded'; late progress is only counted", async () => {
    const { call, records } = makeCall({ timeoutMs: 50 });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(50);
    call.late("progress");
    expect(records.at(-1)).toMatchObject({ outcome: "unverified", late: { progress: 1, results: 0 }, revision: 1 });
    call.late("result");
    call.late("error");
    expect(records.at(-1)).toMatchObject({
      outcome: "late-result-discarded",
      late: { progress: 1, results: 1, errors: 1 },
      revision: 3,
      summary: "cancelled (timeout), late result discarded",
    });
  });

  it("a late message after a success is counted but changes nothing else", () => {
    const { call, records } = makeCall();
    call.start();
    call.bind(1);
    call.succeed("ok");
    call.late("result");
    expect(records.at(-1)).toMatchObject({ status: "succeeded", outcome: "completed", late: { results: 1 } });
  });
});

describe("CancellableCall: verification (the worked example's second rule)", () => {
  const cases = [
    { name: "applied", verify: () => "applied" as const, outcome: "verified-applied" },
    { name: "not applied", verify: async () => "not-applied" as const, outcome: "verified-not-applied" },
    { name: "throws", verify: () => Promise.reject(new Error("disk gone")), outcome: "verify-failed" },
    { name: "answers nonsense", verify: () => "maybe" as never, outcome: "verify-failed" },
  ];
  for (const { name, verify, outcome } of cases) {
    it(`verify ${name} → ${outcome}`, async () => {
      const { call, outcome: settled } = makeCall({ timeoutMs: 50, verify });
      call.start();
      call.bind(1);
      await vi.advanceTimersByTimeAsync(50);
      const error = settled.error as CallTimeoutError;
      expect(error.record.outcome).toBe("unverified"); // the caller is released before verification
      const record = await error.verification;
      expect(record.outcome).toBe(outcome);
      expect(record.revision).toBe(1);
    });
  }

  it("a verify that never answers fails at verifyTimeoutMs and its signal aborts", async () => {
    let seen: AbortSignal | undefined;
    const { call, outcome } = makeCall({
      timeoutMs: 50,
      verifyDelayMs: 100,
      verifyTimeoutMs: 200,
      verify: ({ signal }) => {
        seen = signal;
        return new Promise(() => {});
      },
    });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(50);
    const verification = settleOf((outcome.error as CallTimeoutError).verification);
    await vi.advanceTimersByTimeAsync(99);
    expect(seen).toBeUndefined(); // verifyDelayMs not over yet
    await vi.advanceTimersByTimeAsync(1);
    expect(seen?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(200);
    expect(seen?.aborted).toBe(true);
    expect(verification.value).toMatchObject({
      outcome: "verify-failed",
      verification: { error: "verify did not answer within 200 ms (verifyTimeoutMs)" },
      summary: "cancelled (timeout), verification failed, outcome unverified",
    });
  });

  for (const [answer, kind, value] of [
    ["found row 7", "a string", '"found row 7"'],
    [undefined, "undefined", "undefined"],
    [10n, "a bigint", "10"],
    [{ row: 7 }, "an object", '{"row":7}'],
  ] as const) {
    it(`a verify that answers ${kind}: the record says its kind, then its value (a BigInt has no JSON: its text)`, async () => {
      const { call, outcome } = makeCall({ timeoutMs: 50, verify: () => answer as never });
      call.start();
      call.bind(1);
      await vi.advanceTimersByTimeAsync(50);
      const record = await (outcome.error as CallTimeoutError).verification;
      expect(record.outcome).toBe("verify-failed");
      expect(record.verification?.error).toBe(`verify must answer "applied" or "not-applied", got ${kind} (${value})`);
    });
  }

  it("a late result that does not say the work was done (a tool error) after verification does not overrule it", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 50, verify: () => "not-applied" });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(50);
    await (outcome.error as CallTimeoutError).verification;
    call.late("result", false);
    expect(call.record).toMatchObject({
      outcome: "verified-not-applied",
      late: { results: 1 },
      summary: "cancelled (timeout), verified not applied, late result discarded", // both facts
    });
  });

  it("a late result that says the work was done overrules a verification that found it not applied (the read came too early)", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 50, verify: () => "not-applied" });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(50);
    await (outcome.error as CallTimeoutError).verification;
    expect(call.record?.outcome).toBe("verified-not-applied");
    call.late("result", true);
    expect(call.record).toMatchObject({
      outcome: "late-result-discarded",
      late: { results: 1 },
      verification: { reads: [{ found: "not-applied" }] }, // the read is kept, as it was
      summary: "cancelled (timeout), late result discarded: it ran after all (a verification had found it not applied)",
    });
  });

  it("a late result that says the work was done, while the last read was under way: that read's not applied does not overrule it; one that came before the read does not overrule the read", async () => {
    // An outside tester's: the read looked before the work ended, the result came 400 ms into the
    // read, and the record then said verified not applied, though the server did it and said so.
    for (const arrives of ["during", "before"] as const) {
      let answer!: (found: "not-applied") => void;
      let reads = 0;
      const verify = () => {
        reads++;
        return arrives === "during" ? new Promise<"not-applied">((resolve) => (answer = resolve)) : ("not-applied" as const);
      };
      const { call, outcome } = makeCall({ timeoutMs: 50, verifyDelayMs: arrives === "before" ? 100 : 0, verify });
      call.start();
      call.bind(1);
      await vi.advanceTimersByTimeAsync(50);
      if (arrives === "during") {
        await vi.advanceTimersByTimeAsync(0);
        expect(reads).toBe(1);
        call.late("result", true);
        expect(call.record?.outcome).toBe("late-result-discarded");
        answer("not-applied");
      } else {
        call.late("result", true);
        await vi.advanceTimersByTimeAsync(100);
      }
      const record = await (outcome.error as CallTimeoutError).verification;
      expect(reads).toBe(1);
      if (arrives === "during") {
        expect(record).toMatchObject({
          outcome: "late-result-discarded",
          late: { results: 1 },
          verification: { reads: [{ found: "not-applied" }] },
          summary: "cancelled (timeout), late result discarded: it ran after all (a verification had found it not applied)",
        });
      } else {
        expect(record).toMatchObject({
          outcome: "verified-not-applied",
          summary: "cancelled (timeout), verified not applied, late result discarded",
        });
      }
    }
  });

  it("a late result that says the work was done does not overrule a verification that found it applied", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 50, verify: () => "applied" });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(50);
    await (outcome.error as CallTimeoutError).verification;
    call.late("result", true);
    expect(call.record).toMatchObject({
      outcome: "verified-applied",
      summary: "cancelled (timeout), verified applied, late result discarded",
    });
  });

  it("no verification for a request that was never sent", async () => {
    const verify = vi.fn(() => "applied" as const);
    const { call, outcome } = makeCall({ signal: AbortSignal.abort(), verify });
    call.start();
    await Promise.resolve();
    expect((await (outcome.error as CallCancelledError).verification).outcome).toBe("not-sent");
    expect(verify).not.toHaveBeenCalled();
  });
});

describe("CancellableCall: the errors it rejects with carry no stack frames", () => {
  it("timeout, abort and close: `stack` is the name and message alone; Error.stackTraceLimit is restored; an abort's cause keeps its stack", async () => {
    const before = Error.stackTraceLimit;
    Error.stackTraceLimit = 17; // a user's own setting survives every error made
    try {
      const timedOut = makeCall({ timeoutMs: 100 });
      timedOut.call.start();
      timedOut.call.bind(1);
      await vi.advanceTimersByTimeAsync(100);
      const controller = new AbortController();
      const aborted = makeCall({ signal: controller.signal });
      aborted.call.start();
      aborted.call.bind(2);
      const reason = new Error("user pressed stop");
      controller.abort(reason);
      const closed = makeCall();
      closed.call.start();
      closed.call.bind(3);
      closed.call.cancel("connection-closed", new Error("stdin ended"));
      await vi.advanceTimersByTimeAsync(0);
      const errors = [timedOut, aborted, closed].map((c) => c.outcome.error as Error);
      expect(errors.map((e) => e.constructor)).toEqual([CallTimeoutError, CallCancelledError, ConnectionClosedError]);
      for (const error of errors) expect(error.stack).toBe(`${error.name}: ${error.message}`);
      expect(Error.stackTraceLimit).toBe(17);
      expect(errors[1]!.cause).toBe(reason);
      expect(reason.stack).toMatch(/\n\s+at /); // where the caller made its reason
      expect(new Error("x").stack!.split("\n").length).toBeGreaterThan(1); // and Node's own errors keep theirs
    } finally {
      Error.stackTraceLimit = before;
    }
  });
});

describe("CancellableCall: verification with a window (issue 24 item 4)", () => {
  /** A verify whose answers are scripted by the time it is read (ms after the cancel). */
  function scripted(answer: (atMs: number) => "applied" | "not-applied" | Error) {
    const times: number[] = [];
    let cancelledAt = 0;
    const verify = () => {
      const at = Date.now() - cancelledAt;
      times.push(at);
      const value = answer(at);
      return value instanceof Error ? Promise.reject(value) : value;
    };
    return { verify, times, cancelAt: (at: number) => (cancelledAt = at) };
  }

  async function cancelWith(options: CallOptions, cancelAt: (at: number) => void) {
    const { call, outcome, records } = makeCall({ timeoutMs: 50, ...options });
    cancelAt(Date.now() + 50); // the timeout's cancel
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(50);
    expect(outcome.status).toBe("rejected"); // released at the cancel, before any read
    return { verification: settleOf((outcome.error as CallTimeoutError).verification), records };
  }

  it("an effect that shows up at 4.1 s: not applied as of 2.0 s, then applied at 4.1 s; the window stops at the read that found it", async () => {
    const effect = scripted((at) => (at >= 4_100 ? "applied" : "not-applied"));
    const { verification, records } = await cancelWith(
      { verify: effect.verify, verifyDelayMs: 2_000, verifyWindowMs: 10_000, verifyIntervalMs: 2_100 },
      effect.cancelAt,
    );
    await vi.advanceTimersByTimeAsync(1_999);
    expect(effect.times).toEqual([]); // verifyDelayMs
    await vi.advanceTimersByTimeAsync(1);
    expect(effect.times).toEqual([2_000]);
    expect(verification.status).toBe("pending"); // "not applied" is only "as of 2.0 s"
    await vi.advanceTimersByTimeAsync(2_100);
    expect(effect.times).toEqual([2_000, 4_100]);
    expect(verification.status).toBe("fulfilled");
    expect(verification.value).toMatchObject({
      outcome: "verified-applied",
      revision: 1,
      verification: {
        error: null,
        reads: [
          { atMs: 2_000, found: "not-applied", error: null },
          { atMs: 4_100, found: "applied", error: null },
        ],
        summary: "not applied as of 2.0 s; applied at 4.1 s",
      },
      summary: "cancelled (timeout), verified applied",
    });
    await vi.advanceTimersByTimeAsync(20_000);
    expect(effect.times).toHaveLength(2); // no read after the answer
    expect(records.at(-1)!.revision).toBe(1); // one revision, at the end
  });

  it("verified not applied only when the window ended with nothing: reads every interval and once at the window's end", async () => {
    const effect = scripted(() => "not-applied");
    const { verification } = await cancelWith({ verify: effect.verify, verifyWindowMs: 5_000, verifyIntervalMs: 2_000 }, effect.cancelAt);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(effect.times).toEqual([0, 2_000, 4_000]);
    expect(verification.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(effect.times).toEqual([0, 2_000, 4_000, 5_000]);
    expect(verification.value).toMatchObject({
      outcome: "verified-not-applied",
      verification: { summary: "not applied as of 5.0 s (4 reads from 0.0 s)" },
    });
  });

  it("a read that fails within the window is recorded and the next read goes on; a failed last read leaves verify-failed, not 'not applied'", async () => {
    const effect = scripted((at) => (at < 1_000 ? "not-applied" : new Error(`disk gone at ${at}`)));
    const { verification } = await cancelWith({ verify: effect.verify, verifyWindowMs: 2_000, verifyIntervalMs: 1_000 }, effect.cancelAt);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(effect.times).toEqual([0, 1_000, 2_000]);
    expect(verification.value).toMatchObject({
      outcome: "verify-failed",
      verification: {
        error: "disk gone at 2000",
        reads: [
          { atMs: 0, found: "not-applied" },
          { atMs: 1_000, found: "failed", error: "disk gone at 1000" },
          { atMs: 2_000, found: "failed", error: "disk gone at 2000" },
        ],
        summary: "read failed at 2.0 s (not applied as of 0.0 s)",
      },
    });
  });

  it("a read slower than the interval is followed at once, each read bounded by verifyTimeoutMs", async () => {
    let reads = 0;
    const { verification } = await cancelWith(
      {
        verifyWindowMs: 1_000,
        verifyIntervalMs: 100,
        verifyTimeoutMs: 300,
        verify: () => {
          reads++;
          return new Promise((resolve) => setTimeout(() => resolve("not-applied"), 250));
        },
      },
      () => 0,
    );
    await vi.advanceTimersByTimeAsync(250);
    expect(reads).toBe(2); // the second read started as the first answered (its interval had passed)
    await vi.advanceTimersByTimeAsync(2_000);
    expect(verification.value).toMatchObject({ outcome: "verified-not-applied" });
    const atMs = verification.value!.verification!.reads.map((r) => r.atMs);
    expect(atMs).toEqual([0, 250, 500, 750, 1_000]);
  });

  it("a read that runs past the window's end: the one after it gets only what is left of verifyWindowMs + verifyTimeoutMs, so the verification ends within its documented bound (an outside tester's: 1,805 ms against 1,600)", async () => {
    const starts: number[] = [];
    let cancelledAt = 0;
    const { verification } = await cancelWith(
      {
        verifyWindowMs: 1_000,
        verifyIntervalMs: 100,
        verifyTimeoutMs: 600,
        verify: () => {
          starts.push(Date.now() - cancelledAt);
          return new Promise(() => {}); // never answers
        },
      },
      (at) => (cancelledAt = at),
    );
    await vi.advanceTimersByTimeAsync(1_599);
    expect(starts).toEqual([0, 600, 1_200]); // the third after the window's end (the second ran past it)
    expect(verification.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(verification.status).toBe("fulfilled"); // at 1,600 ms: verifyWindowMs + verifyTimeoutMs
    expect(verification.value).toMatchObject({
      outcome: "verify-failed",
      verification: {
        error:
          "verify did not answer within 400 ms (what was left of the verification's bound: verifyWindowMs + verifyTimeoutMs from its first read)",
        reads: [
          { atMs: 0, found: "failed", error: "verify did not answer within 600 ms (verifyTimeoutMs)" },
          { atMs: 600, found: "failed" },
          { atMs: 1_200, found: "failed" },
        ],
      },
    });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(starts).toHaveLength(3); // nothing after the bound
  });

  it("without a window: one read, as before (its record lists it)", async () => {
    const effect = scripted(() => "not-applied");
    const { verification } = await cancelWith({ verify: effect.verify }, effect.cancelAt);
    await vi.advanceTimersByTimeAsync(0);
    expect(effect.times).toEqual([0]);
    expect(verification.value).toMatchObject({
      outcome: "verified-not-applied",
      verification: { reads: [{ atMs: 0, found: "not-applied", error: null }], summary: "not applied as of 0.0 s" },
    });
  });

  for (const [option, value, message] of [
    ["verifyWindowMs", -1, /verifyWindowMs.*from 0 to 2147483647/],
    ["verifyWindowMs", Number.POSITIVE_INFINITY, /verifyWindowMs.*from 0 to 2147483647; received Infinity/],
    ["verifyIntervalMs", 0, /verifyIntervalMs.*from 1 to 2147483647; received 0/],
    ["verifyIntervalMs", 1.5, /verifyIntervalMs.*received 1.5/],
  ] as const) {
    it(`${option}: ${value} is refused with an error naming the option`, () => {
      expect(() => resolveCallOptions({}, { [option]: value })).toThrow(message);
    });
  }
});

describe("CancellableCall: waiting on the client pauses the idle timeout (issue 29, item 4)", () => {
  it("a client wait pauses the idle timeout at most clientWaitTimeoutMs; the answer restarts it in full", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 100, clientWaitTimeoutMs: 1_000 });
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(50);
    call.clientWait(); // the server asked the client something at 50
    await vi.advanceTimersByTimeAsync(500); // far past the idle timeout: still pending
    expect(outcome.status).toBe("pending");
    call.clientAnswered(); // answered at 550: 100 ms of the server's silence from now
    await vi.advanceTimersByTimeAsync(99);
    expect(outcome.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome.status).toBe("rejected");
    expect(outcome.error).toMatchObject({ code: "REQUEST_TIMEOUT", timeoutMs: 100 });
  });

  it("two waits at once: only the last answer restarts the idle timeout; progress never shortens the pause", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 100, clientWaitTimeoutMs: 1_000, resetTimeoutOnProgress: true });
    call.start();
    call.bind(1, "p");
    call.clientWait();
    call.clientWait();
    await vi.advanceTimersByTimeAsync(300);
    call.progress({ progress: 1 }); // would set the idle deadline to 400: the pause (to 1,000) stays
    call.clientAnswered();
    await vi.advanceTimersByTimeAsync(300);
    expect(outcome.status).toBe("pending");
    call.clientAnswered(); // at 600: 100 ms from now
    await vi.advanceTimersByTimeAsync(100);
    expect(outcome.status).toBe("rejected");
  });

  it("past clientWaitTimeoutMs the call times out, the reason and the error naming that bound", async () => {
    const { call, cancels, outcome } = makeCall({ timeoutMs: 100, clientWaitTimeoutMs: 400 });
    call.start();
    call.bind(1);
    call.clientWait();
    await vi.advanceTimersByTimeAsync(399);
    expect(outcome.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome.error).toMatchObject({ code: "REQUEST_TIMEOUT", timeoutMs: 400 });
    expect(cancels).toEqual(["The client's answer to the server's request did not come within clientWaitTimeoutMs (400 ms)"]);
  });

  it("a clientWaitTimeoutMs shorter than the idle timeout bounds the wait (an outside tester's: the idle timeout came at 5,000 ms, the error said 1,000)", async () => {
    const { call, cancels, outcome } = makeCall({ timeoutMs: 5_000, clientWaitTimeoutMs: 1_000, resetTimeoutOnProgress: true });
    call.start();
    call.bind(1, "p");
    await vi.advanceTimersByTimeAsync(100);
    call.clientWait(); // the server asked the client something at 100: the wait ends at 1,100
    await vi.advanceTimersByTimeAsync(500);
    call.progress({ progress: 1 }); // the idle timeout is paused: progress does not move the bound
    await vi.advanceTimersByTimeAsync(499);
    expect(outcome.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome.error).toMatchObject({ code: "REQUEST_TIMEOUT", timeoutMs: 1_000, limitName: "clientWaitTimeoutMs" });
    expect(cancels).toEqual(["The client's answer to the server's request did not come within clientWaitTimeoutMs (1000 ms)"]);
  });

  it("two waits that overlap: the later one's bound holds while it is unanswered (an outside tester's: the first one's cut the call)", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 5_000, clientWaitTimeoutMs: 1_000 });
    call.start();
    call.bind(1);
    call.clientWait(); // at 0: bound 1,000
    await vi.advanceTimersByTimeAsync(500);
    call.clientWait(); // at 500: bound 1,500
    await vi.advanceTimersByTimeAsync(300);
    call.clientAnswered(); // the first, at 800: the second still waits
    await vi.advanceTimersByTimeAsync(699);
    expect(outcome.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome.error).toMatchObject({ code: "REQUEST_TIMEOUT", limitName: "clientWaitTimeoutMs", timeoutMs: 1_000 });
  });

  it("a call with no idle timeout (timeoutMs Infinity, a listen) gets none from a client wait; the maximum total timeout holds", async () => {
    const { call, outcome } = makeCall({ timeoutMs: Number.POSITIVE_INFINITY, maxTotalTimeoutMs: 5_000, clientWaitTimeoutMs: 100 });
    call.start();
    call.bind(1);
    call.clientWait();
    await vi.advanceTimersByTimeAsync(4_999);
    expect(outcome.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome.error).toMatchObject({ code: "MAX_TOTAL_TIMEOUT" });
  });

  it("the maximum total timeout holds during a client wait", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 100, maxTotalTimeoutMs: 250, clientWaitTimeoutMs: 10_000 });
    call.start();
    call.bind(1);
    call.clientWait();
    await vi.advanceTimersByTimeAsync(250);
    expect(outcome.error).toMatchObject({ code: "MAX_TOTAL_TIMEOUT" });
  });
});

describe("CancellableCall: a response read after its limit passed is late (soak finding, rule 8)", () => {
  it("the caller's error says the tool ran (its answer discarded), not only that it was cancelled (an outside tester's: a model read 'was cancelled')", async () => {
    const timedOut = makeCall({ timeoutMs: 100 });
    timedOut.call.start();
    timedOut.call.bind(1);
    vi.setSystemTime(Date.now() + 150);
    expect(timedOut.call.responded("result")).toBe(false);
    await vi.advanceTimersByTimeAsync(0);
    expect((timedOut.outcome.error as Error).message).toBe(
      "tools/call timed out after 100 ms (the idle timeout, timeoutMs; request id 1) and was cancelled; it ran: the server's answer came as the call was given up and was discarded (late result discarded): check its effects before calling it again",
    );
  });

  it("a busy event loop read the response before running the overdue timer: the limit came first; the response is late, not the result", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 100 });
    call.start();
    call.bind(1);
    vi.setSystemTime(Date.now() + 150); // the clock moved on; the timer has not run yet
    expect(call.responded()).toBe(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(outcome.error).toMatchObject({ code: "REQUEST_TIMEOUT" });
    expect(call.record).toMatchObject({
      status: "cancelled",
      cancel: {
        trigger: "timeout",
        mechanism: "none",
        sentAt: null,
        undelivered: { mechanism: "notification", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
      },
    });
  });

  it("the first record (the caller's error.record) already counts the late response and says it was discarded (an outside tester's: 'outcome unverified' beside 'the response arrived first')", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 100 });
    call.start();
    call.bind(1);
    vi.setSystemTime(Date.now() + 150);
    expect(call.responded("result")).toBe(false);
    await vi.advanceTimersByTimeAsync(0);
    const first = (outcome.error as { record: RunRecord }).record;
    expect(first).toMatchObject({
      revision: 0,
      outcome: "late-result-discarded",
      late: { results: 1, errors: 0 },
      summary: "cancelled (timeout), late result discarded",
      cancel: { mechanism: "none", undelivered: { error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" } },
    });
    expect(call.record!.revision).toBe(0);
  });

  it("a response at the deadline itself, or before it, is the result", async () => {
    const { call, outcome } = makeCall({ timeoutMs: 100 });
    call.start();
    call.bind(1);
    vi.setSystemTime(Date.now() + 100);
    expect(call.responded()).toBe(true);
    call.succeed("done");
    await vi.advanceTimersByTimeAsync(0);
    expect(outcome).toMatchObject({ status: "fulfilled", value: "done" });
  });
});

describe("CancellableCall without a promise (an entry point that answers from the call itself)", () => {
  function promiseless(options: CallOptions = {}) {
    const rejections: Array<{ call: CancellableCall; error: unknown; settledThen: boolean }> = [];
    const owner = { tag: "the entry point's own" };
    const call = new CancellableCall<string>({
      method: "tools/call",
      name: "report",
      options: resolveCallOptions({}, options),
      clock: () => Date.now(),
      timers: { setTimeout: (callback, ms) => setTimeout(callback, ms), clearTimeout: (handle) => clearTimeout(handle as never) },
      hooks: {
        cancel: () => "notification",
        settled: () => {},
        rejected: (settledCall, error) => void rejections.push({ call: settledCall, error, settledThen: settledCall.settled }),
      },
      owner,
      promise: false,
    });
    return { call, rejections, owner, outcome: settleOf(call.promise) };
  }

  it("a timeout reaches hooks.rejected once, after the settle, with the error a promise would carry; its promise never settles", async () => {
    const { call, rejections, owner, outcome } = promiseless({ timeoutMs: 100 });
    call.start();
    call.bind(7);
    await vi.advanceTimersByTimeAsync(100);
    expect(rejections).toHaveLength(1);
    expect(rejections[0]!.call).toBe(call);
    expect(rejections[0]!.call.owner).toBe(owner);
    expect(rejections[0]!.settledThen).toBe(true);
    expect(rejections[0]!.error).toBeInstanceOf(CallTimeoutError);
    expect((rejections[0]!.error as CallTimeoutError).record).toMatchObject({ requestId: 7, status: "cancelled" });
    call.cancel("aborted"); // settled already: nothing more
    call.fail(new Error("late"));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(rejections).toHaveLength(1);
    expect(outcome.status).toBe("pending");
  });

  it("the server's error reaches hooks.rejected as it came; a result reaches none", async () => {
    const failed = promiseless({ timeoutMs: 100 });
    failed.call.start();
    const serverError = new McpError(-32602, "bad arguments");
    failed.call.fail(serverError);
    expect(failed.rejections.map((r) => r.error)).toEqual([serverError]);
    const answered = promiseless({ timeoutMs: 100 });
    answered.call.start();
    answered.call.succeed("done");
    await vi.advanceTimersByTimeAsync(200);
    expect(answered.rejections).toEqual([]);
    expect(answered.call.record).toMatchObject({ status: "succeeded" });
  });
});

describe("CancellableCall: what a layer knew during the cancel itself", () => {
  /** A call whose cancel hook tells `report` at once; `later` tells what the layer learned after the settle. */
  function callTellingAtOnce(report: Parameters<CancellableCall<string>["delivery"]>[0]) {
    const records: RunRecord[] = [];
    let later: ((report: Parameters<CancellableCall<string>["delivery"]>[0]) => void) | undefined;
    const call: CancellableCall<string> = new CancellableCall<string>({
      method: "tools/call",
      name: "report",
      options: resolveCallOptions({}, { timeoutMs: 100 }),
      clock: () => Date.now(),
      timers: { setTimeout: (callback, ms) => setTimeout(callback, ms), clearTimeout: (handle) => clearTimeout(handle as never) },
      hooks: {
        cancel: (cancelled) => {
          // The layer decided before the settle existed (its delivery was known at once).
          cancelled.delivery(report);
          later = (next) => cancelled.delivery(next);
          return "notification+stream-close";
        },
        settled: () => {},
        record: (record) => void records.push(record),
      },
    });
    const outcome = settleOf(call.promise);
    call.start();
    call.bind(7);
    return { call, records, outcome, later: (next: Parameters<CancellableCall<string>["delivery"]>[0]) => later!(next) };
  }

  it("a notification not sent because the answer came first: the first record says so (revision 0), not what cancel() returned", async () => {
    const { records, outcome } = callTellingAtOnce({
      sent: "none",
      failed: { mechanism: "notification", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
    });
    await vi.advanceTimersByTimeAsync(100);
    expect(outcome.status).toBe("rejected");
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      revision: 0,
      outcome: "unverified",
      cancel: {
        mechanism: "none",
        sentAt: null,
        undelivered: { mechanism: "notification", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
      },
    });
    expect((outcome.error as CallTimeoutError).record).toEqual(records[0]);
  });

  it("a request that provably never reached the server: not-sent at the settle", async () => {
    const { records } = callTellingAtOnce({ sent: "none", failed: null });
    await vi.advanceTimersByTimeAsync(100);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ revision: 0, outcome: "not-sent", cancel: { mechanism: "none", sentAt: null, undelivered: null } });
  });

  it("held (not out yet): the first record says sentAt null; a later report that something went with no time of its own gives the time it came, never a mechanism with sentAt null", async () => {
    const { records, outcome, later } = callTellingAtOnce({ sent: "notification+stream-close", failed: null, sentWall: null });
    await vi.advanceTimersByTimeAsync(100);
    expect(outcome.status).toBe("rejected");
    expect(records[0]).toMatchObject({ revision: 0, cancel: { mechanism: "notification+stream-close", sentAt: null } });
    await vi.advanceTimersByTimeAsync(250);
    const at = Date.now();
    // The wait ended: the notification was not sent, the stream was closed (no time given).
    later({ sent: "stream-close", failed: { mechanism: "notification", error: "not sent: the request had not reached the server" } });
    const reported = records.at(-1)!.cancel;
    expect(reported).toMatchObject({ mechanism: "stream-close", undelivered: { mechanism: "notification" } });
    expect(Date.parse(reported!.sentAt!)).toBeGreaterThanOrEqual(at);
  });
});

describe("CancellableCall: a connection the client closed is not a lost one", () => {
  it("client.close() (closing): the error says the client closed it; a dropped connection says it was lost; neither says 'connection closed'", async () => {
    const closed = makeCall({ timeoutMs: 1_000 });
    closed.call.start();
    closed.call.bind(1);
    closed.call.closing();
    const lost = makeCall({ timeoutMs: 1_000 });
    lost.call.start();
    lost.call.bind(2);
    lost.call.cancel("connection-closed");
    await vi.advanceTimersByTimeAsync(0);
    const byClient = closed.outcome.error as ConnectionClosedError;
    const dropped = lost.outcome.error as ConnectionClosedError;
    expect(byClient).toBeInstanceOf(ConnectionClosedError);
    expect(byClient.message).toMatch(/^tools\/call \(request id 1\) was pending when the client closed its connection and was not retried/);
    expect(dropped.message).toMatch(/^tools\/call \(request id 2\) was pending when its connection was lost and was not retried/);
    // Frameworks (Mastra's MCPClient) send a call again when an error says "connection closed".
    expect([byClient.message, dropped.message].some((message) => /connection closed/i.test(message))).toBe(false);
    expect(byClient.record.cancel).toMatchObject({ trigger: "connection-closed", reason: "The client closed the connection" });
  });
});

describe("CancellableCall: values the library did not make (found from outside)", () => {
  it("a signal that aborted before a close reached the call: the close settles it as aborted (its cause kept), not connection-closed", async () => {
    const controller = new AbortController();
    const { call, outcome, cancels } = makeCall({ timeoutMs: 1_000, signal: controller.signal });
    call.bind(1); // not started: the abort's fan-out has not reached it (a shared signal settles in slices)
    const reason = new Error("user stop");
    controller.abort(reason);
    call.closing(); // client.close() in the same tick
    await vi.advanceTimersByTimeAsync(0);
    expect(outcome.error).toBeInstanceOf(CallCancelledError);
    expect((outcome.error as CallCancelledError).cause).toBe(reason);
    expect((outcome.error as CallCancelledError).record.cancel).toMatchObject({ trigger: "aborted", mechanism: "notification" });
    expect(cancels).toHaveLength(1); // the cancel still goes before the close
  });

  for (const [name, thrown] of [
    ["an object with no prototype", () => Object.create(null) as unknown],
    ["an Error whose message is not a string", () => Object.assign(new Error(), { message: undefined })],
    [
      "a revoked Proxy",
      () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return proxy;
      },
    ],
  ] as const) {
    it(`a verify that throws ${name}: verify-failed, and its verification never rejects`, async () => {
      const { call, outcome } = makeCall({
        timeoutMs: 50,
        verify: () => {
          throw thrown();
        },
      });
      call.start();
      call.bind(1);
      await vi.advanceTimersByTimeAsync(50);
      const record = await (outcome.error as CallTimeoutError).verification;
      expect(record.outcome).toBe("verify-failed");
      expect(typeof record.verification!.error).toBe("string");
    });
  }

  it("timers that fire a little early by the clock: the window still ends with the read planned at its end (6 reads for 1,000 ms every 200 ms)", async () => {
    const reads: number[] = [];
    const start = Date.now();
    const call = new CancellableCall<string>({
      method: "tools/call",
      name: "report",
      options: resolveCallOptions(
        {},
        {
          timeoutMs: 50,
          verifyWindowMs: 1_000,
          verifyIntervalMs: 200,
          verify: () => {
            reads.push(Date.now() - start - 50);
            return "not-applied";
          },
        },
      ),
      clock: () => Date.now(),
      // Each timer fires 2 ms before its time, as real timers may against performance.now().
      timers: {
        setTimeout: (callback, ms) => setTimeout(callback, Math.max(0, ms - 2)),
        clearTimeout: (handle) => clearTimeout(handle as never),
      },
      hooks: { cancel: () => "notification", settled: () => {} },
    });
    const outcome = settleOf(call.promise);
    call.start();
    call.bind(1);
    await vi.advanceTimersByTimeAsync(60);
    const verification = settleOf((outcome.error as CallTimeoutError).verification);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(verification.status).toBe("fulfilled");
    expect(reads).toHaveLength(6);
  });
});
