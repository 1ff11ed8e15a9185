import { z } from "zod";
import type { CancellableCall } from "../core/cancellable-call.js";
import { TASK_STATUSES, isTaskStatus, isTerminalTaskStatus, taskStatus, terminalTaskOutcome } from "../core/record.js";
import type { CancelMechanism, TaskInfo, TaskStatus } from "../core/record.js";
import type { CancelledOutcome } from "../types/record.js";
import type { Timers } from "../types/options.js";
import { MAX_TIMER_DELAY_MS } from "../options/defaults.js";
import { isOptionsObject, msOption, parseOptions, received } from "../options/schemas.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import type { InputDispatcher, TaskFollower, TaskRequest } from "../wire/tasks.js";
import { reachedTheServer, wasNotSent } from "../wire/tasks.js";
import { TaskRequestError } from "../errors/TaskRequestError.js";
import { TaskRequestTimeoutError } from "../errors/TaskRequestTimeoutError.js";
import { isoTime } from "../utils/iso.js";
import { noop, textOf } from "../utils/hooks.js";

/** Default poll interval, in ms, when the server suggests none. */
export const DEFAULT_TASK_POLL_INTERVAL_MS = 1_000;
/** Default time the library keeps watching a task after it sent `tasks/cancel`, in ms. */
export const DEFAULT_TASK_WATCH_MS = 10_000;
/** The shortest poll interval the library honours, in ms (a server suggesting 0 is not polled in a loop). */
export const MIN_TASK_POLL_INTERVAL_MS = 10;

/**
 * Task-augmented execution of a `tools/call` (2025-11-25 core tasks, rule 35; the 2026-07-28
 * extension `io.modelcontextprotocol/tasks`, rule 36). Every duration is in ms.
 */
export interface TaskOptions {
  /**
   * Time-to-live asked for the task, in ms (2025-11-25 `params.task.ttl`; the 2026-07-28
   * extension leaves it to the server). Integer from 1 to 2_147_483_647. Default: the server's.
   */
  ttlMs?: number;
  /**
   * Poll interval, in ms, used when the server suggests none (`pollInterval` /
   * `pollIntervalMs`, which the library honours otherwise). Integer from 10 to 2_147_483_647.
   * @default 1_000
   */
  pollIntervalMs?: number;
  /**
   * After a cancel, how long the library keeps watching the task (the `tasks/cancel` answer,
   * then `tasks/get`) so the record can say what became of it, in ms; the caller is released
   * at once regardless. Integer from 1 to 2_147_483_647.
   * @default 10_000
   */
  watchMs?: number;
}

const taskOptionsSchema = z
  .strictObject({
    ttlMs: msOption(1, MAX_TIMER_DELAY_MS, false),
    pollIntervalMs: msOption(MIN_TASK_POLL_INTERVAL_MS, MAX_TIMER_DELAY_MS, false),
    watchMs: msOption(1, MAX_TIMER_DELAY_MS, false),
  })
  .partial();

/** Validated task options with defaults. */
export interface ResolvedTaskOptions {
  ttlMs: number | undefined;
  pollIntervalMs: number;
  watchMs: number;
}

/**
 * Validates the `task` call option (`true` means all defaults).
 * @throws {InvalidOptionError} naming the option at fault, such as `task.ttlMs`.
 */
export function resolveTaskOptions(task: TaskOptions | true): ResolvedTaskOptions {
  if (task !== true && !isOptionsObject(task)) {
    throw new InvalidOptionError(
      "task",
      `call options: task must be true (every default), an object such as { ttlMs: 60_000 }, or false or undefined for a plain call; received ${received(task)}`,
    );
  }
  const parsed = task === true ? {} : parseOptions(taskOptionsSchema, task, "call options: task", undefined, "task");
  return {
    ttlMs: parsed.ttlMs,
    pollIntervalMs: parsed.pollIntervalMs ?? DEFAULT_TASK_POLL_INTERVAL_MS,
    watchMs: parsed.watchMs ?? DEFAULT_TASK_WATCH_MS,
  };
}

/**
 * A `tools/call` with the `task` option whose params carry a task of their own (`params.task`):
 * the two must not name different ttls (an outside tester's: `params.task.ttl` went on the wire
 * and `task.ttlMs` was dropped without a word).
 * @throws {InvalidOptionError} naming `task.ttlMs` when they differ.
 */
export function refuseTwoTtls(params: Record<string, unknown> | undefined, options: ResolvedTaskOptions | undefined): void {
  const own = params?.task as { ttl?: unknown } | undefined;
  if (options?.ttlMs === undefined || typeof own !== "object" || own === null || own.ttl === undefined || own.ttl === options.ttlMs) return;
  throw new InvalidOptionError(
    "task.ttlMs",
    `call options: "task.ttlMs" (${options.ttlMs}) and params.task.ttl (${received(own.ttl)}) disagree: give the task's ttl in one of them`,
  );
}

