// A cancel not done because the response came first (rule 7) is named by the transport's own
// cancel: on 2026-07-28 Streamable HTTP that is the stream's close, never a notification (no
// notification is ever sent there). Here, a response read after the call's limit passed, before
// its overdue timer ran (a busy event loop): the limit came first, the response is late (rule 8),
// and nothing goes out. The adapter's `era` (`StreamableHttpAdapter.era`) says which cancel it is.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { CancelMechanism, RunRecord } from "../../src/index.js";
import { connectPeer } from "../helpers/peer.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

async function overdueAnswer(
  era: "modern" | "legacy" | undefined,
): Promise<{ record: RunRecord; cancels: number; adapterCancels: number }> {
  let adapterCancels = 0;
  const { client, mcp, peer, records } = await connectPeer({}, (transport) => ({
    transport,
    ...(era === undefined ? {} : { era }),
    cancel: (): CancelMechanism => {
      adapterCancels++;
      return era === "modern" ? "stream-close" : "notification";
    },
  }));
  const call = mcp.callTool({ name: "slow", arguments: {} }, { timeoutMs: 100 });
  call.catch(() => {});
  await vi.advanceTimersByTimeAsync(0);
  const request = peer.requests("tools/call")[0]!;
  vi.setSystemTime(Date.now() + 150); // the clock moved past the limit; its timer has not run yet
  await peer.result(request.id, { content: [] });
  await expect(call).rejects.toMatchObject({ code: "REQUEST_TIMEOUT" });
  await vi.advanceTimersByTimeAsync(200);
  await client.close();
  return { record: records.find((r) => r.method === "tools/call")!, cancels: peer.cancels().length, adapterCancels };
}

describe("a cancel not done because the response came first names the transport's own cancel", () => {
  for (const [era, mechanism] of [
    ["modern", "stream-close"],
    ["legacy", "notification"],
    [undefined, "notification"],
  ] as const) {
    it(`an adapter of era ${era ?? "(none)"}: undelivered ${mechanism}, nothing sent (rule 7), the response late (rule 8)`, async () => {
      const { record, cancels, adapterCancels } = await overdueAnswer(era);
      expect(record).toMatchObject({
        status: "cancelled",
        outcome: "late-result-discarded",
        late: { results: 1 },
        cancel: {
          trigger: "timeout",
          mechanism: "none",
          sentAt: null,
          undelivered: { mechanism, error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
        },
      });
      expect(adapterCancels).toBe(0);
      expect(cancels).toBe(0);
    });
  }
});
