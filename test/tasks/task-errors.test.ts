import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { TaskRequestError, TaskRequestTimeout, TaskRequestTimeoutError } from "../../src/index.js";
import type { Message } from "../../src/core.js";
import { TaskRequests } from "../../src/wire/tasks.js";

// The library's own task requests fail with the errors in src/errors/: a server's JSON-RPC error
// is a TaskRequestError, no answer in time a TaskRequestTimeoutError (0.1's TaskRequestTimeout).

/** Timers the test fires by hand. */
function manualTimers() {
  const due = new Map<number, () => void>();
  let next = 0;
  return {
    timers: {
      setTimeout: (callback: () => void) => (due.set(++next, callback), next),
      clearTimeout: (handle: unknown) => void due.delete(handle as number),
    },
    fireAll: () => {
      for (const [handle, callback] of [...due]) due.delete(handle), callback();
    },
    get pending() {
      return due.size;
    },
  };
}

describe("task request errors", () => {
  it("no answer in time: TaskRequestTimeoutError, code TASK_REQUEST_TIMEOUT, a late answer dropped", async () => {
    const sent: Message[] = [];
    const requests = new TaskRequests(async (message) => void sent.push(message));
    const clock = manualTimers();
    const pending = requests.request("tasks/get", { taskId: "t1" }, 5_000, clock.timers);
    clock.fireAll();
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskRequestTimeoutError);
    expect(error).toMatchObject({
      name: "TaskRequestTimeoutError",
      code: "TASK_REQUEST_TIMEOUT",
      method: "tasks/get",
      timeoutMs: 5_000,
      message: "tasks/get got no answer within 5000 ms",
    });
    expect(requests.size).toBe(0);
    // The late answer is the library's (its id), so nobody else sees it.
    expect(requests.answer({ jsonrpc: "2.0", id: sent[0]!.id!, result: {} })).toBe(true);
  });

  it("given up (its signal aborted): rejects with the signal's reason, its entry and timer go, its cancel goes on the wire once (rule 15), a late answer is dropped", async () => {
    const sent: Message[] = [];
    const cancelled: Array<[string, string]> = [];
    const requests = new TaskRequests(
      async (message) => void sent.push(message),
      (id, reason) => void cancelled.push([id, reason]),
    );
    const clock = manualTimers();
    const given = new AbortController();
    const pending = requests.request("tasks/result", { taskId: "t1" }, 2_147_483_647, clock.timers, given.signal);
    expect(clock.pending).toBe(1);
    given.abort(new Error("the call ended"));
    await expect(pending).rejects.toThrow("the call ended");
    expect(requests.size).toBe(0);
    expect(clock.pending).toBe(0);
    expect(cancelled).toEqual([[sent[0]!.id, "Cancelled by the client"]]);
    expect(requests.answer({ jsonrpc: "2.0", id: sent[0]!.id!, result: {} })).toBe(true);
  });

  it("timed out with a signal given: its listener on the signal goes with it; a signal aborted already: nothing sent, nothing held (an audit's)", async () => {
    const sent: Message[] = [];
    const requests = new TaskRequests(async (message) => void sent.push(message));
    const clock = manualTimers();
    const given = new AbortController();
    const pending = requests.request("tasks/result", { taskId: "t1" }, 5_000, clock.timers, given.signal);
    expect(getEventListeners(given.signal, "abort")).toHaveLength(1);
    clock.fireAll();
    await expect(pending).rejects.toBeInstanceOf(TaskRequestTimeoutError);
    expect(getEventListeners(given.signal, "abort")).toHaveLength(0);
    given.abort(new Error("the call ended"));
    const gone = requests.request("tasks/result", { taskId: "t2" }, 5_000, clock.timers, given.signal);
    await expect(gone).rejects.toThrow("the call ended");
    expect(sent).toHaveLength(1);
    expect(clock.pending).toBe(0);
    expect(requests.size).toBe(0);
  });

  it("only its own are taken: an answer in the same form it never sent (a client numbering its requests with strings) goes on; a late one of its own is dropped", () => {
    // An audit's: any `mcp-cancellable-task-*` answer was swallowed, and that client's call timed out.
    const sent: Message[] = [];
    const requests = new TaskRequests(async (message) => void sent.push(message));
    const clock = manualTimers();
    expect(requests.answer({ jsonrpc: "2.0", id: "mcp-cancellable-task-1", result: {} })).toBe(false);
    void requests.request("tasks/get", { taskId: "t1" }, 5_000, clock.timers).catch(() => {});
    clock.fireAll(); // given up
    expect(requests.answer({ jsonrpc: "2.0", id: sent[0]!.id!, result: {} })).toBe(true);
    expect(requests.answer({ jsonrpc: "2.0", id: "mcp-cancellable-task-7", result: {} })).toBe(false);
  });

  it("the deprecated 0.1 name is the same class", () => {
    expect(TaskRequestTimeout).toBe(TaskRequestTimeoutError);
    const error: TaskRequestTimeout = new TaskRequestTimeout("tasks/result", 10);
    expect(error).toBeInstanceOf(TaskRequestTimeoutError);
    expect(error.name).toBe("TaskRequestTimeoutError");
  });

  it("a server's error: TaskRequestError with the JSON-RPC code, message and data; its timer cleared", async () => {
    const sent: Message[] = [];
    const requests = new TaskRequests(async (message) => void sent.push(message));
    const clock = manualTimers();
    const pending = requests.request("tasks/cancel", { taskId: "t1" }, 5_000, clock.timers);
    expect(clock.pending).toBe(1);
    const answered = requests.answer({
      jsonrpc: "2.0",
      id: sent[0]!.id!,
      error: { code: -32602, message: "task is terminal", data: { taskId: "t1" } },
    });
    expect(answered).toBe(true);
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskRequestError);
    expect(error).not.toBeInstanceOf(TaskRequestTimeoutError);
    expect(error).toMatchObject({
      name: "TaskRequestError",
      method: "tasks/cancel",
      code: -32602,
      message: "task is terminal",
      data: { taskId: "t1" },
    });
    expect(clock.pending).toBe(0);
  });
});
