import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BoundedIdMap } from "../../src/utils/bounded-id-map.js";
import { BoundedMap } from "../../src/utils/bounded-map.js";

// BoundedIdMap answers every call as BoundedMap does (its model): the same keys kept, the oldest
// forgotten first, the same values, `replace` and `size` alike, whatever mix of keys it gets
// (small integers that meet in one slot of its table, strings, negative, fractional and huge
// numbers) and whatever its capacity (0, 1, tiny, or larger than its table's first size).

const RUNS = Number(process.env.FC_RUNS ?? 1_000);
const KEYS = [
  ...Array.from({ length: 301 }, (_, i) => i),
  -1,
  0.5,
  2 ** 31,
  2 ** 40,
  Number.MAX_SAFE_INTEGER,
  "0",
  "1",
  "a",
  "mcp-cancellable-proxy-1",
];

const key = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 300 }), weight: 6 },
  { arbitrary: fc.integer({ min: 0, max: 4 }).map((k) => k * 64), weight: 2 }, // one slot of a 64-slot table
  { arbitrary: fc.constantFrom(-1, 0.5, 2 ** 31, 2 ** 40, Number.MAX_SAFE_INTEGER), weight: 1 },
  { arbitrary: fc.constantFrom("0", "1", "a", "mcp-cancellable-proxy-1"), weight: 1 },
);
const op = fc.oneof(
  fc.record({ type: fc.constant("set" as const), key, value: fc.integer({ min: 0, max: 3 }) }),
  fc.record({
    type: fc.constant("replace" as const),
    key,
    expected: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    value: fc.integer(),
  }),
  fc.record({ type: fc.constant("read" as const), key }),
);

describe("BoundedIdMap", () => {
  it("answers as BoundedMap does, for any keys and capacity", () => {
    // Each answer is compared as it comes (a plain check: a run does hundreds), and the first
    // difference fails the run with what was asked.
    const same = (what: string, got: unknown, want: unknown): void => {
      if (!Object.is(got, want)) throw new Error(`${what}: got ${String(got)}, BoundedMap says ${String(want)}`);
    };
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 60, max: 200 })),
        fc.array(op, { maxLength: 400 }),
        (capacity, ops) => {
          const model = new BoundedMap<string | number, number | undefined>(capacity);
          const map = new BoundedIdMap<string | number, number | undefined>(capacity);
          for (const o of ops) {
            if (o.type === "set") {
              model.set(o.key, o.value);
              map.set(o.key, o.value);
            } else if (o.type === "replace") {
              same(`replace(${String(o.key)})`, map.replace(o.key, o.expected, o.value), model.replace(o.key, o.expected, o.value));
            }
            same(`has(${String(o.key)})`, map.has(o.key), model.has(o.key));
            same(`get(${String(o.key)})`, map.get(o.key), model.get(o.key));
            same("size", map.size, model.size);
          }
          expect([...map.values()]).toEqual([...model.values()]);
          // Every key the model keeps, the map keeps with the same value, and no other.
          for (const k of KEYS) {
            same(`has(${String(k)}) at the end`, map.has(k), model.has(k));
            same(`get(${String(k)}) at the end`, map.get(k), model.get(k));
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("sequential ids stay in the table: 100,000 settled in order, the newest 10,000 kept, none in the map beside it", () => {
    const map = new BoundedIdMap<number, object>(10_000);
    const values: object[] = [];
    for (let id = 0; id < 100_000; id++) {
      const value = { id };
      map.set(id, value);
      if (id >= 90_000) values.push(value);
    }
    expect(map.size).toBe(10_000);
    expect(map.has(89_999)).toBe(false);
    for (let id = 90_000; id < 100_000; id++) expect(map.get(id)).toBe(values[id - 90_000]);
    // The table only: nothing beside it.
    expect(map.besideTable).toBe(0);
  });

  it("ids settled out of order within 1,000 in flight stay in the table too; a string id goes beside it", () => {
    const map = new BoundedIdMap<number | string, number>(10_000);
    for (let base = 0; base < 50_000; base += 1_000) {
      // Each window of 1,000 settles in a scrambled order (a stride coprime with 1,000).
      for (let i = 0; i < 1_000; i++) map.set(base + ((i * 7_919) % 1_000), i);
    }
    expect(map.size).toBe(10_000);
    expect(map.besideTable).toBe(0);
    map.set("a", 1);
    expect(map.besideTable).toBe(1);
    expect(map.get("a")).toBe(1);
  });
});
