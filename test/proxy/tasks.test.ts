import { afterEach, describe, expect, it } from "vitest";
import { eventually, RawClient, received, server } from "./helpers.js";

// Task-augmented calls through the proxy (2025-11-25 Tasks): the client makes and follows the task
// itself (tasks/get, tasks/result); the proxy relays. A task keeps its request's progress token for
// its life, so the task's progress after the CreateTaskResult reaches the client under the
// client's own token (an outside tester's finding: none did). Against the v1 SDK's own McpServer
// with a task store (test/fixtures/tasks/v1-stdio-task-server.mjs), over stdio.
const TASK_SERVER = new URL("../fixtures/tasks/v1-stdio-task-server.mjs", import.meta.url).pathname;
const LINE = new URL("./fixtures/line-server.mjs", import.meta.url).pathname;

const running: RawClient[] = [];
afterEach(async () => {
  for (const client of running.splice(0)) if (client.exit === undefined) await client.end();
});

async function connected(...flags: string[]): Promise<RawClient> {
  const client = new RawClient([...flags, ...server(TASK_SERVER)]);
  running.push(client);
  client.send({
    jsonrpc: "2.0",
    id: "init",
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: { tasks: {} }, clientInfo: { name: "raw-client", version: "1.0.0" } },
  });
  await client.answer("init", 15_000);
  client.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return client;
}

describe("proxy: a task-augmented request to a server that declared no task support", () => {
  it("the client's cancel before its answer goes upstream at once as notifications/cancelled: no CreateTaskResult can come (an outside tester's, through the library)", async () => {
    // line-server.mjs declares tools only: no tasks.requests.tools.call, so it runs the call as a plain one.
    const client = new RawClient(server(LINE));
    running.push(client);
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: "t", method: "tools/call", params: { name: "silent", arguments: {}, task: { ttl: 60_000 } } });
    expect(await eventually(() => received(client.stderr).some((m) => m.method === "tools/call"))).toBe(true);
    const upstreamId = received(client.stderr).find((m) => m.method === "tools/call")!.id;
    client.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "t", reason: "user" } });
    expect(await eventually(() => received(client.stderr).some((m) => m.method === "notifications/cancelled"), 3_000)).toBe(true);
    expect(
      received(client.stderr)
        .filter((m) => m.method === "notifications/cancelled")
        .map((m) => m.params),
    ).toEqual([{ requestId: upstreamId, reason: "user" }]);
    expect(received(client.stderr).filter((m) => m.method === "tasks/cancel")).toEqual([]);
  });
});

describe("proxy: a task the client made", () => {
  it("its progress after the CreateTaskResult reaches the client under the client's token, every step", async () => {
    const client = await connected();
    client.send({
      jsonrpc: "2.0",
      id: "t1",
      method: "tools/call",
      params: { name: "report", arguments: { ms: 500, progress: true }, task: { ttl: 60_000 }, _meta: { progressToken: "mine" } },
    });
    const created = await client.answer("t1");
    const taskId = (created.result as { task?: { taskId?: string } }).task?.taskId;
    expect(typeof taskId).toBe("string");
    // The server ran its five steps with the proxy's token; the client gets each under its own.
    expect(await eventually(() => client.messages.filter((m) => m.method === "notifications/progress").length === 5, 5_000)).toBe(true);
    const progress = client.messages.filter((m) => m.method === "notifications/progress").map((m) => m.params);
    expect(progress.map((p) => p!.progressToken)).toEqual(["mine", "mine", "mine", "mine", "mine"]);
    expect(progress.map((p) => p!.progress)).toEqual([1, 2, 3, 4, 5]);
    const upstream = received(client.stderr).find((m) => m.method === "tools/call")!;
    expect((upstream.params!._meta as { progressToken?: unknown }).progressToken).not.toBe("mine");
    // The task completes; tasks/result through the proxy as usual.
    client.send({ jsonrpc: "2.0", id: "r1", method: "tasks/result", params: { taskId } });
    const result = await client.answer("r1");
    expect(result.result).toMatchObject({ content: [{ text: "report done in 500 ms" }] });
  });

  it("a task whose request carried no token of the client's: none of its progress reaches the client (the token upstream was the library's own)", async () => {
    const client = await connected();
    client.send({
      jsonrpc: "2.0",
      id: "t2",
      method: "tools/call",
      params: { name: "report", arguments: { ms: 300, progress: true }, task: { ttl: 60_000 } },
    });
    const created = await client.answer("t2");
    const taskId = (created.result as { task?: { taskId?: string } }).task?.taskId;
    const upstream = received(client.stderr).find((m) => m.method === "tools/call")!;
    expect((upstream.params!._meta as { progressToken?: unknown }).progressToken).toEqual(expect.stringMatching(/^mcp-cancellable-/));
    client.send({ jsonrpc: "2.0", id: "r2", method: "tasks/result", params: { taskId } });
    await client.answer("r2"); // the task ran its five steps, each with progress upstream
    expect(await eventually(() => received(client.stderr).length > 0)).toBe(true);
    expect(client.messages.filter((m) => m.method === "notifications/progress")).toEqual([]);
  });

  it("timed out before its CreateTaskResult: the answer says the task is cancelled with tasks/cancel once it comes (rule 35), and it is", async () => {
    const client = await connected("--timeout-ms", "300");
    client.send({
      jsonrpc: "2.0",
      id: "t3",
      method: "tools/call",
      params: { name: "report", arguments: { ms: 5_000, createDelayMs: 1_000 }, task: { ttl: 60_000 } },
    });
    const answer = await client.answer("t3");
    expect((answer.error as { code?: number }).code).toBe(-32001);
    expect((answer.error as { message: string }).message).toContain(
      "nothing sent upstream yet: the task it creates is cancelled with tasks/cancel once its CreateTaskResult comes (rules 35, 36 in docs/spec-rules.md)",
    );
    // Nothing else went upstream at the timeout (rule 35: never notifications/cancelled); tasks/cancel once the task exists.
    expect(await eventually(() => received(client.stderr).some((m) => m.method === "tasks/cancel"), 5_000)).toBe(true);
    expect(received(client.stderr).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
  });
});
