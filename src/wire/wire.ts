import { ABORTED_REASON } from "../core/cancellable-call.js";
import type { CancellableCall, RequestId } from "../core/cancellable-call.js";
import type { LateSink } from "../core/settled-record.js";
import { BoundedIdMap } from "../utils/bounded-id-map.js";
import { createdTask, malformedCreatedTask } from "../core/record.js";
import { TaskRequestError } from "../errors/TaskRequestError.js";
import { endedWithoutResponse } from "../errors/ConnectionClosedError.js";
import type { CancelMechanism, TaskInfo } from "../types/record.js";
import type { CancellationAdapter, CancelRequest, TransportLike } from "./types.js";
import type { Anomaly } from "../types/options.js";
import {
  CALL_MARKER,
  asSdkMatches,
  cancelledParamsSchema,
  findAnswered,
  isPlainResponse,
  isRequestId,
  REFUSED_BY_SDK,
  progressParamsSchema,
  responseSchema,
  type Message,
} from "./messages.js";
import { PROTOCOL_VERSION_META, augmentCreate, declaresTasks, followUpMeta, isTaskAugmented, notSent } from "./tasks.js";
import type { InputDispatcher, TaskFollower, TaskRequest } from "./tasks.js";
import { TaskTracker } from "./task-tracker.js";
import { ListenTracker } from "./listens.js";
import { ADAPTER_LAYERS, AFTER_ITS_CLOSE, Layer, STARTS_SERVER } from "./port.js";
import type { LayerFactory, LayeredAdapter, MessageExtra, Port, SendOptions, StreamEnd, WireFact } from "./port.js";
import { pipe } from "./pipe.js";
import { callHook, noop, textOf } from "../utils/hooks.js";
import { corkDuringSlice, keepFromCork, writeTogetherAtExit } from "../utils/slices.js";
import { stdioChildStdin } from "../sdk/private.js";

/**
 * The most a server's start may hold a request's idle timeout (see `Wire`'s `#holdForStart`), in
 * ms: a slow start (an interpreter loading its packages, a first `npx -y` downloading the server)
 * fits; a first request that hangs on a server that started at once and says nothing is cancelled
 * this much later than its idle timeout alone would have (a call's own maximum total timeout,
 * when sooner, ends it first).
 */
export const START_HOLD_MS = 60_000;
/**
 * An outbound request awaiting its response: the facade's call, or `null` for a request the SDK
 * made on its own; and what the layers below observed of it on its way (its wire facts).
 */
interface Entry {
  call: CancellableCall | null;
  token: string | number | undefined;
  /** Monotonic time its bytes were handed to the connection (`written`), if observed. */
  writtenAt?: number;
  /** This connection cannot observe `written` (a fetch that cannot tell). */
  blind?: true;
  /** Streamable HTTP: the status of its response head, once it arrived (the server received it). */
  status?: number;
  /** A task-augmented call's driver, told when the `CreateTaskResult` arrives. */
  follower?: TaskFollower | undefined;
  /** The `_meta` the request carried (task-augmented requests only). */
  meta?: Record<string, unknown>;
  /** The request is task-augmented (followed by a driver, or the SDK's own: `params.task`, or the 2026-07-28 extension declared). */
  augmented?: boolean;
  /** A call's `subscriptions/listen` (the proxy relays a client's): the server may end it (rule 12). */
  listen?: true;
  /** The progress token its caller (or the SDK) gave, when the wire carries `token` in its place (see `#ownToken`). */
  given?: string | number;
}

/** A 2026-07-28 `input_required` result: the request is to be sent again with the client's input (multi round-trip). */
function isInputRequired(result: unknown): boolean {
  return typeof result === "object" && result !== null && (result as { resultType?: unknown }).resultType === "input_required";
}

/** How a wire is set up by its entry point. */
export interface WireOptions {
  /** Settled request ids remembered to drop late messages (`maxTombstones`, at least 1). */
  readonly maxTombstones: number;
  readonly onAnomaly?: ((anomaly: Anomaly) => void) | undefined;
  /**
   * True for the v1 SDK, whose `request()` clears only its timer when `transport.send` rejects
   * and keeps the response handler forever; the wire then ends it. Default false.
   */
  readonly releaseFailedSends?: boolean;
  /** True when the transport is already started and connected (attaching to a connected client). Default false. */
  readonly connected?: boolean;
  /**
   * The server under the transport has spoken already (its `initialize` was answered before the
   * wire was there): no call's idle timeout is held for its start (see `Wire`'s `#holdForStart`).
   * Default: `connected`. False for a client attached on 2026-07-28, which sends no `initialize`
   * (the v2 client's `server/discover` went to a probe process of its own).
   */
  readonly serverSpoke?: boolean | undefined;
  /**
   * The client-wide `forwardAbortReason`: when false (the default) the SDK's own cancels go out
   * with a text naming the trigger, never `String(signal.reason)`.
   */
  readonly forwardSdkReason?: boolean;
  /**
   * Ends the entry point's own wait for a request the call already settled (for an SDK client:
   * `sdkWaitDropper`, its private maps). Returns false when it could not; the wire then hands
   * the layer above a local error response (never on the wire). An entry point that answers
   * its caller from the call's outcome itself (the AI SDK transport) returns true.
   */
  readonly releaseWait?: ((id: RequestId) => boolean) | undefined;
  /**
   * Drops the entry point's own timer for a request of a call, as the request goes out (for an
   * SDK client: `sdkTimerDropper`, its `_cleanupTimeout`), when the call has a limit of its own
   * (`CancellableCall.limited`). The call's deadlines are then the request's limits; the SDK's
   * timer, set to the longest delay so that it never decides, would only hold memory while the
   * request is pending (a `Timeout`, its handler and the SDK's entry for it: about 340 bytes a
   * pending call). A call without limits (both `Infinity`) keeps it as the last word.
   */
  readonly dropTimer?: ((id: RequestId) => void) | undefined;
  /**
   * The entry point's SDK client sets up no timer of its own for the requests of calls with a
   * limit of their own when they are made with the runner's marked options (for an SDK client:
   * `sdkTimerSkipper`, its `_setupTimeout`); see `Wire.skipsSdkTimer`. Default: false.
   */
  readonly skipsSdkTimer?: boolean;
  /**
   * Makes the task driver of a task-augmented request the library does not follow itself (the
   * SDK's own: through `attachCancellation`'s or `sdkClient`'s calls, or made on the SDK
   * directly), for the call it belongs to (`null`: the SDK's own request). Used only when such
   * a request is cancelled before its `CreateTaskResult`: a late one names a task to cancel.
   * Without it, only the library's own task calls (`callTool(params, { task })`) get that.
   */
  readonly taskDriver?: ((call: CancellableCall | null) => TaskFollower) | undefined;
  /**
   * Whether the server takes task-augmented `tools/call` requests, by the capabilities it declared
   * (`undefined`: not known, taken as yes). A server that declared none cannot make a task of one,
   * so such a request cancelled before its answer is cancelled as any other request.
   */
  readonly serverTakesTasks?: (() => boolean | undefined) | undefined;
  /**
   * Hands an embedded input request of a task (2026-07-28 `inputRequests`) to the SDK client's
   * own handler (for a v2 client: `sdkInputDispatcher`). Without it, a task waiting for input is
   * polled like a working one.
   */
  readonly inputDispatcher?: InputDispatcher | undefined;
  /**
   * The transport's own `send`, when its `send` member is about to be replaced by the wire's
   * (attaching to a connected client). See `PipeOptions.send`.
   */
  readonly send?: ((message: Message, options?: SendOptions) => Promise<void>) | undefined;
  /** The transport's own `close`, when its `close` member is about to be replaced by the wire's. See `PipeOptions.close`. */
  readonly close?: (() => Promise<void>) | undefined;
  /**
   * A call answered with a `CreateTaskResult` (a task that is not terminal) while it follows no
   * task of its own keeps its progress token live until the task is terminal, passing the task's
   * progress up as it came (the 2025-11-25 Tasks specification keeps the token for the task's
   * life), as for the SDK's own task-augmented requests: for a message-level entry point whose
   * client above follows the task itself (the proxy, `cancellableTransport`): a predicate, true
   * for a token the client gave (not one the entry point added for its own use, which the client
   * never knew). Default none: the call's record counts such progress as late.
   */
  readonly keepTaskTokens?: ((token: string | number) => boolean) | undefined;
}

