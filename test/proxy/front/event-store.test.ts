import { describe, expect, it, onTestFinished, vi } from "vitest";
import { SessionEventStore } from "../../../src/cli/proxy/listen/event-store.js";

// A 2025-era session's events kept for resumption (rule 40): the newest `capacity`, oldest dropped
// first, one at a time (by its id, not by walking the map from its start).

const message = (n: number) => ({ jsonrpc: "2.0", method: "notifications/progress", params: { progress: n } });

describe("SessionEventStore", () => {
  it("keeps the newest `capacity` events: the older are gone for a resume, the newer replayed in order", async () => {
    const store = new SessionEventStore(3);
    for (let n = 1; n <= 5; n++) expect(await store.storeEvent(n % 2 === 0 ? "b" : "a", message(n))).toBe(String(n));
    expect(store.size).toBe(3);
    expect([store.streamIdOf("1"), store.streamIdOf("2"), store.streamIdOf("3"), store.streamIdOf("5")]).toEqual([
      undefined,
      undefined,
      "a",
      "a",
    ]);
    expect(store.eventIdsOf("a")).toEqual(["3", "5"]);
    expect(store.eventIdsOf("b")).toEqual(["4"]);
    expect(await store.replayEventsAfter("1", { send: async () => {} })).toBe(""); // gone: nothing to resume from
    const replayed: string[] = [];
    expect(await store.replayEventsAfter("3", { send: async (id) => void replayed.push(id) })).toBe("a");
    expect(replayed).toEqual(["5"]);
  });

  it("a stream's ids and a resume read that stream's own events only: no walk over the whole store (an audit's: each cancel and each resume scanned every event kept)", async () => {
    const store = new SessionEventStore(10_000);
    for (let n = 1; n <= 9_000; n++) await store.storeEvent(n % 1_000 === 0 ? "mine" : `other-${n % 7}`, message(n));
    const walks = vi.spyOn(Map.prototype, Symbol.iterator);
    const entries = vi.spyOn(Map.prototype, "entries");
    onTestFinished(() => {
      walks.mockRestore();
      entries.mockRestore();
    });
    expect(store.eventIdsOf("mine")).toEqual(["1000", "2000", "3000", "4000", "5000", "6000", "7000", "8000", "9000"]);
    const replayed: string[] = [];
    expect(await store.replayEventsAfter("3000", { send: async (id) => void replayed.push(id) })).toBe("mine");
    expect(replayed).toEqual(["4000", "5000", "6000", "7000", "8000", "9000"]);
    expect(walks).toHaveBeenCalledTimes(0);
    expect(entries).toHaveBeenCalledTimes(0);
    walks.mockRestore();
    entries.mockRestore();
    // Dropped as the oldest: gone from its stream's ids too, and a stream with none left is forgotten.
    for (let n = 9_001; n <= 19_000; n++) await store.storeEvent("late", message(n));
    expect(store.eventIdsOf("mine")).toEqual([]);
    expect(store.eventIdsOf("late")).toHaveLength(10_000);
  });

  it("stays at its capacity over 50,000 events, one dropped per event stored", async () => {
    const store = new SessionEventStore(1_000);
    for (let n = 1; n <= 50_000; n++) await store.storeEvent("s", message(n));
    expect(store.size).toBe(1_000);
    expect(store.streamIdOf("49000")).toBeUndefined();
    expect(store.eventIdsOf("s")[0]).toBe("49001");
  });
});
