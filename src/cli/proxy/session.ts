// One client session over one upstream: the proxy's logic, apart from any front. A front (the
// stdio one in stdio-front.ts; an HTTP one later) hands the session the client's messages
// (`receive`) and gets the messages for the client through its `ClientPort`; every way the
// session ends goes through `end()`, the one shutdown path.
//
// Each client request is one call of the library on the upstream connection (`MessageTransport`
// over the upstream's cancellation adapter, so one `CallRunner.run`): its limits, the cancel by
// the upstream's mechanism, late messages dropped and the run record all come from the library.
// What lives here is only the edge: ids and progress tokens mapped between the client's space and
// the upstream's, the client's own cancel turned into that call's signal, the answers, the waits
// the library does not see (initialize, the hold behind notifications/initialized), a lost HTTP
// session started anew, and the end.
import { ownAnswerNote, proxyErrorResponse } from "./respond.js";
import { isInvalidOptionError } from "../../errors/guards.js";
import type { WriteStream } from "node:fs";
import type { CancellationAdapter, TransportLike } from "../../adapters/types.js";
import { jsonLines } from "../../ledger/json-lines.js";
import { CONNECTION_CLOSED_ERROR_CODE, MessageTransport, TIMEOUT_ERROR_CODE } from "../../runner/message-transport.js";
import type { JsonRpcMessage } from "../../runner/message-transport.js";
import { nameOf } from "../../runner/runner.js";
import type { Anomaly, CallObserver, CallOptions, CancellationOptions, Progress } from "../../types/options.js";
import type { CancelTrigger, RunRecord } from "../../types/record.js";
import { BoundedMap } from "../../utils/bounded-map.js";
import { SUBSCRIPTION_ID_META, subscriptionOf } from "../../wire/listens.js";
import { createdTask, isTerminalTaskStatus } from "../../core/record.js";
import { isTaskAugmented } from "../../wire/tasks.js";
import { findAnswered } from "../../wire/messages.js";
import type { Message } from "../../wire/messages.js";
import { forgetRawLine, lineLength, rawLineOf } from "../json-lines.js";
import type { ProxyOptions } from "./args.js";
import { redactJsonText } from "./listen/guard.js";
import type { Redact } from "./listen/guard.js";
import {
  baseLimits,
  entryLimits,
  hasBuiltInLimits,
  hasOverrides,
  limitsFor,
  SHUTDOWN_BOUND_MS,
  EXIT_RESERVE_MS,
  totalLimitMs,
  waitLimitMs,
} from "./config.js";
import type { ProxyConfig } from "./config.js";
import { idOfAnswer, REUSE_LINE_BYTES, replaceId } from "./raw-id.js";

export type Id = string | number;

/** The JSON-RPC error codes the proxy answers with for a line it cannot relay (JSON-RPC 2.0 §5.1). */
export const PARSE_ERROR_CODE = -32700;
export const INVALID_REQUEST_CODE = -32600;
/** JSON-RPC's "Invalid params": a request whose params the library refuses, not sent. */
const INVALID_PARAMS_CODE = -32602;

/** The reason sent upstream when the client goes away with requests in flight. */
export const CLIENT_GONE_REASON = "The client went away (mcp-cancellable proxy: its stdin closed)";
/** The reason sent upstream for a client's cancel that gave none. */
export const CLIENT_CANCEL_REASON = "Cancelled by the client";

/** The bound on the whole shutdown, in ms (defined with the limits, in config.ts). */
export { SHUTDOWN_BOUND_MS } from "./config.js";

/** What the shutdown keeps of its bound for ending the records file once the upstream closed, in ms. */
const RECORDS_RESERVE_MS = 60;
/** A long answer written before its parse: the parse waits for its bytes to leave at most this long, in ms. */
const EARLY_WAIT_MAX_MS = 5_000;
/** ... and ends this long before the call's nearest limit, in ms (so no timer fires on an answer on its way). */
const EARLY_SLACK_MS = 100;

/** Where a 2026-07-28 request carries its protocol version (rule 38). */
const PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion";

/**
 * What a proxy front reads from a client request's `params._meta`: the client's progress token
 * (a string or a number, else none) and the protocol version a 2026-07-28 request names (rule 38).
 */
export function requestMeta(params: unknown): {
  meta: Record<string, unknown> | undefined;
  clientToken: Id | undefined;
  version: string | undefined;
} {
  const meta = isObject(params) && isObject(params._meta) ? params._meta : undefined;
  const token = meta?.progressToken;
  const version = meta?.[PROTOCOL_VERSION_META];
  return {
    meta,
    clientToken: typeof token === "string" || typeof token === "number" ? token : undefined,
    version: typeof version === "string" ? version : undefined,
  };
}

/** The progress token the proxy sends upstream for its request `upstreamId` (unique whatever the client reuses). */
export const proxyToken = (upstreamId: Id): string => `mcp-cancellable-proxy-${String(upstreamId)}`;

/** How many settled requests' client ids are remembered for the records of late revisions. */
const MAX_REMEMBERED_IDS = 10_000;

/** Exit status by signal: 128 + its number, as a shell reports a process ended by it. */
export const SIGNAL_EXIT_CODES = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;
export type EndSignal = keyof typeof SIGNAL_EXIT_CODES;

/** Why the session ends. Each has its exit status (see `end`). */
export type EndReason =
  /** The client closed its end (stdin reached its end). Exit 0. */
  | { readonly kind: "client-closed" }
  /** The client's end of the output failed (EPIPE: nobody reads it any more). Exit 0. */
  | { readonly kind: "client-gone"; readonly why: string }
  /**
   * The proxy was told to stop (SIGTERM, SIGINT, SIGHUP). Exit 128 + the signal's number.
   * `by`: when the shutdown must be over (`performance.now()` ms; the HTTP front's own bound),
   * else `SHUTDOWN_BOUND_MS` from now; `why`: what the answers of the requests in flight say (the
   * HTTP front's drain names `--drain-ms`), else that the proxy was stopped by the signal.
   */
  | { readonly kind: "signal"; readonly signal: EndSignal; readonly by?: number; readonly why?: string }
  /** The upstream ended on its own (the server exited, the connection closed). Exit 0 or 1 (`Upstream.ended`). */
  | { readonly kind: "upstream-closed" }
  /** The proxy cannot go on: the server cannot be reached, a lost session could not be started anew, the client does not read. Exit 1. */
  | { readonly kind: "fatal"; readonly why: string };

/** One message for the client, with what a front may need to place it. */
export interface Outbound {
  /** The message (for a front that serialises, or reads its fields). */
  readonly message: JsonRpcMessage;
  /**
   * The message's line, in bytes, in pieces to write in order (no newline): the bytes it came in
   * with only the id changed, when the proxy kept them; `undefined` when the front must serialise
   * `message` itself.
   */
  readonly line?: readonly Buffer[] | undefined;
  /**
   * The client request this message answers or reports progress on, by the client's id. A front
   * that writes a byte stream keeps each request's messages in order by it, and lets an answer
   * wait until the request's progress reached the client (the MCP SDK clients handle a
   * notification a microtask after a response read with it, and drop its progress handler at the
   * response: progress read in one chunk with its result is lost).
   */
  readonly clientRequestId?: Id | undefined;
}

/** The client side of a session: where its messages go. */
export interface ClientPort {
  /** One message for the client. Never throws. */
  send(outbound: Outbound): void;
  /** The session is ending: stop reading the client (nothing more is relayed). */
  stopReading(): void;
  /** Flushes what is buffered for the client, at most until `deadline` (a `performance.now()` time). Never rejects. */
  flush(deadline: number): Promise<void>;
  /**
   * True for a front that writes lines (stdio): an answer may then be sent as its line alone,
   * before its message is parsed (`Outbound.message` is then only `{jsonrpc, id}`).
   */
  readonly acceptsLines?: boolean;
  /** With `acceptsLines`: resolves once everything sent so far has left for the client. Never rejects. */
  written?(): Promise<void>;
  /** Holds what is written to the client until `uncork` (nested), for a front that writes a byte stream. */
  cork?(): void;
  uncork?(): void;
}

