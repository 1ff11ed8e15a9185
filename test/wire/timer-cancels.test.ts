import { afterEach, describe, expect, it, vi } from "vitest";
import type { RunRecord } from "../../src/index.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";
import type { Message } from "../../src/wire/messages.js";

// A timer-fired cancel on a transport whose cancel is a plain notification (the SDK's in-memory
// transport, a custom one) goes out in the process's settle slices, behind the settling under way:
// calls that time out together are all released first, then their notifications go (rule 6: the
// caller's wait never blocks on the cancel). Rule 7: one whose response came meanwhile is not sent.

type Event = `settled ${number}` | `cancel ${number}`;

type Peer = Awaited<ReturnType<typeof connectPeer>>["peer"];

/** Three calls with a 1,000 ms idle timeout, timed out together; `onSettle` runs as each settles (its record's first revision). */
type SdkClient = Awaited<ReturnType<typeof connectPeer>>["client"];

async function timedOutTogether(onSettle: (record: RunRecord, ids: readonly unknown[], peer: Peer, client: SdkClient) => void = () => {}) {
  const events: Event[] = [];
  const ids: unknown[] = [];
  const { mcp, peer, client } = await connectPeer({
    onRecord: (record) => {
      if (record.revision !== 0) return;
      events.push(`settled ${record.requestId as number}`);
      onSettle(record, ids, peer, client);
    },
  });
  peer.onRequest((message: Message) => {
    if (message.method === "notifications/cancelled") events.push(`cancel ${(message.params as { requestId: number }).requestId}`);
    else if (message.method === "tools/call") ids.push(message.id);
  });
  const calls = [0, 1, 2].map((i) => settleOf(mcp.callTool({ name: `t${i}`, arguments: {} }, { timeoutMs: 1_000 })));
  await flush();
  expect(ids).toHaveLength(3);
  await vi.advanceTimersByTimeAsync(1_000);
  // A settling that ran out of its slice goes on after a yield (a 1 ms step runs it).
  for (let i = 0; i < 5 && events.length < 6; i++) await vi.advanceTimersByTimeAsync(1);
  await flush();
  return { events, ids, calls, mcp, peer };
}

