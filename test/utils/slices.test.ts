import { describe, expect, it } from "vitest";
import { MAX_HOLD_MS, Slicer } from "../../src/utils/slices.js";
import type { SliceWork } from "../../src/utils/slices.js";

// The slicer under the library's mass settles (a deadline queue's fire, a shared signal's abort):
// work is done in slices of at most `budgetMs` of one task, first in first out, and goes on after
// a yield. Here on a clock the test moves and yields the test runs by hand, so every order and
// count is fixed.

function manual(budgetMs = 10) {
  let now = 0;
  const yields: Array<() => void> = [];
  const laters: Array<{ next: () => void; at: number }> = [];
  const slicer = new Slicer({
    clock: () => now,
    defer: (next) => void yields.push(next),
    budgetMs,
    later: (next, ms) => void laters.push({ next, at: now + ms }),
  });
  return {
    slicer,
    /** Wake-ups scheduled with `later` (a hold's end) and not run yet, with the clock time each is for. */
    laters,
    /** Moves the clock to the oldest wake-up's time and runs it. */
    runLater: () => {
      const wake = laters.shift();
      if (wake === undefined) throw new Error("no wake-up scheduled");
      now = Math.max(now, wake.at);
      wake.next();
    },
    advance: (ms: number) => void (now += ms),
    /** Yields scheduled and not run yet. */
    yields,
    /** Runs the oldest scheduled yield (the next task). */
    runYield: () => {
      const next = yields.shift();
      if (next === undefined) throw new Error("no yield scheduled");
      next();
    },
  };
}

/** `count` items, each taking `costMs` of the clock; `done` gets each item's name in the order done. */
function work(name: string, count: number, costMs: number, advance: (ms: number) => void, done: string[]): SliceWork {
  let next = 0;
  return {
    step() {
      if (next < count) {
        done.push(`${name}${next++}`);
        advance(costMs);
      }
      return next < count;
    },
  };
}

