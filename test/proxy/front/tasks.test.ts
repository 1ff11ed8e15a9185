// A task the client made, through the HTTP front (2025-era session): its progress after the
// CreateTaskResult reaches the client under its own token, on the session's stream (an outside
// tester's finding: none did). A real front on 127.0.0.1 over the v1 SDK's own McpServer with a
// task store (test/fixtures/tasks/v1-stdio-task-server.mjs), raw fetch.
import { afterEach, describe, expect, it } from "vitest";
import { eventually, received, server } from "../helpers.js";
import { messagesOf, openSession, startFront, stopFronts } from "./helpers.js";

const TASK_SERVER = new URL("../../fixtures/tasks/v1-stdio-task-server.mjs", import.meta.url).pathname;
const open: AbortController[] = [];
afterEach(async () => {
  for (const controller of open.splice(0)) controller.abort();
  await stopFronts();
});

describe("HTTP front: a task the client made", () => {
  it("2025-era session: the task's progress after its CreateTaskResult comes on the session's stream, under the client's token", async () => {
    const front = await startFront(server(TASK_SERVER));
    const { headers, post } = await openSession(front.url, "2025-11-25", "tasks-test");
    // The session's own stream (GET), where messages tied to no open request go.
    const stream = new AbortController();
    open.push(stream);
    const get = await fetch(front.url, { method: "GET", headers: { ...headers, accept: "text/event-stream" }, signal: stream.signal });
    expect(get.status).toBe(200);
    let text = "";
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of get.body as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
    })().catch(() => {});
    const progress = () =>
      text
        .split("\n")
        .filter((line) => line.startsWith("data: ") && line.includes("notifications/progress"))
        .map((line) => (JSON.parse(line.slice(6)) as { params: { progressToken: unknown; progress: number } }).params);

    const created = await messagesOf(
      await post({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: { name: "report", arguments: { ms: 500, progress: true }, task: { ttl: 60_000 }, _meta: { progressToken: "mine" } },
      }),
    );
    expect(created.find((m) => m.id === 7)?.result).toMatchObject({ task: { status: "working" } });
    expect(await eventually(() => progress().length === 5, 5_000)).toBe(true);
    expect(progress().map((p) => [p.progressToken, p.progress])).toEqual([
      ["mine", 1],
      ["mine", 2],
      ["mine", 3],
      ["mine", 4],
      ["mine", 5],
    ]);
    const upstream = received(front.stderr()).find((m) => m.method === "tools/call")!;
    expect((upstream.params!._meta as { progressToken?: unknown }).progressToken).not.toBe("mine");
    stream.abort();
    // Stopped as an operator does: the front stops its server's process group (the task server's
    // task store would keep it alive past a SIGKILL of the front alone).
    expect((await front.stop("SIGTERM")).code).toBe(0);
  });

  it("timed out before its CreateTaskResult: the answer says the task is cancelled with tasks/cancel once it comes (rule 35), and it is", async () => {
    const front = await startFront(["--timeout-ms", "300", ...server(TASK_SERVER)]);
    const { post } = await openSession(front.url, "2025-11-25", "tasks-test");
    const answer = (
      await messagesOf(
        await post({
          jsonrpc: "2.0",
          id: 8,
          method: "tools/call",
          params: { name: "report", arguments: { ms: 5_000, createDelayMs: 1_000 }, task: { ttl: 60_000 } },
        }),
      )
    ).find((m) => m.id === 8)!;
    expect((answer.error as { code?: number }).code).toBe(-32001);
    expect((answer.error as { message: string }).message).toContain(
      "nothing sent upstream yet: the task it creates is cancelled with tasks/cancel once its CreateTaskResult comes (rules 35, 36 in docs/spec-rules.md)",
    );
    expect(await eventually(() => received(front.stderr()).some((m) => m.method === "tasks/cancel"), 5_000)).toBe(true);
    expect(received(front.stderr()).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
    expect((await front.stop("SIGTERM")).code).toBe(0);
  });
});
