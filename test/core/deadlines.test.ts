import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CancellableCall } from "../../src/core.js";
import type { CallOptions, RunRecord } from "../../src/index.js";
import { DeadlineQueue, DeadlineSlot } from "../../src/core/deadlines.js";
import { resolveCallOptions } from "../../src/options/resolve.js";
import type { Timers } from "../../src/types/options.js";
import { settleOf } from "../helpers/peer.js";
import { SLICE_BUDGET_MS, Slicer, yieldTask } from "../../src/utils/slices.js";

// The client-wide deadline queue (one timer for all pending calls) and the invariant the calls
// rely on: the queue's timer firing early, late or at any moment never settles a call before its
// own deadline, never settles a call that is not due, and wakes every due call at the first fire
// after its deadline. Replay a property failure with FC_SEED / FC_PATH.

const RUNS = Number(process.env.FC_RUNS_DEADLINES ?? 2_000);

/**
 * Timers the test fires by hand, at any moment (early or late), on a clock the test moves.
 * At most one timer is ever armed by a queue; this keeps every armed one to check that.
 */
function manualTimers() {
  let now = 0;
  const armed = new Map<number, () => void>();
  let next = 0;
  const timers: Timers = {
    setTimeout: (callback) => {
      armed.set(++next, callback);
      return next;
    },
    clearTimeout: (handle) => void armed.delete(handle as number),
  };
  return {
    timers,
    clock: () => now,
    advance: (ms: number) => void (now += ms),
    armedCount: () => armed.size,
    /** Fires the armed timer (whatever its delay), if any. */
    fire: () => {
      const [[handle, callback] = []] = armed;
      if (handle === undefined || callback === undefined) return false;
      armed.delete(handle);
      callback();
      return true;
    },
  };
}