/** How the upstream was made: its adapter, and what a session needs to know of it. */
export interface Upstream<T extends TransportLike> {
  readonly adapter: CancellationAdapter<T>;
  /** What to say about the upstream once it closed, and the exit status it means (0 or 1). */
  ended(): { message: string; code: number };
  /**
   * The upstream closed the connection but may still run (a stdio server that closed its
   * stdout): stops it (its process group). Never rejects. Stdio only.
   */
  stop?(): Promise<void>;
  /** Where the upstream reports a line that is not a JSON-RPC message (stdio). */
  onInvalid?(handler: (line: string, why: string) => void): void;
  /**
   * A long line from the server (stdio), before it is parsed: the session may write its bytes to
   * the client at once (`ClientPort.acceptsLines`) and let the parse overlap their transfer.
   */
  onLongLine?(handler: (pieces: readonly Buffer[]) => Promise<void> | undefined): void;
  /**
   * Runs each read of the server's output through `around` (one chunk, every message in it handed
   * on), so the session can hold its writes for that pass (`ProxySession.batch`). Stdio only.
   */
  onRead?(around: (read: () => void) => void): void;
  /** Holds what is written to the server until `uncork` (nested). Stdio only. */
  cork?(): void;
  uncork?(): void;
  /** Stops reading what the server writes (the client does not keep up); `resume` goes on. Stdio only. */
  pause?(): void;
  resume?(): void;
  /**
   * Called by the shutdown after every call in flight was cancelled and before the transport
   * closes, with the time left (ms): HTTP waits for the cancels on their way, then DELETEs the
   * 2025-era session. Never rejects.
   */
  beforeClose?(budgetMs: number): Promise<void>;
  /** HTTP, 2025-era: the server answered 404 (or 400) for the session (`status`); called once per lost session. */
  onSessionLost?(handler: (status: number) => void): void;
  /** HTTP, 2025-era: the session a request (by its upstream id) was sent in, once sessions were started anew. */
  sessionOf?(upstreamId: Id): string | undefined;
  /** HTTP, 2025-era: forgets the lost session, so the next `initialize` starts a new one. */
  resetSession?(): Promise<void>;
  /** HTTP: the server could not be reached before it ever answered (`error`: why). */
  onUnreachable?(handler: (error: Error) => void): void;
}

/** What the command adds to every call besides the options: the observer of `--otel`, and its flush at the end. */
export interface ProxyExtras {
  readonly observer?: CallObserver;
  /** Exports what is left (spans), within `budgetMs`; never rejects. */
  readonly flush?: (budgetMs: number) => Promise<void>;
}

/** What the proxy counted over its life (written on stderr at the end). */
export interface ProxyCounts {
  requests: number;
  clientCancels: number;
  /** Client cancels that named no request in progress (rule 10: ignored). */
  ignoredCancels: number;
  malformedFromClient: number;
  malformedFromServer: number;
  /** Responses from the upstream for no request in progress (dropped). */
  unknownResponses: number;
}

/** A client request the upstream has not answered yet. */
interface Pending {
  readonly clientId: Id;
  readonly method: string;
  /** The client's progress token, relayed back under it; `undefined` when the client asked for none. */
  readonly clientToken: Id | undefined;
  /** It asked for a task (rule 35): a cancel before its `CreateTaskResult` becomes `tasks/cancel` once it comes. */
  augmented?: true;
  /** `initialize` only: its own timer (the library does not time it: rule 39). */
  timer?: ReturnType<typeof setTimeout>;
  /**
   * Its answer's line was written to the client before it was parsed (`#earlyLine`): the client
   * has an answer for it, as the server wrote it; nothing more is written for it (not the parsed
   * message again, nor a -32001 at its limit when the line was no answer the SDK takes: an outside
   * tester's, two answers for one request).
   */
  early?: boolean;
  /** The tool (`tools/call`) or resource, for its limits. */
  readonly name: string | null;
  /** When it was sent, and when it last showed life (its progress), `performance.now()`. */
  readonly sentAt: number;
  activeAt: number;
}

/** A client message that waits (behind notifications/initialized, or for a new session). */
interface Held {
  readonly message: JsonRpcMessage;
  readonly at: number;
  /** A request's own limit: when it is answered -32001 if still held (`Infinity`: none). */
  readonly deadline: number;
  readonly limitMs: number;
  readonly which: "timeoutMs" | "maxTotalTimeoutMs";
}

/** Client messages waiting, why, and the timer at the nearest held request's limit. */
interface HoldState {
  readonly why: string;
  queue: Held[];
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The proxy's own `initialize` of a new upstream session, after the server lost the old one. */
interface Renewal {
  readonly status: number;
  readonly upstreamId: Id;
  readonly timer: ReturnType<typeof setTimeout> | undefined;
}

/** Everything a session needs. */
export interface SessionInit<T extends TransportLike> {
  readonly options: ProxyOptions;
  readonly config: ProxyConfig;
  readonly upstream: Upstream<T>;
  readonly records?: WriteStream | undefined;
  readonly extras?: ProxyExtras | undefined;
  readonly client: ClientPort;
  /** Diagnostics (stderr), one line with its newline. */
  readonly log: (text: string) => void;
  /** Takes the upstream's `--header` secrets out of a `--records` line (the log is given redacted already). */
  readonly redact?: Redact | undefined;
}

/**
 * One client session over one upstream. `start()`, then `receive()` each client message; the
 * messages for the client go to the `ClientPort`; `end(reason)` ends it (idempotent), and `done`
 * resolves with the exit status however it ended.
 */
export class ProxySession<T extends TransportLike> {
  readonly #options: ProxyOptions;
  readonly #config: ProxyConfig;
  readonly #upstream: Upstream<T>;
  readonly #records: WriteStream | undefined;
  readonly #extras: ProxyExtras;
  readonly #client: ClientPort;
  readonly #logLine: (text: string) => void;
  readonly #transport: MessageTransport<T>;
  /** By upstream id. */
  readonly #pending = new Map<Id, Pending>();
  /** Client id -> upstream id, for requests in progress. */
  readonly #byClientId = new Map<Id, Id>();
  /** Upstream progress token -> the request it belongs to. */
  readonly #byToken = new Map<string, Pending>();
  /** Upstream id -> client id, kept after the request settles for its record's later revisions (with `--records`). */
  readonly #clientIds = new BoundedMap<Id, Id>(MAX_REMEMBERED_IDS);
  /**
   * The proxy's progress tokens of requests answered with a task (a `CreateTaskResult` not yet
   * terminal) → the client's token: the task's progress goes on under it for the task's life
   * (the 2025-11-25 Tasks specification keeps the token; the wire passes it up, `keepTaskTokens`).
   */
  readonly #taskTokens = new BoundedMap<string, Id>(MAX_REMEMBERED_IDS);
  /** Listens that ended (the client's cancel, the server's end, their result), by upstream id: what their stream still brings is dropped. */
  readonly #endedListens = new BoundedMap<Id, Id>(MAX_REMEMBERED_IDS);
  /**
   * The server's own requests the client has not answered yet, by their id (the server's
   * numbering): a server's cancel naming one withdraws it (rule 39) and goes to the client, even
   * when a request of the client's went upstream under the same number (the two directions number
   * apart; an outside tester's: the cancel was read as one of a client's call, and dropped).
   * At most `MAX_REMEMBERED_IDS`, oldest forgotten first.
   */
  readonly #serverAsks = new Set<Id>();
  /** Never 0: the v1 SDK server ignores a `notifications/cancelled` whose requestId is falsy (`Protocol._oncancel`: `if (!notification.params.requestId) return`), so a request with id 0 could never be cancelled. */
  #nextId = 1;
  /** The protocol version last handed to the upstream transport. */
  #version: string | undefined;
  /** Whether the config file has entries per method or per tool (else most requests have the transport's defaults). */
  readonly #perRequestLimits: boolean;
  /** The client's messages that wait, and why (see `#hold`). */
  #held: HoldState | undefined;
  /** A hold's queue being released, and the index of the next entry to go: a shutdown during the release answers the rest. */
  #releasing: { queue: Held[]; next: number } | undefined;
  /** The client's `initialize` and `notifications/initialized`, as it sent them: replayed for a new session. */
  #initialize: JsonRpcMessage | undefined;
  #initialized: JsonRpcMessage | undefined;
  #renewal: Renewal | undefined;
  /** The upstream id of the long answer being parsed after its bytes went to the client (`#earlyLine`), until it is read. */
  #earlyParsing: Id | undefined;
  #ending: Promise<number> | undefined;
  /** The upstream could not be started: the client's requests meanwhile are answered with why (see `start`). */
  #startFailure: { readonly why: string; readonly over: () => void } | undefined;
  /** Why the upstream could not be started (`the server could not be started (spawn ... ENOENT)`), once `start` resolved false. */
  get startFailure(): string | undefined {
    return this.#startFailure?.why;
  }
  #done!: (code: number) => void;
  /** Resolves with the exit status once the session ended, whatever ended it. */
  readonly done: Promise<number>;
  readonly counts: ProxyCounts = {
    requests: 0,
    clientCancels: 0,
    ignoredCancels: 0,
    malformedFromClient: 0,
    malformedFromServer: 0,
    unknownResponses: 0,
  };

