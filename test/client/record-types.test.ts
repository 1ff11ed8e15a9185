// The run record is a union on `status`: narrowing on it types `cancel`, `error` and `outcome`
// (found from outside: `record.cancel.trigger` after `status === "cancelled"` needed a `!`). The
// types are checked by `tsc` (npm test runs it first); the records the library really builds, at
// each status and in each revision, are checked to keep the union's promise at run time.
import { describe, expect, expectTypeOf, it } from "vitest";
import type {
  CallErrorInfo,
  CancelInfo,
  CancelledOutcome,
  CancelledRunRecord,
  FailedRunRecord,
  RunRecord,
  SucceededRunRecord,
  TaskCreatedRunRecord,
} from "../../src/index.js";
import { connectPeer, flush } from "../helpers/peer.js";

/** What the union promises, for a record the library built (read as plain JSON: the check must not trust the types it checks). */
function keepsTheUnion(record: { status: string; cancel: unknown; error: unknown; outcome: string; summary: string }): string | null {
  const { status, cancel, error, outcome } = record;
  const ok =
    status === "cancelled"
      ? cancel !== null && error === null && outcome !== "completed" && outcome !== "error"
      : status === "failed"
        ? cancel === null && error !== null && (outcome === "error" || outcome === "not-sent")
        : cancel === null && error === null && outcome === "completed";
  return ok ? null : `${status}: ${record.summary}`;
}

describe("run record types", () => {
  it("narrowing on status types cancel, error and outcome", () => {
    const check = (record: RunRecord) => {
      if (record.status === "cancelled") {
        expectTypeOf(record).toEqualTypeOf<CancelledRunRecord>();
        expectTypeOf(record.cancel).toEqualTypeOf<CancelInfo>();
        expectTypeOf(record.cancel.trigger).toEqualTypeOf<"timeout" | "max-total-timeout" | "aborted" | "connection-closed">();
        expectTypeOf(record.outcome).toEqualTypeOf<CancelledOutcome>();
        expectTypeOf(record.error).toBeNull();
      }
      if (record.status === "failed") {
        expectTypeOf(record).toEqualTypeOf<FailedRunRecord>();
        expectTypeOf(record.error).toEqualTypeOf<CallErrorInfo>();
        expectTypeOf(record.cancel).toBeNull();
      }
      if (record.status === "succeeded") {
        expectTypeOf(record).toEqualTypeOf<SucceededRunRecord>();
        expectTypeOf(record.outcome).toEqualTypeOf<"completed">();
      }
      if (record.status === "task-created") {
        expectTypeOf(record).toEqualTypeOf<TaskCreatedRunRecord>();
        expectTypeOf(record.task.taskId).toBeString();
      }
    };
    void check;
  });

  it("every record the library builds, in every revision, keeps the union's promise", async () => {
    const { mcp, peer, records } = await connectPeer();
    const answer: Array<() => Promise<void>> = [];
    peer.onRequest((message) => {
      const name = (message.params as { name?: string } | undefined)?.name;
      if (name === "ok") void peer.result(message.id);
      else if (name === "bad") void peer.error(message.id, -32602, "no such tool");
      else if (name === "task")
        void peer.result(message.id, { task: { taskId: "t-1", status: "working", createdAt: "2026-12-05T00:00:00Z" } });
      // "slow": answered by the test after the cancel (a late result: revision 1).
      else answer.push(() => peer.result(message.id));
    });
    await mcp.callTool({ name: "ok" });
    await expect(mcp.callTool({ name: "bad" })).rejects.toThrow("no such tool");
    await mcp.callTool({ name: "task" }).catch(() => undefined);
    await expect(mcp.callTool({ name: "slow" }, { timeoutMs: 100 })).rejects.toMatchObject({ code: "REQUEST_TIMEOUT" });
    await expect(mcp.callTool({ name: "x" }, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: "CANCELLED" });
    for (const late of answer) await late();
    await flush();
    expect([...new Set(records.map((r) => r.status))].sort()).toEqual(["cancelled", "failed", "succeeded", "task-created"]);
    expect(records.some((r) => r.status === "cancelled" && r.revision > 0)).toBe(true);
    expect(records.map(keepsTheUnion).filter((problem) => problem !== null)).toEqual([]);
  });
});
