// A task-augmented call over Streamable HTTP whose follow-up requests get no answer from the
// server (an HTTP error status from a proxy in the way, a server gone): such a request is an
// unanswered one, as a poll with no answer in time is (docs/tasks.md): polling goes on, and the
// call's idle timeout cuts a server that stays away. Before, one 503 on a tasks/get failed the
// call with the SDK's plain error while the task ran on and completed (an outside tester's
// finding). The v1 SDK server with a task store on 127.0.0.1.
import { describe, expect, it } from "vitest";
import { CallTimeoutError } from "../../src/index.js";
import { connectV1, connectV2 } from "../http/clients.js";
import { methods, startV1TaskServer, stoppedAfterEach } from "./servers.js";
import { until } from "../helpers/timing.js";

const started = stoppedAfterEach();

for (const [line, connect] of [
  ["v1", connectV1],
  ["v2", connectV2],
] as const) {
  describe(`2025-11-25 tasks over Streamable HTTP, ${line} client: follow-up requests the server did not answer`, () => {
    it("a tasks/get answered 503 once (a proxy's hiccup) is polled again: the call gets the task's result", async () => {
      let polls = 0;
      const server = (started.server = await startV1TaskServer({
        refuse: (method) => (method === "tasks/get" && ++polls === 3 ? 503 : undefined),
      }));
      const peer = await connect(server.url);
      started.closeClient = peer.close;
      const result = await peer.mcp.callTool({ name: "report", arguments: { ms: 400 } }, { task: true, timeoutMs: 5_000 });
      expect((result as { content: Array<{ text: string }> }).content[0]!.text).toBe("report done in 400 ms");
      expect(polls).toBeGreaterThan(3); // polled on after the 503
      expect(peer.mcp.records().at(-1)).toMatchObject({ status: "succeeded", task: { status: "completed" } });
      expect(methods(server, "tasks/cancel")).toEqual([]);
    });

    it("a tasks/result answered 503 once is asked again: the call gets the task's result", async () => {
      let results = 0;
      const server = (started.server = await startV1TaskServer({
        refuse: (method) => (method === "tasks/result" && ++results === 1 ? 503 : undefined),
      }));
      const peer = await connect(server.url);
      started.closeClient = peer.close;
      const result = await peer.mcp.callTool({ name: "report", arguments: { ms: 100 } }, { task: true, timeoutMs: 5_000 });
      expect((result as { content: Array<{ text: string }> }).content[0]!.text).toBe("report done in 100 ms");
      expect(results).toBe(2);
    });

    for (const method of ["tasks/get", "tasks/result"]) {
      it(`a ${method} whose connection drops after its response head is asked again at once: the call gets the task's result`, async () => {
        let dropped = 0;
        const server = (started.server = await startV1TaskServer({ dropAfterHead: (m) => m === method && ++dropped === 1 }));
        const peer = await connect(server.url);
        started.closeClient = peer.close;
        const result = await peer.mcp.callTool({ name: "report", arguments: { ms: 200 } }, { task: true, timeoutMs: 3_000 });
        expect((result as { content: Array<{ text: string }> }).content[0]!.text).toBe("report done in 200 ms");
        expect(dropped).toBeGreaterThan(1); // asked again after the drop
      });
    }

    it("a tasks/result that keeps failing while tasks/get says completed: the call is cut by its idle timeout, not polled until its maximum total timeout", async () => {
      const server = (started.server = await startV1TaskServer({ refuse: (method) => (method === "tasks/result" ? 502 : undefined) }));
      const peer = await connect(server.url);
      started.closeClient = peer.close;
      const outcome = await peer.mcp
        .callTool({ name: "report", arguments: { ms: 100 } }, { task: true, timeoutMs: 500, maxTotalTimeoutMs: 20_000 })
        .then(
          () => "resolved",
          (e: unknown) => e,
        );
      expect(outcome).toBeInstanceOf(CallTimeoutError);
      expect((outcome as CallTimeoutError).code).toBe("REQUEST_TIMEOUT"); // the idle timeout, not the maximum total one
    });

    it("a server gone mid-task: the call is cut by its idle timeout (CallTimeoutError with its record), not failed with a bare fetch error", async () => {
      const server = (started.server = await startV1TaskServer());
      const peer = await connect(server.url);
      started.closeClient = peer.close;
      const call = peer.mcp
        .callTool({ name: "report", arguments: { ms: 10_000 } }, { task: true, timeoutMs: 600 })
        .catch((e: unknown) => e);
      await until(() => methods(server, "tasks/get").length >= 2);
      started.server = undefined;
      await server.stop();
      const error = await call;
      expect(error).toBeInstanceOf(CallTimeoutError);
      expect((error as CallTimeoutError).record).toMatchObject({
        status: "cancelled",
        cancel: { trigger: "timeout" },
        outcome: "unverified",
      });
    });
  });
}