  constructor(init: SessionInit<T>) {
    this.#options = init.options;
    this.#config = init.config;
    this.#upstream = init.upstream;
    this.#records = init.records;
    this.#extras = init.extras ?? {};
    this.#client = init.client;
    this.#logLine = init.log;
    this.done = new Promise((resolve) => (this.#done = resolve));
    const records = init.records;
    // A late revision may come while the file is being ended: it is not written then.
    const writeLine =
      records === undefined
        ? undefined
        : jsonLines((line) => {
            // An upstream may echo its --header token in an error: the record's texts are redacted as the log's are.
            if (!records.writableEnded) records.write(init.redact === undefined ? line : redactJsonText(line, init.redact));
          });
    this.#perRequestLimits = hasOverrides(this.#config);
    const observer = this.#extras.observer;
    const defaults: CancellationOptions = {
      // The limits every request has unless a config entry for its method or tool says otherwise:
      // validated already (the command line, the config file), so requests without an entry of
      // their own carry no options to validate again (only the client's cancel signal).
      ...baseLimits(this.#config, this.#options.limits),
      // The client's cancel reason was meant for the server: it goes upstream as it is.
      forwardAbortReason: true,
      // Records go to the file, not to memory.
      maxRecords: 0,
      onAnomaly: (anomaly) => this.#log(anomalyLine(anomaly, (id) => this.#pending.get(id)?.clientId)),
      // proxyPid: callId is unique within one process, and several proxies may append to one file
      // (a client that starts the proxy twice: the v2 SDK client pinned to 2026-07-28 does).
      ...(writeLine === undefined
        ? {}
        : { onRecord: (record: RunRecord) => writeLine(Object.assign({}, this.#withClientId(record), { proxyPid: process.pid })) }),
      ...(observer === undefined ? {} : { observer }),
    };
    this.#transport = new MessageTransport(this.#upstream.adapter, {
      defaults,
      callOptions: (method, params) => this.#callOptions(method, params),
      respond: (error) =>
        proxyErrorResponse(
          error,
          (record) => this.#withClientId(record),
          error.record.requestId !== null && this.#pending.get(error.record.requestId)?.augmented === true,
        ),
    });
    this.#transport.onmessage = (message) => this.#fromServer(message);
    this.#transport.onerror = (error) => this.#log(`upstream: ${error.message}`);
    this.#transport.onclose = () => void this.end({ kind: "upstream-closed" });
    this.#upstream.onInvalid?.((line, why) => this.#serverMalformed(line, why));
    this.#upstream.onRead?.(this.batch);
    if (this.#client.acceptsLines === true) this.#upstream.onLongLine?.((pieces) => this.#earlyLine(pieces));
    this.#upstream.onSessionLost?.((status) => this.#sessionLost(status));
    this.#upstream.onUnreachable?.((error) => {
      this.#log(`the server cannot be reached: ${error.message}`);
      // Answered first (initialize's send fails on its own path), then the end.
      queueMicrotask(() => void this.end({ kind: "fatal", why: `the server cannot be reached (${error.message})` }));
    });
  }

  /**
   * Starts the upstream. Resolves false (the session ends, exit status 1) when it cannot be
   * started (a command that does not exist: `spawn ... ENOENT`). `answerForMs`: then, for at
   * most this long, or until the client's input ends (`end`), every request the client sends is
   * answered -32000 with why, nothing relayed: a host that spawned the proxy and wrote its
   * `initialize` gets an answer saying why, not only the process's end (an outside tester's: the
   * stdio proxy wrote nothing). 0 (the default): the session ends at once.
   */
  async start(answerForMs = 0): Promise<boolean> {
    try {
      await this.#transport.start();
      return true;
    } catch (error) {
      const message = (error as Error).message;
      this.#log(`cannot start the upstream: ${message}`);
      let over!: () => void;
      const answering = new Promise<void>((resolve) => (over = resolve));
      const timer = setTimeout(over, answerForMs);
      this.#startFailure = {
        why: `the server could not be started (${message})`,
        over: () => (clearTimeout(timer), over()),
      };
      this.#ending = answering.then(() => this.#closeRecords()).then(() => 1);
      void this.#ending.then((code) => this.#done(code));
      return false;
    }
  }

  /** Requests in flight upstream (for a front's diagnostics and tests). */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Whether the client's request `clientId` is in progress (rule 1: a second request may not use its id; rule 7: a cancel may name it). */
  inProgress(clientId: Id): boolean {
    return this.#byClientId.has(clientId);
  }

  /** The method of the client's request `clientId` in progress, if it is. */
  methodInProgress(clientId: Id): string | undefined {
    const upstreamId = this.#byClientId.get(clientId);
    return upstreamId === undefined ? undefined : this.#pending.get(upstreamId)?.method;
  }

  /**
   * Whether the client answers a `ping` from this side: a 2025-era client does (rule 39: either
   * side may ping); on 2026-07-28 there is no ping (rule 38), and a client may drop it.
   */
  get clientAnswersPing(): boolean {
    return this.#version === undefined || this.#version < "2026-07-28";
  }

  /** Whether the session is ending (nothing the client sends is relayed any more). */
  get ending(): boolean {
    return this.#ending !== undefined;
  }

  /**
   * Runs `read` (a front's, or the upstream's, handing on the messages of one chunk it read) with
   * the writes to both sides held until it returns: what one chunk brings about (a line upstream
   * per request, a line to the client per answer) goes out in one system call each way, instead
   * of one per message (at 1,000 calls in flight, a third of the proxy's CPU; docs/performance.md).
   * Nothing waits past the pass: a lone message is written in the same task, as before.
   */
  readonly batch = (read: () => void): void => {
    const upstream = this.#upstream;
    const client = this.#client;
    upstream.cork?.();
    client.cork?.();
    try {
      read();
    } finally {
      client.uncork?.();
      upstream.uncork?.();
    }
  };

  /** The front stops reading the server while the client does not keep up (stdio upstream only). */
  pauseUpstream(): void {
    this.#upstream.pause?.();
  }

  resumeUpstream(): void {
    this.#upstream.resume?.();
  }

  // ---- client -> server ---------------------------------------------------------------------

  /**
   * One message from the client, in the client's order. Sends upstream are not awaited (an HTTP
   * POST each), except `notifications/initialized`: what the client sends after it waits until it
   * is sent (see `#hold`), as the SDK client's `connect` does, so that no request reaches the
   * server before it and the server's standalone stream (which a 2025-era HTTP transport opens
   * once it is accepted) is asked for first.
   */
  receive(message: JsonRpcMessage): void {
    if (this.#startFailure !== undefined) {
      this.#answerUnstarted(message, this.#startFailure.why);
      return;
    }
    if (this.#ending !== undefined) return;
    const { method: named, id: given } = message as { method?: unknown; id?: unknown };
    if (typeof named === "string" && "id" in message && !isRequestId(given)) {
      // Rule 1: a request's id is a string or an integer, never null. Such a request would go
      // upstream with no id of the proxy's, no limits and no record: answered here instead.
      this.malformed(
        null,
        `the ${named} request's id ${JSON.stringify(given) ?? String(given)} is not a string or an integer JSON carries exactly (rule 1 in docs/spec-rules.md)`,
        INVALID_REQUEST_CODE,
        "Invalid Request",
      );
      return;
    }
    const held = this.#held;
    if (held === undefined) {
      this.#fromClient(message);
      return;
    }
    const { method, id, params } = message as { method?: unknown; id?: unknown; params?: unknown };
    if (method === "notifications/cancelled") {
      // A cancel for a request still held: it never went out; it is dropped here (nothing goes upstream).
      // Only a held request matches: an answer held for a server request may carry the same id in
      // the server's numbering (an audit's: that answer was dropped, and the cancel never sent).
      const requestId = isObject(params) ? params.requestId : undefined;
      const index = held.queue.findIndex((entry) => {
        const heldMessage = entry.message as { id?: unknown; method?: unknown };
        return typeof heldMessage.method === "string" && heldMessage.id === requestId;
      });
      if (index !== -1 && requestId !== undefined) {
        const [entry] = held.queue.splice(index, 1);
        this.counts.clientCancels++;
        this.#verbose("client->proxy", message, undefined, "cancelled while held: never sent");
        const reason = isObject(params) && typeof params.reason === "string" ? params.reason : "Cancelled by the client";
        this.#recordHeld(entry!, "aborted", reason);
        return;
      }
    }
    const at = performance.now();
    if (typeof method === "string" && (typeof id === "string" || typeof id === "number")) {
      const limits = limitsFor(this.#config, this.#options.limits, method, nameOf(isObject(params) ? params : {}));
      const { ms, which } = waitLimitMs(limits);
      held.queue.push({ message, at, deadline: at + ms, limitMs: ms, which });
      this.#armHold();
    } else {
      held.queue.push({ message, at, deadline: Infinity, limitMs: Infinity, which: "timeoutMs" });
    }
  }

  /** The client's id of the held request being recorded (see `#recordHeld`): its record has no upstream id to find it by. */
  #heldClientId: Id | undefined;

  /**
   * A held request that ends without going upstream (the client's cancel, its limit, the proxy's
   * end) is recorded as any request is (`--records`: cancelled, never sent; an outside tester's:
   * it had no record on a 2025-era `--url`, where the same on 2026-07-28 had one).
   */
  #recordHeld(entry: Held, trigger: CancelTrigger, reason: string): void {
    const { method, id, params } = entry.message as { method?: unknown; id?: unknown; params?: unknown };
    if (typeof method !== "string" || (typeof id !== "string" && typeof id !== "number") || method === "initialize") return;
    this.#heldClientId = id;
    try {
      this.#transport.recordUnsent(method, isObject(params) ? params : {}, trigger, reason, Date.now() - (performance.now() - entry.at));
    } finally {
      this.#heldClientId = undefined;
    }
  }

  /** A request while the upstream could not be started: answered -32000 with why; nothing is relayed, notifications are dropped. */
  #answerUnstarted(message: JsonRpcMessage, why: string): void {
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (typeof method !== "string" || (typeof id !== "string" && typeof id !== "number")) return;
    this.#toClient({
      jsonrpc: "2.0",
      id,
      error: {
        code: CONNECTION_CLOSED_ERROR_CODE,
        message: `mcp-cancellable proxy: ${method} was not sent: ${why}; not retried`,
        data: { code: "CONNECTION_CLOSED", trigger: "connection-closed" },
      },
    });
  }

  /** A line from the client that is not a JSON-RPC message: answered with the spec's error, counted, logged; nothing is relayed. */
  malformed(id: Id | null, why: string, code: number, text: string): void {
    if (this.#ending !== undefined) return;
    this.counts.malformedFromClient++;
    this.#log(`client sent a malformed line (${why}): answered ${code} ${text}`);
    this.#toClient({ jsonrpc: "2.0", id, error: { code, message: `${text}: ${why}` } });
  }

  #fromClient(message: JsonRpcMessage): void {
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (typeof method === "string" && (typeof id === "string" || typeof id === "number")) {
      this.#request(message, method, id);
      return;
    }
    if (method === "notifications/cancelled") {
      this.#clientCancel(message);
      return;
    }
    // Notifications, and the client's answers to the server's own requests (ids in the server's
    // space): as they are (over stdio, the very bytes the client wrote).
    if (method === undefined && (typeof id === "string" || typeof id === "number")) this.#serverAsks.delete(id);
    this.#verbose("client->server", message);
    if (method === "notifications/initialized") this.#initialized = message;
    const sent = this.#transport
      .send(message)
      .catch((error: unknown) => this.#log(`could not relay a ${String(method ?? "response")} to the server: ${(error as Error).message}`));
    if (method === "notifications/initialized") this.#holdUntil(sent, "notifications/initialized to be accepted by the server");
  }

  /**
   * What the client sends from now on waits until `until` settles, in order. A held request is
   * answered -32001 (never sent, nothing to cancel) if its own limit (the smaller of its idle and
   * maximum total timeouts) passes while it waits, so no request waits without one.
   */
  #holdUntil(until: Promise<unknown>, why: string): void {
    // What an earlier hold kept stays first, now behind this one too.
    const earlier = this.#held;
    if (earlier !== undefined) clearTimeout(earlier.timer);
    const held: HoldState = { why, queue: earlier?.queue ?? [], timer: undefined };
    this.#held = held;
    this.#armHold();
    void until.then(() => {
      if (this.#held !== held) return;
      this.#releaseHold();
    });
  }

  #releaseHold(): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    clearTimeout(held.timer);
    // A message released may end the session (a client that reads nothing past the output's bound):
    // the shutdown then answers what is left of the queue (an audit's: those requests got no answer).
    const releasing = { queue: held.queue, next: 0 };
    this.#releasing = releasing;
    while (releasing.next < releasing.queue.length) {
      if (this.#ending !== undefined) return;
      const entry = releasing.queue[releasing.next++]!;
      // A message may hold again (a second notifications/initialized): the rest waits behind it.
      const again = this.#currentHold();
      if (again !== undefined) again.queue.push(entry);
      else this.#fromClient(entry.message);
    }
    if (this.#releasing === releasing) this.#releasing = undefined;
    this.#armHold();
  }

  #currentHold(): HoldState | undefined {
    return this.#held;
  }

  /** The hold's timer, at the nearest deadline of a held request. */
  #armHold(): void {
    const held = this.#held;
    if (held === undefined) return;
    clearTimeout(held.timer);
    held.timer = undefined;
    let next = Infinity;
    for (const entry of held.queue) next = Math.min(next, entry.deadline);
    if (!Number.isFinite(next)) return;
    held.timer = setTimeout(() => this.#expireHeld(), Math.max(0, Math.ceil(next - performance.now())));
  }

  #expireHeld(): void {
    const held = this.#held;
    if (held === undefined) return;
    const now = performance.now();
    const keep: Held[] = [];
    for (const entry of held.queue) {
      if (entry.deadline > now + 1) {
        keep.push(entry);
        continue;
      }
      const { method, id, params } = entry.message as unknown as { method: string; id: Id; params?: unknown };
      const name = nameOf(isObject(params) ? params : {});
      const what = name === null ? method : `${method} ${JSON.stringify(name)}`;
      const idle = entry.which === "timeoutMs";
      this.#log(`${what} (id ${JSON.stringify(id)}) waited ${Math.round(now - entry.at)} ms for ${held.why}: answered -32001, never sent`);
      this.#recordHeld(
        entry,
        idle ? "timeout" : "max-total-timeout",
        idle ? `Request timed out after ${entry.limitMs} ms` : `Request exceeded its maximum total timeout of ${entry.limitMs} ms`,
      );
      this.#toClient({
        jsonrpc: "2.0",
        id,
        error: {
          code: TIMEOUT_ERROR_CODE,
          message:
            `mcp-cancellable proxy: ${what} got no answer within ${entry.limitMs} ms (${idle ? "the idle timeout, timeoutMs" : "maxTotalTimeoutMs"}): ` +
            `it was held waiting for ${held.why}, and never sent`,
          data: {
            code: idle ? "REQUEST_TIMEOUT" : "MAX_TOTAL_TIMEOUT",
            trigger: idle ? "timeout" : "max-total-timeout",
            limitMs: entry.limitMs,
            summary: `not sent: held waiting for ${held.why}`,
            record: null,
          },
        },
      });
    }
    held.queue = keep;
    this.#armHold();
  }

  #request(message: JsonRpcMessage, method: string, clientId: Id): void {
    if (this.#byClientId.has(clientId)) {
      // Rule 1: an id must not match another request still unanswered.
      this.#toClient({
        jsonrpc: "2.0",
        id: clientId,
        error: {
          code: INVALID_REQUEST_CODE,
          message: `Invalid Request: id ${JSON.stringify(clientId)} is already used by a request in progress (rule 1 in docs/spec-rules.md)`,
        },
      });
      return;
    }
    this.counts.requests++;
    const upstreamId = this.#nextId++;
    const params = (message as { params?: unknown }).params;
    // 2026-07-28 has no initialize: each request names its protocol version (rule 38), which the
    // upstream transport needs (HTTP: the MCP-Protocol-Version header; the adapter's era).
    const { meta, clientToken, version } = requestMeta(params);
    if (version !== undefined && version !== this.#version) {
      this.#version = version;
      this.#transport.setProtocolVersion(version);
    }
    const now = performance.now();
    const pending: Pending = {
      clientId,
      method,
      clientToken,
      name: nameOf(isObject(params) ? params : {}),
      sentAt: now,
      activeAt: now,
    };
    if (isTaskAugmented(message as Message)) pending.augmented = true;
    this.#verbose("client->server", message, upstreamId);
    if (method === "initialize") this.#initialize = structuredClone(message);
    // The message was parsed for the proxy alone: it goes upstream under the upstream's id. Its
    // line no longer says what it says (the id changes), so it is serialised again.
    forgetRawLine(message);
    const forward = message;
    forward.id = upstreamId;
    if (pending.clientToken !== undefined && method !== "initialize") {
      // The upstream gets a token of the proxy's (unique whatever the client reuses); progress
      // for it goes back to the client under the client's own token.
      const token = proxyToken(upstreamId);
      this.#byToken.set(token, pending);
      forward.params = { ...(params as Record<string, unknown>), _meta: { ...meta, progressToken: token } };
    }
    this.#pending.set(upstreamId, pending);
    this.#byClientId.set(clientId, upstreamId);
    if (this.#records !== undefined) this.#clientIds.set(upstreamId, clientId);
    if (method === "initialize") this.#timeInitialize(upstreamId, pending);
    // No signal: the client's cancel ends it by id (`MessageTransport.cancel`), no AbortController per request.
    this.#transport.send(forward).catch((error: unknown) => {
      // initialize (not a call: nothing answers it for us), or an option the runner refused.
      if (!this.#pending.has(upstreamId)) return;
      this.#forget(upstreamId);
      // The client's params the library refuses (a progress token that is neither a string nor an
      // integer, rule 20; a `_meta` that is no object): nothing went upstream, and it is the
      // request's fault, not the connection's.
      const option = isInvalidOptionError(error) ? error.option : undefined;
      const invalidParams = option !== undefined && option.startsWith("params.");
      this.#toClient({
        jsonrpc: "2.0",
        id: clientId,
        error: invalidParams
          ? { code: INVALID_PARAMS_CODE, message: `mcp-cancellable proxy: ${method}: ${option}: ${(error as Error).message}` }
          : {
              code: CONNECTION_CLOSED_ERROR_CODE,
              message: `mcp-cancellable proxy: ${method} failed between the proxy and the server (${(error as Error).message})`,
            },
      });
    });
  }

  /**
   * `initialize` is relayed, never cancelled (rule 39) and not a call of the library, so the
   * proxy bounds it itself (`#initializeLimit`), after which the client gets -32001 and a late
   * answer is dropped. Nothing goes upstream.
   */
  #timeInitialize(upstreamId: Id, pending: Pending): void {
    const { ms, which } = this.#initializeLimit();
    if (!Number.isFinite(ms)) return;
    pending.timer = setTimeout(() => {
      if (this.#pending.get(upstreamId) !== pending) return;
      this.#forget(upstreamId);
      this.#log(`initialize got no answer within ${ms} ms: answered -32001 (not cancelled: rule 39 in docs/spec-rules.md)`);
      const idle = which === "timeoutMs";
      this.#toClient({
        jsonrpc: "2.0",
        id: pending.clientId,
        error: {
          code: TIMEOUT_ERROR_CODE,
          message: `mcp-cancellable proxy: initialize got no answer within ${ms} ms (${idle ? "the idle timeout, timeoutMs" : "maxTotalTimeoutMs"}); not cancelled (initialize never is, rule 39 in docs/spec-rules.md)`,
          data: {
            code: idle ? "REQUEST_TIMEOUT" : "MAX_TOTAL_TIMEOUT",
            trigger: idle ? "timeout" : "max-total-timeout",
            limitMs: ms,
            summary: "timed out, not cancelled (initialize)",
            record: null,
          },
        },
      });
    }, ms);
  }

  /**
   * The limit of `initialize`, in ms: its maximum total timeout (default 600,000 ms), not the
   * idle timeout, since it includes starting the server (a first `npx -y` downloads it); the
   * idle timeout too only when the config file's `methods.initialize` sets one.
   */
  #initializeLimit(): { ms: number; which: "timeoutMs" | "maxTotalTimeoutMs" } {
    const total = totalLimitMs(limitsFor(this.#config, this.#options.limits, "initialize", null));
    const own = Object.hasOwn(this.#config.methods, "initialize") ? this.#config.methods.initialize?.timeoutMs : undefined;
    return own !== undefined && own < total ? { ms: own, which: "timeoutMs" } : { ms: total, which: "maxTotalTimeoutMs" };
  }

  /** The client cancels one of its requests: that call's signal aborts; the library cancels it upstream by its mechanism, with the upstream's id. */
  #clientCancel(message: JsonRpcMessage): void {
    const params = (message as { params?: unknown }).params;
    const requestId = isObject(params) ? params.requestId : undefined;
    const reason = isObject(params) && typeof params.reason === "string" && params.reason !== "" ? params.reason : CLIENT_CANCEL_REASON;
    const upstreamId = typeof requestId === "string" || typeof requestId === "number" ? this.#byClientId.get(requestId) : undefined;
    const pending = upstreamId === undefined ? undefined : this.#pending.get(upstreamId);
    if (upstreamId === undefined || pending === undefined) {
      // Rule 10: a cancel for nothing in progress (answered already, or never sent) is ignored.
      this.counts.ignoredCancels++;
      this.#verbose("client->proxy", message, undefined, "ignored: no such request in progress (rule 10 in docs/spec-rules.md)");
      return;
    }
    if (pending.method === "initialize") {
      this.counts.ignoredCancels++;
      this.#log("the client cancelled initialize: ignored (initialize is never cancelled, rule 39 in docs/spec-rules.md)");
      return;
    }
    if (pending.early === true) {
      // Its answer is on its way to the client already: the cancel crossed it (rule 9).
      this.counts.ignoredCancels++;
      this.#verbose(
        "client->proxy",
        message,
        upstreamId,
        "ignored: its answer is being written to the client (rule 9 in docs/spec-rules.md)",
      );
      return;
    }
    this.counts.clientCancels++;
    if (this.#options.verbose) this.#verbose("client->proxy", message, upstreamId, `cancelling upstream: ${reasonOf(message)}`);
    this.#forget(upstreamId);
    this.#transport.cancel(upstreamId, reason);
  }

  /**
   * A request's own options: its limits when an entry (built-in, or of the config file) names its
   * method or tool (none otherwise: the defaults have them), and the relay of its progress.
   */
  #callOptions(method: string, params: Record<string, unknown>): Omit<CallOptions, "signal"> | undefined {
    const limits =
      this.#perRequestLimits || hasBuiltInLimits(method)
        ? entryLimits(this.#config, this.#options.limits, method, nameOf(params))
        : undefined;
    const meta = params._meta;
    const token = isObject(meta) ? meta.progressToken : undefined;
    const pending = typeof token === "string" ? this.#byToken.get(token) : undefined;
    if (pending === undefined) return limits;
    const clientToken = pending.clientToken!;
    return { ...limits, onprogress: (progress: Progress) => this.#relayProgress(pending, clientToken, progress) };
  }

  #relayProgress(pending: Pending, clientToken: Id, progress: Progress): void {
    pending.activeAt = performance.now();
    const message: JsonRpcMessage = {
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: clientToken, ...progress },
    };
    if (this.#options.verbose) {
      const of = progress.total === undefined ? `${progress.progress}` : `${progress.progress}/${progress.total}`;
      this.#verbose("server->client", message, undefined, `${of} for ${JSON.stringify(pending.clientId)}`);
    }
    this.#toClient(message, { clientRequestId: pending.clientId });
  }

  // ---- server -> client ---------------------------------------------------------------------

  #fromServer(message: JsonRpcMessage): void {
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (id === this.#earlyParsing) this.#earlyParsing = undefined; // the long answer written early was read
    if (method === undefined && (typeof id === "string" || typeof id === "number")) {
      if (this.#renewal?.upstreamId === id) {
        this.#renewed(message);
        return;
      }
      const pending = this.#pending.get(id);
      if (pending === undefined) {
        this.counts.unknownResponses++;
        this.#log(`the server answered id ${JSON.stringify(id)}, which is no request in progress: dropped`);
        return;
      }
      this.#forget(id);
      if (pending.method === "initialize") this.#noteVersion(message);
      if (pending.clientToken !== undefined) {
        const task = createdTask((message as { result?: unknown }).result);
        if (task !== null && !isTerminalTaskStatus(task.status)) this.#taskTokens.set(proxyToken(id), pending.clientToken);
      }
      if (this.#options.verbose) {
        const own = ownAnswerNote(message);
        this.#verbose(
          own === undefined ? "server->client" : "proxy->client",
          { ...message, id: pending.clientId } as JsonRpcMessage,
          id,
          own ?? (pending.early === true ? "written as it came, before it was parsed" : undefined),
        );
      }
      // Written already, as it came: nothing more for it (not even a timeout's -32001 the library
      // made because the line was not JSON, or no answer the SDK takes: one answer per request).
      if (pending.early === true) return;
      // The server's own bytes with only the id changed, when the message is large (one pass less over it).
      const raw = rawLineOf(message);
      const line = raw !== undefined && lineLength(raw) >= REUSE_LINE_BYTES ? replaceId(raw, id, pending.clientId) : undefined;
      // The message is the proxy's own from here (parsed for it, or made by the library for it):
      // it goes to the client under the client's id, with no copy.
      message.id = pending.clientId;
      // A listen's result names it too (rule 33): by the client's id.
      const named = pending.method === "subscriptions/listen" && withSubscription(message, pending.clientId);
      this.#client.send({ message, line: named ? undefined : line, clientRequestId: pending.clientId });
      return;
    }
    if (method === "notifications/cancelled") {
      const params = (message as { params?: unknown }).params;
      const withdrawn = isObject(params) ? params.requestId : undefined;
      if ((typeof withdrawn === "string" || typeof withdrawn === "number") && this.#serverAsks.delete(withdrawn)) {
        // The server withdraws a request of its own (rule 39): the client gets the cancel as it is.
        this.#verbose("server->client", message, undefined, "the server withdraws its own request");
        this.#toClient(message, { line: rawLineOf(message) });
        return;
      }
      // Matched as answers are ("4" names request 4; an outside tester's: relayed under the upstream's id).
      const requestId = findAnswered(isObject(params) ? params.requestId : undefined, (key) => (this.#pending.has(key) ? key : undefined));
      const pending = requestId === undefined ? undefined : this.#pending.get(requestId);
      if (pending !== undefined && requestId !== undefined) {
        const asClients = { ...message, params: { ...(params as Record<string, unknown>), requestId: pending.clientId } } as JsonRpcMessage;
        if (pending.method !== "subscriptions/listen") {
          // Rule 12: a server cancels only its own requests or a listen; the library reported it
          // (an anomaly) and the call goes on. Its id is the upstream's: never the client's to see.
          // The line names it by the client's id, then the upstream's (an outside tester's: the upstream id as the client's).
          this.#verbose(
            "server->proxy",
            asClients,
            requestId,
            "a server cancel of a client request: ignored (rule 12 in docs/spec-rules.md)",
          );
          return;
        }
        // The server ends the client's listen (rule 12): the client knows it under its own id.
        this.#forget(requestId);
        this.#verbose("server->client", asClients, requestId, `the server ended the client's listen ${JSON.stringify(pending.clientId)}`);
        this.#toClient(asClients);
        return;
      }
    }
    // A task's progress after its CreateTaskResult: under the client's own token.
    if (method === "notifications/progress") {
      const params = (message as { params?: unknown }).params;
      const token = isObject(params) ? params.progressToken : undefined;
      const clientToken = typeof token === "string" ? this.#taskTokens.get(token) : undefined;
      if (clientToken !== undefined) {
        const relayed = { ...message, params: { ...(params as Record<string, unknown>), progressToken: clientToken } } as JsonRpcMessage;
        this.#verbose("server->client", relayed, undefined, "the progress of a task the client made");
        this.#toClient(relayed);
        return;
      }
    }
    // A 2026-07-28 listen's stream (its acknowledgement, its changes) names the listen by its
    // request id (rule 33): the upstream's here, the client's for the client (the v2 client's
    // listen() waits for its acknowledgement under its own id), as the HTTP front does.
    const subscription = subscriptionOf(message as Message);
    const listen = typeof subscription === "string" || typeof subscription === "number" ? this.#pending.get(subscription) : undefined;
    if (listen !== undefined && listen.method === "subscriptions/listen") {
      const params = (message as unknown as { params: Record<string, unknown> }).params;
      const relayed = {
        ...message,
        params: { ...params, _meta: { ...(params._meta as object), [SUBSCRIPTION_ID_META]: listen.clientId } },
      };
      this.#verbose("server->client", relayed as JsonRpcMessage, undefined, `on the client's listen ${JSON.stringify(listen.clientId)}`);
      this.#toClient(relayed as JsonRpcMessage, { clientRequestId: listen.clientId });
      return;
    }
    // A listen that ended (the client cancelled it, or it was answered): nothing more reaches the
    // client for it, and never under the upstream's id.
    if ((typeof subscription === "string" || typeof subscription === "number") && this.#endedListens.has(subscription)) {
      this.#verbose(
        "server->proxy",
        message,
        undefined,
        `on a listen that ended (${JSON.stringify(this.#endedListens.get(subscription))}): dropped`,
      );
      return;
    }
    // The server's own requests (sampling, elicitation, roots/list, ping), notifications, logging,
    // list changes, its cancels of its own requests: ids in the server's space, as they are (over
    // stdio, the very bytes the server wrote).
    const asked = (message as { id?: unknown }).id;
    if (typeof method === "string" && (typeof asked === "string" || typeof asked === "number")) {
      // Bounded as the other remembered ids: a client that never answers leaves the oldest forgotten.
      if (this.#serverAsks.size >= MAX_REMEMBERED_IDS) this.#serverAsks.delete(this.#serverAsks.values().next().value!);
      this.#serverAsks.add(asked);
    }
    this.#verbose("server->client", message);
    const raw = rawLineOf(message);
    this.#toClient(message, { line: raw });
  }

  /**
   * A long line from a stdio server, before it is parsed: when it is the answer of a request in
   * progress (its top-level id is its last member, and a leading member is `result` or `error`),
   * its bytes go to the client at once with only the id changed, and the proxy parses it while
   * they travel (the parsed message then settles the call and is not written again). Anything
   * else waits for its parse as usual. A line that then turns out not to be JSON has reached the
   * client as the server wrote it (a client reading the server directly would have read the same).
   */
  #earlyLine(pieces: readonly Buffer[]): Promise<void> | undefined {
    const written = this.#client.written;
    if (this.#ending !== undefined || written === undefined || lineLength(pieces) < REUSE_LINE_BYTES) return undefined;
    const id = idOfAnswer(pieces);
    if (id === undefined) return undefined;
    const pending = this.#pending.get(id);
    if (pending === undefined || pending.method === "initialize") return undefined;
    // The parse waits for the bytes to leave (the event loop would be busy parsing instead of
    // writing them), but never past the call's own limits: its timers must not fire on an answer
    // that is on its way.
    const limits = limitsFor(this.#config, this.#options.limits, pending.method, pending.name);
    const idleFrom = limits.resetTimeoutOnProgress === true ? pending.activeAt : pending.sentAt;
    const left =
      Math.min(idleFrom + (limits.timeoutMs ?? Number.POSITIVE_INFINITY), pending.sentAt + totalLimitMs(limits)) - performance.now();
    const wait = Math.min(left - EARLY_SLACK_MS, EARLY_WAIT_MAX_MS);
    if (!(wait > 0)) return undefined;
    const line = replaceId(pieces, id, pending.clientId);
    if (line === undefined) return undefined;
    pending.early = true;
    this.#earlyParsing = id;
    this.#toClient({ jsonrpc: "2.0", id: pending.clientId }, { line, clientRequestId: pending.clientId });
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
      void written.call(this.#client).then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** The protocol version the server answered initialize with reaches the upstream transport (HTTP sends it as a header). */
  #noteVersion(message: JsonRpcMessage): void {
    const result = (message as { result?: unknown }).result;
    if (isObject(result) && typeof result.protocolVersion === "string") {
      this.#version = result.protocolVersion;
      this.#transport.setProtocolVersion(result.protocolVersion);
    }
  }

  /** The record with the client's id of its request: from the request in progress, or (records of `--records` only) remembered after it. */
  #withClientId(record: RunRecord): RunRecord {
    const id = record.requestId;
    const clientId = id === null ? this.#heldClientId : (this.#pending.get(id)?.clientId ?? this.#clientIds.get(id));
    // A request sent in a session the server lost names that session, not the one started after it.
    const sentIn = id === null || record.sessionId === null ? undefined : this.#upstream.sessionOf?.(id);
    const session = sentIn === undefined || sentIn === record.sessionId ? undefined : sentIn;
    if (clientId === undefined && session === undefined) return record;
    return {
      ...record,
      ...(clientId === undefined ? {} : { clientRequestId: clientId }),
      ...(session === undefined ? {} : { sessionId: session }),
    } as RunRecord;
  }

  #forget(upstreamId: Id): void {
    const pending = this.#pending.get(upstreamId);
    if (pending === undefined) return;
    if (pending.method === "subscriptions/listen") this.#endedListens.set(upstreamId, pending.clientId);
    clearTimeout(pending.timer);
    this.#pending.delete(upstreamId);
    if (this.#byClientId.get(pending.clientId) === upstreamId) this.#byClientId.delete(pending.clientId);
    if (pending.clientToken !== undefined) this.#byToken.delete(proxyToken(upstreamId));
  }

  #toClient(message: JsonRpcMessage | Record<string, unknown>, more?: Omit<Outbound, "message">): void {
    this.#client.send(more === undefined ? { message: message as JsonRpcMessage } : { message: message as JsonRpcMessage, ...more });
  }

  // ---- a lost HTTP session ------------------------------------------------------------------

  /**
   * The server answered 404 (or 400) for the session (rule 40: the client MUST start a new one):
   * the request that met it was answered -32000 naming the status (by the upstream, as the
   * server's answer: recorded as received, never sent again). The client's `initialize` and
   * `notifications/initialized` are replayed to start a new session; what the client sends
   * meanwhile is held (each request within its own limit), then goes to the new session. If the
   * new session cannot be started, the proxy exits 1 (the host starts it again).
   */
  #sessionLost(status: number): void {
    if (this.#ending !== undefined || this.#renewal !== undefined) return;
    const initialize = this.#initialize;
    if (initialize === undefined || this.#upstream.resetSession === undefined) {
      void this.end({
        kind: "fatal",
        why: `the server answered HTTP ${status} for the session, and there is no initialize to start a new one`,
      });
      return;
    }
    this.#log(`the server answered HTTP ${status} for the session: starting a new one (the client's initialize, replayed)`);
    let release!: () => void;
    this.#holdUntil(new Promise<void>((resolve) => (release = resolve)), "a new session after the server lost the old one");
    const upstreamId = this.#nextId++;
    const { ms } = this.#initializeLimit();
    const timer = Number.isFinite(ms)
      ? setTimeout(() => void this.end({ kind: "fatal", why: `a new session: initialize got no answer within ${ms} ms` }), ms)
      : undefined;
    this.#renewal = { status, upstreamId, timer };
    this.#release = release;
    void this.#upstream
      .resetSession()
      .then(() => this.#transport.send({ ...structuredClone(initialize), id: upstreamId }))
      .catch(
        (error: unknown) =>
          void this.end({ kind: "fatal", why: `a new session: initialize could not be sent (${(error as Error).message})` }),
      );
  }

  #release: (() => void) | undefined;

  /** The answer to the replayed initialize: the new session is on (then `notifications/initialized`), or the proxy exits 1. */
  #renewed(message: JsonRpcMessage): void {
    const renewal = this.#renewal!;
    clearTimeout(renewal.timer);
    const result = (message as { result?: unknown }).result;
    if (!isObject(result)) {
      const error = (message as { error?: { code?: unknown; message?: unknown } }).error;
      void this.end({
        kind: "fatal",
        why: `a new session: the server refused initialize (${String(error?.code)} ${String(error?.message)})`,
      });
      return;
    }
    this.#noteVersion(message);
    const initialized = this.#initialized ?? { jsonrpc: "2.0", method: "notifications/initialized" };
    void this.#transport.send(initialized).then(
      () => {
        this.#renewal = undefined;
        this.#log(`a new session is on (after HTTP ${renewal.status}); the client's requests go to it`);
        this.#release?.();
        this.#release = undefined;
      },
      (error: unknown) =>
        void this.end({ kind: "fatal", why: `a new session: notifications/initialized could not be sent (${(error as Error).message})` }),
    );
  }

  // ---- the end ------------------------------------------------------------------------------

  /**
   * The one shutdown path, whatever ends the session (idempotent: the first reason wins). Stops
   * reading the client; cancels every request in flight by the upstream's mechanism (the client
   * still there, after a signal or a fatal error, gets -32000 for each); HTTP: waits for those
   * cancels, then DELETEs the 2025-era session; closes the upstream (a stdio server: stdin closed,
   * SIGTERM, SIGKILL to its process group), and meanwhile ends the records file and exports the
   * spans; all within `SHUTDOWN_BOUND_MS`. Resolves with the exit status: 0 when the client ended
   * it, 128 + the signal's number for a signal, the upstream's status (0 or 1) when it ended, 1
   * for a fatal error.
   */
  end(reason: EndReason): Promise<number> {
    this.#startFailure?.over();
    this.#ending ??= this.#shutdown(reason).then((code) => {
      this.#done(code);
      return code;
    });
    return this.#ending;
  }

  async #shutdown(reason: EndReason): Promise<number> {
    const deadline = (reason.kind === "signal" ? reason.by : undefined) ?? performance.now() + SHUTDOWN_BOUND_MS;
    this.#client.stopReading();
    const hold = this.#held;
    this.#held = undefined;
    if (hold !== undefined) clearTimeout(hold.timer);
    // What a release under way had not sent yet is held still (see `#releaseHold`).
    const releasing = this.#releasing;
    this.#releasing = undefined;
    const rest = releasing === undefined ? [] : releasing.queue.slice(releasing.next);
    const held = hold === undefined && rest.length === 0 ? undefined : { queue: [...rest, ...(hold?.queue ?? [])] };
    if (this.#renewal !== undefined) clearTimeout(this.#renewal.timer);
    const clientThere = reason.kind === "signal" || reason.kind === "fatal" || reason.kind === "upstream-closed";
    const why =
      reason.kind === "signal"
        ? (reason.why ?? `the proxy was stopped (${reason.signal})`)
        : reason.kind === "fatal"
          ? reason.why
          : reason.kind === "client-gone"
            ? `the client's end of stdout failed (${reason.why})`
            : reason.kind === "client-closed"
              ? "the client closed its end"
              : "the server closed the connection";
    let code: number;
    if (reason.kind !== "upstream-closed") {
      // Every request in flight is cancelled upstream, each by the upstream's mechanism.
      const upstreamReason =
        reason.kind === "client-closed"
          ? CLIENT_GONE_REASON
          : reason.kind === "client-gone"
            ? `The client went away (mcp-cancellable proxy: ${why})`
            : `mcp-cancellable proxy: ${why}`;
      for (const [upstreamId, pending] of [...this.#pending]) {
        this.#forget(upstreamId);
        // An answer on its way to the client (written before its parse) is no request in progress.
        if (pending.early === true) continue;
        const cancelled = pending.method === "initialize" ? undefined : this.#transport.cancel(upstreamId, upstreamReason);
        // The answer carries the cancel's record, as a lost connection's does (respond.ts).
        if (clientThere) this.#answerLost(pending, why, cancelled?.record ?? null);
      }
      if (held !== undefined) {
        // Answered when the client is there to read it; recorded either way (never sent).
        for (const entry of held.queue) {
          // The proxy gave them up (as it cancels those in flight: trigger aborted, its why the reason).
          if (clientThere) this.#answerHeld(entry, why, "aborted");
          else this.#recordHeld(entry, "aborted", `mcp-cancellable proxy: ${why}`);
        }
      }
      const left = (): number => Math.max(0, deadline - performance.now());
      const closing = (async () => {
        await this.#upstream.beforeClose?.(left() - 100);
        await this.#transport.close().catch((error: unknown) => this.#log(`closing the upstream: ${(error as Error).message}`));
      })();
      await Promise.all([closing, this.#closeRecordsAfter(closing, deadline), this.#extras.flush?.(left() - 50)]);
      const { message } = this.#upstream.ended();
      this.#log(`${why}; ${message}`);
      code = reason.kind === "signal" ? SIGNAL_EXIT_CODES[reason.signal] : reason.kind === "fatal" ? 1 : 0;
    } else {
      // The library answered every call in flight (-32000) as the connection closed; what is left
      // (initialize, held requests) is answered here, at once.
      for (const [upstreamId, pending] of [...this.#pending]) {
        this.#forget(upstreamId);
        this.#answerLost(pending, why);
      }
      if (held !== undefined) for (const entry of held.queue) this.#answerHeld(entry, why, "connection-closed");
      const stopping = this.#upstream.stop?.() ?? Promise.resolve();
      await Promise.all([stopping, this.#closeRecordsAfter(stopping, deadline), this.#extras.flush?.(deadline - performance.now() - 50)]);
      const ended = this.#upstream.ended();
      code = ended.code;
      this.#log(ended.message);
    }
    const c = this.counts;
    this.#log(
      `done: ${c.requests} request${c.requests === 1 ? "" : "s"}, ${c.clientCancels} cancelled by the client, ${c.ignoredCancels} cancel${c.ignoredCancels === 1 ? "" : "s"} ignored, ` +
        `${c.malformedFromClient} malformed line${c.malformedFromClient === 1 ? "" : "s"} from the client and ${c.malformedFromServer} from the server dropped, ${c.unknownResponses} unknown response${c.unknownResponses === 1 ? "" : "s"} dropped`,
    );
    await this.#client.flush(deadline - EXIT_RESERVE_MS);
    return code;
  }

  /** A request the proxy's end answers -32000; with the record of its cancel upstream, when one was made. */
  #answerLost(pending: Pending, why: string, record: RunRecord | null = null): void {
    const data =
      record === null
        ? { code: "CONNECTION_CLOSED", trigger: "connection-closed" }
        : {
            code: "CONNECTION_CLOSED",
            trigger: "connection-closed",
            summary: record.summary,
            record: Object.assign({}, record, { clientRequestId: pending.clientId }),
          };
    this.#toClient(
      {
        jsonrpc: "2.0",
        id: pending.clientId,
        error: {
          code: CONNECTION_CLOSED_ERROR_CODE,
          // The proxy ended, or the server did: said as it is (an outside tester's: "the connection
          // to the server was lost" for a proxy that was stopped).
          // "Cancelled upstream" only when its record says a cancel went (a request never sent, or
          // awaiting its CreateTaskResult, has none).
          message:
            record?.cancel == null || record.cancel.mechanism === "none"
              ? `mcp-cancellable proxy: ${pending.method} was not answered: ${why}; not retried`
              : `mcp-cancellable proxy: ${pending.method} was cancelled upstream before its answer came: ${why}; not retried`,
          data,
        },
      },
      // Under the client's id of the request: the front writes it after that request's own
      // progress has reached the client (an outside tester's: on SIGTERM it came in one read with
      // it, and the SDK client lost the progress).
      { clientRequestId: pending.clientId },
    );
  }

  #answerHeld(entry: Held, why: string, trigger: CancelTrigger): void {
    const { method, id } = entry.message as { method?: unknown; id?: unknown };
    if (typeof method !== "string" || (typeof id !== "string" && typeof id !== "number")) return;
    this.#recordHeld(entry, trigger, trigger === "aborted" ? `mcp-cancellable proxy: ${why}` : why);
    this.#toClient(
      {
        jsonrpc: "2.0",
        id,
        error: {
          code: CONNECTION_CLOSED_ERROR_CODE,
          message: `mcp-cancellable proxy: ${method} was never sent (${why})`,
          data: { code: "CONNECTION_CLOSED", trigger: "connection-closed" },
        },
      },
      { clientRequestId: id },
    );
  }

  /**
   * Ends the records file once the upstream closed (`closed`), or near the shutdown's `deadline`
   * (`performance.now()` ms), whichever comes first: what became of the cancels just sent (a
   * 2025-era notification the server refused or left unanswered, a stdio line that never left
   * the pipe) is a revision the close brings, and the file must have it (an outside tester's: it
   * said delivered).
   */
  async #closeRecordsAfter(closed: Promise<unknown>, deadline: number): Promise<void> {
    let bound: ReturnType<typeof setTimeout> | undefined;
    const timeUp = new Promise<void>(
      (resolve) => (bound = setTimeout(resolve, Math.max(0, deadline - performance.now() - RECORDS_RESERVE_MS))),
    );
    await Promise.race([closed.catch(() => undefined), timeUp]);
    clearTimeout(bound);
    await this.#closeRecords();
  }

  async #closeRecords(): Promise<void> {
    const records = this.#records;
    if (records === undefined || records.writableEnded) return;
    // The records of the calls cancelled just now are written first.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => records.end(() => resolve()));
  }

  /**
   * A line from the server that is not a JSON-RPC message: dropped and counted. A long answer's
   * line written to the client before its parse (`#earlyLine`) has reached the client as the
   * server wrote it: its request gets nothing more, and the log says so (not "dropped").
   */
  #serverMalformed(line: string, why: string): void {
    this.counts.malformedFromServer++;
    const early = this.#earlyParsing === undefined ? undefined : this.#pending.get(this.#earlyParsing);
    this.#earlyParsing = undefined;
    const shown = line.length > 200 ? `${line.slice(0, 200)}...` : line;
    if (early?.early === true) {
      this.#log(
        `the server wrote a malformed line (${why}) as the answer of request ${JSON.stringify(early.clientId)}; it had reached the client already (a long answer is written as it comes, before it is parsed), and nothing more is written for that request: ${shown}`,
      );
      return;
    }
    this.#log(`the server wrote a malformed line (${why}), dropped: ${shown}`);
  }

  #log(text: string): void {
    this.#logLine(`mcp-cancellable proxy: ${text}\n`);
  }

  #verbose(direction: string, message: JsonRpcMessage, upstreamId?: Id, note?: string): void {
    if (this.#options.verbose) this.#log(verboseLine(direction, message, upstreamId, note));
  }
}

