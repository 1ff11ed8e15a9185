// 2026-07-28 Streamable HTTP, where closing the request's stream is the cancel (rules 6, 28): a
// task-augmented call cancelled before its task id was known keeps its stream open at most the
// adapter's flushTimeoutMs, so a CreateTaskResult already on its way reaches the wire and gets its
// one tasks/cancel (issue 20, item 1). The v2 client pinned to 2026-07-28 and the scripted
// extension server on 127.0.0.1, which creates the task when it reads the request and answers
// answerDelayMs later: a stream closed before that loses the answer and the task runs on.
import { afterEach, describe, expect, it } from "vitest";
import { isCallCancelledError } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { connectV2 } from "../http/clients.js";
import { methods, startRaw2026TaskServer } from "./servers.js";
import type { TaskServer } from "./servers.js";
import { until } from "../helpers/timing.js";

let server: TaskServer | undefined;
let closeClient: (() => Promise<void>) | undefined;
afterEach(async () => {
  await closeClient?.();
  await server?.stop();
  server = undefined;
  closeClient = undefined;
});

const latest = (records: RunRecord[]) => [...new Map(records.map((r) => [r.callId, r])).values()];

describe("2026-07-28 Streamable HTTP: a task-augmented call cancelled before its task id was known", () => {
  for (const answersInput of [false, true]) {
    it(`10 calls aborted right after sending${answersInput ? ", the client answering elicitations itself (an outside tester's: the SDK's own abort closed the stream)" : ""}: each stream is held, each CreateTaskResult arrives and gets one tasks/cancel; no task left working`, async () => {
      server = await startRaw2026TaskServer();
      const records: RunRecord[] = [];
      // The hold bound is the task's watchMs (10 s by default): on a loaded machine the answer (50 ms after the read) lands in it.
      const peer = await connectV2(server.url, { pin: true, answersInput, onRecord: (r) => records.push(r) });
      closeClient = peer.close;
      const holding: number[] = [];
      const errors = await Promise.all(
        Array.from({ length: 10 }, (_, i) => {
          const controller = new AbortController();
          const call = peer.mcp
            .callTool({ name: "report", arguments: { ms: 3_000, answerDelayMs: 50 } }, { task: true, signal: controller.signal })
            .catch((error: unknown) => error);
          // Aborted as soon as the server has read this tools/call, before it answers (50 ms later).
          void until(() => methods(server!, "tools/call").length > i).then(() => {
            controller.abort();
            holding.push(peer.adapter.stats().holding);
          });
          return call;
        }),
      );
      // The callers were released at the abort, not at the answer.
      expect(errors.every((error) => isCallCancelledError(error))).toBe(true);
      expect(holding.every((n) => n >= 1)).toBe(true);
      await until(() => server!.statuses().length === 10 && server!.statuses().every((status) => status === "cancelled"));
      expect(server.closedBeforeAnswer).toEqual([]); // no answer lost with a closed stream
      const cancels = methods(server, "tasks/cancel");
      expect(cancels).toHaveLength(10); // one per task
      expect(new Set(cancels.map((m) => m.params!.taskId)).size).toBe(10);
      for (const cancel of cancels) {
        expect(cancel.mcpName).toBe(cancel.params!.taskId);
        expect(cancel.params!._meta).toMatchObject({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
      }
      expect(methods(server, "notifications/cancelled")).toHaveLength(0); // rule 28: never on 2026-07-28 HTTP
      await until(() => latest(records).length === 10 && latest(records).every((r) => r.outcome === "task-cancelled"));
      for (const record of latest(records)) {
        // What was done: the stream was not closed (its response came first), the task got tasks/cancel.
        expect(record).toMatchObject({
          status: "cancelled",
          cancel: { trigger: "aborted", mechanism: "tasks/cancel", undelivered: null },
          task: { status: "cancelled", revision: "2026-07-28", createdAfterCancel: true },
        });
      }
      expect(peer.adapter.stats()).toMatchObject({ streams: 0, holding: 0 });
      expect(peer.mcp.pendingCount).toBe(0);
    }, 20_000);
  }

  it("a server slower than the bound (the task's watchMs): the stream closes when it ends, the record says stream-close and that the task may exist uncancelled", async () => {
    server = await startRaw2026TaskServer();
    const records: RunRecord[] = [];
    const peer = await connectV2(server.url, { pin: true, onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    const controller = new AbortController();
    const call = peer.mcp
      .callTool({ name: "report", arguments: { ms: 3_000, answerDelayMs: 5_000 } }, { task: { watchMs: 100 }, signal: controller.signal })
      .catch((error: unknown) => error);
    await until(() => methods(server!, "tools/call").length === 1);
    controller.abort();
    expect(isCallCancelledError(await call)).toBe(true);
    expect(peer.adapter.stats().holding).toBe(1);
    expect(server.closedBeforeAnswer).toEqual([]); // held: not closed at the abort
    await until(() => server!.closedBeforeAnswer!.length === 1);
    expect(peer.adapter.stats()).toMatchObject({ streams: 0, holding: 0 });
    await until(() => latest(records)[0]?.cancel?.undelivered !== null && latest(records)[0]?.cancel?.mechanism === "stream-close");
    expect(latest(records)[0]).toMatchObject({
      cancel: {
        mechanism: "stream-close",
        undelivered: {
          mechanism: "tasks/cancel",
          error: expect.stringMatching(/no CreateTaskResult came within 100 ms .*may exist and was not cancelled/),
        },
      },
      outcome: "unverified",
    });
    expect(latest(records)[0]!.task).toBeUndefined();
    expect(methods(server, "tasks/cancel")).toHaveLength(0);
    expect(methods(server, "notifications/cancelled")).toHaveLength(0);
  });

  it("client.close() while the stream is held: the close ends it, and the record says stream-close as at the bound (an outside tester's: 'none')", async () => {
    server = await startRaw2026TaskServer();
    const records: RunRecord[] = [];
    const peer = await connectV2(server.url, { pin: true, onRecord: (r) => records.push(r) });
    const controller = new AbortController();
    const call = peer.mcp
      .callTool({ name: "report", arguments: { ms: 3_000, answerDelayMs: 5_000 } }, { task: true, signal: controller.signal })
      .catch((error: unknown) => error);
    await until(() => methods(server!, "tools/call").length === 1);
    controller.abort();
    expect(isCallCancelledError(await call)).toBe(true);
    expect(peer.adapter.stats().holding).toBe(1);
    await peer.close();
    await until(() => server!.closedBeforeAnswer!.length === 1);
    expect(latest(records)[0]).toMatchObject({
      cancel: {
        mechanism: "stream-close",
        sentAt: expect.any(String),
        undelivered: { mechanism: "tasks/cancel", error: expect.stringMatching(/the connection closed before a CreateTaskResult came/) },
      },
    });
    expect(peer.adapter.stats()).toMatchObject({ streams: 0, holding: 0 });
  });

  it("a call that is not task-augmented: its stream closes at the abort, never held", async () => {
    server = await startRaw2026TaskServer();
    const records: RunRecord[] = [];
    // The hold bound is long: a stream held for it would still be open when the server is asked.
    const peer = await connectV2(server.url, { pin: true, onRecord: (r) => records.push(r) }, { flushTimeoutMs: 10_000 });
    closeClient = peer.close;
    const controller = new AbortController();
    const call = peer.mcp
      .callTool({ name: "report", arguments: { answerDelayMs: 5_000 } }, { signal: controller.signal })
      .catch((error: unknown) => error);
    await until(() => methods(server!, "tools/call").length === 1);
    controller.abort();
    // Synchronously at the abort: the stream is no longer tracked, nothing held.
    expect(peer.adapter.stats()).toMatchObject({ streams: 0, holding: 0 });
    expect(isCallCancelledError(await call)).toBe(true);
    await until(() => server!.closedBeforeAnswer!.length === 1, 5_000); // well inside the 10 s hold bound
    expect(server.closedBeforeAnswer).toEqual([{ id: methods(server, "tools/call")[0]!.id, taskId: null }]);
    expect(latest(records)[0]).toMatchObject({ cancel: { mechanism: "stream-close", undelivered: null } });
  });
});