describe("DeadlineQueue", () => {
  it("keeps one timer for many slots and clears it with the last one", () => {
    const t = manualTimers();
    const queue = new DeadlineQueue(t.clock, t.timers);
    const slots = Array.from({ length: 100 }, () => new DeadlineSlot(() => {}));
    for (const [i, slot] of slots.entries()) queue.schedule(slot, 1_000 + i);
    expect(t.armedCount()).toBe(1);
    expect(queue.size).toBe(100);
    for (const slot of slots.slice(0, 99)) queue.remove(slot);
    expect(t.armedCount()).toBe(1);
    queue.remove(slots[99]!);
    expect(t.armedCount()).toBe(0);
    expect(queue.armed).toBe(false);
    queue.remove(slots[0]!); // not queued: a no-op
    expect(queue.size).toBe(0);
  });

  it("wakes due slots in deadline order (ties in scheduling order), and only those", () => {
    const t = manualTimers();
    const queue = new DeadlineQueue(t.clock, t.timers);
    const woken: string[] = [];
    const slot = (name: string) => new DeadlineSlot(() => void woken.push(name));
    queue.schedule(slot("c"), 30);
    queue.schedule(slot("a"), 10);
    queue.schedule(slot("b1"), 20);
    queue.schedule(slot("b2"), 20);
    queue.schedule(slot("d"), 40);
    t.advance(5);
    t.fire(); // early: nothing due, re-armed
    expect(woken).toEqual([]);
    expect(t.armedCount()).toBe(1);
    t.advance(30); // late: a, b1, b2, c are due
    t.fire();
    expect(woken).toEqual(["a", "b1", "b2", "c"]);
    expect(queue.size).toBe(1);
    expect(t.armedCount()).toBe(1);
    t.advance(5);
    t.fire();
    expect(woken).toEqual(["a", "b1", "b2", "c", "d"]);
    expect(t.armedCount()).toBe(0);
  });

  it("deadlines a millisecond apart: what each settle brings after it (runAfter) waits for the next, and goes when the last is settled, woken on the queue's own timers", () => {
    let now = 0;
    const armed = new Map<number, { at: number; callback: () => void }>();
    let handles = 0;
    const timers: Timers = {
      setTimeout: (callback, ms) => (armed.set(++handles, { at: now + ms, callback }), handles),
      clearTimeout: (handle) => void armed.delete(handle as number),
    };
    /** Moves the clock to `at`, firing each timer due by then, earliest first. */
    const runUntil = (at: number) => {
      for (;;) {
        const due = [...armed].filter(([, t]) => t.at <= at).sort((a, b) => a[1].at - b[1].at)[0];
        if (due === undefined) break;
        armed.delete(due[0]);
        now = Math.max(now, due[1].at);
        due[1].callback();
      }
      now = at;
    };
    const queue = new DeadlineQueue(() => now, timers);
    const done: string[] = [];
    const slots = [0, 1, 2].map(
      (i) =>
        new DeadlineSlot(() => {
          done.push(`settled ${i}`);
          Slicer.draining!.runAfter({ step: () => (done.push(`sent ${i}`), false) });
        }),
    );
    for (const [i, slot] of slots.entries()) queue.schedule(slot, 1_000 + i);
    runUntil(1_002);
    expect(done).toEqual(["settled 0", "settled 1", "settled 2"]);
    // The hold's end is a timer of the queue's own (an injected clock never mixes with real timers).
    expect(armed.size).toBe(1);
    runUntil(1_003);
    expect(done).toEqual(["settled 0", "settled 1", "settled 2", "sent 0", "sent 1", "sent 2"]);
    expect(armed.size).toBe(0);
  });

  it(`property: any schedule, move, remove and fire at any moment wakes exactly the due slots, in deadline then scheduling order, wherever each was kept (run or heap) (${RUNS} runs)`, () => {
    const op = fc.oneof(
      fc.record({ type: fc.constant("schedule" as const), slot: fc.nat(15), at: fc.integer({ min: 0, max: 200 }) }),
      fc.record({ type: fc.constant("remove" as const), slot: fc.nat(15) }),
      fc.record({ type: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 40 }) }),
      fc.record({ type: fc.constant("fire" as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const t = manualTimers();
        const queue = new DeadlineQueue(t.clock, t.timers);
        // The model: the deadline each slot is queued for, and when it was scheduled (ties wake in that order).
        const model = new Map<number, number>();
        const order = new Map<number, number>();
        let scheduled = 0;
        const woken: number[] = [];
        const slots = Array.from({ length: 16 }, (_, i) => new DeadlineSlot(() => void woken.push(i)));
        for (const o of ops) {
          if (o.type === "schedule") {
            queue.schedule(slots[o.slot]!, t.clock() + o.at);
            model.set(o.slot, t.clock() + o.at);
            order.set(o.slot, ++scheduled);
          } else if (o.type === "remove") {
            queue.remove(slots[o.slot]!);
            model.delete(o.slot);
          } else if (o.type === "advance") {
            t.advance(o.ms);
          } else {
            woken.length = 0;
            t.fire();
            const now = t.clock();
            const due = [...model].filter(([, at]) => at <= now);
            // Exactly the due slots, earliest deadline first; none before its deadline.
            expect(new Set(woken)).toEqual(new Set(due.map(([slot]) => slot)));
            // Earliest deadline first, equal deadlines in the order they were scheduled (the run's
            // slots and the heap's interleaved).
            expect(woken).toEqual(due.map(([slot]) => slot).sort((a, b) => model.get(a)! - model.get(b)! || order.get(a)! - order.get(b)!));
            for (const [slot] of due) model.delete(slot);
          }
          // A timer is armed exactly while something is queued; one at most.
          expect(queue.size).toBe(model.size);
          expect(t.armedCount()).toBe(model.size > 0 ? 1 : 0);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe("calls sharing one DeadlineQueue", () => {
  function makeCall(queue: DeadlineQueue, clock: () => number, timers: Timers, options: CallOptions) {
    const records: RunRecord[] = [];
    const call = new CancellableCall<string>({
      method: "tools/call",
      name: "t",
      options: resolveCallOptions({}, options),
      clock,
      timers,
      deadlines: queue,
      hooks: { cancel: () => "notification", settled: () => {}, record: (r) => void records.push(r) },
    });
    return { call, outcome: settleOf(call.promise), records };
  }

  describe("with fake timers", () => {
    beforeEach(() => {
      vi.useFakeTimers();
    });
    afterEach(() => {
      expect(vi.getTimerCount()).toBe(0);
      vi.useRealTimers();
    });

    it("1,000 pending calls keep one timer; each times out at its own deadline, not another's", async () => {
      const timers: Timers = { setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (h) => clearTimeout(h as never) };
      const clock = () => Date.now();
      const queue = new DeadlineQueue(clock, timers);
      const start = Date.now();
      const calls = Array.from({ length: 1_000 }, (_, i) => makeCall(queue, clock, timers, { timeoutMs: 10 + (i % 50) }));
      for (const [i, c] of calls.entries()) {
        c.call.start();
        c.call.bind(i + 1);
      }
      expect(vi.getTimerCount()).toBe(1);
      // Calls answered before their deadline leave the queue; the timer stays for the others.
      for (const c of calls.filter((_, i) => i % 3 === 0)) {
        c.call.responded();
        c.call.succeed("ok");
      }
      expect(vi.getTimerCount()).toBe(1);
      for (let step = 0; step < 60; step++) {
        await vi.advanceTimersByTimeAsync(1);
        // Every call whose own deadline has been reached is settled, no other.
        for (const [i, c] of calls.entries()) {
          if (i % 3 === 0) continue;
          const due = 10 + (i % 50) <= Date.now() - start;
          expect(c.outcome.status, `call ${i} at +${Date.now() - start} ms`).toBe(due ? "rejected" : "pending");
        }
      }
      for (const [i, c] of calls.entries()) {
        if (i % 3 === 0) expect(c.outcome.status).toBe("fulfilled");
        else expect(c.records[0]!.cancel?.trigger).toBe("timeout");
      }
      expect(queue.size).toBe(0);
    });
  });

  it(`property: a shared timer fired early, late or at random never settles a call before its deadline, nor the wrong call (${RUNS} runs)`, () => {
    const spec = fc.record({
      timeoutMs: fc.integer({ min: 1, max: 80 }),
      maxTotalTimeoutMs: fc.integer({ min: 1, max: 120 }),
      resetTimeoutOnProgress: fc.boolean(),
    });
    const op = fc.oneof(
      { arbitrary: fc.record({ type: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 25 }) }), weight: 6 },
      { arbitrary: fc.record({ type: fc.constant("fire" as const) }), weight: 6 },
      { arbitrary: fc.record({ type: fc.constant("progress" as const), call: fc.nat(5), value: fc.nat(8) }), weight: 3 },
      { arbitrary: fc.record({ type: fc.constant("answer" as const), call: fc.nat(5) }), weight: 1 },
      { arbitrary: fc.record({ type: fc.constant("abort" as const), call: fc.nat(5) }), weight: 1 },
    );
    fc.assert(
      fc.property(fc.array(spec, { minLength: 1, maxLength: 6 }), fc.array(op, { maxLength: 50 }), (specs, ops) => {
        const t = manualTimers();
        const queue = new DeadlineQueue(t.clock, t.timers);
        const controllers = specs.map(() => new AbortController());
        const calls = specs.map((s, i) => makeCall(queue, t.clock, t.timers, { ...s, signal: controllers[i]!.signal }));
        // The model: each live call's idle deadline, total deadline and highest progress.
        const model = specs.map((s) => ({
          idle: s.timeoutMs,
          total: s.maxTotalTimeoutMs,
          max: Number.NEGATIVE_INFINITY,
          reset: s.resetTimeoutOnProgress,
          timeoutMs: s.timeoutMs,
          live: true,
        }));
        for (const [i, c] of calls.entries()) {
          c.call.start();
          c.call.bind(i + 1);
        }
        for (const o of ops) {
          const m = "call" in o ? model[o.call % model.length]! : undefined;
          const c = "call" in o ? calls[o.call % calls.length]! : undefined;
          if (o.type === "advance") t.advance(o.ms);
          else if (o.type === "progress" && m?.live) {
            c!.call.progress({ progress: o.value });
            if (o.value > m.max) {
              m.max = o.value;
              if (m.reset) m.idle = t.clock() + m.timeoutMs;
            }
          } else if (o.type === "answer" && m?.live) {
            c!.call.responded();
            c!.call.succeed("ok");
            m.live = false;
          } else if (o.type === "abort" && m?.live) {
            controllers[o.call % controllers.length]!.abort();
            m.live = false;
          } else if (o.type === "fire") {
            t.fire();
            const now = t.clock();
            for (const [i, mm] of model.entries()) {
              if (!mm.live) continue;
              const due = now >= Math.min(mm.idle, mm.total);
              // Settled by this fire exactly when its own deadline is reached.
              expect(calls[i]!.call.settled, `call ${i} at ${now}`).toBe(due);
              if (due) {
                const trigger = calls[i]!.records[0]!.cancel!.trigger;
                expect(trigger).toBe(mm.total <= mm.idle && now >= mm.total ? "max-total-timeout" : "timeout");
                mm.live = false;
              }
            }
          }
          // Nothing settles between fires except by an answer or an abort.
          for (const [i, mm] of model.entries()) expect(calls[i]!.call.settled).toBe(!mm.live);
          expect(t.armedCount()).toBe(model.some((mm) => mm.live) ? 1 : 0);
        }
        for (const c of controllers) c.abort();
        expect(queue.size).toBe(0);
        expect(t.armedCount()).toBe(0);
      }),
      { numRuns: RUNS },
    );
  });
});

describe("a mass timeout settles in slices (fake timers)", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    // What may be left is the slicer's yield that starts its count anew; no timer of the queue's.
    vi.runOnlyPendingTimers();
    expect(vi.getTimerCount()).toBe(0);
    vi.useRealTimers();
  });

  /**
   * `count` calls on one queue, on a clock that is fake time plus the work the calls did: each
   * cancel costs `costMs` of it (as a real cancel costs the process time). The queue's settling
   * runs on a slicer (5 ms slices) that measures the work alone (fake timers move their clock 1 ms
   * for a setImmediate made during a tick, which the slicer would count); its yields are fake
   * setImmediates.
   */
  function massTimeout(count: number, timeoutMs: (i: number) => number, costMs: number) {
    let work = 0;
    const clock = () => Date.now() + work;
    const timers: Timers = { setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (h) => clearTimeout(h as never) };
    const queue = new DeadlineQueue(clock, timers, new Slicer({ clock: () => work, defer: yieldTask, budgetMs: SLICE_BUDGET_MS }));
    const settledAt: number[] = new Array(count).fill(Number.NaN);
    const settles: number[] = new Array(count).fill(0);
    const order: number[] = [];
    const calls = Array.from({ length: count }, (_, i) => {
      const call = new CancellableCall<string>({
        method: "tools/call",
        name: "t",
        options: resolveCallOptions({}, { timeoutMs: timeoutMs(i) }),
        clock,
        timers,
        deadlines: queue,
        hooks: {
          cancel: () => {
            work += costMs;
            return "notification";
          },
          settled: () => {
            settles[i]! += 1;
            settledAt[i] = clock();
            order.push(i);
          },
        },
      });
      call.promise.catch(() => {});
      call.start();
      call.bind(i + 1);
      return call;
    });
    const deadlines = calls.map((_, i) => timeoutMs(i));
    return { queue, calls, settledAt, settles, order, deadlines, clock };
  }

  it("10,000 calls due together: the timer's task settles one 5 ms slice of them, yields, and the next task the next slice", async () => {
    // 1/16 ms per cancel, 5 ms slices: 80 calls per slice (the first at once, then while the clock reads under 5 ms).
    const m = massTimeout(10_000, () => 100, 0.0625);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(99);
    expect(m.order).toHaveLength(0);
    vi.advanceTimersByTime(1); // the deadline: the queue's timer fires
    const slices = [m.order.length];
    expect(slices[0]).toBe(80);
    // The rest waits for a yield (a setImmediate), not for the queue's timer.
    expect(vi.getTimerCount()).toBe(1);
    while (m.order.length < 10_000) {
      const before = m.order.length;
      vi.advanceTimersToNextTimer(); // the next task: one slice
      slices.push(m.order.length - before);
      if (slices.length > 200) break;
    }
    expect(slices).toEqual(Array.from({ length: 125 }, () => 80));
    // Each settled once, never before its own deadline, in the order the calls were queued (equal deadlines).
    expect(m.settles.every((n) => n === 1)).toBe(true);
    expect(m.order).toEqual(Array.from({ length: 10_000 }, (_, i) => i));
    for (const [i, at] of m.settledAt.entries()) expect(at).toBeGreaterThanOrEqual(m.deadlines[i]!);
    expect(m.queue.size).toBe(0);
    expect(m.queue.armed).toBe(false);
  });

  it("deadlines spread over the settling: each call settles at or after its own, earliest first, none out of turn", async () => {
    // Deadlines 100..199 ms, 10 calls each; 1 ms per cancel: a slice settles 5, so the settling falls behind and catches up.
    const m = massTimeout(1_000, (i) => 100 + (i % 100), 1);
    vi.advanceTimersByTime(100);
    expect(m.order).toHaveLength(5);
    await vi.advanceTimersByTimeAsync(200);
    while (m.order.length < 1_000) await vi.advanceTimersToNextTimerAsync();
    expect(m.settles.every((n) => n === 1)).toBe(true);
    for (const [i, at] of m.settledAt.entries()) expect(at, `call ${i}`).toBeGreaterThanOrEqual(m.deadlines[i]!);
    // Earliest deadline first; equal deadlines in the order they were queued.
    const key = (i: number) => m.deadlines[i]! * 10_000 + i;
    expect(m.order.map(key)).toEqual([...m.order.map(key)].sort((a, b) => a - b));
    expect(m.queue.size).toBe(0);
  });

  it("a call answered while the settling waits for its next slice leaves the queue and settles once: its limit passed first, so its answer is late (rule 8)", async () => {
    const m = massTimeout(1_000, () => 50, 0.25); // 20 per slice
    await vi.advanceTimersByTimeAsync(50);
    expect(m.order).toHaveLength(20);
    const answered = m.calls[500]!;
    expect(answered.responded()).toBe(false); // read after its deadline: the timeout came first
    answered.succeed("ok"); // ignored: settled already
    await expect(answered.promise).rejects.toMatchObject({ code: "REQUEST_TIMEOUT" });
    while (m.order.length < 1_000) await vi.advanceTimersToNextTimerAsync();
    expect(m.settles.every((n) => n === 1)).toBe(true);
    expect(m.order.indexOf(500)).toBe(20); // settled as its answer came, right after the first slice
    expect(m.queue.size).toBe(0);
  });

  it("a call queued while the settling is under way waits for its own deadline", async () => {
    const m = massTimeout(100, () => 50, 0.5); // 10 per slice
    await vi.advanceTimersByTimeAsync(50);
    expect(m.order).toHaveLength(10);
    const late = new CancellableCall<string>({
      method: "tools/call",
      name: "late",
      options: resolveCallOptions({}, { timeoutMs: 1_000 }),
      clock: m.clock,
      timers: { setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (h) => clearTimeout(h as never) },
      deadlines: m.queue,
      hooks: { cancel: () => "notification", settled: () => {} },
    });
    const outcome = settleOf(late.promise);
    late.start();
    const startedAt = m.clock();
    while (m.order.length < 100) await vi.advanceTimersToNextTimerAsync();
    expect(outcome.status).toBe("pending");
    expect(m.queue.size).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(outcome.status).toBe("rejected");
    expect(late.record!.elapsedMs).toBeGreaterThanOrEqual(1_000);
    expect(m.clock() - startedAt).toBeGreaterThanOrEqual(1_000);
  });
});

describe("the queue's timer between calls (Node's own timers)", () => {
  it("sequential calls take back one unreferenced timer instead of a setTimeout and a clearTimeout each", async () => {
    let made = 0;
    let cleared = 0;
    const timers: Timers = {
      setTimeout: (f, ms) => {
        made++;
        return setTimeout(f, ms);
      },
      clearTimeout: (h) => {
        cleared++;
        clearTimeout(h as never);
      },
    };
    const queue = new DeadlineQueue(() => performance.now(), timers);
    const woken: number[] = [];
    const slot = new DeadlineSlot(() => void woken.push(1));
    const before = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    for (let i = 0; i < 100; i++) {
      queue.schedule(slot, performance.now() + 60_000);
      expect(queue.armed).toBe(true);
      queue.remove(slot);
      // Nothing queued: the timer holds no process open and is no active resource.
      expect(queue.armed).toBe(false);
      expect(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length).toBe(before);
    }
    expect(made).toBe(1);
    expect(cleared).toBe(0);
    // A deadline earlier than the kept timer's arms a new one.
    queue.schedule(slot, performance.now() + 30);
    expect(made).toBe(2);
    queue.remove(slot);
    // The kept timer fires with nothing queued: nothing is woken, and the next call arms a new one.
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(woken).toEqual([]);
    queue.schedule(slot, performance.now() + 60_000);
    expect(made).toBe(3);
    queue.remove(slot);
  });
});
