import { markVerifyRead } from "../utils/verify-reads.js";
import pTimeout from "p-timeout";
import { CallCancelledError } from "../errors/CallCancelledError.js";
import { CallTimeoutError } from "../errors/CallTimeoutError.js";
import { ConnectionClosedError } from "../errors/ConnectionClosedError.js";
import { isTimeoutReason } from "../errors/McpCancellableError.js";
import type { McpCancellableError } from "../errors/McpCancellableError.js";
import { MAX_REASON_LENGTH } from "../options/defaults.js";
import { linkAbort, offAbort } from "../utils/abort-link.js";
import type { Progress, ResolvedCallOptions, Timers, VerifyFn } from "../types/options.js";
import { DeadlineQueue } from "./deadlines.js";
import { Wakeable } from "../utils/wakeable.js";
import { ANSWERED_FIRST, createdTask, terminalTaskOutcome } from "./record.js";
import type {
  CallOutcome,
  CancelledOutcome,
  CancelDelivery,
  CancelMechanism,
  CancelTrigger,
  CancelUndelivered,
  RunRecord,
  TaskInfo,
  VerifyRead,
} from "../types/record.js";
import { SettledRecord, countLate, undeliveredOf } from "./settled-record.js";
import type { LateSink, SettledFacts } from "./settled-record.js";
import { callHook, noop, textOf } from "../utils/hooks.js";

/** A JSON-RPC request id (rule 1). */
export type RequestId = string | number;

/** What a call needs from the layer that owns the wire. */
export interface CallHooks {
  /**
   * Puts the cancel on the wire and returns the mechanism used. Called once, synchronously,
   * when a pending call is cancelled; must not throw or wait (the caller is released at once).
   */
  cancel(call: CancellableCall, reason: string): CancelMechanism;
  /** The call has settled: release everything held for it. Called once. */
  settled(call: CancellableCall): void;
  /**
   * A run record was produced (at settle) or updated (late message, verification), built for
   * this hook. Leave it out when nothing needs each revision as it happens: the record is then
   * built only when read (`keep`'s `record`, the error's `record`).
   */
  record?: ((record: RunRecord) => void) | undefined;
  /**
   * The call settled: the object that holds its record from now on (`record` builds the latest
   * revision when read, and keeps it). Called once, before `settled`.
   */
  keep?: ((settled: SettledRecord) => void) | undefined;
  /** The result, while the call is still pending (an observer's span records it); must not throw. */
  result?: ((value: unknown) => void) | undefined;
  /**
   * The call was rejected (cancelled, timed out, or the server's error), with what its promise
   * rejects with: called once, after the settle. For an entry point that answers its client from
   * the call itself, with no promise handlers per pending call. Must not throw.
   */
  rejected?: ((call: CancellableCall, error: unknown) => void) | undefined;
}

/** Everything a call is made of. The core does no I/O and imports no `node:` module. */
export interface CallInit {
  method: string;
  /** The tool, prompt or resource name, or `null`. */
  name: string | null;
  options: ResolvedCallOptions;
  /**
   * The caller's signal, when it is all the call's own options held: `options` can then be the
   * client's defaults, shared by every such call. Default: `options.signal`.
   */
  signal?: AbortSignal | readonly AbortSignal[] | undefined;
  hooks: CallHooks;
  /** Monotonic clock, ms. */
  clock: () => number;
  timers: Timers;
  /**
   * The queue that holds this call's deadline, shared by a client's calls so that any number of
   * pending calls keep one timer. Must use the same `clock`. Default: a queue of the call's own
   * (one timer per call, from `timers`).
   */
  deadlines?: DeadlineQueue;
  /**
   * Where the record says the call belongs: its process-unique call id, its connection, and
   * the MCP session id (read when the call settles). Default: 0, 0 and no session.
   */
  ids?: CallIds;
  /**
   * The call's process-unique id, when `ids` is shared by a connection's calls (its `callId`
   * is then not this call's). Default: `ids.callId`.
   */
  callId?: number;
  /** What the entry point keeps with the call (read back in its hooks as `call.owner`). Default: undefined. */
  owner?: unknown;
  /**
   * `false`: the call makes no promise (`promise` never settles): the entry point learns the
   * outcome from what it settles itself (`succeed`, `fail`) and from `hooks.rejected`, with no
   * promise, resolving functions or handlers per pending call. Default: true.
   */
  promise?: boolean | undefined;
}

/** The identity a run record carries (`callId`, `connectionId`, `sessionId`). */
export interface CallIds {
  readonly callId: number;
  readonly connectionId: number;
  /** The MCP session id now, or undefined (stdio; a server without sessions). */
  sessionId(): string | undefined;
}

type State = "pending" | "responded" | "settled";

/**
 * One MCP request's life on the client: `pending → responded → settled`, or `pending →
 * settled` by a cancel. The first event wins; later ones are no-ops, so the call settles exactly
 * once. Owns the idle timeout (reset by increasing progress when asked), the maximum total
 * timeout from the send (rule 17), the caller's `AbortSignal`, the late state after a cancel
 * (rule 8), verification and the run record.
 *
 * One deadline serves both limits: the nearer one is queued (in the client's shared
 * {@link DeadlineQueue}, one timer for all its calls); when it is reached the call checks the
 * clock and queues itself again if progress moved the idle deadline. Progress therefore costs no
 * timer work, and the maximum total timeout is enforced by a timer whether or not progress
 * arrives. The queue's wake is only a hint: the call decides from its own deadlines, so a timer
 * firing early or late never settles it before its time, nor settles another call.
 */
export class CancellableCall<T = unknown> extends Wakeable implements LateSink {
  /** Settles exactly once: the result, the server's error untouched, or one of the library's errors. */
  readonly promise: Promise<T>;
  readonly method: string;
  readonly name: string | null;
  /** The call's process-unique id (`ids.callId`, 0 without). */
  readonly callId: number;
  /** The entry point's own object for this call (`CallInit.owner`), if any. */
  readonly owner: unknown;
  /** Set when the request goes on the wire. */
  requestId: RequestId | null = null;
  /** The progress token the request carries, if any. */
  progressToken: string | number | undefined = undefined;