/**
 * An anomaly's stderr line. The library names a request by its upstream id (and the proxy's own
 * progress token): the line names the client's id first, as every other line does (an outside
 * tester's: `client request 2` where the client had sent id 1).
 */
export function anomalyLine(anomaly: Anomaly, clientIdOf: (upstreamId: Id) => Id | undefined): string {
  const upstreamId = anomaly.requestId;
  if (upstreamId === undefined) return `anomaly: ${anomaly.message}`;
  const clientId = clientIdOf(upstreamId);
  const ids =
    clientId === undefined
      ? `upstream id ${JSON.stringify(upstreamId)}`
      : `id ${JSON.stringify(clientId)} (upstream ${JSON.stringify(upstreamId)})`;
  return `anomaly on ${ids}: ${anomaly.message}`;
}

/** `--verbose`'s line for one relayed message: direction, method (or result, error), the id as the client knows it and the upstream's, a note. */
export function verboseLine(direction: string, message: JsonRpcMessage, upstreamId?: Id, note?: string): string {
  const { method, params } = message as { method?: unknown; params?: unknown };
  // A cancel is named by the request it cancels.
  const id = method === "notifications/cancelled" && isObject(params) ? params.requestId : (message as { id?: unknown }).id;
  const what = typeof method === "string" ? method : "error" in message ? "error" : "result";
  const ids =
    id === undefined
      ? ""
      : upstreamId === undefined
        ? ` id ${JSON.stringify(id)}`
        : ` id ${JSON.stringify(id)} (upstream ${JSON.stringify(upstreamId)})`;
  return `${direction} ${what}${ids}${note === undefined ? "" : `: ${note}`}`;
}

/** A JSON-RPC request id as MCP allows it (rule 1): a string or an integer, one JSON numbers carry exactly (a safe integer). */
export function isRequestId(value: unknown): value is Id {
  return typeof value === "string" || Number.isSafeInteger(value);
}

/** The reason a `notifications/cancelled` gives, or "no reason given". */
export function reasonOf(message: JsonRpcMessage): string {
  const params = (message as { params?: unknown }).params;
  return isObject(params) && typeof params.reason === "string" && params.reason !== "" ? params.reason : "no reason given";
}

/** Names a listen's result by `clientId` (rule 33) when it carries a subscription id; true when it did. */
function withSubscription(message: JsonRpcMessage, clientId: Id): boolean {
  const result = (message as { result?: unknown }).result;
  if (!isObject(result) || !isObject(result._meta) || !(SUBSCRIPTION_ID_META in result._meta)) return false;
  (message as unknown as { result: unknown }).result = { ...result, _meta: { ...result._meta, [SUBSCRIPTION_ID_META]: clientId } };
  return true;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
