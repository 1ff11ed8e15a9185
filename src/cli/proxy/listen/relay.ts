// One upstream connection shared by the HTTP front's clients. Each client (a 2025-era session, or
// one 2026-07-28 request's exchange) opens a `ClientHandle`: its own id space, its own requests.
// Each client request is one `CallRunner.run` on the upstream connection through
// `MessageTransport` (the stdio front's path): its limits, the cancel by the upstream's own
// mechanism under the upstream id, late messages dropped, the run record. What lives here is the
// edge: a client id and progress token mapped to an upstream id and token of the relay's own (so
// no client can name, cancel or receive another's request, progress or late result), and answers
// routed back to the handle that asked.
import { ownAnswerNote, proxyErrorResponse } from "../respond.js";
import type { WriteStream } from "node:fs";
import type { TransportLike } from "../../../adapters/types.js";
import { jsonLines } from "../../../ledger/json-lines.js";
import { CONNECTION_CLOSED_ERROR_CODE, MessageTransport } from "../../../runner/message-transport.js";
import type { JsonRpcMessage, LibraryErrorResponse } from "../../../runner/message-transport.js";
import { nameOf } from "../../../runner/runner.js";
import type { CallObserver, CallOptions, CancellationOptions, Progress } from "../../../types/options.js";
import type { RunRecord } from "../../../types/record.js";
import { BoundedMap } from "../../../utils/bounded-map.js";
import type { ProxyOptions } from "../args.js";
import { baseLimits, entryLimits, hasBuiltInLimits, hasOverrides } from "../config.js";
import type { ProxyConfig } from "../config.js";
import { anomalyLine, proxyToken, requestMeta, verboseLine } from "../session.js";
import type { Upstream } from "../session.js";
import { summarize } from "../../../core/record.js";
import { SUBSCRIPTION_ID_META } from "../../../wire/listens.js";
import { isTaskAugmented } from "../../../wire/tasks.js";
import type { Message } from "../../../wire/messages.js";
import { STREAM_CLOSED_REASON } from "./exchange.js";
import { FrontRevisions } from "./records.js";
import { redactJsonText } from "./guard.js";
import type { Redact } from "./guard.js";
import type { AnswerWritten } from "./exchange.js";
import { withCallFacts } from "./spans.js";

export type Id = string | number;

/** JSON-RPC's Invalid Request (a reused id, rule 1). */
const INVALID_REQUEST_CODE = -32600;
/** How many settled requests' client facts are remembered for the records of late revisions. */
const MAX_REMEMBERED = 10_000;
/** How many calls' last written lines are kept (`Relay.#lastLines`): an answer's write ends within a few turns of its record. */
const KEPT_LAST_LINES = 256;

/** The answer a drain gives a request it cancels upstream: built from its method and the cancel's record (`null` if none was made). */
export type DrainAnswer = (method: string, record: RunRecord | null) => LibraryErrorResponse;

/** Where a handle's messages go: the client's HTTP exchange(s). */
export interface ClientPort {
  /**
   * A message for this client; `related` is the client's id of the request whose stream it belongs
   * on (`undefined`: the session's own stream). For an answer, `written` is told how its write
   * ended (see `AnswerWritten`).
   */
  deliver(message: JsonRpcMessage, related: Id | undefined, written?: AnswerWritten): void;
}

/** What a handle tells the records and spans about its client. */
export interface ClientFacts {
  /** The front's session (`Mcp-Session-Id`), or `null` for 2026-07-28 traffic (and before the session id is assigned). */
  session: string | null;
}

/** What every record and span of this replica carries. */
export interface RelayInit {
  readonly options: ProxyOptions;
  readonly config: ProxyConfig;
  /** This replica's name. */
  readonly replica: string;
  /** Append-only records file (`--records`), shared by every relay of the replica. */
  readonly records: WriteStream | undefined;
  readonly observer: CallObserver | undefined;
  /** Requests in flight at once in one handle (a 2025-era session's `--max-session-requests`). */
  readonly maxHandleRequests: number;
  /** Shared across the replica: requests in flight at once, both eras (`--max-requests`). */
  readonly inFlight: InFlightGauge;
  readonly log: (text: string) => void;
  /** Removes secrets (the upstream's `--header` values, the front's token) from text a client may see. */
  readonly redact: Redact;
}

