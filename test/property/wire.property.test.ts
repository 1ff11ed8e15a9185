import { getEventListeners } from "node:events";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RunRecord } from "../../src/index.js";
import { connectPeer, flush } from "../helpers/peer.js";

// Random interleavings of everything that can happen to calls on one connection: sends,
// progress, results, errors, caller aborts, idle and maximum timeouts, transport close, late,
// duplicate and unknown-id messages. The SDK client is real; the peer is scripted; fake timers
// fix the order. A failure prints fast-check's seed and path; replay with FC_SEED=<seed>
// FC_PATH=<path> npx vitest run test/property.

const RUNS = Number(process.env.FC_RUNS ?? 2_500);
const UNKNOWN_ID = 999;

const action = fc.oneof(
  {
    arbitrary: fc.record({
      type: fc.constant("call" as const),
      timeoutMs: fc.integer({ min: 1, max: 60 }),
      maxTotalTimeoutMs: fc.option(fc.integer({ min: 1, max: 90 }), { nil: undefined }),
      resetTimeoutOnProgress: fc.boolean(),
      signal: fc.constantFrom("none", "own", "shared", "pre-aborted"),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ type: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 40 }) }), weight: 4 },
  { arbitrary: fc.record({ type: fc.constant("result" as const), pick: fc.nat() }), weight: 3 },
  { arbitrary: fc.record({ type: fc.constant("error" as const), pick: fc.nat() }), weight: 1 },
  {
    arbitrary: fc.record({ type: fc.constant("progress" as const), pick: fc.nat(), value: fc.integer({ min: 0, max: 5 }) }),
    weight: 3,
  },
  { arbitrary: fc.record({ type: fc.constant("abort" as const), pick: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ type: fc.constant("close" as const) }), weight: 1 },
  // The response and the caller's abort in the same tick: the response must win (rule 9).
  { arbitrary: fc.record({ type: fc.constant("race" as const), pick: fc.nat() }), weight: 2 },
);

interface Tracked {
  controller: AbortController | undefined;
  id: number | undefined;
  status: "pending" | "fulfilled" | "rejected";
  value?: { content: Array<{ text: string }> };
  error?: { code?: unknown; record?: RunRecord };
  settleCount: number;
}

beforeAll(() => {
  vi.useFakeTimers();
});
afterAll(() => {
  vi.useRealTimers();
});