  #state: State = "pending";
  // Typed `unknown` so a CancellableCall<T> is a CancellableCall<unknown> (T stays covariant).
  #resolve!: (value: unknown) => void;
  #reject!: (error: unknown) => void;
  // What the call needs of its CallInit, kept field by field (the CallInit itself is not kept).
  // Options, signal, hooks and ids are replaced when the call settles, so nothing the caller
  // passed in (signal, callbacks) nor the entry point's per-call hooks outlives the call.
  #options: ResolvedCallOptions;
  #callerSignal: AbortSignal | readonly AbortSignal[] | undefined;
  #hooks: CallHooks;
  #ids: CallIds | undefined;
  readonly #startedAt: number;
  /** `Date.now()` at the start, less {@link WALL_EPOCH}: a small integer (no heap number) for the first 12 days of the process. */
  readonly #startedWall: number;
  /**
   * The idle deadline once progress (or a sign of life) moved it; `undefined` while it is the
   * start plus `timeoutMs` (most calls: no heap number for it).
   */
  #idleDeadline: number | undefined = undefined;
  /** The queue that holds the call's deadline; the call's clock and timers are the queue's. */
  readonly #deadlines: DeadlineQueue;
  /** Progress received while live: `null` before the first (most calls). */
  #progress: ProgressSeen | null = null;
  /** What few calls have: late messages before the settle, an HTTP error status, waits for the client's answers. `null` for none. */
  #rare: RareFacts | null = null;
  #settled: SettledRecord | null = null;

  constructor(init: CallInit) {
    super();
    this.#options = init.options;
    this.#callerSignal = init.signal ?? init.options.signal;
    this.#hooks = init.hooks;
    this.#ids = init.ids;
    this.method = init.method;
    this.name = init.name;
    this.callId = init.callId ?? init.ids?.callId ?? 0;
    this.owner = init.owner;
    if (init.promise === false) {
      this.promise = NEVER;
      this.#resolve = this.#reject = noop;
    } else {
      // A module-level executor: no closure and scope made per call just to take the two functions.
      this.promise = new Promise<T>(takeResolvers);
      this.#resolve = takenResolve;
      this.#reject = takenReject;
      takenResolve = takenReject = noop; // nothing of this call stays in the module
    }
    const now = init.clock();
    this.#startedAt = now;
    const sinceEpoch = Date.now() - WALL_EPOCH;
    // `| 0` makes it a small integer in V8's eyes (else a double, boxed per call); exact while it fits.
    this.#startedWall = sinceEpoch >= 0 && sinceEpoch < 0x3fffffff ? sinceEpoch | 0 : sinceEpoch;
    this.#deadlines = init.deadlines ?? new DeadlineQueue(init.clock, init.timers);
  }

