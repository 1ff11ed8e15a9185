import type { CancelMechanism, TaskInfo } from "../core/record.js";
import type { Timers } from "../types/options.js";
import type { Message } from "./messages.js";
import type { RequestId } from "../core/cancellable-call.js";
import type { WireFact } from "./port.js";
import { TaskRequestError } from "../errors/TaskRequestError.js";
import { TaskRequestTimeoutError } from "../errors/TaskRequestTimeoutError.js";
import { textOf } from "../utils/hooks.js";
import { BoundedIdMap } from "../utils/bounded-id-map.js";

/** How many of the library's own task requests that ended without their answer are remembered, to drop a late answer. */
const RETIRED_KEPT = 1_024;

/** The 2026-07-28 tasks extension's identifier (rule 36). */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** The `_meta` keys a 2026-07-28 request carries (rule 38). */
export const PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion";
export const CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities";
/** The `_meta` key naming the task a message belongs to (2025-11-25, rule 35). */
export const RELATED_TASK_META = "io.modelcontextprotocol/related-task";

/**
 * What the wire tells the task driver of one task-augmented call. The driver lives in the
 * client layer; the wire only recognises the `CreateTaskResult` and carries the requests.
 */
export interface TaskFollower {
  /** Task time-to-live asked for, in ms (2025-11-25 `params.task.ttl`); `undefined` leaves it to the server. */
  readonly ttlMs: number | undefined;
  /** How long the follower watches a task after a cancel, in ms: also how long a `CreateTaskResult` is awaited after one. */
  readonly watchMs: number;
  /**
   * The task-augmented request was cancelled before its `CreateTaskResult` came: nothing was sent
   * for it (rules 2, 35, 36); the follower awaits the result at most `watchMs` (`created` then
   * cancels the task), and otherwise records that the task may exist and was not cancelled.
   */
  awaitCreated?(): void;
  /** The request cancelled before its `CreateTaskResult` was answered without a task: nothing to await. */
  answeredWithoutTask?(): void;
  /**
   * The connection closed while the follower awaited the `CreateTaskResult` of a request cancelled
   * before it (`awaitCreated`): none can come now. The wait ends at once (its timer released), and
   * the record says the task may exist and was not cancelled, for that cause.
   */
  closedAwaiting?(): void;
  /**
   * The server answered the `tools/call` with a `CreateTaskResult`. The wire did not hand it
   * to the SDK (v2 refuses `resultType: "task"`) and ended the SDK's wait locally; the
   * progress token stays live until the task is terminal (the 2025-11-25 Tasks specification).
   *
   * Also called with the late `CreateTaskResult` of a request cancelled before its task id was
   * known (the reply crossed the cancel, or the server ignored it, rule 10): the follower then
   * cancels that task at once and watches it, as for any cancelled task (rules 35, 36).
   * @param meta the `_meta` the create request carried, without its progress token: the
   *   follow-up requests carry the same protocol version and client capabilities (rule 38).
   */
  created(task: TaskInfo, result: Record<string, unknown>, meta: Record<string, unknown>): void;
  /**
   * The server sent a status notification for this task (2025-11-25 `notifications/tasks/status`).
   * A hint, never proof: notifications are optional and the requestor keeps polling, so the
   * follower looks at the task now with `tasks/get` instead of at the next poll.
   */
  statusNotified?(status: string): void;
}

export type { InputDispatcher } from "../sdk/private.js";

/**
 * The create request as it goes on the wire: on a 2026-07-28 connection (its `_meta` names the
 * protocol version) the request declares the tasks extension in its per-request client
 * capabilities (rule 36); on earlier revisions it carries `params.task` (2025-11-25, rule 35).
 */
export function augmentCreate(message: Message, ttlMs: number | undefined): Message {
  const params = message.params ?? {};
  const meta = params._meta ?? {};
  if (meta[PROTOCOL_VERSION_META] !== undefined) {
    const capabilities = (meta[CLIENT_CAPABILITIES_META] ?? {}) as { extensions?: Record<string, unknown> };
    return {
      ...message,
      params: {
        ...params,
        _meta: {
          ...meta,
          [CLIENT_CAPABILITIES_META]: {
            ...capabilities,
            extensions: { ...capabilities.extensions, [TASKS_EXTENSION]: {} },
          },
        },
      },
    };
  }
  if (params.task !== undefined) return message;
  return { ...message, params: { ...params, task: ttlMs === undefined ? {} : { ttl: ttlMs } } };
}

/**
 * True for a task-augmented request as it goes on the wire: `params.task` (2025-11-25, rule 35),
 * or the tasks extension declared in its per-request client capabilities (2026-07-28, rule 36).
 */
