import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CancellableCall } from "../../src/core.js";
import { isMcpCancellableError } from "../../src/index.js";
import type { CancelDelivery, RunRecord } from "../../src/index.js";
import type { SettledRecord } from "../../src/core/settled-record.js";
import { resolveCallOptions } from "../../src/options/resolve.js";
import { BoundedMap } from "../../src/utils/bounded-map.js";

// Records are built when read (issue 23). Two calls run in lockstep through the same random
// events: one builds each revision at once (a `record` hook, as `onRecord` does), the other keeps
// only its facts and is read at the end, after time has moved on (as `records()` reads the ledger
// and a caller reads an error's `record` long after the settle). What is read late must equal what
// was read at once, field for field and in the same order (JSON), revision by revision.
// Replay a failure with FC_SEED / FC_PATH.

const RUNS = Number(process.env.FC_RUNS_LAZY ?? 3_000);

const event = fc.oneof(
  { arbitrary: fc.record({ type: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 1_500 }) }), weight: 6 },
  { arbitrary: fc.record({ type: fc.constant("progress" as const), value: fc.integer({ min: 0, max: 6 }) }), weight: 4 },
  { arbitrary: fc.record({ type: fc.constant("responded" as const) }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant("succeed" as const), task: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant("fail" as const) }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant("abort" as const) }), weight: 1 },
  { arbitrary: fc.record({ type: fc.constant("close" as const) }), weight: 1 },
  {
    arbitrary: fc.record({
      type: fc.constant("late" as const),
      kind: fc.constantFrom("result" as const, "error" as const, "progress" as const),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      type: fc.constant("delivery" as const),
      sent: fc.constantFrom("none" as const, "stream-close" as const, "notification" as const),
      failed: fc.boolean(),
      // Gone out this many ms after now (a timer-fired notification sent behind other settles).
      laterMs: fc.option(fc.integer({ min: 1, max: 5_000 }), { nil: undefined }),
    }),
    weight: 1,
  },
);

const options = fc.record({
  timeoutMs: fc.integer({ min: 1, max: 4_000 }),
  maxTotalTimeoutMs: fc.integer({ min: 1, max: 6_000 }),
  resetTimeoutOnProgress: fc.boolean(),
  reason: fc.option(fc.string({ minLength: 1, maxLength: 5 }), { nil: undefined }),
});

beforeAll(() => {
  vi.useFakeTimers({ now: new Date("2026-11-30T10:00:00.000Z") });
});
afterAll(() => {
  vi.useRealTimers();
});

interface Side {
  call: CancellableCall<unknown>;
  controller: AbortController;
  /** Each revision as JSON, taken the moment it was reported (eager side only). */
  revisions: string[];
  /** The error's record as JSON, taken in the rejection handler (eager side), or the error itself (lazy side). */
  errorAtOnce: string | undefined;
  error: { record: RunRecord } | undefined;
  kept: SettledRecord | undefined;
}

type Opts = typeof options extends fc.Arbitrary<infer T> ? T : never;

function makeSide(opts: Opts, eager: boolean, sessions: () => string | undefined): Side {
  const controller = new AbortController();
  const side = { controller, revisions: [], errorAtOnce: undefined, error: undefined, kept: undefined } as unknown as Side;
  side.call = new CancellableCall<unknown>({
    method: "tools/call",
    name: "report",
    options: resolveCallOptions(
      {},
      {
        timeoutMs: opts.timeoutMs,
        maxTotalTimeoutMs: opts.maxTotalTimeoutMs,
        resetTimeoutOnProgress: opts.resetTimeoutOnProgress,
        ...(opts.reason === undefined ? {} : { reason: opts.reason }),
        signal: controller.signal,
      },
    ),
    clock: () => Date.now(),
    timers: { setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (h) => clearTimeout(h as never) },
    ids: { callId: 7, connectionId: 3, sessionId: sessions },
    hooks: {
      cancel: () => "notification",
      settled: () => {},
      ...(eager ? { record: (record: RunRecord) => void side.revisions.push(JSON.stringify(record)) } : {}),
      keep: (settled) => void (side.kept = settled),
    },
  });
  side.call.promise.catch((error: unknown) => {
    if (!isMcpCancellableError(error)) return; // the server's own error: passed on untouched, no record
    side.error = error;
    if (eager) side.errorAtOnce = JSON.stringify(error.record);
  });
  return side;
}