describe("timer-fired cancels on a notification transport", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("calls that time out together are all settled before the first notifications/cancelled goes out, then one each, in order", async () => {
    vi.useFakeTimers();
    const { events, ids, calls, mcp } = await timedOutTogether();
    expect(events).toEqual([...ids.map((id) => `settled ${id}`), ...ids.map((id) => `cancel ${id}`)]);
    expect(calls.map((c) => c.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const id of ids) {
      const record = mcp.records().find((r) => r.requestId === id)!;
      expect(record.cancel).toMatchObject({ trigger: "timeout", mechanism: "notification", undelivered: null });
      // Sent within the settle's millisecond: the record was not revised.
      expect(record.revision).toBe(0);
    }
    expect(mcp.pendingCount).toBe(0);
  });

  it("a call answered after its settle and before its notification went: no notification for it, and the record says why (rule 7)", async () => {
    vi.useFakeTimers();
    const { events, ids, mcp } = await timedOutTogether((record, seen, peer) => {
      // The server's answer to the first call arrives while its cancel waits for the others' settles.
      if (record.requestId === seen[0]) void peer.result(seen[0]);
    });
    expect(events.filter((e) => e.startsWith("cancel"))).toEqual([`cancel ${ids[1]}`, `cancel ${ids[2]}`]);
    const first = mcp.records().find((r) => r.requestId === ids[0])!;
    expect(first.status).toBe("cancelled");
    expect(first.cancel?.mechanism).toBe("none");
    expect(first.cancel?.sentAt).toBeNull();
    expect(first.cancel?.undelivered).toEqual({
      mechanism: "notification",
      error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)",
    });
    expect(first.late.results).toBe(1);
    expect(first.outcome).toBe("late-result-discarded");
    // One revision says both (an outside tester's: one said "the response arrived first" beside
    // "outcome unverified", the late count following in the next).
    expect(first.revision).toBe(1);
  });

  it("a notification that went out a millisecond or more after the settle: the record's sentAt says when it went", async () => {
    vi.useFakeTimers();
    const { ids, mcp, events } = await timedOutTogether((record, seen) => {
      // Settling the second call takes 7 ms of the clock: the first two notifications go after it.
      if (record.requestId === seen[1]) vi.setSystemTime(Date.now() + 7);
    });
    expect(events).toEqual([...ids.map((id) => `settled ${id}`), ...ids.map((id) => `cancel ${id}`)]);
    const [first, second, third] = ids.map((id) => mcp.records().find((r) => r.requestId === id)!);
    for (const record of [first!, second!]) {
      expect(record.revision).toBe(1);
      expect(record.cancel?.mechanism).toBe("notification");
      const late = Date.parse(record.cancel!.sentAt!) - Date.parse(first!.settledAt);
      expect(late).toBeGreaterThanOrEqual(7);
      expect(late).toBeLessThanOrEqual(7 + 5);
    }
    // Settled after the 7 ms and sent in the same millisecond: as the settle recorded it.
    expect(third!.revision).toBe(0);
    expect(third!.cancel?.sentAt).toBe(third!.settledAt);
  });

  it("the client closing while notifications wait: they go out before the transport closes", async () => {
    vi.useFakeTimers();
    let closing: Promise<void> | undefined;
    const { events, ids, mcp } = await timedOutTogether((record, seen, _peer, client) => {
      // The bot closes its client as the last call settles, before any notification went.
      if (record.requestId === seen[2]) closing = client.close();
    });
    expect(closing).toBeDefined();
    await closing;
    expect(events).toEqual([...ids.map((id) => `settled ${id}`), ...ids.map((id) => `cancel ${id}`)]);
    for (const id of ids) {
      const record = mcp.records().find((r) => r.requestId === id)!;
      expect(record.cancel).toMatchObject({ mechanism: "notification", undelivered: null });
    }
  });

  it("calls whose deadlines come a millisecond apart (a burst over several timer fires) are all settled before the first notification; each record's sentAt says when it went", async () => {
    vi.useFakeTimers();
    const events: Event[] = [];
    const ids: number[] = [];
    const { mcp, peer } = await connectPeer({
      onRecord: (record) => {
        if (record.revision === 0) events.push(`settled ${record.requestId as number}`);
      },
    });
    peer.onRequest((message: Message) => {
      if (message.method === "notifications/cancelled") events.push(`cancel ${(message.params as { requestId: number }).requestId}`);
      else if (message.method === "tools/call") ids.push(message.id as number);
    });
    const calls: ReturnType<typeof settleOf>[] = [];
    for (let i = 0; i < 3; i++) {
      calls.push(settleOf(mcp.callTool({ name: `t${i}`, arguments: {} }, { timeoutMs: 1_000 })));
      await vi.advanceTimersByTimeAsync(1);
    }
    expect(ids).toHaveLength(3);
    // Three fires, 1 ms apart: each settle holds the notifications for the next one (Slicer.hold).
    for (let i = 0; i < 1_010 && events.length < 6; i++) await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(events).toEqual([...ids.map((id) => `settled ${id}`), ...ids.map((id) => `cancel ${id}`)]);
    expect(calls.map((c) => c.status)).toEqual(["rejected", "rejected", "rejected"]);
    const records = ids.map((id) => mcp.records().find((r) => r.requestId === id)!);
    // The first waited for the last settle (2 ms): its record is revised to when it went.
    expect(records[0]!.revision).toBe(1);
    expect(Date.parse(records[0]!.cancel!.sentAt!) - Date.parse(records[0]!.settledAt)).toBeGreaterThanOrEqual(2);
    for (const record of records) expect(record.cancel).toMatchObject({ trigger: "timeout", mechanism: "notification", undelivered: null });
    expect(mcp.pendingCount).toBe(0);
  });

  it("a request sent while notifications are held (the caller's retry in the first timeout's continuation) goes after them: the server learns of each cancel first", async () => {
    // An outside tester's, on stdio (test/delivery/stdio-delivery.test.ts); here the held
    // notifications of a burst of deadlines, on a notification transport.
    vi.useFakeTimers();
    const events: string[] = [];
    const { mcp, peer } = await connectPeer();
    peer.onRequest((message: Message) => {
      if (message.method === "notifications/cancelled") events.push(`cancel ${(message.params as { requestId: number }).requestId}`);
      else if (message.method === "tools/call") events.push(`call ${message.id as number}`);
    });
    let retry: ReturnType<typeof settleOf> | undefined;
    const first = mcp.callTool({ name: "t0", arguments: {} }, { timeoutMs: 1_000 });
    first.catch(() => void (retry = settleOf(mcp.callTool({ name: "retry", arguments: {} }, { timeoutMs: 5_000 }))));
    await vi.advanceTimersByTimeAsync(1);
    const second = settleOf(mcp.callTool({ name: "t1", arguments: {} }, { timeoutMs: 1_000 }));
    for (let i = 0; i < 1_010 && (second.status === "pending" || !events.includes("call 3")); i++) await vi.advanceTimersByTimeAsync(1);
    await vi.advanceTimersByTimeAsync(20); // whatever was held has gone by now
    await flush();
    expect(second.status).toBe("rejected");
    expect(retry).toBeDefined();
    // The retry (id 3) never goes ahead of the notification for the call it follows (id 1).
    expect(events.indexOf("cancel 1")).toBeGreaterThanOrEqual(0);
    expect(events.indexOf("cancel 1")).toBeLessThan(events.indexOf("call 3"));
  });

  it("a caller's own abort of another call while notifications are held: the held ones go first, then its own", async () => {
    vi.useFakeTimers();
    const events: string[] = [];
    const { mcp, peer } = await connectPeer();
    peer.onRequest((message: Message) => {
      if (message.method === "notifications/cancelled") events.push(`cancel ${(message.params as { requestId: number }).requestId}`);
    });
    const shared = new AbortController();
    const timed = mcp.callTool({ name: "t0", arguments: {} }, { timeoutMs: 1_000 });
    timed.catch(() => shared.abort());
    await vi.advanceTimersByTimeAsync(1);
    const other = settleOf(mcp.callTool({ name: "t1", arguments: {} }, { timeoutMs: 1_000 })); // its deadline holds the first's notification
    const aborted = settleOf(mcp.callTool({ name: "t2", arguments: {} }, { signal: shared.signal, timeoutMs: 60_000 }));
    for (let i = 0; i < 1_010 && (other.status === "pending" || aborted.status === "pending"); i++) await vi.advanceTimersByTimeAsync(1);
    await vi.advanceTimersByTimeAsync(20);
    await flush();
    expect(aborted.status).toBe("rejected");
    expect(events.indexOf("cancel 1")).toBeGreaterThanOrEqual(0);
    expect(events.indexOf("cancel 1")).toBeLessThan(events.indexOf("cancel 3"));
  });
});
