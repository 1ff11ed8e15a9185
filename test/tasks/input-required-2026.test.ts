// 2026-07-28 input_required (issue 20, item 3): the extension's flow against a scripted stdio
// server (test/fixtures/tasks/raw-2026-task-server.mjs, tool `ask`) with the v2 client pinned to
// 2026-07-28. The server's requests arrive in inputRequests of tasks/get answers; each reaches the
// v2 client's own elicitation handler once (keys deduplicated across polls), its bare result goes
// back as tasks/update inputResponses[key], and the call resolves with the task's result. A cancel
// while the handler waits sends one tasks/cancel and aborts the handler; no tasks/update follows.
import { afterEach, describe, expect, it } from "vitest";
import { isCallCancelledError } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { until } from "../helpers/timing.js";

let closeClient: (() => Promise<void>) | undefined;
afterEach(async () => {
  await closeClient?.();
  closeClient = undefined;
});

type Elicit = (message: string, signal: AbortSignal) => Promise<string>;

async function connect(onElicit: Elicit) {
  const { Client } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  const { withCancellation } = await import("../../src/index.js");
  const { stdioCancellation } = await import("../../src/adapters/stdio/index.js");
  const script = new URL("../fixtures/tasks/raw-2026-task-server.mjs", import.meta.url).pathname;
  const transport = new StdioClientTransport({ command: process.execPath, args: [script], stderr: "pipe" });
  const stderr: string[] = [];
  transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString("utf8")));
  const client = new Client(
    { name: "input-required-2026", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  client.setRequestHandler("elicitation/create", async (request, ctx) => ({
    action: "accept" as const,
    content: { reply: await onElicit((request.params as { message: string }).message, ctx.mcpReq.signal) },
  }));
  const records: RunRecord[] = [];
  const mcp = withCancellation(client, stdioCancellation(transport), { onRecord: (r) => records.push(r) });
  await client.connect(mcp.transport);
  closeClient = () => client.close();
  const read = (method: string) =>
    stderr
      .join("")
      .split("\n")
      .filter((line) => line.startsWith("RECV "))
      .map(
        (line) =>
          JSON.parse(line.slice(5)) as {
            method?: string;
            params?: { taskId?: string; inputResponses?: Record<string, unknown>; _meta?: Record<string, unknown> };
          },
      )
      .filter((m) => m.method === method);
  const fates = () =>
    stderr
      .join("")
      .split("\n")
      .filter((line) => line.startsWith("FATE "));
  return { mcp, records, read, fates, close: () => client.close() };
}

/** A person who never answers: the handler waits until its signal aborts, then rejects; `signal` is the one it got. */
function waitingPerson(): { elicit: Elicit; signal: AbortSignal | undefined } {
  const person: { elicit: Elicit; signal: AbortSignal | undefined } = {
    signal: undefined,
    elicit: (_message, signal) =>
      new Promise((_resolve, reject) => {
        person.signal = signal;
        signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
      }),
  };
  return person;
}

describe("2026-07-28 input_required: v2 client pinned to 2026-07-28, a scripted extension server over stdio", () => {
  it("each input request reaches the client's elicitation handler once; tasks/update carries its answer; the call resolves with the final result", async () => {
    const asked: string[] = [];
    const { mcp, records, read } = await connect(async (message) => {
      asked.push(message);
      await new Promise((resolve) => setTimeout(resolve, 150)); // a person taking their time: several polls see the same key
      return `yes to ${message}`;
    });
    const result = await mcp.callTool({ name: "ask", arguments: { questions: ["Proceed?", "Really?"] } }, { task: true, timeoutMs: 5_000 });
    expect(result.content).toEqual([{ type: "text", text: 'answered: [{"reply":"yes to Proceed?"},{"reply":"yes to Really?"}]' }]);
    expect(asked).toEqual(["Proceed?", "Really?"]); // once each, in order, though polls repeated each key
    const updates = read("tasks/update");
    expect(updates.map((m) => Object.keys(m.params!.inputResponses!))).toEqual([["q1"], ["q2"]]);
    expect(updates[0]!.params!.inputResponses!.q1).toEqual({ action: "accept", content: { reply: "yes to Proceed?" } }); // the bare result
    expect(updates[0]!.params!._meta).toMatchObject({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
    const taskId = records.at(-1)!.task!.taskId;
    expect(updates.every((m) => m.params!.taskId === taskId)).toBe(true);
    // The key was listed by more than one poll while the handler waited: deduplicated, not asked again.
    expect(read("tasks/get").length).toBeGreaterThan(updates.length + 2);
    expect(records.at(-1)).toMatchObject({ status: "succeeded", task: { status: "completed", revision: "2026-07-28" } });
    expect(read("tasks/cancel")).toHaveLength(0);
    expect(mcp.pendingCount).toBe(0);
  });

  it("a cancel while the handler waits: one tasks/cancel, the handler's signal aborts, no tasks/update, the task ends cancelled", async () => {
    const person = waitingPerson();
    const { mcp, records, read, fates } = await connect(person.elicit);
    const controller = new AbortController();
    const call = mcp
      .callTool({ name: "ask", arguments: { questions: ["Delete everything?"] } }, { task: true, signal: controller.signal })
      .catch((error: unknown) => error);
    await until(() => person.signal !== undefined);
    expect(person.signal!.aborted).toBe(false);
    controller.abort();
    expect(isCallCancelledError(await call)).toBe(true);
    expect(person.signal!.aborted).toBe(true); // at the cancel, before any answer from the server
    await until(() => records.at(-1)?.outcome === "task-cancelled");
    const taskId = records.at(-1)!.task!.taskId;
    expect(read("tasks/cancel").map((m) => m.params!.taskId)).toEqual([taskId]);
    expect(read("tasks/update")).toHaveLength(0);
    expect(read("notifications/cancelled")).toHaveLength(0); // rule 36: never for a task
    expect(records.at(-1)).toMatchObject({ cancel: { mechanism: "tasks/cancel" }, task: { status: "cancelled", revision: "2026-07-28" } });
    expect(fates()).toEqual([`FATE ${taskId} cancelled`]);
  });

  it("client.close() while the handler waits: the handler's signal aborts (nobody can use its answer), the call ends as the client's close, nothing sent (the task outlives the connection)", async () => {
    const person = waitingPerson();
    const { mcp, records, read, close } = await connect(person.elicit);
    const call = mcp.callTool({ name: "ask", arguments: { questions: ["Delete everything?"] } }, { task: true }).catch((e: unknown) => e);
    await until(() => person.signal !== undefined);
    await close();
    closeClient = undefined;
    const error = await call;
    expect(error).toMatchObject({ code: "CONNECTION_CLOSED" });
    // An outside tester's: the handler went on waiting for a person on a closed connection.
    expect(person.signal!.aborted).toBe(true);
    expect(records.at(-1)).toMatchObject({
      cancel: { trigger: "connection-closed", reason: "The client closed the connection", mechanism: "none" },
    });
    expect(read("tasks/cancel")).toHaveLength(0);
    expect(read("tasks/update")).toHaveLength(0);
  });
});
