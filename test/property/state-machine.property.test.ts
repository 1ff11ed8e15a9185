import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CancellableCall } from "../../src/core.js";
import type { CancelTrigger, RunRecord } from "../../src/index.js";
import { resolveCallOptions } from "../../src/options/resolve.js";

// The state machine alone against a reference model of its deadlines: for random options and
// random events (progress, responses, results, failures, aborts, closes, late messages, time)
// the call must settle exactly once, by the event the model says comes first, at the time the
// model says, and release its timer and listener. Replay a failure with FC_SEED / FC_PATH.

const RUNS = Number(process.env.FC_RUNS_CORE ?? 10_000);

// Time and progress dominate, so calls live long enough for deadlines to move; each ending
// event is rare enough that most runs reach a deadline.
const event = fc.oneof(
  { arbitrary: fc.record({ type: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 30 }) }), weight: 8 },
  { arbitrary: fc.record({ type: fc.constant("progress" as const), value: fc.integer({ min: 0, max: 6 }) }), weight: 8 },
  { arbitrary: fc.record({ type: fc.constant("responded" as const) }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant("succeed" as const) }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant("fail" as const) }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant("abort" as const) }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant("close" as const) }), weight: 1 },
  {
    arbitrary: fc.record({
      type: fc.constant("late" as const),
      kind: fc.constantFrom("result" as const, "error" as const, "progress" as const),
    }),
    weight: 1,
  },
);

const options = fc.record({
  timeoutMs: fc.oneof(fc.integer({ min: 1, max: 80 }), fc.constant(Number.POSITIVE_INFINITY)),
  maxTotalTimeoutMs: fc.oneof(fc.integer({ min: 1, max: 120 }), fc.constant(Number.POSITIVE_INFINITY)),
  resetTimeoutOnProgress: fc.boolean(),
});

beforeAll(() => {
  vi.useFakeTimers();
});
afterAll(() => {
  vi.useRealTimers();
});

describe("property: CancellableCall against a model of its deadlines", () => {
  it(`settles once, first event wins, exact deadlines, nothing left behind (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(options, fc.array(event, { maxLength: 30 }), async (opts, events) => {
        const controller = new AbortController();
        const cancels: string[] = [];
        const records: RunRecord[] = [];
        let settledHook = 0;
        const call = new CancellableCall<string>({
          method: "tools/call",
          name: "t",
          options: resolveCallOptions({}, { ...opts, signal: controller.signal }),
          clock: () => Date.now(),
          timers: { setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (h) => clearTimeout(h as never) },
          hooks: {
            cancel: (_c, reason) => (cancels.push(reason), "notification"),
            settled: () => void settledHook++,
            record: (r) => void records.push(r),
          },
        });
        let settles = 0;
        let outcome: "fulfilled" | "rejected" | undefined;
        call.promise.then(
          () => ((settles += 1), (outcome = "fulfilled")),
          () => ((settles += 1), (outcome = "rejected")),
        );
        call.start();
        call.bind(1);

        // The model.
        type Phase = "pending" | "responded" | "settled";
        let phase = "pending" as Phase;
        // `settle` assigns phase inside a closure; read it through `at()` so TypeScript does not narrow it.
        const at = (): Phase => phase;
        let expected: { status: RunRecord["status"]; trigger?: CancelTrigger; at: number } | undefined;
        let idle = opts.timeoutMs;
        const total = opts.maxTotalTimeoutMs;
        let highest: number | undefined;
        let now = 0;
        const settle = (status: RunRecord["status"], trigger?: CancelTrigger) => {
          phase = "settled";
          expected = { status, ...(trigger === undefined ? {} : { trigger }), at: now };
        };
        /** Moves model time forward, firing the deadline if it falls inside. */
        const advance = (ms: number) => {
          const target = now + ms;
          const deadline = Math.min(idle, total);
          if (phase === "pending" && deadline <= target) {
            now = deadline;
            settle("cancelled", total <= idle ? "max-total-timeout" : "timeout");
          }
          now = target;
        };

        for (const e of events) {
          switch (e.type) {
            case "advance":
              advance(e.ms);
              await vi.advanceTimersByTimeAsync(e.ms);
              break;
            case "progress":
              // Rule 21: only a value above every earlier one counts as progress.
              if (phase === "pending" && (highest === undefined || e.value > highest)) {
                if (opts.resetTimeoutOnProgress) idle = now + opts.timeoutMs;
                highest = e.value;
              }
              call.progress({ progress: e.value });
              break;
            case "responded":
              if (phase === "pending") phase = "responded";
              call.responded();
              break;
            case "succeed":
              if (at() !== "settled") settle("succeeded");
              call.succeed("ok");
              break;
            case "fail":
              if (at() !== "settled") settle("failed");
              call.fail(new Error("server error"));
              break;
            case "abort":
              if (phase === "pending") settle("cancelled", "aborted");
              controller.abort();
              break;
            case "close":
              if (phase === "pending") settle("cancelled", "connection-closed");
              call.cancel("connection-closed");
              break;
            case "late":
              call.late(e.kind);
              break;
          }
          await Promise.resolve();
        }
        // End of the story: the SDK settles a responded call; time runs out for a pending one.
        if (at() === "responded") {
          settle("succeeded");
          call.succeed("ok");
        }
        if (at() === "pending") {
          advance(1_000);
          await vi.advanceTimersByTimeAsync(1_000);
        }
        await Promise.resolve();
        await Promise.resolve();

        if (at() === "pending") {
          // Both limits infinite and nothing ended it: still pending, by design.
          expect(opts.timeoutMs === Number.POSITIVE_INFINITY && opts.maxTotalTimeoutMs === Number.POSITIVE_INFINITY).toBe(true);
          call.cancel("connection-closed");
          return;
        }
        expect(settles).toBe(1);
        expect(settledHook).toBe(1);
        const final = records.find((r) => r.revision === 0)!;
        expect(records.filter((r) => r.revision === 0)).toHaveLength(1);
        expect(final.status).toBe(expected!.status);
        expect(final.cancel?.trigger).toBe(expected!.trigger);
        expect(final.elapsedMs).toBe(expected!.at);
        expect(outcome).toBe(expected!.status === "succeeded" ? "fulfilled" : "rejected");
        // A cancel goes on the wire once, only for a pending call, never for a close.
        const wireCancel = expected!.status === "cancelled" && expected!.trigger !== "connection-closed";
        expect(cancels).toHaveLength(wireCancel ? 1 : 0);
        // The maximum total timeout always holds.
        if (expected!.status === "cancelled") expect(final.elapsedMs).toBeLessThanOrEqual(opts.maxTotalTimeoutMs);
        expect(vi.getTimerCount()).toBe(0);
      }),
      {
        numRuns: RUNS,
        ...(process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) }),
        ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
      },
    );
  }, 240_000);
});
