import type { CancellableCall, RequestId } from "../core/cancellable-call.js";
import { createdTask, isTerminalTaskStatus } from "../core/record.js";
import type { TaskInfo } from "../core/record.js";
import { BoundedMap } from "../utils/bounded-map.js";
import { noop } from "../utils/hooks.js";
import type { Message } from "./messages.js";
import { Layer } from "./port.js";
import type { MessageExtra, Port, SendOptions, WireFact } from "./port.js";
import { findAnswered } from "./messages.js";
import { RELATED_TASK_META, TaskRequests } from "./tasks.js";
import type { TaskFollower, TaskRequest } from "./tasks.js";

/**
 * The progress token of one of the SDK's own task-augmented requests is no longer live (its task
 * is terminal, or its slot was needed): the correlation layer forgets it, if it still maps it to
 * a request the SDK made on its own.
 */
export type RetireToken = (token: string | number) => void;

/**
 * The tasks layer of a connection's pipeline (right below the correlation layer): everything
 * kept about tasks (rules 35-37), so the correlation layer itself only correlates ids, drops late
 * messages and puts cancels out. What passes through it on the way up: the answers to the
 * library's own task requests (taken here, never seen above), the late `CreateTaskResult` of a
 * request cancelled before it (taken here: its task gets `tasks/cancel`), task status
 * notifications and answers (to the task's driver), the server's requests related to a task
 * (remembered until the SDK answers them). What it keeps:
 *
 * - the task drivers of registered task-augmented calls, by call number, until their request goes out;
 * - the task-augmented calls whose task exists and which have not settled (a close ends them too);
 * - task id → the driver following it, for status notifications (bounded by `maxTombstones`,
 *   released on a terminal status, at the driver's end, on close);
 * - the SDK's own task-augmented requests whose task is not terminal yet: task id → progress
 *   token, kept live until a terminal status passes by (the 2025-11-25 Tasks specification; bounded the same way);
 * - the task-augmented requests cancelled before their `CreateTaskResult` arrived: request id →
 *   the driver that cancels the task a late `CreateTaskResult` names (bounded the same way);
 * - the library's own requests (`tasks/get`, `tasks/result`, `tasks/cancel`), answered here.
 */
export class TaskTracker extends Layer {
  /** Set by the correlation layer above, once it is made. */
  retireToken: RetireToken = () => {};
  readonly #max: number;
  /** Task drivers of registered task-augmented calls not sent yet, by call number. */
  readonly #drivers = new Map<number, TaskFollower>();
  /** Task-augmented calls whose task exists and which have not settled. */
  readonly #calls = new Set<CancellableCall>();
  /** Task id → the driver following it, for status notifications. */
  readonly #followed = new Map<string, TaskFollower>();
  /** The SDK's own task-augmented requests: task id → their progress token, until the task is terminal. */
  readonly #sdkTokens = new Map<string, string | number>();
  /**
   * Task-augmented requests cancelled before their task id was known: request id → the driver
   * that cancels the task a late `CreateTaskResult` names, with the request's `_meta` (`null`
   * once used). Bounded like the tombstones, oldest first.
   */
  #unborn: BoundedMap<RequestId, { driver: TaskFollower; meta: Record<string, unknown> } | null>;
  readonly #requests: TaskRequests;
  /**
   * Server requests related to a task (`_meta["io.modelcontextprotocol/related-task"]`, 2025-11-25:
   * the elicitation or sampling a task asks for on its `tasks/result` stream) not answered yet:
   * task id → their request ids. Bounded by `max` tasks.
   */
  readonly #input = new Map<string, Set<string | number>>();
  /** The same, by request id (an answer finds its task in one lookup, not a walk over every task's). */
  readonly #inputTask = new Map<string | number, string>();