/** The code of the local error response that ends the SDK's wait for a settled call (never sent). */
const RELEASED_CODE = -32800;

/**
 * What a settled request's tombstone holds: where its late messages go (the call, or its
 * `SettledRecord`), its call number (`Wire.lateRecords` finds the record), or `null` for an
 * SDK-owned request seen cancelled.
 */
type Tombstone = LateSink | number | null;

/**
 * A connection: its message pipeline, from the SDK transport up to the view the SDK client is
 * connected through, with the correlation layer (this class) at its top. The one place a
 * connection is made; the order of its layers, bottom first:
 *
 * 1. `options.below`: layers that must see the traffic as it crossed the transport (the CLI's recorder);
 * 2. the adapter's layers: how a cancel goes out on this transport (stdio: the write queue, which
 *    also writes the `notifications/cancelled` lines; Streamable HTTP: the stream tracker and the
 *    2025-era notification delivery), or one layer over a user's own adapter;
 * 3. the tasks layer (`task-tracker.ts`): the library's own `tasks/*` requests, task statuses,
 *    late `CreateTaskResult`s;
 * 3. the listens layer (`listens.ts`): the SDK's own `subscriptions/listen` requests;
 * 4. correlation and late drops (this class).
 *
 * The correlation layer:
 * - correlates JSON-RPC request ids with calls as the SDK sends them (the runner marks its
 *   requests' params with a symbol, which never reaches the wire), and keeps what the layers
 *   below observed of each request (its wire facts: written, answered, its stream ended);
 * - drops every message for a settled or cancelled request (late result, late error, late
 *   progress) before the SDK sees it, and counts it on that call's record (rules 8, 9, 11);
 * - sends each cancel once, down the pipeline, and swallows the SDK's own duplicate; never lets a
 *   cancel for `initialize` out (rule 39) or one for a request not in progress (rule 7);
 * - settles a call whose stream ended without its response as `connection-closed` (never sent
 *   only when the facts prove it), and every pending call when the transport closes (rule 31).
 *
 * Tombstones (ids of settled calls) are bounded by `maxTombstones`, oldest forgotten first;
 * a late message for a forgotten id reaches the SDK as an unknown id. When a call is cancelled
 * the SDK is told locally that its request is over (an error response that never touches the
 * wire), so no per-call AbortController is needed to make it let go.
 */
export class Wire<T extends TransportLike = TransportLike> extends Layer {
  /** The SDK transport underneath the pipeline, for observers. */
  readonly underlying: T;
  #view: T;

  readonly #onAnomaly: ((anomaly: Anomaly) => void) | undefined;
  /** Calls registered by the runner whose request has not gone out yet, by call number. */
  readonly #unbound = new Map<number, CancellableCall>();
  /** Calls whose live progress also goes up (`progressUp`), made on first use. */
  #progressUp: WeakSet<CancellableCall> | undefined;
  readonly #pending = new Map<RequestId, Entry>();
  readonly #tokens = new Map<string | number, Entry>();
  /**
   * The tokens callers (or the SDK) gave to live requests whose wire carries one of its own in
   * their place (`Entry.given`), each to its entry: still theirs, so still in use (rule 20; see
   * `tokenInUse`). Kept with `#tokens` by `#liveToken` and `#unliveToken`.
   */
  readonly #givenTokens = new Map<string | number, Entry>();
  /** The wire's own progress tokens made so far (see `#ownToken`). */
  #ownTokens = 0;
  /**
   * Settled requests: where their late messages go (the call between its response and its
   * settle, then only its small SettledRecord), or `null` for an SDK-owned request we saw cancelled.
   */
  readonly #tombIds: BoundedIdMap<RequestId, Tombstone>;
  readonly #tombTokens: BoundedIdMap<string | number, Tombstone>;
  /**
   * Requests the server sent the client, until the client answers them (so a cancel naming one
   * is not an anomaly), each with the calls whose idle timeout it pauses meanwhile (`clientWait`:
   * the server is waiting for the client, not silent), or `null` for one that pauses none (ping).
   */
  readonly #inbound = new Map<RequestId, CancellableCall[] | null>();
  /**
   * The last `RECENT_SERVER_REQUESTS` server requests the client answered: a 2025-era server may
   * cancel one as the answer crosses its cancel (rule 12), and its ids are its own, not the
   * client's (a cancel naming 1 then is not about the client's request 1).
   */
  #answeredInbound: BoundedIdMap<RequestId, true> | undefined = undefined;
  /** False until the SDK starts the transport (client.connect), and again once it closed. */
  #open = false;
  /** `close()` came from the client: what is still pending at `closed()` is its close, not a lost connection. */
  #closedByClient = false;
  /** True once the transport was open (started through this pipeline, or attached connected). */
  #started = false;
  /** Ids of `initialize` and `server/discover` requests: never cancelled (rule 39; server/discover by the library's own choice, as initialize). */
  readonly #neverCancel = new Set<RequestId>();
  /** Attached to a connected client (`WireOptions.connected`): requests may have gone out before the wire. */
  readonly #attached: boolean;
  #protocolVersion: string | undefined;
  /** The layer below: task drivers, followed tasks, the SDK's own task tokens, the library's own task requests. */
  readonly #tasks: TaskTracker;
  /** The layer below that: the SDK's own `subscriptions/listen` requests still open (rules 12, 32-34). */
  readonly #listens: ListenTracker;

  /** v1 SDK only: its `request()` keeps the response handler of a request whose send failed. */
  readonly #releaseFailedSends: boolean;
  /** The SDK's own cancels keep the SDK's reason text (`forwardAbortReason: true`). */
  readonly #forwardSdkReason: boolean;
  readonly #dropSdkWait: ((id: RequestId) => boolean) | undefined;
  readonly #dropSdkTimer: ((id: RequestId) => void) | undefined;
  readonly #taskDriver: ((call: CancellableCall | null) => TaskFollower) | undefined;
  readonly #serverTakesTasks: (() => boolean | undefined) | undefined;
  readonly #keepTaskTokens: ((token: string | number) => boolean) | undefined;
  /** The SDK client's own handlers of a task's embedded input requests (2026-07-28), if reachable. */
  readonly inputRequest: InputDispatcher | undefined;

  /**
   * Makes a connection: its pipeline over `adapter.transport` (see the class comment for the
   * order of its layers), with a correlation layer at its top. The one place a wire is made.
   */
  static open<T extends TransportLike>(adapter: CancellationAdapter<T>, options: WireOptions): Wire<T> {
    let tasks: TaskTracker | undefined;
    let listens: ListenTracker | undefined;
    let wire: Wire<T> | undefined;
    const own = adapterLayers(adapter);
    const { view } = pipe(
      adapter.transport,
      [
        ...own,
        (below) => (tasks = new TaskTracker(below, options.maxTombstones)),
        (below) => (listens = new ListenTracker(below)),
        (below) => (wire = new Wire(below, tasks!, listens!, adapter.transport, options)),
      ],
      { send: options.send, close: options.close, plain: own.length === 0, started: options.connected === true },
    );
    wire!.#view = view;
    wire!.#era = adapter as { readonly era?: unknown };
    wire!.#holdForStart =
      (options.serverSpoke ?? options.connected) !== true && (adapter as { readonly [STARTS_SERVER]?: unknown })[STARTS_SERVER] === true;
    return wire!;
  }