/** What the driver needs of the wire. */
export interface TaskWire {
  /** One of the library's own task requests (see `TaskRequest`). */
  taskRequest(...request: TaskRequest): Promise<Record<string, unknown>>;
  cancelCall(call: CancellableCall, reason: string): CancelMechanism;
  /** Status notifications for this task are no longer wanted. */
  unfollow(taskId: string): void;
  /** The task was cancelled while it waited for input: abort the SDK's handlers of its server requests. */
  abortInput?(taskId: string, reason: string): void;
  /** 2026-07-28: the SDK client's own handlers of a task's embedded input requests (none: polled like `working`). */
  readonly inputRequest?: InputDispatcher | undefined;
  /** The protocol revision the server answered `initialize` with (none on 2026-07-28). */
  readonly protocolVersion?: string | undefined;
  /** False once the client began closing the connection (or it closed): nothing goes out any more. */
  readonly open: boolean;
  /** The client's own `close()` closed it (not a lost connection). Default: false. */
  readonly closedByClient?: boolean;
  /** True when this connection sent a `tasks/cancel` for this task id, for any call. Default: false. */
  cancelSent?(taskId: string): boolean;
}

/** The text of a `tasks/cancel` that could not go out: the client was closing the connection. */
const TASK_CANCEL_NOT_SENT = "not sent: the connection was closed (the task was not cancelled)";

/**
 * Follows one task-augmented call: polls its task with `tasks/get` (honouring the server's
 * poll interval) while the call is live, resolves the call with the final result, and, when
 * the call is cancelled (idle timeout, maximum total timeout, the caller's signal), sends
 * exactly one `tasks/cancel {taskId}` (never `notifications/cancelled`, never for a task
 * already terminal: rules 2, 35, 36), stops polling, and watches for at most `watchMs` so the
 * record says what became of the task.
 *
 * Once the task exists the idle timeout measures the server's silence (rule 37: the request's
 * own timeout ended with its `CreateTaskResult`): the `CreateTaskResult`, each answered
 * `tasks/get` whatever its status, and each status notification reset it (`call.alive()`; the
 * wire does the same for task progress), and the wait for the next poll after an answer is the
 * client's own: the silence counts from the poll (`idleAfter`). The maximum total timeout always
 * holds.
 */
export class TaskDriver implements TaskFollower {
  readonly ttlMs: number | undefined;
  #call: CancellableCall | undefined;
  #task: TaskInfo | undefined;
  #meta: Record<string, unknown> = {};
  #interval: number;
  #timer: unknown = undefined;
  #watchUntil = 0;
  /** 2025-11-25: a `tasks/result` sent early, on `input_required`, not answered yet. */
  #resultInFlight = false;
  /** A terminal status seen while that `tasks/result` was in flight (its answer brings the result). */
  #terminal: { task: TaskInfo; answer: Record<string, unknown> } | undefined;
  /** 2026-07-28: the `inputRequests` keys already handed to a handler (deduplicated across polls). */
  readonly #inputKeys = new Set<string>();
  /** 2026-07-28: aborts the handlers still answering the task's input requests (at a cancel). */
  #inputAbort: AbortController | undefined;
  /** Cancelled before its `CreateTaskResult`: the end of the wait for it (see `awaitCreated`). */
  #awaiting: unknown = undefined;

  constructor(
    private readonly wire: TaskWire,
    private readonly options: ResolvedTaskOptions,
    private readonly timers: Timers,
    private readonly clock: () => number,
  ) {
    this.ttlMs = options.ttlMs;
    this.#interval = options.pollIntervalMs;
  }

  /** The call this driver follows (set once, before its request is sent). */
  attach(call: CancellableCall): void {
    this.#call = call;
  }

  get watchMs(): number {
    return this.options.watchMs;
  }