  /** The call's clock (its queue's). */
  #clock(): number {
    return this.#deadlines.clock();
  }

  #rareFacts(): RareFacts {
    return (this.#rare ??= { late: null, httpStatus: undefined, clientWaits: 0, task: undefined, early: undefined });
  }

  /** The idle deadline: the start plus `timeoutMs` until progress moved it. */
  #idle(): number {
    return this.#idleDeadline ?? this.#startedAt + this.#options.timeoutMs;
  }

  /** See `LateSink.answered`: its response was read as its answer (not one that came after a cancel). */
  get answered(): boolean {
    return this.#state === "responded" || this.#settled?.status === "succeeded";
  }

  /** True once the call has settled (result, error or cancel). */
  get settled(): boolean {
    return this.#state === "settled";
  }

  /** The latest run record, or `null` while the call is pending. */
  get record(): RunRecord | null {
    return this.#settled?.record ?? null;
  }

  /** Once settled: the small object that keeps the record up to date (what tombstones hold). */
  get settledRecord(): SettledRecord | null {
    return this.#settled;
  }

  /**
   * Arms the timer and links the caller's signal. A signal that is already aborted cancels
   * the call at once, before anything is sent.
   */
  start(): void {
    const signal = this.#signal();
    if (signal !== undefined) {
      const reason = abortReason(signal);
      if (reason !== NOT_ABORTED) {
        this.cancel(abortTrigger(reason), reason);
        return;
      }
      // Several signals (a session-wide one and a per-call one): one subscription each, all
      // released at settle. Not AbortSignal.any, which on Node 20 keeps every combined signal
      // alive as long as the session's signal lives.
      try {
        if (isSignal(signal)) linkAbort(signal, this);
        else for (const each of signal) linkAbort(each, this);
      } catch (error) {
        // A signal of the caller's own making whose `addEventListener` throws: the call fails with
        // what it threw, never sent, and the signals linked before it are let go (an outside
        // tester's: the first one kept its listener, and its later abort settled the refused call
        // a second time, an unhandled rejection).
        this.#dispose();
        this.fail(error);
        return;
      }
    }
    this.#arm();
  }

  /** The request went on the wire with this id (and this progress token, if it asked for progress). */
  bind(requestId: RequestId, progressToken?: string | number): void {
    this.requestId = requestId;
    this.progressToken = progressToken;
  }

  /**
   * 2026-07-28 multi round-trip: the request went out again (just bound anew) with the client's
   * input: the wait on the client is over, and the new request's progress starts again (rule 21
   * is per request: an outside tester's, the next round's progress did not reset the idle timeout).
   */
  nextRound(): void {
    this.clientAnswered();
    if (this.#progress !== null) this.#progress.max = Number.NEGATIVE_INFINITY;
  }

  /**
   * Progress for this request arrived while it is live (rule 22). Resets the idle timeout when
   * asked to and the value is above every earlier one, then hands it to `onprogress`: what it
   * throws, or the promise it returns rejects with, goes to `failed` (without `failed`, a throw
   * propagates to the caller of this method). Returns false when it is not (rule 21).
   */
  progress(progress: Progress, failed?: (error: unknown) => void): boolean {
    if (this.#state !== "pending") return true;
    // Rule 21: progress must increase; judged against the highest value seen, so a server
    // oscillating 5, 3, 5 ... never extends the call.
    const seen = (this.#progress ??= { count: 0, last: null, max: Number.NEGATIVE_INFINITY });
    const increased = progress.progress > seen.max;
    if (increased) seen.max = progress.progress;
    seen.count++;
    seen.last = progress;
    if (increased && this.#options.resetTimeoutOnProgress) this.#restartIdle();
    // The caller's own copy: the record keeps this one (frozen once the record is built), and
    // what the caller does with its copy never reaches the record.
    // What it throws, or the promise it returns rejects with, goes to `failed` (an async handler's
    // rejection was unhandled: an outside tester's, the process died of it).
    const onprogress = this.#options.onprogress;
    if (onprogress !== undefined) {
      if (failed === undefined) onprogress({ ...progress });
      else callHook(onprogress, { ...progress }, failed);
    }
    return increased;
  }

  /**
   * A sign of life from the work behind a call that follows its task (an answered `tasks/get`, a
   * task status notification, progress), or from its server that was starting (the wire holds a
   * stdio call's idle timeout until its server's first message): the idle timeout starts again
   * from now, sooner or later than it would have come. The maximum total timeout is untouched. A no-op once the call is no longer pending.
   */
  alive(): void {
    if (this.#state !== "pending") return;
    this.#restartIdle();
    this.#arm(); // the deadline may come sooner than the one queued: queue it there
  }

  /**
   * The client itself waits `ms` before it next asks the server (a task's poll interval): the
   * server cannot be silent meanwhile, so the idle timeout starts again `ms` from now, never
   * sooner than it would have. The maximum total timeout is untouched (rule 17). A no-op once
   * the call is no longer pending, and while the client's answer is awaited (`clientWait`).
   */
  idleAfter(ms: number): void {
    if (this.#state !== "pending" || (this.#rare?.clientWaits ?? 0) > 0) return;
    this.#idleDeadline = Math.max(this.#idle(), this.#clock() + ms + this.#options.timeoutMs);
  }

  /**
   * The server sent the client a request (elicitation, sampling, roots) whose answer it now
   * waits for: that wait is not the server's silence. The idle timeout is paused, and the wait
   * is bounded by `clientWaitTimeoutMs` from now (several at once: the latest bound), sooner or
   * later than the idle timeout would have come: past it the call times out naming that bound
   * (a call with no idle timeout, `timeoutMs` `Infinity`, such as a listen, keeps none).
   * Progress does not move the bound; the maximum total timeout still holds. Counted: each call
   * to it is ended by one `clientAnswered`. A no-op once the call is no longer pending.
   */
  clientWait(): void {
    if (this.#state !== "pending") return;
    const first = this.#rareFacts().clientWaits++ === 0;
    if (this.#options.timeoutMs === Number.POSITIVE_INFINITY) return;
    // Each request's wait is bounded from its own arrival: while several are unanswered, the
    // latest bound holds (an outside tester's: a second request's wait was cut by the first's).
    const bound = this.#clock() + this.#options.clientWaitTimeoutMs;
    this.#idleDeadline = first ? bound : Math.max(this.#idle(), bound);
    this.#arm(); // the bound may come sooner than the idle timeout: queue it there
  }

  /** The client answered (or the server withdrew) one such request: when none is left, the idle timeout starts again in full. */
  clientAnswered(): void {
    const rare = this.#rare;
    if (this.#state !== "pending" || rare === null || rare.clientWaits === 0) return;
    if (--rare.clientWaits > 0) return;
    this.#idleDeadline = this.#clock() + this.#options.timeoutMs;
    this.#arm(); // the deadline may come sooner than the pause's: queue it there
  }

  /** Progress or a sign of life: the idle timeout starts again from now (paused while the client's answer is awaited: `clientWait`). */
  #restartIdle(): void {
    if ((this.#rare?.clientWaits ?? 0) > 0) return;
    this.#idleDeadline = this.#clock() + this.#options.timeoutMs;
  }

  /**
   * The response is on its way to the SDK, which settles the call in the same turn. From now
   * on no cancel may be sent (rule 7) and no timer or abort can win over the response (rule 9).
   *
   * Returns false when the caller's signal aborted before the response came and the call's turn
   * to settle by it had not come yet (a signal shared by thousands of calls settles them in
   * slices): the abort came first, so the call is cancelled now (`aborted`, or `timeout` for a
   * signal whose reason is a `TimeoutError`) and the response is
   * late (rule 8). The caller of this method takes the request off the wire first, so no cancel
   * goes out for it (the response is here); the response is counted late on the record the
   * cancel settles (`kind`: a result or an error; none for what is no response), so its first
   * revision says both (an outside tester's: it said "the response arrived first" beside
   * "outcome unverified", the count following in a revision of its own). `closesStream`: the
   * transport's cancel is the request's stream close (2026-07-28 Streamable HTTP), so the record
   * names that as what was not done (no notification is ever sent there).
   */
  responded(kind?: "result" | "error", closesStream = false): boolean {
    if (this.#state !== "pending") return true;
    const signal = this.#callerSignal;
    const reason = signal === undefined ? NOT_ABORTED : abortReason(signal);
    if (reason !== NOT_ABORTED) {
      this.#cancelAnswered(kind, closesStream, abortTrigger(reason), reason);
      return false;
    }
    // Read after one of its limits had passed, before a busy event loop ran its timer: the
    // limit came first; the response is late (rule 8), never delivered as the result.
    const now = this.#clock();
    const total = this.#totalDeadline();
    const idle = this.#idle();
    if (now > total && total <= idle) {
      this.#cancelAnswered(kind, closesStream, "max-total-timeout");
      return false;
    }
    if (now > idle) {
      this.#cancelAnswered(kind, closesStream, "timeout");
      return false;
    }
    this.#state = "responded";
    this.#dispose();
    return true;
  }

  /**
   * Cancelled (its limit or its caller's abort came first) as its response is read: the response
   * is off the wire's books, so nothing goes out, and the record says why as the adapters'
   * queues do for a timer-fired cancel whose response came first (rule 7): `undelivered`
   * "not sent: the response arrived first", the same record on every path.
   */
  #cancelAnswered(kind: "result" | "error" | undefined, closesStream: boolean, trigger: CancelTrigger, cause?: unknown): void {
    const rare = this.#rareFacts();
    rare.early = { sent: "none", failed: { mechanism: closesStream ? "stream-close" : "notification", error: ANSWERED_FIRST } };
    if (kind !== undefined) rare.late = countLate(rare.late ?? { results: 0, errors: 0, progress: 0 }, kind);
    this.cancel(trigger, cause);
  }

  /**
   * A task-augmented call: the task it created, or its status as last seen (rules 35, 36).
   * Goes into the record (`task`). Does not stop the timers: the call lives until the task is
   * terminal or the call is cancelled.
   */
  setTask(task: TaskInfo): void {
    this.#rareFacts().task = task;
  }

  /** The task this call follows, if any. */
  /**
   * A timer cancelled the call: its idle or maximum total timeout, or a caller's signal that timed
   * out. Timers run before the event loop reads its input, so the server's answer may be waiting
   * unread (see `CancelRequest.byTimer`). Read while the cancel goes on the wire (the `cancel`
   * hook); false before and after.
   */
  get byTimer(): boolean {
    return timerCancelling === this;
  }

  get task(): TaskInfo | undefined {
    return this.#rare?.task;
  }

  /**
   * The call has a limit of its own: a finite idle or maximum total timeout. Without one (both
   * `Infinity`, asked for), the SDK's own timer of its request (the longest delay Node allows,
   * about 24.8 days) is kept as the last word.
   */
  get limited(): boolean {
    const options = this.#options;
    return options.timeoutMs !== Number.POSITIVE_INFINITY || options.maxTotalTimeoutMs !== Number.POSITIVE_INFINITY;
  }

  /**
   * The SDK delivered the result. A `CreateTaskResult` for a call that does not follow its task
   * is recorded as `task-created`, never `succeeded`: nothing has finished.
   */
  succeed(value: T): void {
    if (this.#state === "settled") return;
    this.#hooks.result?.(value);
    const created = this.#rare?.task === undefined ? createdTask(value) : null;
    if (created !== null) this.#rareFacts().task = created;
    this.#finish(created === null ? "succeeded" : "task-created", "completed", null);
    this.#resolve(value);
    this.#release();
  }

  /**
   * The server answered the request's POST with this HTTP error status (observed on the wire): the
   * request reached it. If the call then fails, its record's error carries the status.
   */
  answeredStatus(status: number): void {
    this.#rareFacts().httpStatus = status;
  }

  /**
   * Its send was refused because its message cannot be serialised (a BigInt, a cycle, a `toJSON`
   * that throws in its params): nothing left, and the SDK fails the call with the serialiser's
   * error; the record says `not-sent` (it keeps its request id).
   */
  unsendable(): void {
    this.#rareFacts().unsendable = true;
  }

  /**
   * The SDK rejected the call: a JSON-RPC error from the server, a send failure or a validation
   * error. Passed on untouched. A call whose request never reached the wire (the SDK refused it
   * before its `send`, as the v1 SDK refuses a tool whose `taskSupport` is `"required"` called
   * without a task) is recorded `not-sent` ("never sent"): no server answered it.
   */
  fail(error: unknown): void {
    if (this.#state === "settled") return;
    const notSent = this.requestId === null || this.#rare?.unsendable === true;
    this.#finish("failed", notSent ? "not-sent" : "error", describeError(error, this.#rare?.httpStatus));
    const rejected = this.#hooks.rejected;
    this.#reject(error);
    this.#release();
    rejected?.(this, error);
  }

  /**
   * Cancels a pending call: puts the cancel on the wire through the hooks (without waiting),
   * settles the record and rejects the caller at once. A no-op once the response arrived.
   * @param neverSent the request provably never reached the wire (a refused connection, a host
   *   name that did not resolve): the outcome is `not-sent` ("never sent"), not `unverified`.
   */
  cancel(trigger: CancelTrigger, cause?: unknown, neverSent = false): void {
    this.#cancel(trigger, cause, neverSent, trigger !== "connection-closed");
  }

  /**
   * The connection the client closed is gone and this call, which nothing on the wire could
   * cancel (a multi round-trip call between rounds, a task being followed), is still pending: it
   * settles `connection-closed` with the client's close as its reason (never "its connection was
   * lost": an outside tester's), nothing sent.
   */
  closedByClient(): void {
    this.#cancel("connection-closed", undefined, false, false, CLIENT_CLOSED_REASON);
  }

  /**
   * The client is closing the connection (`client.close()`) while this call is pending: the
   * cancel goes out by the transport's mechanism before the close (the server may run the work
   * to its end otherwise: a 2025-era session outlives a closed stream, rule 40), and the call
   * settles `connection-closed` as it did, now with the mechanism on its record. A no-op once
   * the response arrived.
   */
  closing(): void {
    // Its signal aborted already (a shared signal's abort settles its calls in slices, and the
    // close came in the same tick): the abort came first, and it is what the call settles as.
    const signal = this.#callerSignal;
    const reason = signal === undefined ? NOT_ABORTED : abortReason(signal);
    if (reason !== NOT_ABORTED) {
      this.cancel(abortTrigger(reason), reason);
      return;
    }
    this.#cancel("connection-closed", undefined, false, true, CLIENT_CLOSED_REASON);
  }

  #cancel(trigger: CancelTrigger, cause: unknown, neverSent: boolean, onWire: boolean, why?: string): void {
    if (this.#state !== "pending") return;
    // Settled from here on (a re-entrant cancel, answer or failure is a no-op); its timer entry and
    // signal link are dropped by #finish, after the cancel is on the wire: the cancel's path from
    // the abort to the write is the latency the server sees (rule 6), and a heap removal and an
    // unlink on it cost about 6 µs a cancel (bench/stdio-latency.ts, a cold path between calls).
    this.#state = "settled";
    // A caller's signal that timed out (trigger timeout, its reason the cause): its own limit is
    // not readable from the signal, so the record and the error give how long the call had run.
    const ranMs = trigger === "timeout" && cause !== undefined ? Math.round(this.#clock() - this.#startedAt) : undefined;
    // Timed out while the server waited for the client's own answer: the bound was clientWaitTimeoutMs.
    const clientWaitMs =
      trigger === "timeout" && ranMs === undefined && (this.#rare?.clientWaits ?? 0) > 0 ? this.#options.clientWaitTimeoutMs : undefined;
    const reason = truncate(
      this.#options.reason ??
        why ??
        (clientWaitMs === undefined
          ? defaultReason(trigger, this.#options, cause, ranMs)
          : `The client's answer to the server's request did not come within clientWaitTimeoutMs (${clientWaitMs} ms)`),
    );
    let mechanism: CancelMechanism = "none";
    if (onWire) {
      // `byTimer` is read only by the cancel hook, so it is known for as long as that runs: no fact
      // kept on the call for it (a rare-facts object was made for every timed-out call, 64 B).
      const outer = timerCancelling;
      timerCancelling = trigger === "timeout" || trigger === "max-total-timeout" ? this : null;
      try {
        mechanism = this.#hooks.cancel(this, reason);
      } catch {
        // A cancel is best-effort (rule 10): a transport that throws must not keep the caller waiting.
      } finally {
        timerCancelling = outer;
      }
    }
    const early = this.#rare?.early;
    let sentWall: number | null = mechanism === "none" ? null : Date.now();
    let undelivered: CancelUndelivered | null = null;
    let outcome: CallOutcome = this.requestId === null || neverSent ? "not-sent" : "unverified";
    // Its response already read, late (see `responded`): the result was discarded.
    const lateAnswers = this.#rare?.late ?? null;
    if (outcome === "unverified" && lateAnswers !== null && lateAnswers.results + lateAnswers.errors > 0) outcome = "late-result-discarded";
    // No cancel hook ran (a lost connection, the client's close): a task already seen terminal is
    // what became of the work all the same (an outside tester's: a task seen completed, its
    // tasks/result cut by a dropped connection, was "outcome unverified" beside status completed).
    const known = this.#rare?.known ?? (onWire ? undefined : terminalTaskOutcome(this.#rare?.task?.status));
    if (outcome === "unverified" && known !== undefined) outcome = known;
    if (early !== undefined) {
      this.#rare!.early = undefined;
      mechanism = early.sent;
      // `sentWall: null`: it is on its way and has not gone yet (the adapter tells when it goes).
      sentWall = early.sent === "none" || early.sentWall === null ? null : (early.sentWall ?? sentWall ?? Date.now());
      undelivered = early.failed === null ? null : undeliveredOf(early.failed);
      if (early.sent === "none" && early.failed === null) outcome = "not-sent";
    }
    const settled = this.#finish("cancelled", outcome, null, trigger, reason, mechanism, sentWall, undelivered);
    const verification = this.#options.verify !== undefined && settled.outcome !== "not-sent" ? this.#verify(settled) : undefined;
    const error = this.#error(
      trigger,
      settled,
      verification,
      cause,
      ranMs ?? clientWaitMs,
      why === CLIENT_CLOSED_REASON,
      clientWaitMs !== undefined,
    );
    const rejected = this.#hooks.rejected;
    this.#reject(error);
    this.#release();
    rejected?.(this, error);
  }

  /**
   * A message for this request arrived after it settled and was dropped before the SDK saw
   * it (rules 8, 11). Counted on the record; a late result or error of a cancelled call turns
   * its outcome into `late-result-discarded`.
   */
  late(kind: "result" | "error" | "progress", ran?: boolean, afterItsClose?: boolean): void {
    if (this.#settled !== null) {
      this.#settled.late(kind, ran, afterItsClose);
      return;
    }
    // Between the response and the settle there is no record yet: #finish picks the counts up.
    const rare = this.#rareFacts();
    rare.late = countLate(rare.late ?? { results: 0, errors: 0, progress: 0 }, kind);
  }

  /**
   * Told by the cancel hook, during the cancel: what is already known to have become of the work
   * (a task the server reported terminal before the cancel: `task-completed-anyway`,
   * `task-failed`, `task-cancelled`), so the first record and the caller's error say it instead of
   * `unverified` (an outside tester's: "whether it ran is unknown" beside `task.status: completed`).
   */
  outcomeKnown(outcome: CancelledOutcome): void {
    if (this.#state === "settled" && this.#settled === null) this.#rareFacts().known = outcome;
  }

  /** The adapter learned after the settle how the cancel was delivered (see `SettledRecord.delivery`). */
  delivery(report: CancelDelivery): void {
    if (this.#settled !== null) this.#settled.delivery(report);
    // Told during the cancel itself (a layer that knew at once: the response was in, the request
    // never left): the settle takes it, so the first record says what happened, not what was tried.
    else if (this.#state === "settled") this.#rareFacts().early = report;
  }

  /** The caller's signal(s), if any. */
  #signal(): AbortSignal | readonly AbortSignal[] | undefined {
    return this.#callerSignal;
  }

  /**
   * What wakes a pending call, for both things that do: its caller's signal aborting (through
   * the abort fan-out) and its deadline being reached (through the queue, where the call is its
   * own entry). A signal that has aborted wins; otherwise the call checks its own deadlines
   * against the clock (a wake is a hint) and queues itself again when progress moved the idle
   * deadline. A method, not a closure: a pending call carries no function of its own for it.
   * @internal
   */
  protected override wake(): void {
    if (this.#state !== "pending") return;
    const signal = this.#callerSignal;
    const reason = signal === undefined ? NOT_ABORTED : abortReason(signal);
    if (reason !== NOT_ABORTED) {
      this.cancel(abortTrigger(reason), reason);
      return;
    }
    const now = this.#clock();
    const totalDeadline = this.#totalDeadline();
    const idleDeadline = this.#idle();
    if (now >= totalDeadline && totalDeadline <= idleDeadline) {
      this.cancel("max-total-timeout");
    } else if (now >= idleDeadline) {
      this.cancel("timeout");
    } else {
      this.#arm();
    }
  }

  /** The maximum total timeout's deadline (computed, not kept: one heap number less per pending call). Pending calls only. */
  #totalDeadline(): number {
    return this.#startedAt + this.#options.maxTotalTimeoutMs;
  }

  #arm(): void {
    const deadline = Math.min(this.#idle(), this.#totalDeadline());
    if (deadline === Number.POSITIVE_INFINITY) return;
    this.#deadlines.schedule(this, deadline);
  }

  /**
   * Releases the queued deadline and the signal subscription. Idempotent: unsubscribing a call
   * that is not subscribed (any more, or ever: its signal had aborted at the start) is a no-op,
   * so no field says whether it is (8 bytes a pending call).
   */
  #dispose(): void {
    this.#deadlines.remove(this);
    const signal = this.#signal();
    if (signal === undefined) return;
    if (isSignal(signal)) offAbort(signal, this);
    else for (const each of signal) offAbort(each, this);
  }

  /**
   * Settles the call's state and keeps its facts: times as numbers, the cancel's parts, ids. The
   * run record is built from them only when something reads it (the `record` hook, the
   * `SettledRecord`'s `record`, the error's `record`).
   */
  #finish(
    status: RunRecord["status"],
    outcome: CallOutcome,
    error: RunRecord["error"],
    trigger: CancelTrigger | null = null,
    reason = "",
    mechanism: CancelMechanism = "none",
    sentWall: number | null = null,
    undelivered: CancelUndelivered | null = null,
  ): SettledRecord {
    this.#state = "settled";
    this.#dispose();
    const ids = this.#ids;
    let facts: SettledFacts = {
      callId: this.callId,
      connectionId: ids?.connectionId ?? 0,
      sessionId: ids?.sessionId() ?? null,
      requestId: this.requestId,
      method: this.method,
      name: this.name,
      startedWall: this.#startedWall + WALL_EPOCH,
      settledWall: Date.now(),
      // Rounded to 0.1 ms: clocks are not finer than that in practice, and logs stay readable.
      elapsedMs: Math.max(0, Math.round((this.#clock() - this.#startedAt) * 10) / 10),
      status,
      outcome,
      error,
      trigger,
      reason,
      mechanism,
      sentWall,
      late: this.#rare?.late ?? null,
      progressCount: this.#progress?.count ?? 0,
      lastProgress: this.#progress?.last ?? null,
      task: this.#rare?.task,
    };
    if (undelivered !== null) facts = { ...facts, undelivered };
    const hooks = this.#hooks;
    const settled = new SettledRecord(facts, hooks.record);
    this.#settled = settled;
    hooks.keep?.(settled);
    settled.report();
    hooks.settled(this);
    return settled;
  }

  /** Drops everything a settled call no longer needs; only its SettledRecord lives on. */
  #release(): void {
    this.#options = RELEASED_OPTIONS;
    this.#callerSignal = undefined;
    this.#hooks = RELEASED_HOOKS;
    this.#ids = undefined;
    this.#resolve = noop;
    this.#reject = noop;
  }

  /**
   * Reads `verify` after `verifyDelayMs`, and again every `verifyIntervalMs` (and once at the
   * window's end) while `verifyWindowMs` lasts: "applied" ends it at once; "not-applied" is only
   * known as of its read, so `verified-not-applied` needs the window's last read to find nothing.
   * The whole of it ends within `verifyDelayMs` + `verifyWindowMs` + `verifyTimeoutMs` (the bound
   * api.md gives): a read that starts after the window's end (the one before it ran past it) gets
   * what is left of that bound, and none starts with less than 1 ms left.
   */
  async #verify(settled: SettledRecord): Promise<RunRecord> {
    // Read everything now: the call releases its options when it returns.
    const { verify, verifyDelayMs, verifyTimeoutMs, verifyWindowMs, verifyIntervalMs } = this.#options;
    const timers = this.#deadlines.timers;
    const clock = this.#deadlines.clock;
    const cancelledAt = clock();
    const wait = (ms: number): Promise<void> => new Promise<void>((resolve) => timers.setTimeout(resolve, ms));
    // The adapter may learn after the settle that the request never reached the server (its POST
    // body never written): nothing can have been applied, so nothing is read (an outside tester's:
    // a verifier ran 750 ms after the record said never sent, and the model read "could not tell").
    const neverSent = (): boolean => settled.record.outcome === "not-sent";
    if (verifyDelayMs > 0) await wait(verifyDelayMs);
    if (neverSent()) return settled.record;
    const startedAt = new Date().toISOString();
    const windowStart = clock();
    const windowEnd = windowStart + verifyWindowMs;
    // The last read's answer comes by then (an outside tester's: a read that ran past the window's
    // end was followed by a whole verifyTimeoutMs more, past the bound the options document).
    const verifyEnd = windowEnd + verifyTimeoutMs;
    const reads: VerifyRead[] = [];
    /** This read is the one planned at the window's end. */
    let final = false;
    /** What the server had said of the work running (`SettledRecord.ranCount`) when the last read started. */
    let ranBeforeRead = 0;
    for (let planned = 1; ; planned++) {
      if (neverSent()) return settled.record;
      const at = clock();
      // The first read has its whole verifyTimeoutMs (the bound counts from it); a later one what is
      // left, cut only when that is shorter by more than a timer's millisecond of lateness.
      const left = planned === 1 ? verifyTimeoutMs : verifyEnd - at;
      if (left < 1) break;
      const cut = left < verifyTimeoutMs - 1;
      ranBeforeRead = settled.ranCount;
      const read = await readOnce(verify!, settled.record, cut ? Math.round(left) : verifyTimeoutMs, timers, cut);
      reads.push({ atMs: Math.max(0, Math.round((at - cancelledAt) * 10) / 10), ...read });
      // The window ends with the read planned at its end (even if its timer fired a little early
      // by the clock), or one that started there or later; never with one that started before.
      if (read.found === "applied" || final || at >= windowEnd) break;
      const now = clock();
      // The next read starts on the window's grid (every verifyIntervalMs from its start: a timer
      // that fires early or late does not move the later ones), and never after its end.
      const next = Math.min(windowStart + planned * verifyIntervalMs, windowEnd);
      final = next >= windowEnd;
      if (next > now) await wait(next - now);
    }
    // Learned never sent while the last read ran: nothing can have been applied, whatever it found.
    if (neverSent()) return settled.record;
    const last = reads.at(-1)!;
    const verification = { startedAt, settledAt: new Date().toISOString(), error: last.error, reads, summary: verifySummary(reads) };
    // The server said the work ran (a late result, its task completed) while the last read was
    // under way: a read that found nothing may have looked before the work ended, so it does not
    // overrule that (an outside tester's: a late result 400 ms into a read, the read then said
    // not applied, and the record said so too though the work had been done and answered).
    if (last.found === "not-applied" && settled.ranCount > ranBeforeRead) return settled.update({ verification });
    const outcome: CallOutcome =
      last.found === "applied" ? "verified-applied" : last.found === "not-applied" ? "verified-not-applied" : "verify-failed";
    return settled.update({ verification }, outcome);
  }

  #error(
    trigger: CancelTrigger,
    record: SettledRecord,
    verification: Promise<RunRecord> | undefined,
    cause: unknown,
    limitMs: number | undefined,
    byClient: boolean,
    clientWait: boolean,
  ): McpCancellableError {
    switch (trigger) {
      case "timeout":
        // `limitMs`: how long the call had run (a caller's signal that timed out), or clientWaitTimeoutMs.
        if (clientWait) return new CallTimeoutError("REQUEST_TIMEOUT", limitMs!, record, verification, undefined, "clientWaitTimeoutMs");
        return limitMs === undefined
          ? new CallTimeoutError(
              "REQUEST_TIMEOUT",
              this.#options.timeoutMs,
              record,
              verification,
              undefined,
              this.#options.limitNames?.timeoutMs,
            )
          : new CallTimeoutError("REQUEST_TIMEOUT", limitMs, record, verification, cause);
      case "max-total-timeout":
        return new CallTimeoutError(
          "MAX_TOTAL_TIMEOUT",
          this.#options.maxTotalTimeoutMs,
          record,
          verification,
          undefined,
          this.#options.limitNames?.maxTotalTimeoutMs,
        );
      case "aborted":
        return new CallCancelledError(record, verification, cause);
      case "connection-closed":
        return new ConnectionClosedError(record, verification, cause, byClient);
    }
  }
}

/** One `verify` read, bounded by `verifyTimeoutMs` (its signal aborts then). Never rejects. */
async function readOnce(
  verify: VerifyFn,
  record: RunRecord,
  verifyTimeoutMs: number,
  timers: Timers,
  /** Bounded by the verification's end (what was left of it), not a whole `verifyTimeoutMs`. */
  cut = false,
): Promise<Pick<VerifyRead, "found" | "error">> {
  const controller = new AbortController();
  try {
    // A verify read: the tool calls it makes with its signal take no verifier of their own (see verify-reads.ts).
    markVerifyRead(controller.signal);
    const answer = await pTimeout(
      Promise.resolve().then(() => verify({ record, signal: controller.signal })),
      {
        milliseconds: verifyTimeoutMs,
        message: cut
          ? `verify did not answer within ${verifyTimeoutMs} ms (what was left of the verification's bound: verifyWindowMs + verifyTimeoutMs from its first read)`
          : `verify did not answer within ${verifyTimeoutMs} ms (verifyTimeoutMs)`,
        customTimers: {
          setTimeout: timers.setTimeout as typeof globalThis.setTimeout,
          clearTimeout: timers.clearTimeout as typeof globalThis.clearTimeout,
        },
      },
    );
    if (answer === "applied" || answer === "not-applied") return { found: answer, error: null };
    throw new TypeError(`verify must answer "applied" or "not-applied", got ${kindOf(answer)} (${shown(answer)})`);
  } catch (failure) {
    controller.abort(failure);
    return { found: "failed", error: truncate(textOf(failure)) };
  }
}

/**
 * What a `verify` answered, by kind only: `a string`, `undefined`, `an object`. The model may read
 * this much (`awaitVerification`); the value itself (what a server said, perhaps) stays in the
 * record's `verification.error`, after it.
 */
function kindOf(answer: unknown): string {
  if (answer === null || answer === undefined) return String(answer);
  if (Array.isArray(answer)) return "an array";
  const kind = typeof answer;
  return kind === "object" ? "an object" : `a ${kind}`;
}

/** The value a `verify` answered, for the record: JSON where it has one, else its text (a BigInt, a cycle). */
function shown(answer: unknown): string {
  try {
    return JSON.stringify(answer) ?? String(answer);
  } catch {
    try {
      return String(answer);
    } catch {
      return "unreadable";
    }
  }
}

/** Seconds after the cancel, one decimal: `2.0`. */
const seconds = (ms: number): string => (ms / 1_000).toFixed(1);

/**
 * The reads in one line: `not applied as of 2.0 s; applied at 4.1 s`, `not applied as of 10.0 s
 * (6 reads from 0.0 s)`, `read failed at 10.0 s (not applied as of 8.0 s)`.
 */
export function verifySummary(reads: readonly VerifyRead[]): string {
  const last = reads.at(-1);
  if (last === undefined) return "not read";
  const notApplied = reads.filter((read) => read.found === "not-applied");
  const lastNot = notApplied.at(-1);
  const span = notApplied.length > 1 ? ` (${notApplied.length} reads from ${seconds(notApplied[0]!.atMs)} s)` : "";
  const asOf = lastNot === undefined ? undefined : `not applied as of ${seconds(lastNot.atMs)} s${span}`;
  if (last.found === "applied")
    return asOf === undefined ? `applied at ${seconds(last.atMs)} s` : `${asOf}; applied at ${seconds(last.atMs)} s`;
  if (last.found === "not-applied") return asOf!;
  return asOf === undefined ? `read failed at ${seconds(last.atMs)} s` : `read failed at ${seconds(last.atMs)} s (${asOf})`;
}

/**
 * What a caller's signal that aborted means: a timeout when its reason is a `TimeoutError` (an
 * `AbortSignal.timeout`, a framework's own timeout such as LangChain's), never a user abort;
 * otherwise the caller aborted.
 */
function abortTrigger(reason: unknown): CancelTrigger {
  return isTimeoutReason(reason) ? "timeout" : "aborted";
}

function defaultReason(trigger: CancelTrigger, options: ResolvedCallOptions, cause: unknown, ranMs: number | undefined): string {
  switch (trigger) {
    case "timeout":
      return ranMs === undefined
        ? `Request timed out after ${options.timeoutMs} ms`
        : `Request timed out after ${ranMs} ms (the caller's signal)`;
    case "max-total-timeout":
      return `Request exceeded its maximum total timeout of ${options.maxTotalTimeoutMs} ms`;
    case "connection-closed":
      return "Connection closed";
    case "aborted":
      // The abort reason is the caller's private text (it may name a tenant, a credential, an
      // internal state): it goes to a third-party server only when the caller opts in. It stays
      // local as the error's `cause` either way.
      return options.forwardAbortReason ? abortReasonText(cause) : ABORTED_REASON;
  }
}

/** The reason sent for a call still pending when the client closes its connection (`closing`). */
export const CLIENT_CLOSED_REASON = "The client closed the connection";

/** The default reason of an abort: names the trigger, nothing else. */
export const ABORTED_REASON = "Cancelled by the client";

/**
 * The text of an abort reason, for `forwardAbortReason: true`: a non-empty string as it is, an
 * `Error`'s message (never `String(reason)`, which puts "Error: ..." or "[object Object]" on the
 * wire), else the default sentence (also for a reason that cannot be read: in the signal's
 * `abort` listener a throw would be an uncaught exception).
 */
function abortReasonText(cause: unknown): string {
  if (typeof cause === "string" && cause.length > 0) return cause;
  try {
    if (cause instanceof Error && cause.name !== "AbortError" && typeof cause.message === "string" && cause.message.length > 0)
      return cause.message;
  } catch {
    // A reason that cannot be read (a getter that throws, a revoked Proxy): the default sentence.
  }
  return ABORTED_REASON;
}

function truncate(reason: string): string {
  return reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH - 1)}…` : reason;
}

/**
 * The code and message of an error from the SDK (`McpError` / `ProtocolError` carry a JSON-RPC
 * code), for the record: the message is cut to 1,000 characters, so a server cannot make every
 * record of a run megabytes long. The error the caller gets stays untouched.
 */
function describeError(error: unknown, httpStatus?: number): RunRecord["error"] {
  if (httpStatus !== undefined) {
    const described = describeError(error);
    const text = described!.message.includes(String(httpStatus)) ? described!.message : `HTTP ${httpStatus}: ${described!.message}`;
    return { ...described!, message: truncate(text), httpStatus };
  }
  if (typeof error !== "object" || error === null) return { code: null, message: truncate(textOf(error)) };
  try {
    const { code, message } = error as { code?: unknown; message?: unknown };
    const text = typeof message === "string" ? message : textOf(error);
    const numeric = typeof code === "number" || typeof code === "string" ? code : null;
    // Only the v1 SDK's McpError puts "MCP error <code>: " in front of the server's text; the v2
    // SDK's ProtocolError keeps the text as sent. Strip that one prefix, and only from a v1 McpError,
    // so the record keeps the server's own words on both lines (a server may send the prefix itself).
    const prefix = `MCP error ${String(numeric)}: `;
    const own = isV1McpError(error) && text.startsWith(prefix) ? text.slice(prefix.length) : text;
    return { code: numeric, message: truncate(own) };
  } catch {
    // An error whose parts cannot be read (a getter that throws, a revoked Proxy), read where the
    // call settles: a throw here would lose the call.
    return { code: null, message: truncate(textOf(error)) };
  }
}

/** True for the v1 SDK's `McpError` or a subclass (they all carry `name` "McpError" or extend it). */
function isV1McpError(error: object): boolean {
  if ((error as { name?: unknown }).name === "McpError") return true;
  for (let proto = Object.getPrototypeOf(error) as object | null; proto !== null; proto = Object.getPrototypeOf(proto) as object | null) {
    if ((proto as { constructor?: { name?: unknown } }).constructor?.name === "McpError") return true;
  }
  return false;
}

/** The `promise` of a call made with `promise: false`: it never settles, and holds nothing. */
const NEVER: Promise<never> = new Promise<never>(noop);

/** The resolving functions of the promise being made (`takeResolvers` is its executor, which runs synchronously). */
let takenResolve: (value: unknown) => void = noop;
let takenReject: (error: unknown) => void = noop;
function takeResolvers(resolve: (value: never) => void, reject: (error: unknown) => void): void {
  takenResolve = resolve as (value: unknown) => void;
  takenReject = reject;
}

function isSignal(signal: AbortSignal | readonly AbortSignal[]): signal is AbortSignal {
  return !Array.isArray(signal);
}

/** The reason of the signal that aborted (the first in the list, when several did), or `NOT_ABORTED`. */
function abortReason(signal: AbortSignal | readonly AbortSignal[]): unknown {
  try {
    if (isSignal(signal)) return signal.aborted ? signal.reason : NOT_ABORTED;
    for (const each of signal) if (each.aborted) return each.reason;
  } catch {
    // A signal whose `aborted` or `reason` cannot be read (a getter that throws, a test double):
    // read in its `abort` listener or a timer, a throw would be uncaught and the call never
    // settle (an outside tester's). Its abort is taken as an abort with no reason.
    return undefined;
  }
  return NOT_ABORTED;
}

/** What `abortReason` returns when no signal has aborted (a reason may be any value, `undefined` too). */
const NOT_ABORTED: unique symbol = Symbol("not aborted");

/** A settled call's options: nothing of the caller's. */
const RELEASED_OPTIONS: ResolvedCallOptions = {
  timeoutMs: 0,
  maxTotalTimeoutMs: 0,
  resetTimeoutOnProgress: false,
  signal: undefined,
  reason: undefined,
  forwardAbortReason: false,
  onprogress: undefined,
  verify: undefined,
  verifyTimeoutMs: 0,
  verifyDelayMs: 0,
  verifyWindowMs: 0,
  verifyIntervalMs: 1,
  clientWaitTimeoutMs: 0,
};

const RELEASED_HOOKS: CallHooks = { cancel: () => "none", settled: noop };

/**
 * Wall-clock times are kept as `Date.now()` less this (the module's load time): a small integer
 * fits a V8 small integer, where `Date.now()` itself needs a heap number per pending call.
 */
const WALL_EPOCH = Date.now();

/** The call whose timer-fired cancel is on its way to the wire right now (see `byTimer`), else null. */
let timerCancelling: CancellableCall<unknown> | null = null;

/** Progress a call received while live (rules 21, 22). */
interface ProgressSeen {
  count: number;
  last: Progress | null;
  /** The highest value seen. */
  max: number;
}

/** Facts few calls have. */
interface RareFacts {
  /** Late messages between the response and the settle: `null` for none. */
  late: RunRecord["late"] | null;
  /** Streamable HTTP: the error status the server answered the request's POST with, if it did. */
  httpStatus: number | undefined;
  /** Server requests awaiting the client's own answer that pause the call's idle timeout (0: none). */
  clientWaits: number;
  /** The task a task-augmented call follows, or its status as last seen (see `setTask`). */
  task: TaskInfo | undefined;
  /** A delivery report that came during the cancel, before the settle existed (see `delivery`). */
  early: CancelDelivery | undefined;
  /** Its send was refused because its message cannot be serialised (see `unsendable`). */
  unsendable?: true;
  /** What the cancel hook knew had become of the work as it cancelled (see `outcomeKnown`). */
  known?: CancelledOutcome;
}