  /**
   * Until its server's first message, a connection whose transport starts the server (stdio)
   * holds each request's idle timeout: the server is starting, not silent (a 2026-07-28 client
   * sends no `initialize`, which otherwise takes the start and has no idle timeout, rule 39; the
   * v2 client asks `server/discover` of a probe process of its own, and the real server starts
   * with the first call: a server that took 1.5 s to start failed the first call of a 1 s idle
   * timeout, an outside tester's, through the proxy). At most `START_HOLD_MS`
   * more; the maximum total timeout holds throughout. From that message on, each held request's
   * idle timeout runs. A server silent `START_HOLD_MS` after the first request was held is not
   * starting: later requests are not held (and the list of held calls stays bounded).
   */
  #holdForStart = false;
  /** The calls whose idle timeout is held for the server's start (see `#holdForStart`). */
  #heldForStart: CancellableCall[] = [];
  /** When the first call was held (`performance.now()`, ms). */
  #holdSince = 0;

  /** Holds a call's idle timeout for its server's start (see `#holdForStart`). */
  #holdIdle(call: CancellableCall): void {
    const now = performance.now();
    if (this.#heldForStart.length === 0) this.#holdSince = now;
    else if (now - this.#holdSince > START_HOLD_MS) {
      // Silent that long since the first held request: not starting. Those held keep their bound.
      this.#holdForStart = false;
      this.#heldForStart = [];
      return;
    }
    call.idleAfter(START_HOLD_MS);
    this.#heldForStart.push(call);
  }