describe("Slicer", () => {
  it("does a piece that fits the budget at once, in the caller's task, with no yield", () => {
    const m = manual(10);
    const done: string[] = [];
    m.slicer.run(work("a", 4, 1, m.advance, done)); // 4 ms: under half the budget, nothing to start anew either
    expect(done).toEqual(["a0", "a1", "a2", "a3"]);
    expect(m.yields).toHaveLength(0);
    expect(m.slicer.pending).toBe(0);
  });

  it("does a large piece in slices of the budget, yielding between them, each item once and in order", () => {
    const m = manual(10);
    const done: string[] = [];
    m.slicer.run(work("a", 25, 3, m.advance, done));
    // 3 ms each, budget 10: items start at 0, 3, 6 and 9 ms; the fifth would start at 12.
    expect(done).toHaveLength(4);
    expect(m.yields).toHaveLength(1);
    m.runYield();
    expect(done).toHaveLength(8);
    m.runYield();
    m.runYield();
    m.runYield();
    m.runYield();
    m.runYield();
    expect(done).toHaveLength(25);
    expect(done).toEqual(Array.from({ length: 25 }, (_, i) => `a${i}`));
    expect(m.slicer.yields).toBe(6);
    expect(m.slicer.pending).toBe(0);
    expect(m.yields).toHaveLength(0);
  });

  it("shares one budget among the pieces of one task, and keeps them in the order they came", () => {
    const m = manual(10);
    const done: string[] = [];
    m.slicer.run(work("a", 3, 2, m.advance, done)); // 6 ms
    m.slicer.run(work("b", 3, 2, m.advance, done)); // its first item goes; then 2 more ms fit (8, 10: stop)
    expect(done).toEqual(["a0", "a1", "a2", "b0", "b1"]);
    m.slicer.run(work("c", 1, 1, m.advance, done)); // something waits: c waits behind b, even its first item
    expect(done).toEqual(["a0", "a1", "a2", "b0", "b1"]);
    expect(m.slicer.pending).toBe(2);
    m.runYield();
    expect(done).toEqual(["a0", "a1", "a2", "b0", "b1", "b2", "c0"]);
    expect(m.slicer.pending).toBe(0);
  });

  it("always does a new piece's first item at once when nothing waits, however much the task did before", () => {
    const m = manual(10);
    const done: string[] = [];
    // 30 single settles in one task (a caller's own loop of aborts), 1 ms each: none is put off.
    for (let i = 0; i < 30; i++) m.slicer.run(work(`s${i}-`, 1, 1, m.advance, done));
    expect(done).toHaveLength(30);
    expect(m.slicer.pending).toBe(0);
    // The time was counted: a yield is scheduled to start the count anew, and a larger piece in
    // the same task does only its first item before it.
    m.slicer.run(work("big", 5, 1, m.advance, done));
    expect(done.slice(30)).toEqual(["big0"]);
    m.runYield();
    expect(done.slice(30)).toEqual(["big0", "big1", "big2", "big3", "big4"]);
  });

  it("starts the count anew after a yield: a task after it gets the whole budget", () => {
    const m = manual(10);
    const done: string[] = [];
    m.slicer.run(work("a", 3, 2, m.advance, done)); // 6 ms: at least half the budget, a yield to reset the count
    expect(m.yields).toHaveLength(1);
    m.runYield();
    m.slicer.run(work("b", 5, 2, m.advance, done)); // 10 ms: all of it fits again
    expect(done).toEqual(["a0", "a1", "a2", "b0", "b1", "b2", "b3", "b4"]);
  });

  it("counts what ran in a slice's task after it (the callers' reactions) against the next slice, up to 80 % of the budget", () => {
    const m = manual(10);
    const done: string[] = [];
    m.slicer.run(work("a", 100, 1, m.advance, done));
    expect(done).toHaveLength(10);
    m.advance(4); // what the settled items brought ran after the slice, in its task
    m.runYield();
    expect(done).toHaveLength(16); // 10 - 4 ms left for this slice
    m.advance(50); // far more: the next slice still does 2 ms of work (10 - 80 %)
    m.runYield();
    expect(done).toHaveLength(18);
    m.runYield(); // nothing ran in between: the whole budget
    expect(done).toHaveLength(28);
  });

  it("takes a piece brought by an item of another piece in turn, behind the pieces already there", () => {
    const m = manual(10);
    const done: string[] = [];
    let nested = false;
    m.slicer.run({
      step() {
        done.push("outer");
        if (!nested) {
          nested = true;
          m.slicer.run(work("inner", 2, 0, m.advance, done));
          return true;
        }
        return false;
      },
    });
    expect(done).toEqual(["outer", "outer", "inner0", "inner1"]);
  });

  it("replaces a yield that was lost (timers swapped out) once a second has passed", () => {
    const m = manual(10);
    const done: string[] = [];
    m.slicer.run(work("a", 10, 4, m.advance, done));
    expect(done).toHaveLength(3);
    m.yields.length = 0; // lost
    m.advance(999);
    m.slicer.run(work("b", 1, 1, m.advance, done));
    expect(m.yields).toHaveLength(0); // not yet taken as lost
    m.advance(2);
    m.slicer.run(work("c", 1, 1, m.advance, done));
    expect(m.yields).toHaveLength(1);
    while (m.yields.length > 0) m.runYield();
    expect(done.filter((d) => d.startsWith("a"))).toHaveLength(10);
    expect(done.slice(-2)).toEqual(["b0", "c0"]);
    expect(m.slicer.pending).toBe(0);
  });

  it("runAfter: its steps are taken only while no run() work waits, also work that came while it was under way", () => {
    const m = manual(10);
    const done: string[] = [];
    const arriving = work("c", 2, 1, m.advance, done);
    let b = 0;
    const later: SliceWork = {
      step() {
        done.push(`b${b}`);
        if (b === 0) m.slicer.run(arriving);
        return ++b < 3;
      },
    };
    let a = 0;
    m.slicer.run({
      step() {
        done.push(`a${a}`);
        if (a === 0) m.slicer.runAfter(later);
        return ++a < 2;
      },
    });
    // b waited for a; c, given to run() during b's first step, went before b's second.
    expect(done).toEqual(["a0", "a1", "b0", "c0", "c1", "b1", "b2"]);
    expect(m.slicer.pending).toBe(0);
    // Alone, runAfter work is done at once, in the caller's task.
    m.slicer.runAfter(work("d", 2, 1, m.advance, done));
    expect(done.slice(7)).toEqual(["d0", "d1"]);
  });

  it("runAfter work waits behind run() work across yields, and goes on in slices after it", () => {
    const m = manual(10);
    const done: string[] = [];
    m.slicer.run(work("a", 6, 3, m.advance, done)); // 18 ms: two slices
    m.slicer.runAfter(work("b", 2, 3, m.advance, done));
    expect(done).toEqual(["a0", "a1", "a2", "a3"]);
    m.slicer.run(work("c", 1, 3, m.advance, done)); // comes while a waits for its next slice
    m.runYield();
    expect(done).toEqual(["a0", "a1", "a2", "a3", "a4", "a5", "c0", "b0"]);
    m.runYield();
    expect(done.slice(8)).toEqual(["b1"]);
    expect(m.slicer.pending).toBe(0);
  });

  it("hold: runAfter work waits for the run() work about to come, then goes on by itself when the hold ends", () => {
    const m = manual(10);
    const done: string[] = [];
    m.slicer.run({
      step() {
        done.push("a0");
        m.slicer.runAfter(work("n", 2, 0, m.advance, done)); // the notifications of a's settle
        m.slicer.hold(1); // the next deadline is 1 ms away
        return false;
      },
    });
    expect(done).toEqual(["a0"]); // n waits for the next settle
    expect(m.laters.map((l) => l.at)).toEqual([1]);
    m.advance(1);
    m.slicer.run(work("b", 1, 0, m.advance, done)); // the next deadline's settle
    expect(done).toEqual(["a0", "b0", "n0", "n1"]); // the hold ended with it: n goes right after b
    m.runLater(); // the wake-up finds nothing left
    expect(done).toHaveLength(4);
    expect(m.slicer.pending).toBe(0);
  });

  it("hold: held work goes when the hold ends with no more run() work, and waits no longer than MAX_HOLD_MS however long the holds go on", () => {
    const m = manual(10);
    const done: string[] = [];
    m.slicer.hold(5);
    m.slicer.runAfter(work("n", 1, 0, m.advance, done));
    expect(done).toEqual([]);
    expect(m.laters.map((l) => l.at)).toEqual([5]);
    m.runLater(); // at 5 ms: the hold is over, n goes without any run() work
    expect(done).toEqual(["n0"]);
    // A burst of settles one every millisecond, each holding for the next: p came at 5 ms and
    // goes in the first task at or after 5 + MAX_HOLD_MS, between two settles of the burst.
    let now = 5;
    m.slicer.hold(now + 1);
    m.slicer.runAfter(work("p", 1, 0, m.advance, done));
    const ranAt = new Map<string, number>();
    for (let i = 0; i < MAX_HOLD_MS + 50 && !done.includes("p0"); i++) {
      m.advance(1);
      now++;
      m.slicer.hold(now + 1);
      m.slicer.run(work(`r${now}:`, 1, 0, m.advance, done));
      if (done.includes("p0")) ranAt.set("p0", now);
    }
    expect(ranAt.get("p0")).toBe(5 + MAX_HOLD_MS);
    expect(done.at(-2)).toBe(`r${5 + MAX_HOLD_MS}:0`); // behind that task's settle, still first in line after it
    expect(m.slicer.pending).toBe(0);
  });

  it("hold: a wake-up lost with its timers (fake timers swapped out) and a clock that went back do not strand held work: the next settle's hold schedules a new one", () => {
    let now = 10_000;
    const laters: Array<() => void> = [];
    const slicer = new Slicer({ clock: () => now, defer: () => {}, budgetMs: 10, later: (next) => void laters.push(next) });
    const done: string[] = [];
    slicer.hold(now + 1);
    slicer.runAfter(work("a", 1, 0, () => {}, done));
    expect(done).toEqual([]);
    expect(laters).toHaveLength(1);
    laters.length = 0; // lost: those timers are gone
    now = 50; // and the clock went back (fake time was ahead of the real one)
    slicer.hold(now + 1);
    slicer.run(work("b", 1, 0, () => {}, done)); // the next settle, with its notifications held again
    slicer.runAfter(work("c", 1, 0, () => {}, done));
    expect(done).toEqual(["b0"]);
    expect(laters.length).toBeGreaterThan(0); // a new wake-up (each hold replaces the one before), within the bound of the clock as it now reads
    now = 51;
    laters.at(-1)!();
    expect(done).toEqual(["b0", "a0", "c0"]);
    expect(slicer.pending).toBe(0);
  });
});

describe("the exit's write of every stdio connection's cancels (writeTogetherAtExit)", () => {
  it("uncorks each stream as often as it is corked: once for a stream without writableCorked, every cork for one with it", async () => {
    const { execFile } = await import("node:child_process");
    const { fileURLToPath } = await import("node:url");
    const script = fileURLToPath(new URL("../fixtures/utils/exit-uncork.ts", import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ["--import", "tsx", script], { timeout: 20_000 }, (error, out) => (error ? reject(error) : resolve(out)));
    });
    // The exit corks each once; `counted` was corked twice before it (a slice's cork left open):
    // three uncorks take it to 0. `plain` has no count to read: one uncork, for the exit's one cork
    // (64 before the fix, the loop's bound).
    expect(JSON.parse(stdout.trim())).toEqual({ plain: [1, 1], counted: [3, 3, 0] });
  }, 30_000);
});
