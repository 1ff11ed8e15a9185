import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { abortSubscribers, onAbort } from "../../src/utils/abort-link.js";
import { BoundedMap } from "../../src/utils/bounded-map.js";
import { isoTime } from "../../src/utils/iso.js";
import { settleSlicer } from "../../src/utils/slices.js";

describe("BoundedMap", () => {
  it("replace() changes a key's value only when it is the expected one, keeping its place; never adds a key", () => {
    const map = new BoundedMap<number, string | undefined>(2);
    map.set(1, "a");
    map.set(2, "b");
    expect(map.replace(1, "x", "c")).toBe(false);
    expect(map.replace(3, undefined, "c")).toBe(false);
    expect(map.has(3)).toBe(false);
    expect(map.replace(1, "a", "c")).toBe(true);
    expect(map.get(1)).toBe("c");
    map.set(3, "d"); // evicts the oldest key, 1, whose place the replace kept
    expect([...map.values()]).toEqual(["b", "d"]);
  });

  it("keeps at most `capacity` keys, forgetting the oldest first", () => {
    const map = new BoundedMap<number, string>(3);
    for (let i = 1; i <= 5; i++) map.set(i, `v${i}`);
    expect(map.size).toBe(3);
    expect([1, 2, 3, 4, 5].map((k) => map.has(k))).toEqual([false, false, true, true, true]);
    expect([...map.values()]).toEqual(["v3", "v4", "v5"]);
  });

  it("replacing a present key keeps its place and evicts nothing", () => {
    const map = new BoundedMap<string, number>(2);
    map.set("a", 1);
    map.set("b", 2);
    map.set("a", 10);
    expect([...map.values()]).toEqual([10, 2]);
    map.set("c", 3); // evicts "a", the oldest insertion
    expect(map.has("a")).toBe(false);
    expect(map.get("b")).toBe(2);
  });

  it("capacity 0 keeps nothing; a huge capacity allocates nothing up front", () => {
    const none = new BoundedMap<number, number>(0);
    none.set(1, 1);
    expect(none.size).toBe(0);
    const huge = new BoundedMap<number, number>(2_147_483_647);
    for (let i = 0; i < 1_000; i++) huge.set(i, i);
    expect(huge.size).toBe(1_000);
  });
});

describe("isoTime", () => {
  it("formats like Date#toISOString, across second boundaries and sub-millisecond times", () => {
    const times = [0, 1, 9, 10, 99, 100, 999, 1_000, 1_700_000_000_123.9, Date.UTC(2026, 10, 29, 23, 59, 59, 999), Date.UTC(2027, 0, 1)];
    for (const ms of times) expect(isoTime(ms)).toBe(new Date(Math.floor(ms)).toISOString());
  });
});

const nextTask = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Lets work an earlier test left for a later slice go first, on the real clock, and the yield that starts the count anew. */
async function idleSlicer(): Promise<void> {
  for (let i = 0; i < 100 && settleSlicer.pending > 0; i++) await nextTask();
  expect(settleSlicer.pending).toBe(0);
  await nextTask();
}

describe("onAbort", () => {
  it("one listener per signal however many subscribers, removed with the last one", () => {
    const controller = new AbortController();
    const fired = vi.fn();
    // Distinct callbacks, as every call's own handler is (a Set would fold one function given twice).
    const unsubscribe = Array.from({ length: 50 }, () => onAbort(controller.signal, () => fired()));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    expect(abortSubscribers(controller.signal)).toBe(50);
    for (const u of unsubscribe.slice(0, 49)) u();
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    unsubscribe[49]!();
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    controller.abort();
    expect(fired).not.toHaveBeenCalled();
  });

  it("an abort reaches every subscriber once; unsubscribing afterwards is harmless", async () => {
    await idleSlicer();
    // The clock stands still: the second subscriber goes in abort()'s own task whatever pause
    // (a collection, a loaded machine) falls between the two (the slices are cut by this clock).
    const clock = vi.spyOn(performance, "now").mockReturnValue(performance.now());
    try {
      const controller = new AbortController();
      const fired = vi.fn();
      const unsubscribe = [onAbort(controller.signal, () => fired()), onAbort(controller.signal, () => fired())];
      controller.abort();
      controller.abort();
      expect(fired).toHaveBeenCalledTimes(2);
      for (const u of unsubscribe) u();
      expect(abortSubscribers(controller.signal)).toBe(0);
    } finally {
      clock.mockRestore();
    }
  });

  it("one subscriber, then more: each is called once in subscription order, an unsubscribed one never, the same one given twice once", async () => {
    await idleSlicer();
    const clock = vi.spyOn(performance, "now").mockReturnValue(performance.now());
    try {
      const controller = new AbortController();
      const order: string[] = [];
      const a = (): void => void order.push("a");
      const b = (): void => void order.push("b");
      const c = (): void => void order.push("c");
      const offA = onAbort(controller.signal, a);
      onAbort(controller.signal, a); // the same function again: still one subscription
      expect(abortSubscribers(controller.signal)).toBe(1);
      onAbort(controller.signal, b);
      onAbort(controller.signal, c);
      expect(abortSubscribers(controller.signal)).toBe(3);
      offA();
      expect(abortSubscribers(controller.signal)).toBe(2);
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
      controller.abort();
      expect(order).toEqual(["b", "c"]);
      expect(abortSubscribers(controller.signal)).toBe(0);

      // A lone subscriber that left and came back is called; one that left for good is not.
      const other = new AbortController();
      const offB = onAbort(other.signal, b);
      offB();
      expect(getEventListeners(other.signal, "abort")).toHaveLength(0);
      onAbort(other.signal, c);
      other.abort();
      expect(order).toEqual(["b", "c", "c"]);
    } finally {
      clock.mockRestore();
    }
  });
});