  /**
   * The request was cancelled before its `CreateTaskResult` came. Nothing was sent for it: a
   * task-augmented request is never cancelled with `notifications/cancelled` (rules 2, 35, 36).
   * The `CreateTaskResult` is awaited at most `watchMs` (`created` then sends the task's one
   * `tasks/cancel`); if none comes, the record says the task may exist and was not cancelled,
   * naming what the server's `tasks/list` (2025-11-25, where offered) lists as started since.
   */
  awaitCreated(): void {
    if (this.#awaiting !== undefined || this.#task !== undefined) return;
    this.#awaiting = this.timers.setTimeout(() => {
      this.#awaiting = undefined;
      void this.#notCreated();
    }, this.options.watchMs);
  }

  /** The request was answered without a task (a plain result or an error): nothing to await. */
  answeredWithoutTask(): void {
    this.#stopAwaiting();
  }

  #stopAwaiting(): void {
    if (this.#awaiting === undefined) return;
    this.timers.clearTimeout(this.#awaiting);
    this.#awaiting = undefined;
  }

  closedAwaiting(): void {
    if (this.#awaiting === undefined) return;
    this.#stopAwaiting();
    const settled = this.#call?.settledRecord;
    const latest = settled?.record.cancel;
    if (settled === null || settled === undefined || latest === null || latest === undefined || settled.record.outcome === "not-sent")
      return;
    settled.update({
      cancel: {
        ...latest,
        undelivered: {
          mechanism: "tasks/cancel",
          error: "the connection closed before a CreateTaskResult came: the task may exist and was not cancelled",
        },
      },
    });
  }

  /** No `CreateTaskResult` within `watchMs` of the cancel: the record says so (and what `tasks/list` shows). */
  async #notCreated(): Promise<void> {
    const settled = this.#call?.settledRecord;
    const record = settled?.record;
    if (settled === null || settled === undefined || record === undefined || record.outcome === "not-sent" || this.#task !== undefined)
      return;
    let listed = "";
    // tasks/list is a 2025-11-25 request (the 2026-07-28 extension removed it, rule 36).
    if (this.wire.protocolVersion === "2025-11-25")
      try {
        const since = Date.parse(record.startedAt);
        const answer = await this.wire.taskRequest("tasks/list", {}, this.options.watchMs, this.timers);
        const tasks = Array.isArray(answer.tasks)
          ? (answer.tasks as Array<{ taskId?: unknown; createdAt?: unknown; status?: unknown }>)
          : [];
        const started = tasks.filter(
          (task) =>
            typeof task.taskId === "string" &&
            (typeof task.createdAt !== "string" || Date.parse(task.createdAt) >= since - 1_000) &&
            !isTerminalTaskStatus(String(task.status)),
        );
        if (started.length > 0) {
          const ids = started.slice(0, 10).map((task) => String(task.taskId));
          listed = `; tasks/list names ${started.length} task${started.length === 1 ? "" : "s"} not terminal, created since the request: ${ids.join(", ")}`;
        }
      } catch {
        // No tasks/list (2026-07-28 removed it; a server may not offer it): nothing more is known.
      }
    if (this.#task !== undefined) return; // it came meanwhile
    const latest = settled.record.cancel;
    if (latest === null) return;
    settled.update({
      cancel: {
        ...latest,
        undelivered: {
          mechanism: "tasks/cancel",
          error: `no CreateTaskResult came within ${this.options.watchMs} ms (watchMs): the task may exist and was not cancelled${listed}`,
        },
      },
    });
  }

  created(task: TaskInfo, result: Record<string, unknown>, meta: Record<string, unknown>): void {
    this.#stopAwaiting();
    this.#task = task;
    this.#meta = meta;
    // The task's fields: nested (2025-11-25), or inline (2026-07-28); read where they are, whatever the era.
    const raw = (typeof result.task === "object" && result.task !== null ? result.task : result) as Record<string, unknown>;
    this.#readInterval(raw);
    if (this.#settled) return this.#createdAfterCancel(task);
    // A status none of the five is no sign of life, and nothing to follow: the call fails naming
    // it, and the task, which nobody will follow, gets one tasks/cancel (an outside tester's: it
    // was read as working, and each poll kept the call alive up to its maximum total timeout).
    if (!isTaskStatus(raw.status)) {
      return this.#malformed("tools/call", `the CreateTaskResult of task ${JSON.stringify(task.taskId)} has ${statusFault(raw.status)}`);
    }
    this.#call?.alive();
    if (isTerminalTaskStatus(task.status)) {
      void this.#poll();
      return;
    }
    this.#schedule();
  }

  /**
   * The `CreateTaskResult` of a call already cancelled (the task id was not known at the cancel,
   * which went out the transport's way): the task is cancelled now, once, and watched within
   * `watchMs` like any cancelled task; the record names it at once and then learns what became
   * of it. A task already terminal gets no `tasks/cancel` (rule 7).
   */
  #createdAfterCancel(created: TaskInfo): void {
    const task: TaskInfo = { ...created, createdAfterCancel: true };
    this.#task = task;
    const settled = this.#call?.settledRecord;
    const terminal = isTerminalTaskStatus(task.status);
    const cancel = settled?.record.cancel;
    if (!this.wire.open) {
      // The client is closing the connection: the tasks/cancel cannot go out, and the record says
      // the task exists, not cancelled (rules 35, 36).
      if (cancel !== null && cancel !== undefined && !terminal) {
        settled!.update({ task, cancel: { ...cancel, undelivered: { mechanism: "tasks/cancel", error: TASK_CANCEL_NOT_SENT } } });
      } else {
        settled?.update({ task });
      }
      return this.#conclude(terminal ? task.status : undefined);
    }
    // Nothing went out for the request (it awaited this answer, rules 2, 35, 36): what goes out
    // for the call is the tasks/cancel (a wait that ended without it is no longer the news).
    if (
      cancel !== null &&
      cancel !== undefined &&
      (cancel.mechanism === "none" || cancel.undelivered?.mechanism === "tasks/cancel") &&
      !terminal
    ) {
      settled!.update({ task, cancel: { ...cancel, mechanism: "tasks/cancel", sentAt: isoTime(Date.now()), undelivered: null } });
    } else {
      settled?.update({ task });
    }
    this.#watchUntil = this.clock() + this.options.watchMs;
    if (terminal) return this.#conclude(task.status);
    void this.#sendCancel(task);
  }

  /** True once the call settled (or for the SDK's own request, which has no call here). */
  get #settled(): boolean {
    return this.#call === undefined || this.#call.settled;
  }

  /**
   * The call's cancel hook. Before the task exists the `tools/call` itself is cancelled the
   * transport's way; once it exists, the request `tasks/cancel` (rules 35, 36); for a task
   * already terminal, nothing (rule 7).
   */
  cancel(call: CancellableCall, reason: string): CancelMechanism {
    // The result read of a task seen terminal, given up with the call: its cancel carries the
    // call's reason, and is what goes on the wire for the call (an outside tester's: the record
    // said nothing was sent while a notifications/cancelled "Cancelled by the client" went out).
    const read = this.#resultRead;
    this.#resultRead = undefined;
    this.#readSent = "none";
    read?.abort(reason);
    const readSent = this.#readSent;
    this.#stop();
    const task = this.#task;
    if (task === undefined) return this.wire.cancelCall(call, reason);
    if (!this.wire.open && !isTerminalTaskStatus(task.status)) {
      // The client is closing the connection: nothing can go out (the record says so at once).
      call.delivery({ sent: "none", failed: { mechanism: "tasks/cancel", error: TASK_CANCEL_NOT_SENT } });
      queueMicrotask(() => this.#conclude(undefined));
      return "none";
    }
    this.#watchUntil = this.clock() + this.options.watchMs;
    // Handlers still answering the task's input requests are aborted: nobody wants their answers.
    this.wire.abortInput?.(task.taskId, reason);
    this.#inputAbort?.abort(reason);
    if (isTerminalTaskStatus(task.status)) {
      // Known already: the first record says it (the watch's revision then changes nothing).
      const known = terminalTaskOutcome(task.status);
      if (known !== undefined) call.outcomeKnown(known);
      queueMicrotask(() => this.#conclude(task.status));
      return readSent;
    }
    void this.#sendCancel(task);
    return "tasks/cancel";
  }

  /** The call settled some other way: no more polling. */
  stop(): void {
    this.#stop();
    // Handlers still answering the task's input requests: nobody wants their answers now (an
    // outside tester's: the client's close left one waiting for a person on a closed connection).
    const input = this.#inputAbort;
    if (input !== undefined && !input.signal.aborted) {
      input.abort(this.#call?.settledRecord?.record.cancel?.reason ?? "The call ended");
    }
    if (this.#call?.settledRecord?.status !== "cancelled") this.#stopAwaiting();
    // Still watching after a cancel: notifications stay wanted until the watch concludes.
    if (this.#task !== undefined && this.#watchUntil === 0) this.wire.unfollow(this.#task.taskId);
  }

  /**
   * A status notification for the task (2025-11-25 `notifications/tasks/status`): optional for
   * the server, so never relied on. A status other than the one last seen is looked at now with
   * `tasks/get` instead of at the next poll; when a poll or a `tasks/cancel` is already in
   * flight (no poll scheduled), its answer says the same.
   */
  statusNotified(status: string): void {
    // A status none of the five says nothing of the task (rules 35, 36): no sign of life, and
    // nothing to look at (an outside tester's: it kept the call alive, as an untrusted poll did).
    if (!isTaskStatus(status)) return;
    this.#call?.alive(); // a sign of life (rule 37: the task, not the request, is what lives now)
    if (this.#timer === undefined || this.#task === undefined || status === this.#task.status) return;
    this.#stop();
    void this.#poll();
  }

  #stop(): void {
    if (this.#timer !== undefined) {
      this.timers.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    // The live call's result read, bounded by the call's own limits: given up with the call.
    this.#resultRead?.abort(new Error("tasks/result given up: the call ended"));
    this.#resultRead = undefined;
  }

  /** The `tasks/result` of a live call whose task is terminal (see `#finish`), while it waits. */
  #resultRead: AbortController | undefined;
  /** How the cancel of that read went on the wire when it was given up (see `cancel`). */
  #readSent: CancelMechanism = "none";

  /**
   * The next poll, an interval from now. `answered`: it follows a sign of life (the
   * `CreateTaskResult`, an answered poll), so the wait until it is the client's own, not the
   * server's silence: the idle timeout counts from the poll (a server suggesting 1 s polls ended
   * calls with `timeoutMs` 300 before their first poll). After a poll that got no answer, the
   * silence goes on counting.
   */
  #schedule(answered = true): void {
    // One poll chain: a poll answered after a cancel and the cancel's own answer both schedule.
    this.#stop();
    if (answered && !this.#settled) this.#call?.idleAfter(this.#interval);
    this.#timer = this.timers.setTimeout(() => {
      this.#timer = undefined;
      void this.#poll();
    }, this.#interval);
  }

  #params(task: TaskInfo): Record<string, unknown> {
    // 2026-07-28: every request carries the protocol version and client capabilities (rule 38).
    return task.revision === "2026-07-28" ? { taskId: task.taskId, _meta: this.#meta } : { taskId: task.taskId };
  }

  /**
   * The time a follow-up request may take, in ms: while the call is live, `watchMs` (a poll
   * that gets no answer is followed by the next one: the call's own timers bound the call);
   * after a cancel, what is left of the watch. Nothing waits longer, so no timer outlives it.
   */
  #requestTimeout(): number {
    return this.#settled ? Math.max(1, this.#watchUntil - this.clock()) : this.options.watchMs;
  }

  #readInterval(task: Record<string, unknown> | undefined): void {
    const suggested = task?.pollIntervalMs ?? task?.pollInterval;
    if (typeof suggested === "number" && Number.isFinite(suggested)) {
      this.#interval = Math.min(Math.max(suggested, MIN_TASK_POLL_INTERVAL_MS), MAX_TIMER_DELAY_MS);
    }
  }

  /**
   * What makes an answer about the task (`tasks/get`, `tasks/cancel`) untrustworthy, or
   * `undefined`: it names another task (an answer about another task says nothing of this one),
   * or its status is none of the five (rules 35, 36). A missing `taskId` is taken as this task's.
   */
  #untrusted(method: string, answer: Record<string, unknown>): string | undefined {
    const own = this.#task!.taskId;
    if (answer.taskId !== undefined && answer.taskId !== own) {
      return `${method} for task ${JSON.stringify(own)} was answered about another task, ${JSON.stringify(answer.taskId) ?? typeof answer.taskId} (status ${JSON.stringify(answer.status) ?? "none"}): the answer is not trusted`;
    }
    if (!isTaskStatus(answer.status)) return `${method} for task ${JSON.stringify(own)} answered ${statusFault(answer.status)}`;
    return undefined;
  }

  /**
   * The live call met an answer it cannot trust (see `#untrusted`, or a `CreateTaskResult` with
   * a status none of the five): it fails with a `TaskRequestError` naming it (code `null`, the
   * answer as `data`), and the task, followed by nobody now and not known terminal, gets one
   * `tasks/cancel`.
   */
  #malformed(method: string, message: string): void {
    this.#stop();
    this.#fail(new TaskRequestError(method, null, message));
    const task = this.#task!;
    if (this.wire.open && !isTerminalTaskStatus(task.status)) {
      this.wire.taskRequest("tasks/cancel", this.#params(task), this.options.watchMs, this.timers).catch(noop);
    }
  }

  /** Records a status seen; returns the task. */
  #see(status: unknown): TaskInfo {
    const task = { ...this.#task!, status: taskStatus(status) };
    this.#task = task;
    if (!this.#settled) this.#call!.setTask(task);
    return task;
  }

  async #poll(): Promise<void> {
    let answer: Record<string, unknown>;
    try {
      answer = await this.wire.taskRequest("tasks/get", this.#params(this.#task!), this.#requestTimeout(), this.timers);
    } catch (error) {
      if (this.#settled) return this.#conclude(undefined);
      // Unanswered (no answer in time, or none at all: an HTTP error status, a refused or reset
      // connection): poll again; the call's idle timeout cuts a server that stays away (an outside
      // tester's: one 503 failed a task that then completed).
      if (this.#unanswered(error)) return this.#schedule(false);
      // The server's error (the task is gone: -32602; or another, -32603 say): the call fails with
      // it; a connection the client is closing ends it as connection-closed. A task the server did
      // not say is gone may run on, followed by nobody: it is cancelled, once (an outside tester's:
      // one -32603 left a task running to its end).
      this.#fail(error);
      const task = this.#task!;
      if (this.wire.open && !isTerminalTaskStatus(task.status) && !(error instanceof TaskRequestError && error.code === -32602)) {
        this.wire.taskRequest("tasks/cancel", this.#params(task), this.options.watchMs, this.timers).catch(noop);
      }
      return;
    }
    const untrusted = this.#untrusted("tasks/get", answer);
    if (untrusted !== undefined) {
      // Not a sign of life and nothing learned: a live call fails naming it; a watch after a
      // cancel goes on as if it had not been answered.
      if (!this.#settled) return this.#malformed("tasks/get", untrusted);
      if (this.clock() + this.#interval < this.#watchUntil) return this.#schedule();
      return this.#conclude(undefined);
    }
    this.#readInterval(answer);
    const task = this.#see(answer.status);
    // An answered poll of a task still running is a sign of life. One of a terminal task is not:
    // only its result is awaited now, so a tasks/result that keeps failing is cut by the idle
    // timeout, not polled for as long as the maximum total timeout (an outside tester's finding).
    if (!isTerminalTaskStatus(task.status)) this.#call?.alive();
    if (this.#settled) {
      // Watching after a cancel.
      if (isTerminalTaskStatus(task.status)) return this.#conclude(task.status);
      if (this.clock() + this.#interval < this.#watchUntil) return this.#schedule();
      return this.#conclude(undefined);
    }
    if (!isTerminalTaskStatus(task.status)) {
      if (task.status === "input_required" && task.revision === "2025-11-25" && !this.#resultInFlight) void this.#earlyResult(task);
      if (task.status === "input_required" && task.revision === "2026-07-28") this.#inputRequests(task, answer.inputRequests);
      return this.#schedule();
    }
    if (this.#resultInFlight) {
      this.#terminal = { task, answer };
      return;
    }
    await this.#finish(task, answer);
  }

  /**
   * 2025-11-25, `input_required`: `tasks/result` at once instead of at the end. The server
   * delivers the task's queued requests (elicitation, sampling) on that request's stream; they
   * reach the SDK's own handlers (the wire passes server requests through), and the answer of
   * `tasks/result` then resolves the call. Polling goes on meanwhile (answered polls keep the call
   * alive while a person answers); a `tasks/result` unanswered within `watchMs` is sent again at
   * the next `input_required` poll, or replaced by the usual one once the task is terminal.
   */
  async #earlyResult(task: TaskInfo): Promise<void> {
    this.#resultInFlight = true;
    let result: Record<string, unknown>;
    try {
      result = await this.wire.taskRequest("tasks/result", this.#params(task), this.options.watchMs, this.timers);
    } catch (error) {
      this.#resultInFlight = false;
      if (this.#settled) return;
      if (this.#unanswered(error)) {
        const terminal = this.#terminal;
        this.#terminal = undefined;
        if (terminal !== undefined) await this.#finish(terminal.task, terminal.answer);
        return;
      }
      this.#stop();
      return this.#fail(error);
    }
    this.#resultInFlight = false;
    if (this.#settled) return;
    // tasks/result answers with a result once the task is terminal: `completed`, or `failed` with
    // a result that says so (`isError: true`); only the task's status tells the two apart.
    let status: TaskStatus = "completed";
    if (result.isError === true) {
      status =
        this.#terminal?.task.status ??
        (await this.wire.taskRequest("tasks/get", this.#params(task), this.options.watchMs, this.timers).then(
          (answer) => (answer.status === "failed" ? "failed" : "completed"),
          () => "completed" as const, // nothing more can be learned: the result stands as it came
        ));
      if (this.#settled) return;
    }
    this.#stop();
    const seen = this.#see(status);
    if (status === "failed") this.#call!.fail(failedTask(seen, result));
    else this.#call!.succeed(result);
  }

  /**
   * 2026-07-28, `input_required`: each request in `inputRequests` (`{ method, params }` by key)
   * not seen before goes to the SDK client's own handler (elicitation, sampling, roots), once:
   * keys are deduplicated across polls (a key is unique over the task's life). Its bare result
   * goes back at once as `tasks/update { taskId, inputResponses: { [key]: result } }`. Polling
   * goes on meanwhile. A cancel aborts the handlers still answering (their signal) and sends
   * the task's one `tasks/cancel`; no `tasks/update` follows it. A handler that throws fails the
   * call with its error, and the task gets one `tasks/cancel` (nobody will answer it).
   */
  #inputRequests(task: TaskInfo, requests: unknown): void {
    const dispatch = this.wire.inputRequest;
    if (dispatch === undefined || typeof requests !== "object" || requests === null) return;
    for (const [key, request] of Object.entries(requests as Record<string, unknown>)) {
      if (this.#inputKeys.has(key)) continue;
      const { method, params } = (request ?? {}) as { method?: unknown; params?: unknown };
      if (typeof method !== "string") continue;
      this.#inputKeys.add(key);
      this.#inputAbort ??= new AbortController();
      const signal = this.#inputAbort.signal;
      const embedded = { method, params: typeof params === "object" && params !== null ? (params as Record<string, unknown>) : undefined };
      void dispatch(key, embedded, signal).then(
        async (result) => {
          if (this.#settled || signal.aborted) return;
          const params = { ...this.#params(task), inputResponses: { [key]: result } };
          try {
            await this.wire.taskRequest("tasks/update", params, this.options.watchMs, this.timers);
          } catch (error) {
            // Unacknowledged (eventually consistent, rule 36): polling goes on and says what followed.
            if (this.#settled || this.#unanswered(error)) return;
            this.#stop();
            this.#fail(error);
          }
        },
        (error: unknown) => {
          if (this.#settled || signal.aborted) return;
          // The handler refused: the call fails with its error, and the task nobody will answer is cancelled (once).
          this.#stop();
          this.#call!.fail(error);
          if (!isTerminalTaskStatus(this.#task!.status)) {
            this.wire.taskRequest("tasks/cancel", this.#params(task), this.options.watchMs, this.timers).catch(() => {});
          }
        },
      );
    }
  }

  /** The task is terminal while the call is live: the caller gets its result or its error. */
  async #finish(task: TaskInfo, answer: Record<string, unknown>): Promise<void> {
    const call = this.#call!;
    if (task.revision === "2026-07-28") {
      if (task.status === "completed") return call.succeed(answer.result ?? {});
      const error = (answer.error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
      return call.fail(
        new TaskRequestError(
          "tools/call",
          typeof error.code === "number" ? error.code : null,
          task.status === "cancelled"
            ? this.#endedCancelled(task.taskId)
            : typeof error.message === "string"
              ? error.message
              : `task ${task.taskId} failed`,
          error.data,
        ),
      );
    }
    if (task.status === "cancelled") {
      return call.fail(new TaskRequestError("tools/call", null, this.#endedCancelled(task.taskId)));
    }
    // 2025-11-25: the result (or the original error) comes from tasks/result. A task that
    // ended `failed` may answer it with a result (`isError: true`, as the SDK's servers store a
    // failure): the call still fails, with that result as the error's data.
    // The task is done and only its result is awaited: the call's own limits bound the wait (its
    // idle timeout counts the server's silence from the last answered poll, and the maximum total
    // timeout holds), not `watchMs`, which cut a result still on its way while the caller's
    // limits had time left (an outside tester's: a result 11 s after `completed` was lost at 10 s
    // to a call with `timeoutMs` 60,000). The read is given up when the call ends.
    const read = new AbortController();
    this.#resultRead = read;
    try {
      const result = await this.wire.taskRequest(
        "tasks/result",
        this.#params(task),
        MAX_TIMER_DELAY_MS,
        this.timers,
        read.signal,
        (sent) => (this.#readSent = sent),
      );
      if (task.status === "failed") call.fail(failedTask(task, result));
      else call.succeed(result);
    } catch (error) {
      if (read.signal.aborted || call.settled) return;
      // Failed without an answer (an HTTP error status, a network failure): the next poll finds
      // the task terminal again and asks again.
      if (this.#unanswered(error)) return this.#schedule(false);
      // 2025-11-25: a task that ended `failed` may answer tasks/result with the original JSON-RPC
      // error: the call's error is the task's, as on the other paths (`method` "tools/call").
      if (task.status === "failed" && error instanceof TaskRequestError) {
        return call.fail(new TaskRequestError("tools/call", error.code, error.message, error.data));
      }
      this.#fail(error);
    } finally {
      if (this.#resultRead === read) this.#resultRead = undefined;
    }
  }

  /**
   * A follow-up request the server did not answer: none in time (`TaskRequestTimeoutError`), or
   * none at all on a connection still open (its send failed: an HTTP error status, a refused or
   * reset connection). The next one may be answered: polls and result reads are idempotent. A
   * JSON-RPC error is the server's answer (`TaskRequestError`).
   */
  #unanswered(error: unknown): boolean {
    return error instanceof TaskRequestTimeoutError || (this.wire.open && !(error instanceof TaskRequestError));
  }

  async #sendCancel(task: TaskInfo): Promise<void> {
    let answer: Record<string, unknown>;
    try {
      answer = await this.wire.taskRequest("tasks/cancel", this.#params(task), this.#requestTimeout(), this.timers);
    } catch (error) {
      // -32602: already terminal (rule 35) or unknown; look once at what it became. A lost
      // connection: nothing more can be learned. Never an error for the caller (released already).
      if (error instanceof TaskRequestError) return this.#poll();
      // Not sent at all (the client began closing the connection meanwhile, or the transport
      // refused it and nothing showed it reached the server): the record says so.
      if (wasNotSent(error)) {
        this.#notSent(
          this.wire.open ? `not sent: the transport refused it (${textOf(error)}); the task was not cancelled` : TASK_CANCEL_NOT_SENT,
        );
        return this.#conclude(undefined);
      }
      // It reached the server (a layer below saw its body written or a response head), and its
      // send failed after (an HTTP error status: a gateway's 502 over a tasks/cancel the server had
      // taken was recorded "not sent ... the task was not cancelled", an audit's). The record says
      // no answer came, and a poll looks at what became of the task.
      if (reachedTheServer(error)) {
        this.#undelivered(
          `it reached the server, then its send failed (${textOf(error)}): whether the server cancelled the task is not known`,
        );
        return this.#poll();
      }
      return this.#conclude(undefined);
    }
    // 2025-11-25 answers with the task (status set to cancelled before the answer, rule 35);
    // 2026-07-28 with an empty acknowledgement: watch with tasks/get (eventually consistent, rule 36).
    // An answer about another task, or with a status none of the five, says nothing: polls look.
    if (answer.status !== undefined && this.#untrusted("tasks/cancel", answer) === undefined) {
      const seen = this.#see(answer.status);
      if (isTerminalTaskStatus(seen.status)) return this.#conclude(seen.status);
    }
    return this.#schedule();
  }

  /**
   * A follow-up request of the live call failed: the call fails with its error, unless the client
   * is closing the connection (the request was not sent, or its answer cannot come): then the call
   * ends `connection-closed`, as the close ends every other call (the task outlives it).
   */
  #fail(error: unknown): void {
    const call = this.#call;
    if (call === undefined || call.settled) return;
    if (this.wire.open) call.fail(error);
    else if (this.wire.closedByClient === true) call.closedByClient();
    else call.cancel("connection-closed");
  }

  /** The record's `tasks/cancel` reached the server, and no answer came: `cancel.undelivered` says why. */
  #undelivered(why: string): void {
    const settled = this.#call?.settledRecord;
    const cancel = settled?.record.cancel;
    if (cancel === null || cancel === undefined || cancel.mechanism !== "tasks/cancel") return;
    settled!.update({ cancel: { ...cancel, undelivered: { mechanism: "tasks/cancel", error: why } } });
  }

  /**
   * A task the call did not cancel reported `cancelled`: what the wire shows is that status, and
   * whether this connection sent a `tasks/cancel` naming the task (another call's, when the server
   * gave two calls one task id: an outside tester's, told "the server, or another client, did").
   */
  #endedCancelled(taskId: string): string {
    const ours = this.wire.cancelSent?.(taskId) === true;
    return ours
      ? `task ${taskId} ended with status "cancelled" (this call did not cancel it, but this connection sent a tasks/cancel for task ${taskId} for another call: the server gave two calls one task id)`
      : `task ${taskId} ended with status "cancelled" (this call did not cancel it, nor did any other call on this connection: the server, or another client, did)`;
  }

  /** The record of a cancelled call whose `tasks/cancel` could not go out: nothing went (rules 35, 36). */
  #notSent(why: string): void {
    const settled = this.#call?.settledRecord;
    const cancel = settled?.record.cancel;
    if (cancel === null || cancel === undefined || cancel.mechanism !== "tasks/cancel") return;
    settled!.update({
      cancel: { ...cancel, mechanism: "none", sentAt: null, undelivered: { mechanism: "tasks/cancel", error: why } },
    });
  }

  /** The record of the cancelled call learns what became of its task (or stays unverified). */
  #conclude(status: TaskStatus | undefined): void {
    this.#stop();
    if (this.#task !== undefined) this.wire.unfollow(this.#task.taskId);
    const settled = this.#call?.settledRecord;
    if (settled === null || settled === undefined || this.#task === undefined) return;
    const outcome: CancelledOutcome | undefined = status === undefined ? undefined : terminalTaskOutcome(status);
    if (outcome === "task-completed-anyway") settled.ranCount++;
    // A verification that found the work not applied, then the task completed: the read came
    // before the work ended, and the latest evidence is that it ran (as a late result overrides it).
    if (outcome === "task-completed-anyway" && settled.record.outcome === "verified-not-applied") {
      settled.update({ task: this.#task, outcome });
      return;
    }
    settled.update({ task: this.#task }, outcome);
  }
}

/**
 * A task that ended `failed` whose `tasks/result` answered with a result (not a JSON-RPC error):
 * the call fails with a `TaskRequestError` (code `null`) whose message is the result's first text
 * (at most 500 characters) and whose `data` is the result itself.
 */
function failedTask(task: TaskInfo, result: Record<string, unknown>): TaskRequestError {
  const content = (result as { content?: unknown }).content;
  const first = Array.isArray(content) ? (content as Array<{ type?: unknown; text?: unknown }>).find((c) => c?.type === "text") : undefined;
  const text = typeof first?.text === "string" ? first.text.slice(0, 500) : undefined;
  return new TaskRequestError(
    "tools/call",
    null,
    text === undefined ? `task ${task.taskId} failed` : `task ${task.taskId} failed: ${text}`,
    result,
  );
}

/** A status none of the five, as an error names it. */
function statusFault(status: unknown): string {
  return `status ${JSON.stringify(status) ?? "none"}, which is none of the task statuses (${TASK_STATUSES}; rules 35, 36)`;
}
