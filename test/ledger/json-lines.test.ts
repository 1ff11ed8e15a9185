import { describe, expect, it } from "vitest";
import { InvalidOptionError, jsonLines } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { connectPeer, flush } from "../helpers/peer.js";

// A JSON Lines log written by several connections (issue 13, item 5): every record names its
// call (callId, unique in the process) and its connection; by default a call writes one line at
// settle and one more per change of what it says (its first late progress among them), never one per late progress notification.

/** Two connections into one log; on each, one call cancelled by the caller that then gets late
 *  progress three times and a late result, and one call that succeeds. */
async function twoConnections(options?: Parameters<typeof jsonLines>[1]) {
  const lines: string[] = [];
  const log = jsonLines((line) => lines.push(line), options);
  const connections = [await connectPeer({ onRecord: log }), await connectPeer({ onRecord: log })];
  for (const { mcp, peer } of connections) {
    const requests: Array<{ id: unknown; token: unknown }> = [];
    peer.onRequest((m) => {
      if (m.method === "tools/call") requests.push({ id: m.id, token: m.params?._meta?.progressToken });
    });
    const stop = new AbortController();
    const cancelled = mcp.callTool({ name: "slow" }, { signal: stop.signal, onprogress: () => {} }).catch(() => undefined);
    const ok = mcp.callTool({ name: "fast" });
    await flush();
    stop.abort();
    await cancelled;
    for (const value of [1, 2, 3]) await peer.progress(requests[0]!.token, value);
    await peer.result(requests[0]!.id);
    await peer.result(requests[1]!.id);
    await ok;
    await flush();
  }
  return { lines, records: lines.map((line) => JSON.parse(line) as RunRecord), connections };
}