describe("onAbort: a signal of the caller's own making (a polyfill) that ignores `once`", () => {
  /** `aborted`, `addEventListener` and `removeEventListener` only, its listeners in a Set: `once` is not honoured. */
  function polyfill() {
    const listeners = new Set<() => void>();
    const signal = {
      aborted: false,
      reason: undefined as unknown,
      addEventListener: (_type: string, listener: () => void) => void listeners.add(listener),
      removeEventListener: (_type: string, listener: () => void) => void listeners.delete(listener),
      abort(reason: unknown) {
        signal.aborted = true;
        signal.reason = reason;
        for (const listener of [...listeners]) listener();
      },
    };
    return { signal, listeners };
  }

  it("keeps no listener of ours after its abort, with one subscriber or many; each subscriber is called once", async () => {
    await idleSlicer();
    for (const count of [1, 3]) {
      const { signal, listeners } = polyfill();
      const fired = vi.fn();
      for (let i = 0; i < count; i++) onAbort(signal as unknown as AbortSignal, () => fired());
      expect(listeners.size).toBe(1);
      signal.abort("stop");
      for (let i = 0; i < 100 && settleSlicer.pending > 0; i++) await nextTask();
      expect(fired).toHaveBeenCalledTimes(count);
      expect(listeners.size).toBe(0);
      expect(abortSubscribers(signal as unknown as AbortSignal)).toBe(0);
    }
  });
});

describe("onAbort: a signal shared by many subscribers settles them in slices", () => {
  // The process's clock (`performance.now()`) is the test's: each callback costs what the test
  // says, and the slices (5 ms) are cut by it. The yields are the runtime's setImmediate.
  let now = 0;
  afterEach(() => {
    vi.restoreAllMocks();
  });
  /** Mocks the clock, then starts the slicer's count anew: a piece costing half the budget schedules the yield that does it. */
  async function freshBudget(): Promise<void> {
    await idleSlicer();
    vi.spyOn(performance, "now").mockImplementation(() => now);
    settleSlicer.run({ step: () => ((now += 3), false) });
    await nextTask();
  }

  it("2,000 subscribers at 1/16 ms each: 80 in abort()'s own task, the rest 80 a task, each once and in subscription order", async () => {
    await freshBudget();
    const controller = new AbortController();
    const calledIn: number[] = [];
    let task = 0;
    const order: number[] = [];
    for (let i = 0; i < 2_000; i++) {
      onAbort(controller.signal, () => {
        now += 0.0625;
        order.push(i);
        calledIn.push(task);
      });
    }
    controller.abort();
    expect(order).toHaveLength(80);
    const yieldsBefore = settleSlicer.yields;
    while (order.length < 2_000 && task < 100) {
      task++;
      await nextTask();
    }
    expect(order).toEqual(Array.from({ length: 2_000 }, (_, i) => i));
    const perTask = new Map<number, number>();
    for (const t of calledIn) perTask.set(t, (perTask.get(t) ?? 0) + 1);
    expect([...perTask.values()]).toEqual(Array.from({ length: 25 }, () => 80));
    expect(settleSlicer.yields - yieldsBefore).toBe(24);
    expect(abortSubscribers(controller.signal)).toBe(0);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("a subscriber that unsubscribes before its turn is not called; another shared signal's subscribers wait behind", async () => {
    await freshBudget();
    const first = new AbortController();
    const second = new AbortController();
    const called: string[] = [];
    const unsubscribe: Array<() => void> = [];
    for (let i = 0; i < 300; i++) {
      unsubscribe.push(
        onAbort(first.signal, () => {
          now += 0.0625;
          called.push(`first${i}`);
        }),
      );
    }
    onAbort(second.signal, () => void called.push("second0"));
    onAbort(second.signal, () => void called.push("second1"));
    first.abort();
    expect(called).toHaveLength(80);
    unsubscribe[150]!();
    expect(abortSubscribers(first.signal)).toBe(219);
    second.abort(); // waits behind the rest of the first signal's subscribers
    expect(called).toHaveLength(80);
    for (let i = 0; i < 10 && !called.includes("second1"); i++) await nextTask();
    expect(called).toHaveLength(301);
    expect(called).not.toContain("first150");
    expect(called.slice(-2)).toEqual(["second0", "second1"]);
    expect(new Set(called).size).toBe(301);
  });

  it("a signal with one subscriber (a request's stream, a call's own signal) reaches it at once, even in the middle of a settling: nothing to slice", async () => {
    await freshBudget();
    const shared = new AbortController();
    const own = new AbortController();
    const called: string[] = [];
    for (let i = 0; i < 300; i++) {
      onAbort(shared.signal, () => {
        now += 0.0625;
        called.push(`shared${i}`);
        // A mass timeout's settle closes its request's stream: the close is the cancel, now.
        if (i === 10) {
          own.abort();
          expect(called.at(-1)).toBe("own");
        }
      });
    }
    onAbort(own.signal, () => void called.push("own"));
    shared.abort();
    expect(called.slice(0, 12)).toEqual([...Array.from({ length: 11 }, (_, i) => `shared${i}`), "own"]);
    // Out of budget too: still at once.
    const late = new AbortController();
    onAbort(late.signal, () => void called.push("late"));
    late.abort();
    expect(called.at(-1)).toBe("late");
    for (let i = 0; i < 10 && !called.includes("shared299"); i++) await nextTask();
    expect(called).toHaveLength(302);
    expect(abortSubscribers(own.signal)).toBe(0);
    expect(getEventListeners(own.signal, "abort")).toHaveLength(0);
  });
});