describe("property: the wire decorator and the facade under random interleavings", () => {
  it(`holds every invariant over ${RUNS} random runs`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 40 }), async (actions) => {
        const records: RunRecord[] = [];
        /** Where each call settled in the wire log (its first record's place): a response after it is late. */
        const settledAt = new Map<RunRecord["callId"], number>();
        let logged = 0;
        const onRecord = (r: RunRecord) => {
          records.push(r);
          if (r.revision === 0) settledAt.set(r.callId, logged);
        };
        const { mcp, peer, errors } = await connectPeer({ onRecord, maxTombstones: 1_000 });
        const shared = new AbortController();
        const calls: Tracked[] = [];
        /** Everything on the wire, in order, as the peer saw or sent it. */
        const log: Array<{ dir: "in" | "out"; kind: "request" | "cancel" | "response" | "progress"; id: number }> = [];
        const push = log.push.bind(log);
        log.push = (...entries) => {
          logged += entries.length;
          return push(...entries);
        };
        peer.onRequest((m) => {
          if (m.method === "tools/call") log.push({ dir: "in", kind: "request", id: m.id as number });
          if (m.method === "notifications/cancelled") {
            log.push({ dir: "in", kind: "cancel", id: (m.params as { requestId: number }).requestId });
          }
        });
        let closed = false;
        const issued = () => peer.requests("tools/call").map((m) => m.id as number);
        const pickId = (pick: number) => {
          const ids = [...issued(), UNKNOWN_ID];
          return ids[pick % ids.length]!;
        };

        for (const a of actions) {
          if (a.type === "call") {
            const controller = a.signal === "own" ? new AbortController() : undefined;
            const signal =
              a.signal === "own"
                ? controller!.signal
                : a.signal === "shared"
                  ? shared.signal
                  : a.signal === "pre-aborted"
                    ? AbortSignal.abort()
                    : undefined;
            const tracked: Tracked = { controller, id: undefined, status: "pending", settleCount: 0 };
            const before = issued().length;
            calls.push(tracked);
            mcp
              .callTool(
                { name: "t" },
                {
                  timeoutMs: a.timeoutMs,
                  resetTimeoutOnProgress: a.resetTimeoutOnProgress,
                  ...(a.maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeoutMs: a.maxTotalTimeoutMs }),
                  ...(signal === undefined ? {} : { signal }),
                },
              )
              .then(
                (value) => Object.assign(tracked, { status: "fulfilled", value, settleCount: tracked.settleCount + 1 }),
                (error: Tracked["error"]) => Object.assign(tracked, { status: "rejected", error, settleCount: tracked.settleCount + 1 }),
              );
            await flush();
            if (issued().length > before) tracked.id = issued().at(-1);
          } else if (a.type === "advance") {
            await vi.advanceTimersByTimeAsync(a.ms);
          } else if (a.type === "abort") {
            const own = calls.filter((c) => c.controller !== undefined);
            if (own.length > 0) own[a.pick % own.length]!.controller!.abort();
            else shared.abort();
            await flush();
          } else if (a.type === "close") {
            if (!closed) {
              closed = true;
              await peer.close();
              await flush();
            }
          } else if (a.type === "race") {
            const live = calls.filter((c) => c.controller !== undefined && c.id !== undefined && c.status === "pending");
            if (live.length > 0 && !closed) {
              const c = live[a.pick % live.length]!;
              log.push({ dir: "out", kind: "response", id: c.id! });
              void peer.result(c.id!, { content: [{ type: "text", text: `r${c.id!}` }] });
              c.controller!.abort(); // same tick: no flush between the response and the abort
              await flush();
            }
          } else if (!closed) {
            const id = pickId(a.pick);
            if (a.type === "result") {
              log.push({ dir: "out", kind: "response", id });
              await peer.result(id, { content: [{ type: "text", text: `r${id}` }] });
            } else if (a.type === "error") {
              log.push({ dir: "out", kind: "response", id });
              await peer.error(id, -32000 - (id % 10), `e${id}`);
            } else {
              log.push({ dir: "out", kind: "progress", id });
              await peer.progress(id, a.value);
            }
            await flush();
          }
        }
        await vi.advanceTimersByTimeAsync(200); // every limit is at most 90 ms: all calls end
        await flush();

        // 1. Every call settled, exactly once, with exactly one final record.
        for (const c of calls) {
          expect(c.status).not.toBe("pending");
          expect(c.settleCount).toBe(1);
        }
        expect(records.filter((r) => r.revision === 0)).toHaveLength(calls.length);

        // 2. A cancel goes out at most once, only for an issued request with no response yet, never for initialize.
        const cancels = log.filter((e) => e.kind === "cancel");
        expect(new Set(cancels.map((e) => e.id)).size).toBe(cancels.length);
        for (const cancel of cancels) {
          const at = log.indexOf(cancel);
          expect(cancel.id).not.toBe(0);
          expect(log.slice(0, at).some((e) => e.kind === "request" && e.id === cancel.id)).toBe(true);
          expect(log.slice(0, at).some((e) => e.kind === "response" && e.id === cancel.id)).toBe(false);
        }

        // 3. No late message is delivered; a message for one id never settles another call.
        for (const c of calls) {
          const record = c.status === "rejected" && c.error?.record ? c.error.record : undefined;
          if (c.status === "fulfilled") {
            const id = Number(c.value!.content[0]!.text.slice(1));
            const myRecord = records.find((r) => r.revision === 0 && r.requestId === id && r.status === "succeeded");
            expect(myRecord).toBeDefined();
            expect(cancels.some((e) => e.id === id)).toBe(false);
          }
          if (record !== undefined && record.status === "cancelled" && record.requestId !== null) {
            const id = record.requestId as number;
            const trigger = record.cancel!.trigger;
            const sent = cancels.filter((e) => e.id === id).length;
            // The last revision says whether the notification went: a timer-fired one held behind
            // a burst (or waiting for its settling's end) is not sent when the connection closes
            // first, and its record says so; anything else of a cancel goes exactly once.
            const final = records.filter((r) => r.callId === record.callId).at(-1)!;
            const lostToClose = final.cancel!.mechanism === "none" && /connection closed/.test(final.cancel!.undelivered?.error ?? "");
            // Or its answer came while it was held (rule 7): not sent, and the record says so, only
            // when the peer did send that answer.
            const answeredFirst =
              final.cancel!.mechanism === "none" && /response arrived first/.test(final.cancel!.undelivered?.error ?? "");
            if (answeredFirst) expect(log.some((e) => e.kind === "response" && e.id === id)).toBe(true);
            expect(sent).toBe(trigger === "connection-closed" || lostToClose || answeredFirst ? 0 : 1);
            if (sent === 1) expect(final.cancel!.undelivered).toBeNull();
          }
        }
        // Every response the peer sent while the call was live (before it settled, and before its
        // cancel went: a timer-fired one may be held behind a burst of settles) was delivered to that call.
        for (const r of records.filter((x) => x.revision === 0 && x.requestId !== null && x.requestId !== UNKNOWN_ID)) {
          const id = r.requestId as number;
          const firstResponse = log.findIndex((e) => e.kind === "response" && e.id === id);
          const cancelAt = log.findIndex((e) => e.kind === "cancel" && e.id === id);
          const live = firstResponse < (settledAt.get(r.callId) ?? Number.POSITIVE_INFINITY);
          if (firstResponse !== -1 && live && (cancelAt === -1 || firstResponse < cancelAt) && r.cancel?.trigger !== "connection-closed") {
            expect(r.status).not.toBe("cancelled");
          }
        }

        // 4. Late responses are counted on the right record, and the SDK never sees them.
        const finals = new Map<number, RunRecord>();
        for (const r of records) if (r.requestId !== null) finals.set(r.requestId as number, r);
        for (const [id, r] of finals) {
          if (r.status !== "cancelled" || r.cancel!.trigger === "connection-closed") continue;
          // Late: what came after it settled (its cancel may have gone later, or never: rule 7).
          const lateResponses = log.slice(settledAt.get(r.callId)).filter((e) => e.kind === "response" && e.id === id).length;
          expect(r.late.results + r.late.errors).toBe(lateResponses);
        }
        for (const error of errors) expect(error.message).toContain(String(UNKNOWN_ID));

        // 5. Nothing is held once every call settled.
        expect(mcp.pendingCount).toBe(0);
        expect(vi.getTimerCount()).toBe(0);
        expect(getEventListeners(shared.signal, "abort")).toHaveLength(0);
        for (const c of calls) if (c.controller) expect(getEventListeners(c.controller.signal, "abort")).toHaveLength(0);
        if (!closed) await peer.close();
      }),
      {
        numRuns: RUNS,
        ...(process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) }),
        ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
      },
    );
  }, 240_000);
});