export function isTaskAugmented(message: Message): boolean {
  const params = message.params;
  if (params === undefined) return false;
  if (typeof params.task === "object" && params.task !== null) return true;
  const capabilities = params._meta?.[CLIENT_CAPABILITIES_META] as { extensions?: Record<string, unknown> } | undefined;
  return capabilities?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/**
 * Whether server capabilities declare task-augmented `tools/call`: 2025-11-25
 * `tasks.requests.tools.call`, or the 2026-07-28 tasks extension (`extensions` naming
 * `io.modelcontextprotocol/tasks`, rule 36).
 */
export function declaresTasks(capabilities: object): boolean {
  const declared = capabilities as { tasks?: { requests?: { tools?: { call?: unknown } } }; extensions?: Record<string, unknown> };
  return declared.tasks?.requests?.tools?.call !== undefined || declared.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** The create request's `_meta` for follow-up requests: the same, minus its progress token. */
export function followUpMeta(message: Message): Record<string, unknown> {
  const { progressToken: _token, ...meta } = message.params?._meta ?? {};
  return meta;
}

/**
 * One of the library's own task requests, as each layer hands it down: its method and params,
 * how long it waits for its answer (ms), the timers that time it, `given`, whose abort gives it
 * up (see `TaskRequests.request`; a string reason is the reason its cancel carries), and
 * `givenUp`, told at that abort how its cancel went on the wire.
 */
export type TaskRequest = [
  method: string,
  params: Record<string, unknown>,
  timeoutMs: number,
  timers: Timers,
  given?: AbortSignal | undefined,
  givenUp?: ((sent: CancelMechanism) => void) | undefined,
];

interface PendingTaskRequest {
  method: string;
  resolve(result: Record<string, unknown>): void;
  reject(error: unknown): void;
  /** A layer below saw it reach the server (its body written on the connection, or a response head). */
  reached?: true;
}

/**
 * The library's own requests to the server (`tasks/get`, `tasks/result`, `tasks/cancel`): sent
 * on the wrapped transport with string ids the SDKs never use (`mcp-cancellable-task-N`; the
 * SDKs count integers), so no id is shared with a request the SDK issued (rule 1), and answered
 * here, never seen by the SDK. Only the answers of ids sent here are taken (a client of
 * `cancellableTransport` may number its own requests with strings of the same form).
 */
export class TaskRequests {
  readonly #pending = new Map<string, PendingTaskRequest>();
  /** Ours that ended without their answer (given up, timed out, failed, lost): a late answer is dropped. */
  readonly #retired = new BoundedIdMap<string, true>(RETIRED_KEPT);
  /** The task ids this connection sent `tasks/cancel` for (the last `RETIRED_KEPT`): see `cancelSent`. */
  readonly #cancelledTasks = new BoundedIdMap<string, true>(RETIRED_KEPT);
  #next = 0;

  /**
   * @param send puts one request on the wrapped transport.
   * @param cancel puts the cancel of one request given up (its timeout, or `given`'s abort) on the
   *   wire by the transport's mechanism (rule 15: a sender that stops waiting cancels), and returns
   *   that mechanism; must not throw.
   */
  constructor(
    private readonly send: (message: Message) => Promise<void>,
    private readonly cancel: (id: string, reason: string) => CancelMechanism | undefined = () => undefined,
  ) {}

  /** Takes one of ours off the pending ones without its answer; false if it was not pending. */
  #retire(id: string): boolean {
    if (!this.#pending.delete(id)) return false;
    this.#retired.set(id, true);
    return true;
  }

  /**
   * True when a `tasks/cancel` naming this task id went out on this connection (for any call): a
   * task that then reports `cancelled` may have ended by it, even for a call that did not cancel
   * (a server that gave two calls one task id).
   */
  cancelSent(taskId: string): boolean {
    return this.#cancelledTasks.has(taskId);
  }

  /** Requests in flight (0 when idle). */
  get size(): number {
    return this.#pending.size;
  }

  /**
   * Sends one request. Settles with the result, or rejects with a `TaskRequestError` (the
   * server's error), a `TaskRequestTimeoutError`, the send's error, or a closed connection.
   * `given`: aborting it gives the request up (its entry and timer go; a late answer is dropped),
   * rejecting with the signal's reason.
   */
  request(...[method, params, timeoutMs, timers, given, givenUp]: TaskRequest): Promise<Record<string, unknown>> {
    const id = `mcp-cancellable-task-${++this.#next}`;
    // Given up already: nothing is sent, nothing is held.
    if (given?.aborted === true) return Promise.reject(given.reason);
    if (method === "tasks/cancel" && typeof params.taskId === "string") this.#cancelledTasks.set(params.taskId, true);
    return new Promise((resolve, reject) => {
      // Each request waits at most timeoutMs; then its entry goes (a late answer is dropped), and
      // with it the listener on `given` (an audit's: it stayed until `given` aborted).
      const timer = timers.setTimeout(() => {
        if (!this.#retire(id)) return;
        given?.removeEventListener("abort", giveUp);
        this.cancel(id, `Request timed out after ${timeoutMs} ms`);
        reject(new TaskRequestTimeoutError(method, timeoutMs));
      }, timeoutMs);
      const giveUp = (): void => {
        if (!this.#retire(id)) return;
        timers.clearTimeout(timer);
        // The reason of what gave it up, when it names one (a call's maximum total timeout, say).
        const reason: unknown = given!.reason;
        const sent = this.cancel(id, typeof reason === "string" ? reason : "Cancelled by the client");
        givenUp?.(sent ?? "none");
        reject(reason);
      };
      given?.addEventListener("abort", giveUp, { once: true });
      const done = (): void => {
        timers.clearTimeout(timer);
        given?.removeEventListener("abort", giveUp);
      };
      this.#pending.set(id, {
        method,
        resolve: (result) => (done(), resolve(result)),
        reject: (error) => (done(), reject(error)),
      });
      this.send({ jsonrpc: "2.0", id, method, params }).catch((error: unknown) => {
        const pending = this.#pending.get(id);
        if (pending === undefined || !this.#retire(id)) return;
        // Never sent only while nothing showed it reached the server: a request answered with an
        // HTTP error status (a gateway's 502) was received, whatever its send says (an audit's).
        const failure = readable(error, `${method}: its send failed`);
        pending.reject(pending.reached === true ? reachedButFailed(failure) : notSent(failure));
      });
    });
  }

  /** A fact a layer below observed of one of ours (see `WireFact`): it reached the server, or not yet. */
  fact(id: RequestId, fact: WireFact): void {
    if (fact.kind !== "written" && fact.kind !== "answered") return;
    const pending = typeof id === "string" ? this.#pending.get(id) : undefined;
    if (pending !== undefined) pending.reached = true;
  }

  /** A response: true if it answered one of ours (then nobody else must see it). */
  answer(message: Message): boolean {
    if (typeof message.id !== "string") return false;
    const pending = this.#pending.get(message.id);
    // A late answer of one of ours (given up, or failed): dropped. Only ours: a client of
    // `cancellableTransport` numbering its own requests with strings may use the same form (an
    // audit's: its answer was swallowed, and its call timed out).
    if (pending === undefined) return this.#retired.has(message.id);
    this.#pending.delete(message.id);
    if (message.error !== undefined) {
      const error = message.error as { code?: unknown; message?: unknown; data?: unknown };
      pending.reject(
        new TaskRequestError(
          pending.method,
          typeof error.code === "number" ? error.code : null,
          typeof error.message === "string" ? error.message : "error",
          error.data,
        ),
      );
    } else {
      const result = message.result;
      pending.resolve(typeof result === "object" && result !== null ? (result as Record<string, unknown>) : {});
    }
    return true;
  }

  /** The stream of one of ours ended without its answer: it fails with `cause` (no answer: the caller polls again). */
  /**
   * One of ours ended without its answer (a wire fact): it fails with the cause; `neverSent` (the
   * fact says it never left: a refused connection, a line never written) marks it not sent, so
   * the record says so (an outside tester's: a refused `tasks/cancel` was recorded as sent).
   */
  lost(id: string, cause: unknown, neverSent = false): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#retire(id);
    const error = readable(cause, `${pending.method}: its response stream ended without its answer`);
    pending.reject(neverSent ? notSent(error) : error);
  }

  /** The connection closed: every request in flight fails. */
  closeAll(error: Error): void {
    const pending = [...this.#pending.values()];
    for (const id of this.#pending.keys()) this.#retired.set(id, true);
    this.#pending.clear();
    for (const entry of pending) entry.reject(error);
  }
}

/**
 * `cause` as an Error the task driver can read: itself when it is one, else an Error of its text
 * (a thrown string), or `fallback` for nothing. Never a throw: a revoked Proxy or an error whose
 * `message` getter throws (an outside tester's: the driver's `instanceof` on a revoked Proxy was an
 * unhandled rejection that ended the process) becomes an Error of its own, the value its `cause`.
 */
function readable(cause: unknown, fallback: string): Error {
  try {
    if (cause instanceof Error && typeof cause.message === "string") return cause;
  } catch {
    // read below as any value
  }
  return new Error(cause === undefined ? fallback : textOf(cause), { cause });
}

/** Failures of the library's own requests that never went out (see {@link wasNotSent}). */
const NOT_SENT = new WeakSet<object>();

/**
 * Marks `error` as the failure of one of the library's own requests that never went out (the
 * connection was closed, or the transport refused it), and returns it.
 * @internal
 */
export function notSent<E>(error: E): E {
  if (typeof error === "object" && error !== null) NOT_SENT.add(error);
  return error;
}

const REACHED = new WeakSet<object>();

/** Marks the failed send of a request a layer below saw reach the server (see `TaskRequests.fact`). */
function reachedButFailed<E>(error: E): E {
  if (typeof error === "object" && error !== null) REACHED.add(error);
  return error;
}

/** True for a request's send that failed after it reached the server (an HTTP error status): the server has it. @internal */
export function reachedTheServer(error: unknown): boolean {
  return typeof error === "object" && error !== null && REACHED.has(error);
}

/** True for a failure marked by {@link notSent}: the request never went out. @internal */
export function wasNotSent(error: unknown): boolean {
  return typeof error === "object" && error !== null && NOT_SENT.has(error);
}