  /** The server's first message: it has started; a held request's idle timeout runs from now. */
  #serverStarted(): void {
    this.#holdForStart = false;
    const held = this.#heldForStart;
    this.#heldForStart = [];
    for (const call of held) call.alive();
  }

  /** The adapter, for its era (`StreamableHttpAdapter.era`): on `"modern"` (2026-07-28) a cancel is the stream's close. */
  #era: { readonly era?: unknown } | undefined;

  private constructor(below: Port, tasks: TaskTracker, listens: ListenTracker, underlying: T, options: WireOptions) {
    super(below);
    this.#tasks = tasks;
    this.#listens = listens;
    this.underlying = underlying;
    this.#view = underlying;
    const maxTombstones = options.maxTombstones;
    this.#releaseFailedSends = options.releaseFailedSends ?? false;
    this.#open = options.connected ?? false;
    this.#attached = options.connected === true;
    this.#started = this.#open;
    // Attached to a connected client: its transport started already (see `start`).
    if (this.#open) writeTogetherAtExit(this.#stdinAtExit);
    this.#forwardSdkReason = options.forwardSdkReason ?? false;
    this.#dropSdkWait = options.releaseWait;
    this.#dropSdkTimer = options.dropTimer;
    this.skipsSdkTimer = options.skipsSdkTimer ?? false;
    this.#taskDriver = options.taskDriver;
    this.#serverTakesTasks = options.serverTakesTasks;
    this.#keepTaskTokens = options.keepTaskTokens;
    this.inputRequest = options.inputDispatcher;
    this.#tombIds = new BoundedIdMap(maxTombstones);
    this.#tombTokens = new BoundedIdMap(maxTombstones);
    tasks.retireToken = (token) => {
      if (this.#tokens.get(token)?.call === null) this.#unliveToken(token);
    };
    this.#onAnomaly = options.onAnomaly;
  }

  /** The view to hand to `client.connect()`: the transport's own members, with the pipeline in its path. */
  get transport(): T {
    return this.#view;
  }

  /** Number of requests awaiting a response, calls not yet sent, and task-augmented calls following their task (0 when idle). */
  get pendingCount(): number {
    return this.#pending.size + this.#unbound.size + this.#tasks.callCount;
  }

  /** True while the transport is open: started through this decorator and not closed since. */
  get open(): boolean {
    return this.#open;
  }

  /** The client's own `close()` closed the connection (see `TaskWire.closedByClient`). */
  get closedByClient(): boolean {
    return this.#closedByClient;
  }

  /** True once the transport has been open (it may have closed since): tells "not connected yet" from "closed". */
  get started(): boolean {
    return this.#started;
  }

  /**
   * The protocol version the server answered `initialize` with, on any transport; `undefined`
   * before that answer (and on a sessionless 2026-07-28 connection, which has no `initialize`).
   * The v1 SDK client keeps it nowhere on stdio, so the otel observer reads it here.
   */
  /**
   * The SDK client behind this connection sets up no timer for a request made with the runner's
   * marked options (`WireOptions.skipsSdkTimer`): the runner marks the requests of calls with a
   * limit of their own.
   */
  readonly skipsSdkTimer: boolean;

  /**
   * The server answered the SDK's handshake request (`initialize`, `server/discover`), with a
   * result or an error: a connect that then failed was not given up waiting for it, whatever the
   * error's code (a server's own -32001 is no timeout of ours).
   */
  handshakeAnswered = false;

  get protocolVersion(): string | undefined {
    return this.#protocolVersion;
  }

  /** The server answered `initialize` with a version before 2026-07-28 (unknown: not known to be). */
  #legacyEra(): boolean {
    const version = this.#protocolVersion;
    return version !== undefined && version < "2026-07-28";
  }

  /**
   * Whether the server takes task-augmented `tools/call` requests, from the capabilities its
   * handshake answer declared (2025-11-25 `tasks.requests.tools.call`, the 2026-07-28 tasks
   * extension); `undefined` until a handshake answer is seen. Read where no entry point's client
   * says (`WireOptions.serverTakesTasks`): the proxy's.
   */
  #serverTasks: boolean | undefined = undefined;

  #noteTasks(result: unknown): void {
    const capabilities = (result as { capabilities?: unknown } | null | undefined)?.capabilities;
    if (typeof capabilities !== "object" || capabilities === null) return;
    this.#serverTasks = declaresTasks(capabilities);
  }

  #noteVersion(result: unknown): void {
    const version = (result as { protocolVersion?: unknown } | null | undefined)?.protocolVersion;
    if (typeof version === "string") this.#protocolVersion = version;
  }

  /**
   * Where a late message for a settled call whose tombstone holds its call number goes: the call's
   * record while the ledger of the runner that runs the wire's calls holds it, else nowhere (the
   * message is dropped all the same; nothing could read a revision). Set by that runner; while
   * unset, tombstones hold records.
   */
  lateRecords: ((callId: number) => LateSink | undefined) | undefined = undefined;

  /** A tombstone's sink: itself, or the record its call number finds (`lateRecords`). */
  #sinkOf(tombstone: Tombstone): LateSink | null | undefined {
    return typeof tombstone === "number" ? this.lateRecords?.(tombstone) : tombstone;
  }

  /** Number of remembered settled ids (at most `maxTombstones`). */
  get tombstoneCount(): number {
    return this.#tombIds.size;
  }

  /**
   * The facade registers a call before handing its request to the SDK; a task-augmented call
   * also gives its task driver (see `src/client/tasks.ts`).
   */
  register(call: CancellableCall, key: number, follower?: TaskFollower): void {
    this.#unbound.set(key, call);
    if (follower !== undefined) this.#tasks.register(key, follower);
  }

  /**
   * The call's request carries its caller's own progress token: its live progress also goes up to
   * the SDK, as it would without the library (a handler of the caller's own reads it), after the
   * call took it. Late progress is dropped as ever.
   */
  progressUp(call: CancellableCall): void {
    (this.#progressUp ??= new WeakSet()).add(call);
  }

  /** Open `subscriptions/listen` requests the wire still tracks (0 once every listen ended). */
  get listenCount(): number {
    return this.#listens.size;
  }

  /** True when this connection sent a `tasks/cancel` for this task id, for any call (see `TaskWire.cancelSent`). */
  cancelSent(taskId: string): boolean {
    return this.#tasks.cancelSent(taskId);
  }

  /** The library's own task requests in flight. */
  get taskRequestCount(): number {
    return this.#tasks.requestCount;
  }

  /**
   * Sends one of the library's own requests (`tasks/get`, `tasks/result`, `tasks/cancel`) on
   * the wrapped transport, never through the SDK. Rejects when the connection is not open.
   */
  taskRequest(...request: TaskRequest): Promise<Record<string, unknown>> {
    if (!this.#open) return Promise.reject(notSent(new Error(`${request[0]} not sent: the connection is closed`)));
    return this.#tasks.request(...request);
  }

  /**
   * Cancels a pending call on the wire through the adapter, once. Returns the mechanism used;
   * `none` when the request never went out or the transport is closed.
   */
  cancelCall(call: CancellableCall, reason: string): CancelMechanism {
    const id = call.requestId;
    if (id === null || !this.#open) return "none";
    const entry = this.#pending.get(id);
    if (entry?.call !== call) return "none";
    const awaitsTask = this.#cancelledBeforeTask(id, entry);
    // Off the pending map first (a fact a layer reports while it cancels is not this call's any
    // more); the tombstone after the cancel is out: the cancel's path from the abort to its write
    // is the latency the server sees (rule 6), and no message for the id can arrive in between.
    this.#pending.delete(id);
    // The handshake is never cancelled (rule 39; server/discover by the library's own choice, as initialize), a proxied client's server/discover too: the
    // call settles (its limit passed), and the server's answer, when it comes, is late.
    const handshake = call.method === "server/discover" || call.method === "initialize";
    const mechanism = handshake ? "none" : this.#putCancel(id, reason, call, awaitsTask);
    this.#forget(id, entry);
    this.#releaseSdk(id);
    return mechanism;
  }

  /**
   * Ends the SDK's own wait for a request the call already settled: a local error response,
   * handed to the SDK only (never on the wire), so it drops its handler, progress handler and
   * timer for the id as for any answered request. The facade ignores the SDK's rejection.
   */
  #releaseSdk(id: RequestId): void {
    if (this.#dropSdkWait?.(id) === true) return;
    // The SDK turns this into an McpError that nobody sees: no stack to capture for it (about
    // 15-20 us per cancel on Node 20).
    const { stackTraceLimit } = Error;
    Error.stackTraceLimit = 0;
    try {
      this.up.message({
        jsonrpc: "2.0",
        id,
        error: { code: RELEASED_CODE, message: "Request settled by mcp-cancellable (local, not from the server)" },
      });
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
  }

  /**
   * A call settled: forget it, and remember its id (and progress token) so late messages for it
   * are dropped, pointing them at its SettledRecord rather than at the call itself.
   */
  settled(call: CancellableCall, key: number): void {
    this.#unbound.delete(key);
    this.#tasks.settled(call, key);
    const id = call.requestId;
    if (id === null) return;
    if (call.method === "subscriptions/listen") this.#listens.ended(id);
    const entry = this.#pending.get(id);
    if (entry?.call === call) {
      this.#forget(id, entry);
      // Failed with no response seen and no cancel: the SDK rejected the request itself, which
      // (its send failed) v1 does while keeping the id's response handler forever. End it now:
      // the SDK's rejection has reached the call, so its catch has run. (A cancelled call was
      // released at its cancel; v2 removes the handler itself.)
      if (this.#releaseFailedSends && call.settledRecord?.status === "failed") this.#releaseSdk(id);
    }
    const record = call.settledRecord;
    // Its tombstone (made when it was answered or cancelled) now points at its small record, not
    // the call; at its number alone when only the ledger reads its revisions (an answered call with
    // no `onRecord`: 10,000 tombstones held as many records, about 270 B each, into the old
    // generation; with the tombstones cut to 64 by hand, 1,000 calls in flight on v1 read about 3
    // points lower, within the row's run-to-run spread: bench/NOTES.md).
    const sink: LateSink | number =
      record === null ? call : this.lateRecords !== undefined && record.readByLedgerOnly && call.task === undefined ? call.callId : record;
    if (!this.#tombIds.replace(id, call, sink) && !this.#tombIds.has(id)) this.#tombstone(id, sink, undefined);
    const token = call.progressToken;
    if (token === undefined) return;
    // A task-augmented call kept its token live past its CreateTaskResult (the 2025-11-25 Tasks specification).
    if (this.#tokens.get(token)?.call === call) this.#unliveToken(token);
    if (this.#tombTokens.get(token) === call || (call.task !== undefined && !this.#tombTokens.has(token))) {
      this.#tombTokens.set(token, sink);
    }
  }

  #putCancel(id: RequestId, reason: string, call: CancellableCall | null, awaitsTask: number | undefined): CancelMechanism {
    const request: { -readonly [K in keyof CancelRequest]: CancelRequest[K] } = {
      requestId: id,
      reason,
      notification: { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason } },
      send: this.#belowSend,
      reportError: this.#reportError,
      delivery: call === null ? noop : (report) => call.delivery(report),
    };
    // Set, not spread: this is on the path from the abort to the cancel's write.
    if (awaitsTask !== undefined) request.awaitsTask = awaitsTask;
    if (call?.byTimer === true) request.byTimer = true;
    // A mass settle's cancel lines to a stdio server go in one write a slice (see `corkDuringSlice`).
    corkDuringSlice(this.#stdinAtExit);
    return this.below.cancel(request);
  }

  /**
   * A task-augmented request is cancelled before its `CreateTaskResult` came: it is never
   * cancelled with `notifications/cancelled` (rules 2, 35, 36). Its driver stays reachable and
   * awaits the `CreateTaskResult` (at most its `watchMs`), whose task it then cancels with
   * `tasks/cancel`. Returns that bound, in ms, for the layers below (`awaitsTask`: they send
   * nothing, and an HTTP stream is kept open for the answer), or undefined for any other request.
   */
  #cancelledBeforeTask(id: RequestId, entry: Entry): number | undefined {
    if (entry.augmented !== true) return undefined;
    // A server that declared no task support for tools/call answers the request as a plain one
    // (no CreateTaskResult can come): it is cancelled the transport's way, at once (an outside
    // tester's: its stream was held, or its notification withheld, for watchMs while it ran on).
    if ((this.#serverTakesTasks?.() ?? this.#serverTasks) === false) return undefined;
    const driver = entry.follower ?? this.#taskDriver?.(entry.call);
    if (driver === undefined) return undefined;
    this.#tasks.cancelledBeforeTask(id, driver, entry.meta ?? {});
    driver.awaitCreated?.();
    return driver.watchMs;
  }

  /** Moves a pending request to the tombstones. */
  #forget(id: RequestId, entry: Entry): void {
    this.#pending.delete(id);
    this.#untoken(entry);
    this.#tombstone(id, entry.call, entry.token);
  }

  /**
   * Takes a request's progress token off the live ones, if it is still this request's: a token is
   * unique among active requests (rule 20), and one request's end must never take another's
   * progress away (an audit's: two calls given one token, the first one's timeout left the second
   * with no progress, timed out while its server still reported, and its progress then counted
   * late on the first one's record).
   */
  #untoken(entry: Entry): void {
    if (entry.token !== undefined && this.#tokens.get(entry.token) === entry) this.#unliveToken(entry.token);
  }

  /** A request's token goes live (and the one it was given, where the wire carries its own). */
  #liveToken(token: string | number, entry: Entry): void {
    this.#tokens.set(token, entry);
    if (entry.given !== undefined) this.#givenTokens.set(entry.given, entry);
  }

  /** A token is live no more (nor the one its request was given). */
  #unliveToken(token: string | number): void {
    const entry = this.#tokens.get(token);
    this.#tokens.delete(token);
    if (entry?.given !== undefined && this.#givenTokens.get(entry.given) === entry) this.#givenTokens.delete(entry.given);
  }

  /**
   * Whether a progress token is in use on this wire as it was given (a pending request's, or a
   * task's followed past its `CreateTaskResult`; for a request whose wire carries a token of the
   * wire's own, the token it was given): a caller's token must not be (rule 20). `CallRunner`
   * refuses such a call. A token of the wire's own that a caller happens to give is not in use
   * as given: it goes out as another of the wire's own (`send`).
   */
  tokenInUse(token: unknown): boolean {
    if (typeof token !== "string" && typeof token !== "number") return false;
    const entry = this.#tokens.get(token);
    return (entry !== undefined && entry.given === undefined) || this.#givenTokens.has(token);
  }

  /** Forgets a request the SDK made on its own (answered, its send failed, its stream lost, or a listen the server ended). */
  #dropSdkRequest(id: RequestId): void {
    const entry = this.#pending.get(id);
    if (entry === undefined || entry.call !== null) return;
    this.#pending.delete(id);
    this.#neverCancel.delete(id);
    this.#listens.ended(id);
    this.#untoken(entry);
  }

  /** A fact a layer below observed of a request (see `WireFact`): kept with the request, and acted on. */
  override fact(requestId: RequestId, fact: WireFact): void {
    const entry = this.#pending.get(requestId);
    if (entry === undefined) return;
    switch (fact.kind) {
      case "written":
        entry.writtenAt ??= fact.at;
        return;
      case "unobservable":
        entry.blind = true;
        return;
      case "unsendable":
        entry.call?.unsendable();
        return;
      case "answered":
        entry.status = fact.status;
        // The server received it and said no: the SDK rejects the request with its own error,
        // and the record says the status (never "never sent").
        if ((fact.status < 200 || fact.status > 299) && entry.call !== null) entry.call.answeredStatus(fact.status);
        return;
      case "ended":
        this.#ended(requestId, entry, fact.how, fact.cause);
    }
  }

  /**
   * The stream carrying this request ended (or its send failed) without its response, as a layer
   * below saw it (a server drop fires no `onclose` on HTTP). The call settles `connection-closed`
   * at once (the transport lives on, so the SDK would wait for this id forever): `never sent` only
   * when the facts prove it (the connection was refused, or the line was never handed to the
   * transport, and nothing was written), else `outcome unverified`. A request the server answered
   * with an HTTP error is the SDK's to fail (its send rejects): the record then has the status.
   */
  #ended(requestId: RequestId, entry: Entry, how: StreamEnd, cause: unknown): void {
    const call = entry.call;
    if (call === null) {
      // The SDK's own request (a listen, most often): its stream is gone, so is its entry.
      this.#dropSdkRequest(requestId);
      return;
    }
    if (entry.status !== undefined && (entry.status < 200 || entry.status > 299)) return;
    const neverSent = (how === "refused" || how === "dropped") && entry.writtenAt === undefined;
    // Its stream ended (the server ended it): the error says that, not a lost connection (an
    // outside tester's: a JSON answer for another id read as "its connection was lost").
    if (how === "eof" && typeof cause === "object" && cause !== null) endedWithoutResponse.add(cause);
    call.cancel("connection-closed", cause, neverSent);
    this.#releaseSdk(requestId);
  }

  /**
   * The request's own send was refused by the transport (an entry point that sends messages
   * itself saw its `send` reject). What happened is told by the request's facts: the server
   * answered with an HTTP status (`"answered"`: the request reached it; the caller fails the call
   * with the error, which the record shows with the status), or the call settled here
   * `connection-closed` (never sent only where the facts prove it: a refused connection, or a
   * send refused before anything was written by a transport that observes writes).
   */
  sendFailed(requestId: RequestId, cause: unknown): "answered" | "settled" {
    const entry = this.#pending.get(requestId);
    if (entry === undefined || entry.call === null) return "settled";
    if (entry.status !== undefined) return "answered";
    const neverSent = entry.writtenAt === undefined && entry.blind !== true;
    entry.call.cancel("connection-closed", cause, neverSent);
    this.#releaseSdk(requestId);
    return "settled";
  }

  #tombstone(id: RequestId, call: Tombstone, token: string | number | undefined): void {
    this.#tombIds.set(id, call);
    if (token !== undefined) this.#tombTokens.set(token, call);
  }

  readonly #belowSend = (message: Message): Promise<void> => this.below.send(message);
  /** A caller's `onprogress` threw, or its promise rejected: the SDK client's `onerror` hears it; the call goes on. */
  readonly #progressFailed = (error: unknown): void => this.up.error(new Error(`onprogress threw: ${textOf(error)}`, { cause: error }));

  readonly #reportError = (error: unknown): void => {
    const wrapped = error instanceof Error ? error : new Error(textOf(error));
    this.up.error(new Error(`Failed to send cancellation: ${wrapped.message}`, { cause: error }));
  };

  /**
   * The client closes the connection: each of its calls still pending is cancelled first, by the
   * transport's mechanism (rules 6, 31, 40: a closed 2025-era stream is not a cancel, and its
   * session may run the tool to its end), then the layers below flush those cancels and close.
   * Each call settles `connection-closed`, its record naming the mechanism. Not cancelled here:
   * the SDK's own requests, a task-augmented request (its task outlives the connection) and a
   * listen (the close ends it).
   */
  override close(): Promise<void> {
    if (this.#open) {
      const calls: CancellableCall[] = [];
      for (const entry of this.#pending.values()) {
        if (entry.call !== null && entry.augmented !== true && entry.listen !== true) calls.push(entry.call);
      }
      for (const call of calls) call.closing();
      // Closing from here on: a call made while the cancels flush is never sent (it would reach a
      // session nobody cancels it in, rule 40); it settles `connection-closed`, never sent.
      this.#open = false;
      this.#closedByClient = true;
    }
    return this.below.close();
  }

  override start(): Promise<void> {
    this.#open = true;
    this.#closedByClient = false;
    this.#started = true;
    // A stdio server's stdin: what the process's exit writes to it goes in one write (slices.ts, `corkAll`).
    writeTogetherAtExit(this.#stdinAtExit);
    return this.below.start().catch((error: unknown) => {
      // It never started (a stdio server's command not found: the SDK rejects its start and
      // reports no close): the process's exit keeps nothing of this wire (an audit's: each failed
      // start held its wire for the process's life).
      keepFromCork(this.#stdinAtExit);
      throw error;
    });
  }

  /** The server's stdin of an SDK stdio transport, else `undefined` (see `start`). */
  readonly #stdinAtExit = (): unknown => stdioChildStdin(this.underlying as object);

  override send(original: Message, options?: SendOptions): Promise<void> {
    let message = original;
    const method = message.method;
    const id = message.id;
    if (method === undefined || id === undefined || id === null) {
      if (method === "notifications/cancelled") return this.#sdkCancel(message);
      if (method === undefined && id !== undefined && id !== null) this.#answered(id); // our answer to a server request
      return this.below.send(message, options);
    }
    // A request. The facade's carry a call number under a symbol (never on the wire).
    const key = message.params?.[CALL_MARKER];
    let call: CancellableCall | null = null;
    let follower: TaskFollower | undefined;
    if (key !== undefined) {
      call = this.#unbound.get(key) ?? null;
      this.#unbound.delete(key);
      follower = this.#tasks.take(key);
      if (call !== null && !call.settled && !this.#open) call.cancel("connection-closed", undefined, true); // the client is closing
      if (call === null || call.settled) {
        // Settled before the SDK got to send it: it must never go out, and the SDK must not wait.
        queueMicrotask(() => this.#releaseSdk(id));
        return Promise.resolve();
      }
    }
    let token = message.params?._meta?.progressToken as string | number | undefined;
    let given: string | number | undefined;
    if (token !== undefined && (this.#tokens.has(token) || this.#tombTokens.has(token))) {
      // The token is live on another request (a caller's number the SDK now picks as its own: it
      // uses the request id), or a settled request's whose server may still report under it (a
      // cancelled call's, rule 10): a token of the wire's own goes out instead (rule 20), and
      // the call's progress goes up under the one it was given (an audit's: one call's progress
      // reached the other, whose idle timeout then fired while its server still reported). The
      // SDK's own requests too (made on the client directly, whose token is their id: an
      // audit's: one took a call's token over, and with it the call's progress).
      given = token;
      token = this.#ownToken();
      message = withProgressToken(message, token);
    }
    if (call !== null) {
      // Bound before: the next round of a multi round-trip request, the client's input given.
      const round = call.requestId !== null;
      call.bind(id, token);
      if (round) call.nextRound();
      else if (this.#holdForStart) this.#holdIdle(call);
      // The SDK's own timer is dropped where the call's deadlines are the request's limits.
      if (this.#dropSdkTimer !== undefined && call.limited) this.#dropSdkTimer(id);
    }
    const entry: Entry = { call, token };
    if (given !== undefined) entry.given = given;
    if (call !== null && method === "subscriptions/listen") entry.listen = true;
    if (follower !== undefined) {
      message = augmentCreate(message, follower.ttlMs);
      entry.follower = follower;
      entry.meta = followUpMeta(message);
      entry.augmented = true;
    } else if (isTaskAugmented(message)) {
      entry.meta = followUpMeta(message);
      entry.augmented = true;
    }
    this.#pending.set(id, entry);
    if (this.#attached && this.#firstSeenId === undefined && typeof id === "number") this.#firstSeenId = id;
    if (token !== undefined) this.#liveToken(token, entry);
    if (call === null && (method === "initialize" || method === "server/discover")) this.#neverCancel.add(id);
    const sending = this.below.send(message, options);
    // The SDK's own request got no response: forget it. (A call's failed send is handled when
    // the call settles: see settled().)
    if (call === null) sending.catch(() => this.#dropSdkRequest(id));
    return sending;
  }

  /**
   * The first request id the wire saw go out, on a wire attached to a connected client (see
   * `#sentBeforeWire`); `undefined` before it, or on a wire that saw the connection open.
   */
  #firstSeenId: number | undefined;

  /**
   * A request the SDK sent before this wire existed (attached to a connected client): its ids are
   * numbers counted up, so one below the first the wire saw, or any before it saw one.
   */
  #sentBeforeWire(id: RequestId): boolean {
    return this.#attached && typeof id === "number" && (this.#firstSeenId === undefined || id < this.#firstSeenId);
  }

  /** The SDK cancelling a request on its own: let it out once, through the adapter, if it may go at all. */
  #sdkCancel(message: Message): Promise<void> {
    const parsed = cancelledParamsSchema.safeParse(message.params);
    if (!parsed.success) return Promise.resolve();
    const { requestId, reason } = parsed.data;
    // Rules 19, 39: initialize and the discover probe are never cancelled. Rule 7: only
    // requests still in progress.
    if (this.#neverCancel.has(requestId)) return Promise.resolve();
    const entry = this.#pending.get(requestId);
    if (entry === undefined && this.#sentBeforeWire(requestId)) {
      // Sent before the wire was there (attachCancellation on a connected client): the SDK's own
      // cancel of it goes out as the SDK made it, the reason as for any of its cancels (an
      // outside tester's: it was dropped as one of ours, and the server worked on).
      const params = { ...message.params, reason: this.#forwardSdkReason ? (reason ?? ABORTED_REASON) : sdkReason(reason) };
      return this.below.send({ ...message, params });
    }
    if (entry === undefined || entry.call !== null) return Promise.resolve(); // ours already went out
    const awaitsTask = this.#cancelledBeforeTask(requestId, entry);
    this.#forget(requestId, entry);
    this.#putCancel(requestId, this.#forwardSdkReason ? (reason ?? ABORTED_REASON) : sdkReason(reason), null, awaitsTask);
    return Promise.resolve();
  }

  override message(message: Message, extra?: MessageExtra): void {
    if (this.#holdForStart) this.#serverStarted();
    if (typeof message === "object" && message !== null) {
      const method = message.method;
      if (method === undefined) {
        const verdict = "id" in message ? this.#onResponse(message, extra?.[AFTER_ITS_CLOSE] === true) : true;
        if (verdict === false) return;
        if (verdict !== true) {
          // Answered under its id written as a string ("2" for 2): the layers above (and a
          // proxy's client) get it under the request's own id, as the SDK takes it.
          this.up.message({ ...message, id: verdict }, extra);
          return;
        }
      } else if (method === "notifications/progress") {
        const up = this.#onProgress(message);
        if (up === false) return;
        if (up !== true) {
          this.up.message(up, extra);
          return;
        }
      } else if (method === "notifications/cancelled") {
        this.#onServerCancel(message);
      } else if (message.id !== undefined && message.id !== null) {
        this.#serverRequest(message.id, method);
      }
    }
    this.up.message(message, extra);
  }

  /**
   * Returns false when the response must not reach the SDK, true when it goes on as it is, or the
   * request id it goes on under (an id written as a string that matched a pending request).
   */
  #onResponse(message: Message, afterItsClose: boolean): boolean | RequestId {
    const given = message.id;
    if (!isRequestId(given)) return true; // id null or malformed: the SDK reports it
    if (message[REFUSED_BY_SDK] !== undefined) return this.#onRefused(given, message);
    let id = given;
    let entry = this.#pending.get(id);
    if (entry === undefined && typeof given === "string" && !this.#tombIds.has(given)) {
      // Matched as the SDK matches it (`Number(response.id)`): what it takes as a request's
      // response is that request's here too, live or late.
      id = asSdkMatches(given);
      entry = this.#pending.get(id);
    }
    const under = id === given ? true : id;
    if (entry !== undefined) {
      // The common well-formed shape is recognised without zod; anything else is judged by it.
      if (entry.call !== null && !isPlainResponse(message) && !responseSchema.safeParse(message).success) {
        // The SDK refuses this shape and will not settle its request: the call keeps its
        // timers and signal, and ends by them (the SDK reports the message to onerror).
        this.#anomaly({ kind: "invalid-message", message: `malformed response for request ${JSON.stringify(id)}`, requestId: id });
        return true;
      }
      if (entry.call === null) {
        if (this.#tasks.keepToken(entry.token, message.result)) entry.token = undefined; // #dropSdkRequest must leave it in #tokens
        if (this.#neverCancel.has(id)) {
          this.handshakeAnswered = true;
          this.#noteVersion(message.result);
          this.#noteTasks(message.result);
        }
        this.#dropSdkRequest(id);
      } else if (entry.follower !== undefined && this.#taskCreated(id, entry, message.result)) {
        return false;
      } else if (isInputRequired(message.result)) {
        // 2026-07-28 multi round-trip: the server needs the client's input first. The round is
        // over (its id answered), the call is not: the SDK asks its handlers (a person filling a
        // form: a wait on the client, not the server's silence) and sends the request again with
        // the answers, under a new id, carrying the call's marker; that send binds the call anew.
        // Settled meanwhile (its limit, an abort), the new round is never sent (an outside
        // tester's: the new round was dropped, and the call hung with no timer).
        const call = entry.call;
        this.#pending.delete(id);
        this.#untoken(entry);
        this.#tombIds.set(id, null);
        this.#unbound.set(call.callId, call);
        call.clientWait();
      } else {
        const call = entry.call;
        // Off the wire first: a call whose abort came before this response (and waits for its
        // turn in a mass settle) is cancelled by responded() with nothing sent, and the response
        // is late (rule 8). The SDK still gets it and ends its own wait; the call ignores that.
        this.#forget(id, entry);
        // Its task's progress goes on under its token, up to the client that follows the task.
        const keep = this.#keepTaskTokens;
        if (
          keep !== undefined &&
          entry.token !== undefined &&
          !call.settled &&
          keep(entry.token) &&
          this.#tasks.keepToken(entry.token, message.result)
        ) {
          this.#liveToken(
            entry.token,
            entry.given === undefined ? { call: null, token: entry.token } : { call: null, token: entry.token, given: entry.given },
          );
        }
        // A handshake made as a call (the proxy's client's): what the server declared of tasks.
        if (call.method === "initialize" || call.method === "server/discover") this.#noteTasks(message.result);
        // Cancelled at this read (its limit or abort came first), the response counted late on the
        // record it settles with.
        call.responded("error" in message ? "error" : "result", this.#era?.era === "modern");
      }
      return under;
    }
    // A tombstone's value is its sink, or null (the SDK's own request): undefined only when absent.
    const sink = this.#tombIds.get(id);
    if (sink !== undefined) {
      const target = this.#sinkOf(sink);
      target?.late("error" in message ? "error" : "result", ranBy(message), afterItsClose);
      // A second response to a request the server answered already: dropped, and said (an
      // outside tester's: the probe showed nothing of one, its record's late count aside).
      if (target?.answered === true) {
        this.#anomaly({
          kind: "invalid-message",
          message: `a second response for request ${JSON.stringify(id)}, which the server had answered already: dropped`,
          requestId: id,
        });
      }
      return false;
    }
    return true;
  }

  /**
   * A response the SDK's stdio transport refused by its schema (cases.md C02: an error with no
   * `message`; src/adapters/stdio/refused-answers.ts). A settled call's is its late answer: counted
   * on its record (rule 8; never taken as proof that the work ran) and dropped. Any other goes to
   * `onerror` with the SDK's own error, and no further, as without the library: a pending call
   * keeps waiting for an answer the SDK can take.
   */
  #onRefused(given: RequestId, message: Message): false {
    const sink = this.#tombIds.get(given) ?? (typeof given === "string" ? this.#tombIds.get(asSdkMatches(given)) : undefined);
    if (sink !== undefined) {
      this.#sinkOf(sink)?.late("error" in message ? "error" : "result", false, false);
      return false;
    }
    const error = message[REFUSED_BY_SDK];
    this.up.error(error instanceof Error ? error : new Error(textOf(error)));
    return false;
  }

  /**
   * A task-augmented call's `CreateTaskResult`: the call lives on (its timers, its signal, its
   * progress token, as the 2025-11-25 Tasks specification keeps it), the driver polls the task, and the SDK's wait ends locally (the v2
   * SDK refuses `resultType: "task"` on 2026-07-28). False for any other answer.
   */
  #taskCreated(id: RequestId, entry: Entry, result: unknown): boolean {
    const created = createdTask(result);
    const { call, follower } = entry;
    if (call === null || follower === undefined) return false;
    if (created === null) {
      // Shaped as a CreateTaskResult, with no task id to follow or cancel: the call fails saying
      // so, never succeeds with it as the tool's result (an outside tester's: it did).
      const fault = malformedCreatedTask(result);
      if (fault === null) return false;
      this.#forget(id, entry);
      call.fail(
        new TaskRequestError(
          "tools/call",
          null,
          `${fault}: the task the server may have made can be neither followed nor cancelled (no tasks/get, no tasks/cancel was sent); whether it runs is unknown`,
          result,
        ),
      );
      this.#releaseSdk(id);
      return true;
    }
    // The mechanism follows the era the request went out in (its _meta names a protocol version
    // on 2026-07-28, rule 38), not the answer's shape: a 2025-shaped task on a 2026-07-28
    // connection is polled and cancelled the 2026-07-28 way (an outside tester's: it got 2025
    // requests, with no protocol version and no Mcp-Name).
    const modern = entry.meta?.[PROTOCOL_VERSION_META] !== undefined;
    const task: TaskInfo = { ...created, revision: modern ? "2026-07-28" : "2025-11-25" };
    // One task id for two calls (a server's fault): a tasks/cancel for either cancels both.
    const other = this.#tasks.followerOf(task.taskId);
    if (other !== undefined && other !== follower) {
      this.#anomaly({
        kind: "invalid-message",
        message: `the CreateTaskResult for request ${JSON.stringify(id)} names task ${JSON.stringify(task.taskId)}, which another call on this connection follows already: the server reused a task id, so a tasks/cancel for either call ends both`,
        requestId: id,
      });
    }
    this.#pending.delete(id);
    this.#tombstone(id, call, undefined);
    call.setTask(task);
    this.#tasks.live(call);
    this.#releaseSdk(id);
    this.#tasks.created(task, follower, result, entry.meta ?? {});
    return true;
  }

  /**
   * A task was cancelled while it waited for input: each of its server requests the SDK has not
   * answered (2025-11-25: delivered on its `tasks/result` stream) gets a local
   * `notifications/cancelled`, handed to the SDK only, so its handler's signal aborts (rule 39:
   * the client stops and does not respond).
   */
  abortInput(taskId: string, reason: string): void {
    for (const requestId of this.#tasks.takeInbound(taskId)) {
      this.#answered(requestId);
      this.up.message({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId, reason },
      });
    }
  }

  /** The follower of this task is done with it (the call settled, or its watch ended). */
  unfollow(taskId: string): void {
    this.#tasks.unfollow(taskId);
  }

  /** Tasks followed for status notifications (for tests). @internal */
  get followedCount(): number {
    return this.#tasks.followedCount;
  }

  /** A progress token of the wire's own, live nowhere and remembered nowhere (see `send`). */
  #ownToken(): string {
    let token: string;
    do token = `mcp-cancellable-progress-${++this.#ownTokens}`;
    while (this.#tokens.has(token) || this.#tombTokens.has(token));
    return token;
  }

  /** Returns false when the progress must not reach the SDK, true when it goes on as it is, or the message that goes on in its place. */
  #onProgress(message: Message): boolean | Message {
    const parsed = progressParamsSchema.safeParse(message.params);
    if (!parsed.success) {
      this.#anomaly({ kind: "invalid-message", message: "notifications/progress with malformed params, dropped" });
      return false;
    }
    const { progressToken: given, progress, total, message: text } = parsed.data;
    let token = given;
    let entry = this.#tokens.get(token);
    if (entry === undefined && typeof given === "string" && !this.#tombTokens.has(given)) {
      // As the SDK matches it (`Number(progressToken)`), like a response's id.
      token = asSdkMatches(given);
      entry = this.#tokens.get(token);
    }
    if (entry?.call === null) return withGivenToken(message, entry); // a request the SDK made on its own (or a task's, followed by its client): its business
    if (entry !== undefined) {
      // Delivered here, in wire order, and not through the SDK: the SDK handles progress a
      // microtask after a response in the same chunk and then reports an unknown token (C06).
      const call = entry.call;
      const value = total === undefined ? { progress } : { progress, total };
      // Once its task exists, any progress is a sign of life for the idle timeout (rule 37).
      if (call.task !== undefined) call.alive();
      const increased = call.progress(text === undefined ? value : { ...value, message: text }, this.#progressFailed);
      if (!increased) {
        this.#anomaly({
          kind: "non-increasing-progress",
          message: `progress ${progress} for token ${JSON.stringify(token)} did not increase (rule 21 in docs/spec-rules.md)`,
          ...(call.requestId === null ? {} : { requestId: call.requestId }),
        });
      }
      return this.#progressUp?.has(call) === true && withGivenToken(message, entry);
    }
    const sink = this.#tombTokens.get(token);
    if (sink !== undefined) {
      this.#sinkOf(sink)?.late("progress");
      return false;
    }
    this.#anomaly({
      kind: "unknown-progress-token",
      message: `progress for token ${JSON.stringify(token)}, which no active request carries, dropped (rule 22 in docs/spec-rules.md)`,
    });
    return false;
  }

  /**
   * The server sent the client a request (elicitation, sampling, roots): until the client answers
   * it, the calls pending now are waiting on the client, not on the server, and their idle
   * timeout is paused (`CancellableCall.clientWait`, bounded by `clientWaitTimeoutMs`; the
   * maximum total timeout still holds). Which pending call the request belongs to is not on the
   * wire (stdio; an SSE stream's messages come up without it), so every one is paused. A ping
   * pauses none.
   */
  #serverRequest(id: RequestId, method: string): void {
    const unanswered = this.#inbound.get(id);
    if (unanswered !== undefined) {
      // The server reused the id of a request of its own still unanswered (rule 1): the client
      // answers each, but the second answer finds no request left to end. The calls the first
      // one paused go on now, so each call is paused once under this id and every answer is
      // balanced (an audit's: the second pause was never ended, and the call timed out at
      // clientWaitTimeoutMs, "waiting for the client's answer", which had been sent at once).
      this.#anomaly({
        kind: "invalid-message",
        message: `server request ${JSON.stringify(id)} (${method}) reuses the id of a request of the server's still unanswered (rule 1 in docs/spec-rules.md)`,
      });
      if (unanswered !== null) for (const call of unanswered) call.clientAnswered();
    }
    if (method === "ping") {
      this.#inbound.set(id, null);
      return;
    }
    const calls: CancellableCall[] = [];
    for (const entry of this.#pending.values()) if (entry.call !== null) calls.push(entry.call);
    this.#tasks.drainCalls(calls, false);
    for (const call of calls) call.clientWait();
    this.#inbound.set(id, calls);
  }

  /** The client answered a server request (or the server withdrew it): the calls it paused go on. */
  #answered(id: RequestId): void {
    const calls = this.#inbound.get(id);
    if (calls === undefined) return;
    this.#inbound.delete(id);
    (this.#answeredInbound ??= new BoundedIdMap(RECENT_SERVER_REQUESTS)).set(id, true);
    if (calls === null) return;
    for (const call of calls) call.clientAnswered();
  }

  /** Rule 12: a server may cancel only its own requests (2025-era) or a listen stream, never our calls. */
  #onServerCancel(message: Message): void {
    const parsed = cancelledParamsSchema.safeParse(message.params);
    if (!parsed.success) return;
    // Matched as answers are ("1" names request 1, as the SDKs read a response's id).
    const requestId =
      findAnswered(parsed.data.requestId, (key) => (this.#pending.has(key) || this.#inbound.has(key) ? key : undefined)) ??
      parsed.data.requestId;
    // Rule 12: the server ends a listen it names, and only that one (the SDK hears it too).
    if (this.#listens.has(requestId)) {
      this.#dropSdkRequest(requestId);
      return;
    }
    // The server withdrew a request of its own (2025-era, rule 39): the client's wait is over.
    if (this.#inbound.has(requestId)) {
      this.#answered(requestId);
      return;
    }
    const entry = this.#pending.get(requestId);
    if (entry?.listen === true && entry.call !== null) {
      // A call's listen the server ends (rule 12): it is over without its result, so the call
      // fails with the server's reason (the v2 SDK's own listen() closes with an error, cause
      // "remote"); no cancel goes out (rule 7). Whoever waits for it hears the server's
      // notification too (it passes on).
      const call = entry.call;
      this.#forget(requestId, entry);
      const reason = (message.params as { reason?: unknown } | undefined)?.reason;
      if (call.responded(undefined, this.#era?.era === "modern")) {
        call.fail(
          new Error(
            `subscriptions/listen ended by the server (notifications/cancelled${typeof reason === "string" ? `: ${reason}` : ""}; rule 12 in docs/spec-rules.md)`,
          ),
        );
      }
      this.#releaseSdk(requestId);
      return;
    }
    // A request of the server's own that the client has just answered (the answer and the cancel
    // crossed, legal before 2026-07-28: rule 12) is no anomaly, whatever client request has the
    // same id: the two directions number their requests apart. Its id as the server wrote it
    // ("1" is not 1 in the server's numbering), and on a connection whose era is not known (a
    // client attached after its handshake) as on a 2025-era one (an audit's: both read as the
    // server cancelling the client's request 1).
    const crossed =
      this.#answeredInbound !== undefined && (this.#answeredInbound.has(requestId) || this.#answeredInbound.has(parsed.data.requestId));
    const modern = this.#protocolVersion !== undefined && !this.#legacyEra();
    if (entry?.call && (!crossed || modern)) {
      this.#anomaly({
        kind: "server-cancelled-client-request",
        message: `server sent notifications/cancelled for client request ${JSON.stringify(requestId)}; ignored (rule 12 in docs/spec-rules.md)`,
        requestId,
      });
    }
  }

  override closed(): void {
    keepFromCork(this.#stdinAtExit);
    this.#open = false;
    this.#holdForStart = false;
    this.#heldForStart = [];
    const calls: CancellableCall[] = [...this.#unbound.values()];
    for (const entry of this.#pending.values()) if (entry.call !== null) calls.push(entry.call);
    this.#tasks.drainCalls(calls);
    for (const call of calls) {
      if (this.#closedByClient) call.closedByClient();
      else call.cancel("connection-closed");
    }
    this.#unbound.clear();
    this.#pending.clear();
    this.#tokens.clear();
    this.#givenTokens.clear();
    this.#inbound.clear();
    this.#answeredInbound = undefined;
    this.#neverCancel.clear();
    this.#tasks.closeAll(new Error("Connection closed"));
    this.up.closed();
  }

  #anomaly(anomaly: Anomaly): void {
    // A throwing (or rejecting) hook must not break the wire.
    if (this.#onAnomaly !== undefined) callHook(this.#onAnomaly, anomaly, noop);
  }
}

/**
 * The reason sent for a cancel the SDK made on its own. Both SDK lines send `String(reason)` of
 * the caller's abort reason, which may be private text: only the trigger is named, the SDK's
 * own timeout ("Request timed out") or an abort.
 */
function sdkReason(reason: string | undefined): string {
  return reason !== undefined && /Request timed out/.test(reason) ? "Request timed out (the SDK's own timeout)" : ABORTED_REASON;
}

/**
 * The layers that carry an adapter's cancel mechanism: the library's own adapters bring theirs
 * (stdio: the write queue; Streamable HTTP: the stream tracker and the 2025-era delivery); a
 * user's own adapter gets one layer that calls its `cancel`, asks its `isOwnCancelError` about
 * errors, calls its `flush` before the close, and gives its `attach` the stream-lost hook.
 */
function adapterLayers(adapter: CancellationAdapter<TransportLike>): readonly LayerFactory[] {
  const own = (adapter as Partial<LayeredAdapter>)[ADAPTER_LAYERS];
  if (typeof own === "function") return own.call(adapter);
  return [(below) => new AdapterLayer(below, adapter)];
}

/**
 * The adapter with `layers` under its own, right on the transport (the CLI's recorder, which must
 * see every message as it crossed the transport, the ones the wire later drops too). @internal
 */
export function withLayersBelow<T extends TransportLike>(
  adapter: CancellationAdapter<T>,
  layers: readonly LayerFactory[],
): CancellationAdapter<T> {
  const layered: CancellationAdapter<T> & LayeredAdapter = {
    transport: adapter.transport,
    cancel: (request) => adapter.cancel(request),
    [ADAPTER_LAYERS]: () => [...layers, ...adapterLayers(adapter)],
  };
  return layered;
}

/** A user's own `CancellationAdapter` as a layer (see `adapterLayers`). */
class AdapterLayer extends Layer {
  readonly #adapter: CancellationAdapter<TransportLike>;

  constructor(below: Port, adapter: CancellationAdapter<TransportLike>) {
    super(below);
    this.#adapter = adapter;
    adapter.attach?.({
      streamLost: (requestId, cause, neverSent = false) =>
        this.up.fact(requestId, { kind: "ended", how: neverSent ? "refused" : "reset", cause, at: performance.now() }),
    });
  }

  override cancel(request: CancelRequest): CancelMechanism {
    return this.#adapter.cancel(request);
  }

  override close(): Promise<void> {
    try {
      this.#adapter.flush?.();
    } catch {
      // A cancel is best-effort (rule 10): the close goes on.
    }
    return this.below.close();
  }

  override error(error: Error): void {
    if (this.#adapter.isOwnCancelError?.(error) === true) return;
    this.up.error(error);
  }
}

/** How many answered server requests a wire remembers, for a 2025-era server's cancel of one (rule 12). */
const RECENT_SERVER_REQUESTS = 256;

/** A response that says the work was done: a result, and not a tool result with `isError: true`. */
function ranBy(message: { result?: unknown; error?: unknown }): boolean {
  return "result" in message && (message.result as { isError?: unknown } | null)?.isError !== true;
}

/** A request with another progress token (its params and `_meta` copied; the call's marker, a symbol key, goes with them). */
function withProgressToken(message: Message, token: string): Message {
  const params = message.params as Record<string | symbol, unknown> & { _meta?: Record<string, unknown> };
  return { ...message, params: { ...params, _meta: { ...params._meta, progressToken: token } } };
}

/** Progress that goes up: as it came (`true`), or under the token its request was given where the wire carried its own. */
function withGivenToken(message: Message, entry: Entry): true | Message {
  return entry.given === undefined ? true : { ...message, params: { ...message.params, progressToken: entry.given } };
}