/** Requests in flight on a replica, against its limit. */
export class InFlightGauge {
  count = 0;
  readonly #limit: number;
  readonly #idle: Array<() => void> = [];
  constructor(limit: number) {
    this.#limit = limit;
  }
  get full(): boolean {
    return this.count >= this.#limit;
  }
  add(): void {
    this.count++;
  }
  remove(): void {
    this.count--;
    if (this.count === 0) for (const wake of this.#idle.splice(0)) wake();
  }
  /** Resolves when nothing is in flight. */
  idle(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise((resolve) => this.#idle.push(resolve));
  }
}

interface Pending {
  readonly handle: ClientHandle;
  readonly clientId: Id;
  readonly method: string;
  readonly clientToken: Id | undefined;
  /** It asked for a task (rule 35): a cancel before its `CreateTaskResult` becomes `tasks/cancel` once it comes. */
  augmented?: true;
}

/** The client's facts kept with a record after its request settled, for its later revisions. */
interface Remembered {
  readonly clientId: Id;
  readonly session: string | null;
}

/** A relay refused a request before sending it; the message goes to the client as the JSON-RPC error. */
export class NotSentError extends Error {
  override name = "NotSentError" as const;
}

/**
 * One upstream connection (a stdio server, or a Streamable HTTP server) and the clients on it.
 * `start()` once, `open()` a handle per client, `close()` at the end; `onclose` when the upstream
 * ended by itself (the server exited, the connection was lost).
 */
export class Relay<T extends TransportLike = TransportLike> {
  onclose?: (() => void) | undefined;
  readonly #init: RelayInit;
  readonly #upstream: Upstream<T>;
  readonly #transport: MessageTransport<T>;
  readonly #pending = new Map<Id, Pending>();
  readonly #byToken = new Map<string, Pending>();
  readonly #remembered = new BoundedMap<Id, Remembered>(MAX_REMEMBERED);
  /** The records file's writer (`--records`), or `undefined`. */
  readonly #writeLine: ((record: RunRecord) => void) | undefined;
  /**
   * The record written when the upstream answered a request, by upstream id, from that settle
   * until the answer is handed to its client (`#fromServer`, the same turn): revised when the
   * answer's write did not complete.
   */
  readonly #answered = new Map<Id, RunRecord>();
  /** What the front learned of records after they were written (an answer its client never got), for their later revisions. */
  readonly #front = new FrontRevisions();
  /** The last line written of each of the latest calls, by `callId`: a front revision is made from it (the library may have revised the record since its answer). */
  readonly #lastLines = new BoundedMap<number, RunRecord>(KEPT_LAST_LINES);
  readonly #perRequestLimits: boolean;
  /** Never 0: the v1 SDK server ignores a `notifications/cancelled` whose requestId is falsy (`Protocol._oncancel`: `if (!notification.params.requestId) return`), so a request with id 0 could never be cancelled. */
  #nextId = 1;
  #version: string | undefined;
  #closed = false;
  /** Counts for the end-of-life line. */
  readonly counts = { requests: 0, clientCancels: 0, ignoredCancels: 0, unknownResponses: 0, undeliverable: 0 };

  constructor(init: RelayInit, upstream: Upstream<T>) {
    this.#init = init;
    this.#upstream = upstream;
    this.#perRequestLimits = hasOverrides(init.config);
    const records = init.records;
    // An upstream may echo its --header token in an error: the record's texts are redacted as the log's are.
    const writeLine = records === undefined ? undefined : jsonLines((line) => records.write(redactJsonText(line, init.redact)));
    this.#writeLine = writeLine;
    const defaults: CancellationOptions = {
      ...baseLimits(init.config, init.options.limits),
      // The client's cancel reason was meant for the server: it goes upstream as it is.
      forwardAbortReason: true,
      maxRecords: 0,
      onAnomaly: (anomaly) => init.log(anomalyLine(anomaly, (id) => this.#pending.get(id)?.clientId ?? this.#remembered.get(id)?.clientId)),
      ...(writeLine === undefined ? {} : { onRecord: (record: RunRecord) => this.#record(record, writeLine) }),
      ...(init.observer === undefined ? {} : { observer: init.observer }),
    };
    this.#transport = new MessageTransport(upstream.adapter, {
      defaults,
      name: "mcp-cancellable proxy",
      callOptions: (method, params) => this.#callOptions(method, params),
      respond: (error) =>
        proxyErrorResponse(
          error,
          (record) => this.#withClient(record),
          error.record.requestId !== null && this.#pending.get(error.record.requestId)?.augmented === true,
        ),
    });
    this.#transport.onmessage = (message) => this.#fromServer(message);
    this.#transport.onerror = (error) => init.log(`upstream: ${init.redact(error.message)}`);
    this.#transport.onclose = () => this.#upstreamClosed();
    upstream.onInvalid?.((line, why) =>
      init.log(`the server wrote a malformed line (${why}), dropped: ${line.length > 200 ? `${line.slice(0, 200)}...` : line}`),
    );
  }

  /** Starts the upstream (spawns the stdio server). @throws what the transport's start throws. */
  start(): Promise<void> {
    return this.#transport.start();
  }

  /** A new client on this upstream. */
  open(port: ClientPort, facts: ClientFacts): ClientHandle {
    return new ClientHandle(this, port, facts, this.#init.maxHandleRequests);
  }

  /** Requests in flight on this upstream. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** What ended the upstream, for the log. */
  ended(): { message: string; code: number } {
    return this.#upstream.ended();
  }

  /** Closes the upstream (a stdio server: stdin closed, then SIGTERM and SIGKILL to its process group). Cancel what is in flight first (`ClientHandle.close`). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#transport
      .close()
      .catch((error: unknown) => this.#init.log(`closing the upstream: ${this.#init.redact((error as Error).message)}`));
  }

  // ---- client -> server (called by ClientHandle) ----------------------------------------------

  /** @internal A client request, sent upstream under a fresh id of the relay's. */
  request(handle: ClientHandle, message: JsonRpcMessage, method: string, clientId: Id): void {
    this.counts.requests++;
    const upstreamId = this.#nextId++;
    const params = (message as { params?: unknown }).params;
    const { meta, clientToken, version } = requestMeta(params);
    if (version !== undefined && version !== this.#version) {
      this.#version = version;
      this.#transport.setProtocolVersion(version);
    }
    const pending: Pending = {
      handle,
      clientId,
      method,
      clientToken,
    };
    if (isTaskAugmented(message as Message)) pending.augmented = true;
    const forward: JsonRpcMessage = { ...message, id: upstreamId };
    if (pending.clientToken !== undefined && method !== "initialize") {
      const token = proxyToken(upstreamId);
      this.#byToken.set(token, pending);
      forward.params = { ...(params as Record<string, unknown>), _meta: { ...meta, progressToken: token } };
    }
    this.#pending.set(upstreamId, pending);
    handle.bind(clientId, upstreamId);
    this.#init.inFlight.add();
    if (this.#init.records !== undefined || this.#init.observer !== undefined) {
      this.#remembered.set(upstreamId, { clientId, session: handle.facts.session });
    }
    this.#verbose("client->server", message, upstreamId);
    const facts = { clientRequestId: clientId, clientSession: handle.facts.session, era: "2026-07-28" } as const;
    // No signal: a cancel ends it by id (`MessageTransport.cancel`), no AbortController per request.
    const sent = withCallFacts(facts, () => this.#transport.send(forward));
    sent.catch((error: unknown) => {
      // initialize (not a call: nothing answers it for us), or an option the runner refused.
      if (!this.#pending.has(upstreamId)) return;
      this.#forget(upstreamId);
      handle.port.deliver(
        {
          jsonrpc: "2.0",
          id: clientId,
          error: {
            code: CONNECTION_CLOSED_ERROR_CODE,
            message: `mcp-cancellable proxy: ${method} failed between the proxy and the server (${this.#init.redact((error as Error).message)})`,
          },
        },
        clientId,
      );
    });
  }

  /** @internal Cancels one request upstream (by id: the library sends the upstream's cancel). Returns false when it is not in progress. */
  cancel(upstreamId: Id, reason: string, answer?: DrainAnswer): boolean {
    const pending = this.#pending.get(upstreamId);
    if (pending === undefined) return false;
    if (pending.method === "initialize") return false; // rule 39: never cancelled
    if (this.#init.options.verbose)
      this.#init.log(
        `client->proxy cancel of ${pending.method} id ${JSON.stringify(pending.clientId)} (upstream ${upstreamId}): ${reason}`,
      );
    // Cancelled first (the record is written as it settles, with the client's facts), then
    // answered with that record: the answer says what went upstream, as a lost connection's does.
    const cancelled = this.#transport.cancel(upstreamId, reason);
    const record = answer === undefined ? null : (cancelled?.record ?? null);
    const withClient = record === null ? null : this.#withClient(record);
    this.#forget(upstreamId);
    if (answer !== undefined) {
      pending.handle.port.deliver({ jsonrpc: "2.0", id: pending.clientId, error: answer(pending.method, withClient) }, pending.clientId);
    }
    return true;
  }

  /** @internal A notification, or an answer to the server's own request: as it is (ids in the server's space). */
  forward(message: JsonRpcMessage): Promise<void> {
    this.#verbose("client->server", message);
    return this.#transport.send(message).catch((error: unknown) => {
      const method = (message as { method?: unknown }).method;
      this.#init.log(`could not relay a ${String(method ?? "response")} to the server: ${this.#init.redact((error as Error).message)}`);
    });
  }

  // ---- server -> client -------------------------------------------------------------------------

  #fromServer(message: JsonRpcMessage): void {
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (method === undefined && (typeof id === "string" || typeof id === "number")) {
      const pending = this.#pending.get(id);
      if (pending === undefined) {
        this.counts.unknownResponses++;
        this.#init.log(`the server answered id ${JSON.stringify(id)}, which is no request in progress: dropped`);
        return;
      }
      if (this.#init.options.verbose) {
        const own = ownAnswerNote(message);
        this.#verbose(own === undefined ? "server->client" : "proxy->client", { ...message, id: pending.clientId }, id, own);
      }
      const record = this.#answered.get(id);
      this.#forget(id);
      if (pending.method === "initialize") this.#noteVersion(message);
      const written: AnswerWritten | undefined =
        record === undefined ? undefined : (unwritten) => unwritten !== undefined && this.#unwritten(record, message, unwritten);
      pending.handle.port.deliver({ ...message, id: pending.clientId }, pending.clientId, written);
      return;
    }
    // A message of a `subscriptions/listen` stream names its listen (rule 33): it goes to the
    // client whose listen it is, under that client's id.
    const params = (message as { params?: unknown }).params;
    const meta = isObject(params) && isObject(params._meta) ? params._meta : undefined;
    const subscription = meta?.[SUBSCRIPTION_ID_META];
    const listen = typeof subscription === "string" || typeof subscription === "number" ? this.#pending.get(subscription) : undefined;
    if (listen !== undefined) {
      if (this.#init.options.verbose)
        this.#verbose("server->client", message, undefined, `on the client's listen ${JSON.stringify(listen.clientId)}`);
      listen.handle.port.deliver(
        { ...message, params: { ...(params as Record<string, unknown>), _meta: { ...meta, [SUBSCRIPTION_ID_META]: listen.clientId } } },
        listen.clientId,
      );
      return;
    }
    this.counts.undeliverable++;
    if (typeof method === "string" && (typeof id === "string" || typeof id === "number")) {
      // No client to ask: 2026-07-28 servers send no requests on a request's stream (rule 29).
      void this.forward({
        jsonrpc: "2.0",
        id,
        error: {
          code: -32601,
          message: `mcp-cancellable proxy: ${method} has no client to go to (the 2026-07-28 front relays no server requests)`,
        },
      });
    }
    if (this.#init.options.verbose) this.#init.log(`server->nobody ${String(method)}: no client stream for it, dropped`);
  }

  #verbose(direction: string, message: JsonRpcMessage, upstreamId?: Id, note?: string): void {
    if (this.#init.options.verbose) this.#init.log(verboseLine(direction, message, upstreamId, note));
  }

  #noteVersion(message: JsonRpcMessage): void {
    const result = (message as { result?: unknown }).result;
    if (isObject(result) && typeof result.protocolVersion === "string") {
      this.#version = result.protocolVersion;
      this.#transport.setProtocolVersion(result.protocolVersion);
    }
  }

  #callOptions(method: string, params: Record<string, unknown>): Omit<CallOptions, "signal"> | undefined {
    // Built-in limits (server/discover's: a handshake) hold without a config file too, as in the stdio proxy.
    const limits =
      this.#perRequestLimits || hasBuiltInLimits(method)
        ? entryLimits(this.#init.config, this.#init.options.limits, method, nameOf(params))
        : undefined;
    const meta = params._meta;
    const token = isObject(meta) ? meta.progressToken : undefined;
    const pending = typeof token === "string" ? this.#byToken.get(token) : undefined;
    if (pending === undefined) return limits;
    const clientToken = pending.clientToken!;
    return {
      ...limits,
      onprogress: (progress: Progress) => {
        const message: JsonRpcMessage = {
          jsonrpc: "2.0",
          method: "notifications/progress",
          params: { progressToken: clientToken, ...progress },
        };
        if (this.#init.options.verbose)
          this.#verbose(
            "server->client",
            message,
            undefined,
            `for id ${JSON.stringify(pending.clientId)} (upstream progress token ${JSON.stringify(token)})`,
          );
        pending.handle.port.deliver(message, pending.clientId);
      },
    };
  }

  /** A record to the records file; one of a request the upstream answered is kept until its answer is handed to the client. */
  #record(record: RunRecord, writeLine: (record: RunRecord) => void): void {
    const line: RunRecord = this.#front.apply(Object.assign(this.#withClient(record), { proxyPid: process.pid }));
    this.#lastLines.set(line.callId, line);
    const id = record.requestId;
    if (id !== null && record.status !== "cancelled" && this.#pending.has(id)) this.#answered.set(id, line);
    writeLine(line);
  }

  /**
   * The upstream answered, but its answer was not written whole to the client: the client's
   * response stream closed first. On 2026-07-28 that close is the client's cancel (rule 6), as
   * when it comes before the answer: the record becomes the cancel, with nothing sent upstream
   * (the server had answered, rule 9) and the answer discarded, which no client got (rule 27: it
   * re-issues the request). Written as the record's next revision.
   */
  #unwritten(record: RunRecord, message: JsonRpcMessage, error: string): void {
    const isError = "error" in message;
    // The library's later revisions of this record (a server answering twice) carry it too.
    const revised = this.#front.revise(this.#lastLines.get(record.callId) ?? record, (line) => {
      const late = line.late;
      const cancelled: RunRecord = Object.assign(line, {
        status: "cancelled",
        cancel: { trigger: "aborted", reason: STREAM_CLOSED_REASON, mechanism: "none", sentAt: null, undelivered: null },
        outcome: "late-result-discarded",
        error: null,
        late: { ...late, results: late.results + (isError ? 0 : 1), errors: late.errors + (isError ? 1 : 0) },
        answerUndelivered: { error, resumable: false },
      } as const);
      cancelled.summary = summarize(cancelled);
      return cancelled;
    });
    if (this.#init.options.verbose)
      this.#init.log(`the answer to upstream id ${JSON.stringify(record.requestId)} was not written: ${error}`);
    this.#writeLine?.(revised);
  }

  /** The record with what the front knows: the client's id of the request, its session, the replica. */
  #withClient(record: RunRecord): RunRecord {
    const id = record.requestId;
    const pending = id === null ? undefined : this.#pending.get(id);
    const known =
      pending === undefined
        ? id === null
          ? undefined
          : this.#remembered.get(id)
        : { clientId: pending.clientId, session: pending.handle.facts.session };
    return Object.assign(
      {},
      record,
      known === undefined
        ? { replica: this.#init.replica }
        : { clientRequestId: known.clientId, clientSessionId: known.session, replica: this.#init.replica },
    );
  }

  /** @internal The client facts of an upstream request id in flight or remembered (spans). */
  factsOf(upstreamId: Id): Remembered | undefined {
    const pending = this.#pending.get(upstreamId);
    return pending === undefined ? this.#remembered.get(upstreamId) : { clientId: pending.clientId, session: pending.handle.facts.session };
  }

  #forget(upstreamId: Id): void {
    const pending = this.#pending.get(upstreamId);
    if (pending === undefined) return;
    this.#pending.delete(upstreamId);
    this.#answered.delete(upstreamId);
    this.#init.inFlight.remove();
    pending.handle.unbind(pending.clientId, upstreamId);
    if (pending.clientToken !== undefined) this.#byToken.delete(proxyToken(upstreamId));
  }

  #upstreamClosed(): void {
    // The library answered every call in flight (-32000) as the connection closed; what is left
    // (initialize) is answered here, at once.
    for (const [upstreamId, pending] of [...this.#pending]) {
      this.#forget(upstreamId);
      pending.handle.port.deliver(
        {
          jsonrpc: "2.0",
          id: pending.clientId,
          error: {
            code: CONNECTION_CLOSED_ERROR_CODE,
            message: `mcp-cancellable proxy: the connection to the server was lost before ${pending.method} was answered; not retried`,
          },
        },
        pending.clientId,
      );
    }
    const wasClosed = this.#closed;
    this.#closed = true;
    if (!wasClosed) this.onclose?.();
  }
}

/** One client on a relay: its id space and its requests in flight. */
export class ClientHandle {
  readonly port: ClientPort;
  readonly facts: ClientFacts;
  readonly #relay: Relay;
  readonly #max: number;
  /** Client id -> upstream id, requests in progress. */
  readonly #byClientId = new Map<Id, Id>();
  /** Messages held while `notifications/initialized` is on its way upstream (see `fromClient`). */
  #held: JsonRpcMessage[] | undefined;
  closed = false;

  constructor(relay: Relay, port: ClientPort, facts: ClientFacts, max: number) {
    this.#relay = relay;
    this.port = port;
    this.facts = facts;
    this.#max = max;
  }

  get pendingCount(): number {
    return this.#byClientId.size;
  }

  /**
   * A message from the client, in the client's order. What follows `notifications/initialized`
   * waits until it is sent upstream, as the SDK client's `connect` does, so that no request
   * reaches the server before it.
   */
  fromClient(message: JsonRpcMessage): void {
    if (this.closed) return;
    if (this.#held !== undefined) {
      this.#held.push(message);
      return;
    }
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (typeof method === "string" && (typeof id === "string" || typeof id === "number")) {
      this.#request(message, method, id);
      return;
    }
    if (method === "notifications/cancelled") {
      this.#cancelFromClient(message);
      return;
    }
    const sent = this.#relay.forward(message);
    if (method === "notifications/initialized") {
      const held: JsonRpcMessage[] = [];
      this.#held = held;
      void sent.then(() => {
        this.#held = undefined;
        for (const next of held) this.fromClient(next);
      });
    }
  }

  #request(message: JsonRpcMessage, method: string, clientId: Id): void {
    const refuse = (code: number, text: string): void =>
      this.port.deliver({ jsonrpc: "2.0", id: clientId, error: { code, message: `mcp-cancellable proxy: ${text}` } }, clientId);
    if (this.#byClientId.has(clientId)) {
      // Rule 1: an id must not match another request still unanswered.
      refuse(
        INVALID_REQUEST_CODE,
        `Invalid Request: id ${JSON.stringify(clientId)} is already used by a request in progress (rule 1 in docs/spec-rules.md)`,
      );
      return;
    }
    if (this.#byClientId.size >= this.#max) {
      refuse(
        CONNECTION_CLOSED_ERROR_CODE,
        `${method} refused, not sent: this session has ${this.#max} requests in flight (--max-session-requests)`,
      );
      return;
    }
    if (this.#relay.closed) {
      refuse(CONNECTION_CLOSED_ERROR_CODE, `${method} refused, not sent: the connection to the server is closed`);
      return;
    }
    this.#relay.request(this, message, method, clientId);
  }

  /** A 2025-era client's `notifications/cancelled`: carried upstream by the upstream's mechanism, under the upstream id. Names only this client's own requests. */
  #cancelFromClient(message: JsonRpcMessage): void {
    const params = (message as { params?: unknown }).params;
    const requestId = isObject(params) ? params.requestId : undefined;
    const reason =
      isObject(params) && typeof params.reason === "string" && params.reason !== "" ? params.reason : "Cancelled by the client";
    const upstreamId = typeof requestId === "string" || typeof requestId === "number" ? this.#byClientId.get(requestId) : undefined;
    // Rule 10: a cancel for nothing in progress (answered already, never sent, another client's) is ignored.
    if (upstreamId !== undefined && this.#relay.cancel(upstreamId, reason)) this.#relay.counts.clientCancels++;
    else this.#relay.counts.ignoredCancels++;
  }

  /** @internal */
  bind(clientId: Id, upstreamId: Id): void {
    this.#byClientId.set(clientId, upstreamId);
  }

  /** @internal */
  unbind(clientId: Id, upstreamId: Id): void {
    if (this.#byClientId.get(clientId) === upstreamId) this.#byClientId.delete(clientId);
  }

  /**
   * The client is gone (its 2026-07-28 response stream closed, its session ended): every request
   * of its in flight is cancelled upstream with `reason`. With `answer`, each is first answered
   * with that error (a drain: the client is still there to read it).
   */
  close(reason: string, answer?: DrainAnswer): void {
    if (this.closed) return;
    this.closed = true;
    this.#held = undefined;
    for (const upstreamId of [...this.#byClientId.values()]) this.#relay.cancel(upstreamId, reason, answer);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
