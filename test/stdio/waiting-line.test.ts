import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WaitingLine } from "../../src/adapters/stdio/waiting-line.js";
import type { Waiting } from "../../src/adapters/stdio/waiting-line.js";
import type { CancelRequest } from "../../src/adapters/types.js";

// The line of messages a stdio connection holds while the server's stdin is full (queue.ts): the
// order it gives them back in, and the two ways out of its middle (a cancelled request, a cancel
// line whose request was answered), against a plain array doing the same by scanning.

const noop = (): void => {};
function request(id: number): Waiting {
  return { message: { jsonrpc: "2.0", id, method: "tools/call" }, options: undefined, id, cancel: undefined, resolve: noop, reject: noop };
}
function cancelLine(requestId: number): Waiting {
  return {
    message: { jsonrpc: "2.0", method: "notifications/cancelled" },
    options: undefined,
    id: undefined,
    cancel: { requestId } as CancelRequest,
    resolve: noop,
    reject: noop,
  };
}
function notification(): Waiting {
  return {
    message: { jsonrpc: "2.0", method: "notifications/progress" },
    options: undefined,
    id: undefined,
    cancel: undefined,
    resolve: noop,
    reject: noop,
  };
}

describe("WaitingLine", () => {
  it("gives back in order what is left after a request and a cancel line leave its middle", () => {
    const line = new WaitingLine();
    const [a, b, n, c1, c2] = [request(1), request(2), notification(), cancelLine(7), cancelLine(8)];
    for (const entry of [a, b, n, c1, c2]) line.push(entry);
    expect([line.size, line.cancels]).toEqual([5, 2]);
    expect(line.takeRequest(2)).toBe(b);
    expect(line.takeRequest(2)).toBeUndefined(); // once
    expect(line.cancelOf(7)).toBe(c1);
    line.take(c1);
    expect(line.cancelOf(7)).toBeUndefined();
    expect([line.size, line.cancels]).toEqual([3, 1]);
    expect([line.shift(), line.shift(), line.shift(), line.shift()]).toEqual([a, n, c2, undefined]);
    expect([line.size, line.cancels]).toEqual([0, 0]);
  });

  it("takes every cancel line and leaves the rest in order; takes all", () => {
    const line = new WaitingLine();
    const entries = [request(1), cancelLine(1), notification(), cancelLine(2), request(3)];
    for (const entry of entries) line.push(entry);
    expect(line.takeCancels()).toEqual([entries[1], entries[3]]);
    expect(line.cancels).toBe(0);
    expect(line.takeAll()).toEqual([entries[0], entries[2], entries[4]]);
    expect(line.size).toBe(0);
    expect(line.shift()).toBeUndefined();
  });

  it("keeps each message's place across a compaction (the slots passed dropped once past 1,024 and most of the line)", () => {
    const line = new WaitingLine();
    const entries = Array.from({ length: 3_000 }, (_, i) => request(i));
    for (const entry of entries) line.push(entry);
    for (let i = 0; i < 1_600; i++) expect(line.shift()).toBe(entries[i]);
    // Compacted by now: what is left is found and taken by id, its neighbours untouched.
    expect(line.takeRequest(2_000)).toBe(entries[2_000]);
    expect(line.takeRequest(1_600)).toBe(entries[1_600]);
    expect(line.takeRequest(2_999)).toBe(entries[2_999]);
    line.push(cancelLine(5));
    const rest: Waiting[] = [];
    for (let entry = line.shift(); entry !== undefined; entry = line.shift()) rest.push(entry);
    expect(rest.map((entry) => entry.id ?? `cancel ${entry.cancel?.requestId}`)).toEqual([
      ...Array.from({ length: 1_398 }, (_, i) => i + 1_601).filter((id) => id !== 2_000 && id !== 2_999),
      "cancel 5",
    ]);
    expect([line.size, line.cancels]).toEqual([0, 0]);
  });

  it("behaves as an array searched and cut (the line it replaced), over any sequence of operations, across its compactions", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("request" as const), id: fc.nat(3_000) }),
      fc.record({ kind: fc.constant("cancel" as const), id: fc.nat(3_000) }),
      fc.record({ kind: fc.constant("notification" as const) }),
      fc.record({ kind: fc.constant("takeRequest" as const), id: fc.nat(3_000) }),
      fc.record({ kind: fc.constant("answered" as const), id: fc.nat(3_000) }),
      fc.record({ kind: fc.constant("shift" as const), times: fc.integer({ min: 1, max: 1_500 }) }),
      fc.record({ kind: fc.constant("takeCancels" as const) }),
      fc.record({ kind: fc.constant("takeAll" as const) }),
      fc.record({ kind: fc.constant("burst" as const), from: fc.nat(3_000), count: fc.integer({ min: 1, max: 2_500 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const line = new WaitingLine();
        const model: Waiting[] = [];
        // Ids stay unique among what waits, as JSON-RPC has them in flight.
        const add = (entry: Waiting): void => {
          const key = entry.cancel?.requestId ?? entry.id;
          if (key !== undefined && model.some((m) => (entry.cancel ? m.cancel?.requestId === key : m.id === key))) return;
          line.push(entry);
          model.push(entry);
        };
        for (const o of ops) {
          if (o.kind === "request") add(request(o.id));
          else if (o.kind === "cancel") add(cancelLine(o.id));
          else if (o.kind === "notification") add(notification());
          else if (o.kind === "burst") for (let i = 0; i < o.count; i++) add(request(o.from + i));
          else if (o.kind === "takeRequest") {
            const at = model.findIndex((m) => m.id === o.id);
            const expected = at < 0 ? undefined : model.splice(at, 1)[0];
            expect(line.takeRequest(o.id)).toBe(expected);
          } else if (o.kind === "answered") {
            const at = model.findIndex((m) => m.cancel?.requestId === o.id);
            const found = line.cancelOf(o.id);
            expect(found).toBe(at < 0 ? undefined : model[at]);
            if (found !== undefined) {
              line.take(found);
              model.splice(at, 1);
            }
          } else if (o.kind === "shift") {
            for (let i = 0; i < o.times; i++) expect(line.shift()).toBe(model.shift());
          } else if (o.kind === "takeCancels") {
            const cancels = model.filter((m) => m.cancel !== undefined);
            expect(line.takeCancels()).toEqual(cancels);
            model.splice(0, model.length, ...model.filter((m) => m.cancel === undefined));
          } else {
            expect(line.takeAll()).toEqual(model.splice(0));
          }
          expect(line.size).toBe(model.length);
          expect(line.cancels).toBe(model.filter((m) => m.cancel !== undefined).length);
        }
        expect(line.takeAll()).toEqual(model);
      }),
      { numRuns: 200 },
    );
  });
});