describe("property: a record read late equals the one read at once", () => {
  it(`revision by revision, the error's record too, for random calls (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(options, fc.array(event, { maxLength: 25 }), async (opts, events) => {
        // The session id changes with time: the record must carry the one seen at the settle.
        const sessions = () => `s-${Math.floor(Date.now() / 1_000)}`;
        const eager = makeSide(opts, true, sessions);
        const lazy = makeSide(opts, false, sessions);
        const sides = [eager, lazy];
        for (const side of sides) {
          side.call.start();
          side.call.bind(1, "tok");
        }
        for (const e of events) {
          if (e.type === "advance") {
            await vi.advanceTimersByTimeAsync(e.ms);
            continue;
          }
          for (const { call, controller } of sides) {
            switch (e.type) {
              case "progress":
                call.progress({ progress: e.value, total: 6 });
                break;
              case "responded":
                call.responded();
                break;
              case "succeed":
                call.succeed(e.task ? { task: { taskId: "t1", status: "working" } } : { content: [] });
                break;
              case "fail":
                call.fail(Object.assign(new Error("MCP error -32000: boom\n  again"), { code: -32000, name: "McpError" }));
                break;
              case "abort":
                controller.abort(new Error("stop"));
                break;
              case "close":
                call.cancel("connection-closed");
                break;
              case "late":
                call.late(e.kind);
                break;
              case "delivery": {
                const report: CancelDelivery = {
                  sent: e.sent,
                  failed: e.failed ? { mechanism: "notification", error: "refused" } : null,
                  ...(e.laterMs === undefined ? {} : { sentWall: Date.now() + e.laterMs }),
                };
                call.delivery(report);
                break;
              }
            }
          }
          await Promise.resolve();
        }
        // The SDK settles a responded call; whatever is still pending times out; then time goes on
        // before anything is read late.
        for (const { call } of sides) if (!call.settled) call.succeed({ content: [] });
        await vi.advanceTimersByTimeAsync(10_000);
        await Promise.resolve();
        await vi.advanceTimersByTimeAsync(3_000);

        expect(eager.call.settled).toBe(true);
        expect(lazy.call.settled).toBe(true);
        // The lazy side never built a record for a hook: nothing asked it to.
        expect(lazy.revisions).toHaveLength(0);
        const latest = eager.revisions.at(-1)!;
        expect(JSON.stringify(lazy.kept!.record)).toBe(latest);
        expect(JSON.stringify(lazy.call.record)).toBe(latest);
        expect(JSON.stringify(lazy.kept!.initial)).toBe(eager.revisions[0]);
        // Revision numbers count the updates, one each.
        expect(eager.revisions.map((r) => (JSON.parse(r) as RunRecord).revision)).toEqual(eager.revisions.map((_, i) => i));
        expect(lazy.error === undefined).toBe(eager.error === undefined);
        if (eager.error !== undefined) {
          // The error's record is the record at the settle (revision 0), however late it is read.
          expect(eager.errorAtOnce).toBe(eager.revisions[0]);
          expect(JSON.stringify(lazy.error!.record)).toBe(eager.revisions[0]);
          expect(JSON.stringify(eager.error.record)).toBe(eager.revisions[0]);
        }
        expect(vi.getTimerCount()).toBe(0);
      }),
      {
        numRuns: RUNS,
        ...(process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) }),
        ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
      },
    );
  });
});

describe("property: the bounded id set (tombstones, the ledger) never drops a live id", () => {
  // Live: among the `capacity` most recently added distinct ids. Only an id with `capacity` newer
  // ones after it may be forgotten; setting an id again replaces its value and keeps its place.
  it("holds exactly the newest `capacity` distinct ids, each with its last value (5000 runs)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.tuple(fc.oneof(fc.integer({ min: 0, max: 20 }), fc.constantFrom("a", "b", "0")), fc.integer()), { maxLength: 80 }),
        (capacity, ops) => {
          const ids = new BoundedMap<string | number, number>(capacity);
          const order: (string | number)[] = [];
          const values = new Map<string | number, number>();
          for (const [id, value] of ops) {
            ids.set(id, value);
            if (!values.has(id)) {
              order.push(id);
              if (order.length > capacity) values.delete(order.shift()!);
            }
            values.set(id, value);
            // Every live id is still there, with its latest value; nothing else is.
            for (const live of order) expect(ids.get(live)).toBe(values.get(live));
            expect(ids.size).toBe(order.length);
            expect(ids.size).toBeLessThanOrEqual(capacity);
          }
          expect([...ids.values()]).toEqual(order.map((id) => values.get(id)));
        },
      ),
      { numRuns: 5_000 },
    );
  });
});