  /** @param max how many followed tasks and SDK task tokens are kept at most (the wire's `maxTombstones`). */
  constructor(below: Port, max: number) {
    super(below);
    this.#max = max;
    this.#unborn = new BoundedMap(max);
    this.#requests = new TaskRequests(
      (message) => this.below.send(message),
      (requestId, reason) =>
        this.below.cancel({
          requestId,
          reason,
          notification: { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason } },
          send: (message) => this.below.send(message),
          reportError: noop,
          delivery: noop,
        }),
    );
  }

  override message(message: Message, extra?: MessageExtra): void {
    const method = message.method;
    if (method === undefined) {
      if (this.#taken(message)) return;
    } else if (method === "notifications/tasks/status" || method === "notifications/tasks") {
      this.statusSeen(message.params, true);
    } else if (message.id !== undefined && message.id !== null) {
      this.#inbound(message);
    }
    this.up.message(message, extra);
  }

  /**
   * A fact a layer below observed of a request: the stream of one of the library's own task
   * requests ended without its answer (its connection dropped after the head, say): it fails now,
   * as unanswered, instead of waiting out its whole `watchMs` (an outside tester's: the call's idle
   * timeout came first, and a task that had completed failed).
   */
  override fact(requestId: RequestId, fact: WireFact): void {
    if (fact.kind === "ended" && typeof requestId === "string") {
      this.#requests.lost(requestId, fact.cause, fact.how === "refused" || fact.how === "dropped");
    }
    // Its body written or its response head: it reached the server (a send that fails after is no "never sent").
    this.#requests.fact(requestId, fact);
    this.up.fact(requestId, fact);
  }

  /** The SDK answering a server request: no longer waiting (see `takeInbound`). */
  override send(message: Message, options?: SendOptions): Promise<void> {
    if (message.method === undefined && message.id !== undefined && message.id !== null) this.#answeredInbound(message.id);
    return this.below.send(message, options);
  }

  /**
   * A response: true when it is taken here, never to be seen above: the answer of one of the
   * library's own task requests, or the late `CreateTaskResult` of a request cancelled before
   * its task id was known (its driver cancels the task). Any other task status passing by is
   * noted (it may retire an SDK task token).
   */
  #taken(message: Message): boolean {
    if (this.#requests.answer(message)) return true;
    if ("error" in message) {
      this.#answeredWithoutTask(message.id);
      return false;
    }
    const id = message.id;
    if (this.#unborn.size > 0 && (typeof id === "string" || typeof id === "number") && this.#lateCreated(id, message.result)) return true;
    if (this.#sdkTokens.size > 0) this.statusSeen(message.result, false);
    return false;
  }

  /** Task-augmented calls following their task (the wire's `pendingCount` counts them). */
  get callCount(): number {
    return this.#calls.size;
  }

  /** Tasks followed for status notifications. */
  get followedCount(): number {
    return this.#followed.size;
  }

  /** The library's own task requests in flight. */
  get requestCount(): number {
    return this.#requests.size;
  }

  /** A task-augmented call was registered under this call number, with its driver. */
  register(key: number, driver: TaskFollower): void {
    this.#drivers.set(key, driver);
  }

  /** The request of this call number is going out: its driver, if it is task-augmented. */
  take(key: number): TaskFollower | undefined {
    if (this.#drivers.size === 0) return undefined;
    const driver = this.#drivers.get(key);
    if (driver !== undefined) this.#drivers.delete(key);
    return driver;
  }

  /** A call settled: it no longer follows a task. */
  settled(call: CancellableCall, key: number): void {
    // Most calls follow no task: no map work for them.
    if (this.#drivers.size > 0) this.#drivers.delete(key);
    if (this.#calls.size > 0) this.#calls.delete(call);
  }

  /** A task-augmented call's task exists: the call lives on until it settles (or the connection closes). */
  live(call: CancellableCall): void {
    this.#calls.add(call);
  }

  /**
   * The `CreateTaskResult` reached the driver's call: status notifications for a task that is
   * not terminal go to the driver, which then polls it.
   * @param meta the `_meta` the create request carried, for the follow-up requests (rule 38).
   */
  created(task: TaskInfo, driver: TaskFollower, result: unknown, meta: Record<string, unknown>): void {
    if (!isTerminalTaskStatus(task.status)) this.#follow(task.taskId, driver);
    driver.created(task, result as Record<string, unknown>, meta);
  }

  /**
   * A task-augmented request was cancelled before its `CreateTaskResult` arrived (the reply may
   * be crossing the cancel, or the server may ignore it, rule 10): if one arrives, `driver` is
   * told, and cancels that task at once.
   */
  cancelledBeforeTask(id: RequestId, driver: TaskFollower, meta: Record<string, unknown>): void {
    this.#unborn.set(id, { driver, meta });
  }

  /**
   * A response for a settled request: true when it is the late `CreateTaskResult` of a request
   * cancelled before its task id was known. Its driver then cancels the task and watches it
   * (the wire drops the response: nobody waits for it any more).
   */
  #lateCreated(given: RequestId, result: unknown): boolean {
    // Matched as the wire matches answers ("2" answers request 2): this layer sits below it.
    const id = findAnswered(given, (key) => (this.#unborn.has(key) ? key : undefined));
    if (id === undefined) return false;
    const unborn = this.#unborn.get(id);
    if (unborn === undefined || unborn === null) return false;
    const task = createdTask(result);
    if (task === null) {
      this.#answeredWithoutTask(id);
      return false;
    }
    this.#unborn.set(id, null);
    this.created(task, unborn.driver, result, unborn.meta);
    return true;
  }

  /** A request cancelled before its task id was known was answered without a task: its driver stops waiting. */
  #answeredWithoutTask(given: unknown): void {
    if (this.#unborn.size === 0) return;
    const id = findAnswered(given, (key) => (this.#unborn.has(key) ? key : undefined));
    if (id === undefined) return;
    const unborn = this.#unborn.get(id);
    if (unborn === undefined || unborn === null) return;
    this.#unborn.set(id, null);
    unborn.driver.answeredWithoutTask?.();
  }

  /** Status notifications for this task go to its driver until it is terminal or `unfollow`ed. Bounded. */
  #follow(taskId: string, driver: TaskFollower): void {
    if (this.#followed.size >= this.#max) this.#followed.delete(this.#followed.keys().next().value!);
    this.#followed.set(taskId, driver);
  }

  /** True when this connection sent a `tasks/cancel` for this task id (see `TaskRequests.cancelSent`). */
  cancelSent(taskId: string): boolean {
    return this.#requests.cancelSent(taskId);
  }

  /** The driver following this task, if any. */
  followerOf(taskId: string): TaskFollower | undefined {
    return this.#followed.get(taskId);
  }

  /** The driver of this task is done with it (the call settled, or its watch ended). */
  unfollow(taskId: string): void {
    this.#followed.delete(taskId);
  }

  /**
   * One of the SDK's own requests was answered. True when the answer is a `CreateTaskResult` for
   * a task that is not terminal and the request had a progress token: the token stays live
   * until the task is terminal (the 2025-11-25 Tasks specification; the v1 SDK keeps its handler on purpose), so the wire
   * must not forget it with the request.
   */
  keepToken(token: string | number | undefined, result: unknown): boolean {
    if (token === undefined) return false;
    const task = createdTask(result);
    if (task === null || isTerminalTaskStatus(task.status)) return false;
    if (this.#sdkTokens.size >= this.#max) {
      // Bounded: the oldest task's token is retired (its progress then counts as unknown).
      const [oldestTask, oldestToken] = this.#sdkTokens.entries().next().value!;
      this.#sdkTokens.delete(oldestTask);
      this.retireToken(oldestToken);
    }
    this.#sdkTokens.set(task.taskId, token);
    return true;
  }

  /**
   * A task status passed by: a `tasks/*` answer, or (`notified`) a status notification, which
   * also tells the task's driver (and releases it on a terminal status). A terminal status
   * retires the token of the SDK's own request for that task.
   */
  statusSeen(value: unknown, notified: boolean): void {
    if (typeof value !== "object" || value === null) return;
    const { taskId, status } = value as { taskId?: unknown; status?: unknown };
    if (typeof taskId !== "string" || typeof status !== "string") return;
    if (notified) {
      const driver = this.#followed.get(taskId);
      if (driver !== undefined && isTerminalTaskStatus(status)) this.#followed.delete(taskId);
      driver?.statusNotified?.(status);
    }
    if (this.#sdkTokens.size === 0 || !isTerminalTaskStatus(status)) return;
    const token = this.#sdkTokens.get(taskId);
    if (token === undefined) return;
    this.#sdkTokens.delete(taskId);
    this.retireToken(token);
  }

  /**
   * Sends one of the library's own requests (`tasks/get`, `tasks/result`, `tasks/cancel`).
   * See `TaskRequests.request`.
   */
  request(...request: TaskRequest): Promise<Record<string, unknown>> {
    return this.#requests.request(...request);
  }

  /** A server request passed by on its way to the SDK: one related to a task is remembered until answered. */
  #inbound(message: Message): void {
    const related = message.params?._meta?.[RELATED_TASK_META] as { taskId?: unknown } | undefined;
    const id = message.id;
    if (typeof related?.taskId !== "string" || (typeof id !== "string" && typeof id !== "number")) return;
    let ids = this.#input.get(related.taskId);
    if (ids === undefined) {
      if (this.#input.size >= this.#max) this.#forgetInput(this.#input.keys().next().value!);
      ids = new Set();
      this.#input.set(related.taskId, ids);
    }
    ids.add(id);
    this.#inputTask.set(id, related.taskId);
  }

  /** The SDK answered a server request. */
  #answeredInbound(id: string | number): void {
    const taskId = this.#inputTask.get(id);
    if (taskId === undefined) return;
    this.#inputTask.delete(id);
    const ids = this.#input.get(taskId);
    if (ids !== undefined && ids.delete(id) && ids.size === 0) this.#input.delete(taskId);
  }

  /** The server requests of this task the SDK has not answered yet (forgotten here: their handlers are to be aborted). */
  takeInbound(taskId: string): (string | number)[] {
    return this.#forgetInput(taskId);
  }

  /** Forgets a task's unanswered server requests, and returns them. */
  #forgetInput(taskId: string): (string | number)[] {
    const ids = this.#input.get(taskId);
    if (ids === undefined) return [];
    this.#input.delete(taskId);
    for (const id of ids) if (this.#inputTask.get(id) === taskId) this.#inputTask.delete(id);
    return [...ids];
  }

  /**
   * The calls following a task, added to `calls`; with `forget` (the connection closed: they are
   * to be settled) the tracker forgets them.
   */
  drainCalls(calls: CancellableCall[], forget = true): void {
    for (const call of this.#calls) calls.push(call);
    if (forget) this.#calls.clear();
  }

  /** The connection closed: everything is forgotten, and each of the library's requests in flight fails with `error`. */
  closeAll(error: Error): void {
    // A wait for the CreateTaskResult of a request cancelled before it: none can come now (an
    // outside tester's: its timer kept the process alive watchMs after the close, and its record
    // then blamed watchMs).
    for (const unborn of this.#unborn.values()) unborn?.driver.closedAwaiting?.();
    this.#drivers.clear();
    this.#sdkTokens.clear();
    this.#followed.clear();
    this.#input.clear();
    this.#inputTask.clear();
    this.#unborn = new BoundedMap(this.#max);
    this.#requests.closeAll(error);
  }
}
