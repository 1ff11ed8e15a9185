import { describe, expect, it, onTestFinished, vi } from "vitest";
import type { TaskInfo } from "../../src/core/record.js";
import type { TaskFollower } from "../../src/wire/tasks.js";
import { TaskTracker } from "../../src/wire/task-tracker.js";
import { ListenTracker } from "../../src/wire/listens.js";
import type { Port } from "../../src/wire/port.js";

// The wire's task and listen bookkeeping on its own (the wire tests drive it through a wire).

/** A port below the layer that takes every message and reports nothing. */
function stubPort(): Port {
  return {
    send: async () => {},
    start: async () => {},
    close: async () => {},
    cancel: () => "none",
    setProtocolVersion: () => {},
    connect: () => {},
  };
}

function tracker(max: number) {
  const retired: (string | number)[] = [];
  const tasks = new TaskTracker(stubPort(), max);
  tasks.retireToken = (token) => void retired.push(token);
  return { tasks, retired };
}

const created = (taskId: string, status = "working") => ({ task: { taskId, status } });

function driver(): TaskFollower & { createdTasks: TaskInfo[]; notified: string[] } {
  const createdTasks: TaskInfo[] = [];
  const notified: string[] = [];
  return {
    ttlMs: undefined,
    watchMs: 10_000,
    createdTasks,
    notified,
    created: (task) => void createdTasks.push(task),
    statusNotified: (status) => void notified.push(status),
  };
}

describe("TaskTracker", () => {
  it("keeps an SDK task request's token until a terminal status passes, then retires it through the wire", () => {
    const { tasks, retired } = tracker(10);
    expect(tasks.keepToken(undefined, created("t0"))).toBe(false); // no token: nothing to keep
    expect(tasks.keepToken(7, { content: [] })).toBe(false); // not a CreateTaskResult
    expect(tasks.keepToken(7, created("t0", "completed"))).toBe(false); // terminal already
    expect(tasks.keepToken(7, created("t1"))).toBe(true);
    tasks.statusSeen({ taskId: "t1", status: "working" }, false);
    expect(retired).toEqual([]);
    tasks.statusSeen({ taskId: "t1", status: "completed" }, false);
    expect(retired).toEqual([7]);
  });

  it("is bounded: past its maximum the oldest SDK task token is retired, and the oldest followed task dropped", () => {
    const { tasks, retired } = tracker(2);
    for (const [token, taskId] of [
      [1, "a"],
      [2, "b"],
      [3, "c"],
    ] as const)
      expect(tasks.keepToken(token, created(taskId))).toBe(true);
    expect(retired).toEqual([1]);
    const drivers = ["x", "y", "z"].map((taskId) => {
      const d = driver();
      tasks.created({ taskId, status: "working", revision: "2025-11-25" }, d, created(taskId), {});
      return d;
    });
    expect(tasks.followedCount).toBe(2);
    tasks.statusSeen({ taskId: "x", status: "input_required" }, true);
    tasks.statusSeen({ taskId: "z", status: "input_required" }, true);
    expect(drivers.map((d) => d.notified)).toEqual([[], [], ["input_required"]]);
  });

  it("a followed task's driver hears status notifications until a terminal one; a terminal task is never followed", () => {
    const { tasks } = tracker(10);
    const live = driver();
    const done = driver();
    tasks.created({ taskId: "t", status: "working", revision: "2025-11-25" }, live, created("t"), {});
    tasks.created({ taskId: "u", status: "completed", revision: "2025-11-25" }, done, created("u", "completed"), {});
    expect([live.createdTasks.length, done.createdTasks.length, tasks.followedCount]).toEqual([1, 1, 1]);
    tasks.statusSeen({ taskId: "t", status: "working" }, false); // an answer, not a notification
    tasks.statusSeen({ taskId: "t", status: "input_required" }, true);
    tasks.statusSeen({ taskId: "t", status: "failed" }, true);
    tasks.statusSeen({ taskId: "t", status: "working" }, true);
    expect(live.notified).toEqual(["input_required", "failed"]);
    expect(tasks.followedCount).toBe(0);
  });

  it("registered drivers are taken once by their request, and forgotten when their call settles or the connection closes", () => {
    const { tasks } = tracker(10);
    const d = driver();
    tasks.register(1, d);
    expect(tasks.take(1)).toBe(d);
    expect(tasks.take(1)).toBeUndefined();
    tasks.register(2, d);
    tasks.closeAll(new Error("Connection closed"));
    expect(tasks.take(2)).toBeUndefined();
  });
});

describe("ListenTracker", () => {
  it("a task's unanswered server requests: an answer finds its task in one lookup, not a walk over every task's (an audit's: quadratic in a burst)", async () => {
    const { tasks } = tracker(10_000);
    tasks.connect({ message: () => {}, fact: () => {}, closed: () => {}, error: () => {} });
    const related = (taskId: string) => ({ _meta: { "io.modelcontextprotocol/related-task": { taskId } } });
    const count = 1_000;
    // Each task asks the client twice (an elicitation, a sampling) on its tasks/result stream.
    for (let i = 0; i < count; i++) {
      tasks.message({ jsonrpc: "2.0", id: `e${i}`, method: "elicitation/create", params: related(`t${i}`) });
      tasks.message({ jsonrpc: "2.0", id: i, method: "sampling/createMessage", params: related(`t${i}`) });
    }
    const walks = vi.spyOn(Map.prototype, Symbol.iterator);
    onTestFinished(() => walks.mockRestore());
    // The SDK answers every elicitation, and an id no task asked for.
    for (let i = 0; i < count; i++) await tasks.send({ jsonrpc: "2.0", id: `e${i}`, result: { action: "decline" } });
    await tasks.send({ jsonrpc: "2.0", id: "nobody's", result: {} });
    expect(walks).toHaveBeenCalledTimes(0);
    walks.mockRestore();
    // What each task still waits for is its sampling alone; taken once.
    expect(tasks.takeInbound("t7")).toEqual([7]);
    expect(tasks.takeInbound("t7")).toEqual([]);
    // An answer to a request taken already (its handler aborted) changes nothing else.
    await tasks.send({ jsonrpc: "2.0", id: 7, result: {} });
    expect(tasks.takeInbound("t8")).toEqual([8]);
    await tasks.send({ jsonrpc: "2.0", id: 9, result: {} }); // answered: task t9 waits for nothing
    expect(tasks.takeInbound("t9")).toEqual([]);
  });

  it("tracks only the SDK's subscriptions/listen requests, until each ends", async () => {
    const listens = new ListenTracker(stubPort());
    const request = (id: string | number, method: string) => ({ jsonrpc: "2.0" as const, id, method, params: {} });
    await listens.send(request(1, "tools/list"));
    await listens.send(request(2, "subscriptions/listen"));
    await listens.send(request("3", "subscriptions/listen"));
    expect([listens.has(1), listens.has(2), listens.size]).toEqual([false, true, 2]);
    listens.ended(2);
    expect([listens.has(2), listens.size]).toEqual([false, 1]);
    // The server ends the other one (rule 12): forgotten once the message went up.
    listens.message({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "3" } });
    expect(listens.size).toBe(0);
  });
});