describe("jsonLines", () => {
  it("default (revisions: changed): one line per call at settle, one at its first late progress, one more when the outcome changes; later late progress writes none", async () => {
    const { lines, records, connections } = await twoConnections();
    expect(lines.every((line) => line.endsWith("}\n") && !line.slice(0, -1).includes("\n"))).toBe(true);
    // per connection: cancelled at settle, its first late progress, its late result, the succeeded call
    expect(records.map((r) => r.summary)).toEqual([
      "cancelled (aborted), outcome unverified",
      "cancelled (aborted), outcome unverified",
      "cancelled (aborted), late result discarded",
      "succeeded",
      "cancelled (aborted), outcome unverified",
      "cancelled (aborted), outcome unverified",
      "cancelled (aborted), late result discarded",
      "succeeded",
    ]);
    expect(records[1]!.late).toEqual({ results: 0, errors: 0, progress: 1 }); // the first late progress
    expect(records[2]!.late).toEqual({ results: 1, errors: 0, progress: 3 }); // the counts as of the line
    // onRecord itself saw every revision: 3 late progress + 1 late result after the settle
    expect(connections[0]!.records.filter((r) => r.callId === records[0]!.callId).map((r) => r.revision)).toEqual([0, 1, 2, 3, 4]);
  });

  it("default: a second late answer (a server that answers one request twice) writes a line with its count, though the summary stays", async () => {
    // An outside tester's: the duplicate answer was counted on the record and the file never showed it.
    const lines: string[] = [];
    const { mcp, peer } = await connectPeer({ onRecord: jsonLines((line) => lines.push(line)) });
    const ids: unknown[] = [];
    peer.onRequest((m) => void ids.push(m.id));
    const stop = new AbortController();
    const call = mcp.callTool({ name: "slow" }, { signal: stop.signal }).catch(() => undefined);
    await flush();
    stop.abort();
    await call;
    await peer.result(ids[0]);
    await peer.error(ids[0], -32603, "and an error too");
    await flush();
    const records = lines.map((line) => JSON.parse(line) as RunRecord);
    expect(records.map((r) => [r.revision, r.summary, r.late.results, r.late.errors])).toEqual([
      [0, "cancelled (aborted), outcome unverified", 0, 0],
      [1, "cancelled (aborted), late result discarded", 1, 0],
      [2, "cancelled (aborted), late result discarded", 1, 1],
    ]);
  });

  it("default: a revision that changes only the cancel (when it went, what did not get through) or the task writes a line, so a call's last line is what is known of it", () => {
    // An outside tester's: the last line said `sentAt: null` (not gone yet) after the notification
    // had been answered, and named no task for a task a late CreateTaskResult had named.
    const lines: string[] = [];
    const write = jsonLines((line) => lines.push(line));
    const base = {
      callId: 900_001,
      revision: 0,
      summary: "cancelled (timeout), outcome unverified",
      late: { results: 0, errors: 0, progress: 0 },
      cancel: { trigger: "timeout", reason: "r", mechanism: "notification+stream-close", sentAt: null, undelivered: null },
    };
    const revisions = [
      base,
      { ...base, revision: 1, cancel: { ...base.cancel, sentAt: "2026-12-05T10:00:00.250Z" } },
      { ...base, revision: 2, cancel: { ...base.cancel, sentAt: "2026-12-05T10:00:00.250Z" } }, // nothing new: no line
      { ...base, revision: 3, cancel: { ...base.cancel, sentAt: "2026-12-05T10:00:00.250Z" }, task: { taskId: "t1", status: "working" } },
    ];
    for (const record of revisions) write(record as unknown as RunRecord);
    expect(lines.map((line) => (JSON.parse(line) as RunRecord).revision)).toEqual([0, 1, 3]);
  });

  it("several connections: request ids repeat, call ids never do; each record names its connection", async () => {
    const { records } = await twoConnections();
    const finals = new Map(records.map((r) => [r.callId, r])); // the last line of each call id
    expect(finals.size).toBe(4);
    const requestIds = records.filter((r) => r.revision === 0).map((r) => `${r.connectionId}:${r.requestId}`);
    expect(new Set(records.filter((r) => r.revision === 0).map((r) => r.requestId)).size).toBe(2); // 1 and 2 on both connections
    expect(new Set(requestIds).size).toBe(4);
    expect(new Set(records.map((r) => r.connectionId)).size).toBe(2);
    expect(records.every((r) => r.sessionId === null)).toBe(true); // in-memory: no MCP session
    expect(records.every((r) => Number.isInteger(r.callId) && r.callId > 0)).toBe(true);
  });

  it("revisions: all writes every revision, as onRecord receives them", async () => {
    const { records } = await twoConnections({ revisions: "all" });
    expect(records.map((r) => r.revision)).toEqual([0, 1, 2, 3, 4, 0, 0, 1, 2, 3, 4, 0]);
  });

  it("bad options are refused, named", () => {
    expect(() => jsonLines(() => {}, { revisions: "some" as never })).toThrow(InvalidOptionError);
    expect(() => jsonLines(() => {}, { maxCalls: 0 })).toThrow(/"maxCalls"/);
  });

  it("a write that is not a function is refused at once, named (else every line would be lost without a trace)", () => {
    for (const write of [undefined, null, "stdout", { write() {} }]) {
      const error = (() => {
        try {
          jsonLines(write as never);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option: "write" });
      expect((error as Error).message).toMatch(/write must be a function .*got (undefined|null|string|object)$/);
    }
  });

  it("an onRecord that throws: the call settles as it would, and the error is warned about once per distinct message", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning);
    process.on("warning", onWarning);
    try {
      let thrown = 0;
      const { mcp, peer } = await connectPeer({
        onRecord: () => {
          thrown++;
          throw new Error("disk full (json-lines test)");
        },
      });
      peer.onRequest((m) => void peer.result(m.id, { content: [] }));
      await expect(mcp.callTool({ name: "a" })).resolves.toEqual({ content: [] });
      await expect(mcp.callTool({ name: "b" })).resolves.toEqual({ content: [] });
      await new Promise((resolve) => setImmediate(resolve));
      expect(thrown).toBe(2);
    } finally {
      process.off("warning", onWarning);
    }
    const ours = warnings.filter((w) => w.name === "McpCancellableWarning" && /disk full \(json-lines test\)/.test(w.message));
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({ code: "MCP_CANCELLABLE_HOOK_THREW" });
  });

  for (const [name, hooks] of [
    [
      "an onRecord that throws an object with no prototype",
      {
        onRecord: () => {
          throw Object.create(null);
        },
      },
    ],
    [
      "an async onRecord that rejects (a database write that fails)",
      { onRecord: async () => Promise.reject(new Error("db down (hooks test)")) },
    ],
    ["an async onAnomaly that rejects", { onAnomaly: async () => Promise.reject(new Error("alerting down (hooks test)")) }],
    [
      "an onRecord that throws a revoked Proxy (it answers nothing, not even its tag)",
      {
        onRecord: () => {
          const { proxy, revoke } = Proxy.revocable({}, {});
          revoke();
          throw proxy;
        },
      },
    ],
    [
      "jsonLines over an async write that fails (fs.promises.appendFile to a missing directory)",
      { onRecord: jsonLines(async () => Promise.reject(Object.assign(new Error("ENOENT (hooks test)"), { code: "ENOENT" }))) },
    ],
    [
      "an observer whose record and result methods are async and reject",
      {
        observer: {
          start: () => ({
            record: async () => Promise.reject(new Error("sink down (hooks test)")),
            result: async () => Promise.reject(new Error("sink down (hooks test)")),
          }),
        },
      },
    ],
    [
      "an observer whose start is async and rejects",
      { observer: { start: (async () => Promise.reject(new Error("no tracer"))) as never } },
    ],
  ] as const) {
    it(`${name}: every call still settles, and nothing is left unhandled`, async () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => void unhandled.push(reason);
      process.on("unhandledRejection", onUnhandled);
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => void warnings.push(warning);
      process.on("warning", onWarning);
      try {
        const { mcp, peer } = await connectPeer(hooks);
        // A stray progress token makes an anomaly; each call then gets its answer.
        peer.onRequest((m) => {
          if (m.method !== "tools/call") return;
          void peer.progress("no-such-token", 1);
          void peer.result(m.id, { content: [] });
        });
        await expect(mcp.callTool({ name: "a" })).resolves.toEqual({ content: [] });
        await expect(mcp.callTool({ name: "b" })).resolves.toEqual({ content: [] });
        expect(mcp.pendingCount).toBe(0);
        await new Promise((resolve) => setTimeout(resolve, 20));
      } finally {
        process.off("unhandledRejection", onUnhandled);
        process.off("warning", onWarning);
      }
      expect(unhandled).toEqual([]);
      if ("onRecord" in hooks) {
        expect(warnings.filter((w) => (w as { code?: string }).code === "MCP_CANCELLABLE_HOOK_THREW")).toHaveLength(1);
      }
    });
  }
});
