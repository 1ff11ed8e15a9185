// `mcp-cancellable proxy --listen <host:port>`: the proxy's Streamable HTTP front, both eras.
//
// The HTTP protocol layers are the SDKs' own, composed the way the v2 server documents for a
// hand-wired dual-era endpoint ("route in user land with isLegacyRequest in front of ..."):
// - node:http in front, each response written as the v2 Node adapter's `toNodeHandler` writes it
//   (the request's signal aborts when the client's connection closes); a 2025-era request's web
//   `Request` is made by that adapter's `toWebRequest`, while a 2026-07-28 one needs none (see
//   `route`: about 7 KB less per request in flight);
// - `classifyInboundRequest` (@modelcontextprotocol/server, the predicate behind
//   `createMcpHandler` and `isLegacyRequest`) decides the era;
// - 2026-07-28: the v2 server decides and checks (`classifyInboundRequest`), and the exchange is
//   written as its single-exchange `PerRequestHTTPServerTransport` writes one in its "sse" mode,
//   by `SseExchange` (exchange.ts) straight to the node response: that transport's web
//   `Response`, stream and timer held 6.6 KB of each request in flight (bench/front.ts).
//   `createMcpHandler` itself cannot be used, since it builds a server instance per request from
//   a factory and answers `server/discover` from that instance's own capabilities, where a proxy
//   must relay the upstream's answer as it is;
// - 2025-era: the v1 SDK's `WebStandardStreamableHTTPServerTransport` (what its Node
//   `StreamableHTTPServerTransport` wraps), one per session, with sessions, GET streams, DELETE
//   and `Last-Event-ID` resumption from a bounded event store.
// What the SDKs cannot do is ours, and small: a client's closed response stream seen as its
// cancel (the transport's `onclose`), per-request limits and records (the relay, the library),
// the SEP-2243 header presence check (the v2 server's own is not exported), and the guards.
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { TransportLike } from "../../../adapters/types.js";
import { CONNECTION_CLOSED_ERROR_CODE } from "../../../runner/message-transport.js";
import type { JsonRpcMessage, LibraryErrorResponse } from "../../../runner/message-transport.js";
import type { RunRecord } from "../../../types/record.js";
import type { CallObserver } from "../../../types/options.js";
import type { ProxyOptions } from "../args.js";
import { loadConfig, NO_CONFIG } from "../config.js";
import type { ProxyConfig } from "../config.js";
import { serverRequestStreams } from "../../../sdk/private.js";
import { MissingSdkError } from "../http.js";
import { openRecords } from "../proxy.js";
import { INVALID_REQUEST_CODE, isRequestId, ProxySession, SHUTDOWN_BOUND_MS } from "../session.js";
import type { EndSignal, Outbound, Upstream } from "../session.js";
import type { ListenOptions } from "./args.js";
import { SessionEventStore } from "./event-store.js";
import { ANSWER_CUT, SseExchange, STREAM_CLOSED_REASON, watchAnswer } from "./exchange.js";
import { checkHost, checkOrigin, checkToken, headerSecrets, redactMessage, redactor } from "./guard.js";
import type { Refusal } from "./guard.js";
import { InFlightGauge, Relay } from "./relay.js";
import type { ClientHandle, Id } from "./relay.js";
import { recordsFor } from "./records.js";
import type { AnswerFate } from "./records.js";
import type { SessionRecords } from "./records.js";
import { setReplica, withCallFacts } from "./spans.js";

/** The revisions the 2026-07-28 leg serves. */
export const MODERN_PROTOCOL_VERSIONS = ["2026-07-28"] as const;
export { STREAM_CLOSED_REASON } from "./exchange.js";
/** The reason sent upstream for requests of a 2025-era session that ended (DELETE, idle expiry). */
export const SESSION_ENDED_REASON = "The client's session ended (mcp-cancellable proxy)";
/** What a drain's answers, cancel reasons and logs say of it, in both eras (outside testers': each era said it its own way). */
export function drainWhy(signal: EndSignal, drainMs: number): string {
  return `this replica is shutting down (${signal}; --drain-ms ${drainMs} ms)`;
}

type V1Server = typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js");
type V2Server = typeof import("@modelcontextprotocol/server");
type V2Node = typeof import("@modelcontextprotocol/node");
type LegacyTransport = InstanceType<V1Server["WebStandardStreamableHTTPServerTransport"]>;

/** What runs the front needs from outside: the log, the observer, the upstream maker. */
export interface FrontIo {
  log(text: string): void;
  readonly observer?: CallObserver | undefined;
  /** A new upstream connection for one era's traffic; `undefined` when the upstream does not speak that era. */
  makeUpstream(era: "legacy" | "2026-07-28"): Promise<Upstream<TransportLike>> | undefined;
  /** Exports the spans left (`--otel`) within `budgetMs`; the drain calls it while the servers are stopped. Never rejects. */
  readonly flush?: ((budgetMs: number) => Promise<void>) | undefined;
}

/** A running front. */
export interface Front {
  readonly url: URL;
  /**
   * Stop taking new sessions and requests; wait for what is in flight at most `--drain-ms`, cancel the rest upstream; close everything. Idempotent.
   * @param signal the signal that stopped the replica (default SIGTERM), named in the refusals while
   *   draining and, for 2025-era sessions, in the -32000 answers, the records' cancel reasons and the
   *   log. The first call's signal holds.
   */
  drain(signal?: EndSignal): Promise<void>;
  /** What the front holds now (tests, the bench). */
  stats(): { sessions: number; inFlight: number; exchanges: number; sharedRelay: boolean };
}

/** A 2025-era session: the v1 SDK server transport for its client, a `ProxySession` (the stdio front's own) over its own upstream. */
interface Session {
  id: string | undefined;
  readonly transport: LegacyTransport;
  proxy: ProxySession<TransportLike> | undefined;
  lastActive: number;
  closed: boolean;
  /** Stop passing the client's messages on (the session is ending). */
  reading: boolean;
  /** The session's events kept for resumption, when `--events-per-session` is above 0. */
  events: SessionEventStore | undefined;
  /** The event ids of the streams the front ended after their request's cancel: a resume from one gets 204, nothing to replay (newest 4,096). */
  ended: Set<string>;
  /** The ids of the client's latest requests (`SEEN_IDS`): a cancel naming one is not early. */
  seen: Set<Id>;
  /** Cancels that came before their request (`EARLY_CANCEL_MS`, at most `EARLY_CANCELS`). */
  early: Map<Id, { message: JsonRpcMessage; at: number }>;
  /**
   * With `--records`: the response (POST) whose stream carries each request's answer, until the
   * answer is sent, `null` once that response closed (`SEEN_IDS` at most).
   */
  answering: Map<Id, http.ServerResponse | null> | undefined;
  /**
   * With `--records`: the GET responses that resumed a stream (`Last-Event-ID`), by stream id,
   * while open, in the order they came: an answer on that stream is written on the first (the
   * SDK's transport holds a later one until the first closes, then replays to it).
   */
  resumed: Map<string, http.ServerResponse[]> | undefined;
}

/** How long a 2025-era cancel that overtook its request waits for it, in ms. */
const EARLY_CANCEL_MS = 5_000;
/** At most this many such cancels wait in a session (the oldest goes first). */
const EARLY_CANCELS = 256;
/** Request ids a session remembers as seen. */
const SEEN_IDS = 1_024;
/** How long a refused connection's status line may take to leave before the socket is destroyed anyway, ms. */
const CLIENT_ERROR_LINGER_MS = 1_000;

/** Adds `value` to `set`, dropping the oldest beyond `max`. */
function bounded<T>(set: Set<T>, value: T, max: number): void {
  set.add(value);
  if (set.size > max) set.delete(set.values().next().value!);
}

async function loadSdks(): Promise<{ v1: V1Server; v2: V2Server; node: V2Node }> {
  const need = (name: string) =>
    new MissingSdkError(`--listen needs ${name}: npm install @modelcontextprotocol/server @modelcontextprotocol/node`);
  let v2: V2Server;
  let node: V2Node;
  try {
    v2 = await import("@modelcontextprotocol/server");
  } catch {
    throw need("@modelcontextprotocol/server");
  }
  try {
    node = await import("@modelcontextprotocol/node");
  } catch {
    throw need("@modelcontextprotocol/node");
  }
  const v1 = await import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js");
  return { v1, v2, node };
}

/**
 * Starts the HTTP front and resolves once it accepts connections (after writing the
 * `listening on` line).
 * @throws {ConfigError} a bad `--config`; {RecordsFileError}; {MissingSdkError}; the listen error (`EADDRINUSE`, ...).
 */
export async function startFront(options: ProxyOptions, listen: ListenOptions, io: FrontIo): Promise<Front> {
  const config: ProxyConfig = options.config === undefined ? NO_CONFIG : loadConfig(options.config);
  const { v1, v2, node } = await loadSdks();
  const records =
    options.records === undefined
      ? undefined
      : await openRecords(options.records, (text) => io.log(`mcp-cancellable proxy [${listen.replica}]: ${text}\n`));
  const upstreamSecrets = options.upstream.kind === "http" ? headerSecrets(options.upstream.headers) : [];
  const redact = redactor([...upstreamSecrets, ...(listen.token === undefined ? [] : [listen.token])]);
  const log = (text: string): void => io.log(`mcp-cancellable proxy [${listen.replica}]: ${redact(text)}\n`);
  const inFlight = new InFlightGauge(Number.MAX_SAFE_INTEGER);
  setReplica(listen.replica);
  const relayInit = {
    options,
    config,
    replica: listen.replica,
    records,
    observer: io.observer,
    maxHandleRequests: 1,
    inFlight,
    log,
    redact,
  };

  const sessions = new Map<string, Session>();
  let opening = 0;
  /** 2026-07-28 exchanges in flight (their handles), for the drain and the keep-alive frames. */
  const exchanges = new Map<ClientHandle, SseExchange>();
  let shared: Promise<Relay> | undefined;
  let draining = false;
  /** The signal the drain was started by, named in what the drain says (refusals, answers, records). */
  let stopSignal: EndSignal = "SIGTERM";
  let drained: Promise<void> | undefined;

  // ---- the upstreams ---------------------------------------------------------------------------

  /** The one upstream of 2026-07-28 traffic, started on first use and again after it ended. */
  function sharedRelay(): Promise<Relay> | undefined {
    if (shared !== undefined) return shared;
    const made = io.makeUpstream("2026-07-28");
    if (made === undefined) return undefined;
    const starting = (async () => {
      const relay = new Relay(relayInit, await made);
      let started = false;
      relay.onclose = () => {
        // One that never started was told as such, by the start's failure (below).
        if (started) log(`the 2026-07-28 upstream ended (${relay.ended().message}); the next request starts a new one`);
        if (shared === starting) shared = undefined;
      };
      await relay.start();
      started = true;
      return relay;
    })();
    shared = starting;
    starting.catch(() => {
      if (shared === starting) shared = undefined;
    });
    return starting;
  }

  // ---- 2026-07-28 ---------------------------------------------------------------------------------

  async function serveModern(route: ModernRoute, request: Request, res: http.ServerResponse): Promise<Response | undefined> {
    if (route.messageKind === "notification") {
      // 2026-07-28 defines no client-to-server notifications over Streamable HTTP (rule 28): accepted and dropped.
      return new Response(null, { status: 202 });
    }
    const message = route.message as JsonRpcMessage & { id: Id; method: string };
    const revision = route.classification.revision;
    if (revision === undefined || !(MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(revision)) {
      return rpcError(400, -32022, `Unsupported protocol version: ${revision ?? "none named"}`, message.id, {
        supported: [...MODERN_PROTOCOL_VERSIONS],
        requested: revision ?? "unknown",
      });
    }
    const headerProblem = standardHeaderProblem(request, message);
    if (headerProblem !== undefined) return rpcError(400, -32020, `Bad Request: ${headerProblem}`, message.id);
    if (draining)
      return notSent(message.id, `${message.method} refused, not sent: this replica is draining (${stopSignal}); send it again`);
    if (inFlightNow() >= listen.maxRequests) {
      return notSent(
        message.id,
        `${message.method} refused, not sent: this replica has ${listen.maxRequests} requests in flight (--max-requests)`,
      );
    }
    const starting = sharedRelay();
    if (starting === undefined) {
      return rpcError(
        400,
        -32022,
        "Unsupported protocol version: the upstream server speaks the 2025 era only (--era legacy)",
        message.id,
        {
          supported: v2.SUPPORTED_PROTOCOL_VERSIONS.filter((v) => v.startsWith("2025-")),
          requested: revision,
        },
      );
    }
    let relay: Relay;
    try {
      relay = await starting;
    } catch (error) {
      return rpcError(
        502,
        CONNECTION_CLOSED_ERROR_CODE,
        `mcp-cancellable proxy: the server could not be started (${(error as Error).message})`,
        message.id,
      );
    }
    // The response is an SSE stream from the start (its headers go out at once): a replica lost
    // mid-call is then a response stream broken before its answer, which a client reads as the
    // request lost (rule 27; the library: connection closed, -32000), where a load balancer
    // would otherwise answer a request whose headers never came with its own 502 page.
    if (res.destroyed) return undefined;
    const exchange = new SseExchange(res, message.id);
    const handle = relay.open(
      { deliver: (out, related, written) => exchange.send(redactMessage(out, redact), related, written) },
      { session: null },
    );
    exchanges.set(handle, exchange);
    // The exchange ended: after its answer (nothing left in flight), or because the client closed
    // its response stream, which on 2026-07-28 is its cancel (rule 6): carried upstream by the
    // upstream's own mechanism, under the upstream id.
    exchange.onend = (byClient) => {
      exchanges.delete(handle);
      if (byClient) handle.close(STREAM_CLOSED_REASON);
    };
    exchange.open();
    handle.fromClient(message);
    return undefined;
  }

  // ---- 2025-era sessions ------------------------------------------------------------------------

  async function serveLegacy(request: Request, body: unknown, res?: http.ServerResponse): Promise<Response> {
    const sid = request.headers.get("mcp-session-id");
    if (sid !== null) {
      const session = sessions.get(sid);
      if (session === undefined) return rpcError(404, -32001, "Session not found", echoId(body));
      session.lastActive = performance.now();
      if (draining && isRequest(body)) return notSent(echoId(body), `refused, not sent: this replica is draining (${stopSignal})`);
      const revision = request.headers.get("mcp-protocol-version");
      if (Array.isArray(body) && revision !== null && revision > "2025-03-26") {
        // 2025-06-18 removed JSON-RPC batching: a POST body is one message (its changelog; the
        // transport page's "a single JSON-RPC request, notification, or response"). None of it is sent.
        return rpcError(
          400,
          INVALID_REQUEST_CODE,
          `Invalid Request: JSON-RPC batches are not part of protocol ${revision} (only 2025-03-26 has them); no message of the batch was sent`,
          null,
          undefined,
          { "mcp-session-id": sid },
        );
      }
      // Rule 1. Answered here, not by the session: the v1 transport maps a request id to one
      // response stream, so a second request under the same id would take the first one's
      // stream, and the first request's answer would then have nowhere to go.
      const reused = reusedId(body, (id) => session.proxy?.inProgress(id) === true);
      if (reused !== undefined) {
        const message = `Invalid Request: id ${JSON.stringify(reused)} is already used by a request in progress (rule 1 in docs/spec-rules.md)`;
        if (!Array.isArray(body)) {
          return Response.json(
            { jsonrpc: "2.0", id: reused, error: { code: INVALID_REQUEST_CODE, message } },
            { headers: { "mcp-session-id": sid } },
          );
        }
        // A batch is refused whole: none of it is sent.
        return rpcError(400, INVALID_REQUEST_CODE, `${message} (or twice in this batch): no request of the batch was sent`, null);
      }
      const resumed = request.method === "GET" ? request.headers.get("last-event-id") : null;
      // The stream of a cancelled request: nothing will come on it (rule 11), so nothing is held open.
      if (resumed !== null && session.ended.has(resumed)) return new Response(null, { status: 204, headers: { "mcp-session-id": sid } });
      // An event the session no longer keeps (or never sent): the SDK's transport would answer
      // only "Invalid event ID format" (an outside tester's: the same text as for garbage).
      if (resumed !== null && session.events !== undefined && session.events.streamIdOf(resumed) === undefined) {
        return rpcError(
          400,
          -32000,
          `Bad Request: Last-Event-ID ${JSON.stringify(resumed)} is not among this session's events: it was never sent, or it is older than the newest --events-per-session (${listen.eventsPerSession}) kept`,
          null,
          undefined,
          { "mcp-session-id": sid },
        );
      }
      if (res !== undefined && session.answering !== undefined) noteAnswering(session.answering, body, res);
      if (res !== undefined && resumed !== null) noteResumed(session, resumed, res);
      return session.transport.handleRequest(request, body === undefined ? undefined : { parsedBody: body });
    }
    if (request.method === "POST" && v2.isInitializeRequest(body as never)) return newSession(request, body);
    if (request.method !== "POST") return rpcError(405, -32000, "Method not allowed.", null, undefined, { allow: "POST" });
    if (Array.isArray(body) && body.some((message) => v2.isInitializeRequest(message as never))) {
      // The 2025-03-26 lifecycle (the one revision with batches): initialize MUST NOT be part of one.
      return rpcError(400, INVALID_REQUEST_CODE, "Invalid Request: initialize must be sent alone, not in a JSON-RPC batch", null);
    }
    return rpcError(400, -32000, "Bad Request: Mcp-Session-Id header is required", echoId(body));
  }

  /** Requests in flight on this replica: the 2026-07-28 relay's and every session's. */
  function inFlightNow(): number {
    let count = inFlight.count;
    for (const session of sessions.values()) count += session.proxy?.pendingCount ?? 0;
    return count;
  }

  /** A message from a session's client: a request over a limit is answered here (never sent); the rest goes to its ProxySession. */
  function fromSessionClient(session: Session, message: JsonRpcMessage): void {
    if (!session.reading || session.proxy === undefined) return;
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (typeof method === "string" && (typeof id === "string" || typeof id === "number") && method !== "initialize") {
      const limit =
        session.proxy.pendingCount >= listen.maxSessionRequests
          ? `this session has ${listen.maxSessionRequests} requests in flight (--max-session-requests)`
          : inFlightNow() >= listen.maxRequests
            ? `this replica has ${listen.maxRequests} requests in flight (--max-requests)`
            : undefined;
      if (limit !== undefined) {
        const refusal = {
          jsonrpc: "2.0",
          id,
          error: {
            code: CONNECTION_CLOSED_ERROR_CODE,
            message: `mcp-cancellable proxy: ${method} refused, not sent: ${limit}`,
            data: { code: "NOT_SENT" },
          },
        };
        void session.transport.send(refusal as never, { relatedRequestId: id }).catch(() => {});
        return;
      }
    }
    if (typeof id === "string" || typeof id === "number") {
      const proxy = session.proxy;
      withCallFacts({ clientRequestId: id, clientSession: session.id ?? null, era: "2025" }, () => proxy.receive(message));
      if (typeof method !== "string" || method === "initialize") return;
      bounded(session.seen, id, SEEN_IDS);
      const early = session.early.get(id);
      if (early === undefined) return;
      session.early.delete(id);
      // Its cancel came first (see below): it goes now, right behind the request.
      if (performance.now() - early.at <= EARLY_CANCEL_MS) fromSessionClient(session, early.message);
      return;
    }
    const cancelled = method === "notifications/cancelled" ? requestIdOf(message) : undefined;
    if (cancelled !== undefined && !session.proxy.inProgress(cancelled) && !session.seen.has(cancelled)) {
      // A cancel for a request this session has not seen yet. On stdio that cannot be (rule 7),
      // but each 2025-era HTTP message is a POST of its own, and under load the cancel's POST can
      // overtake its request's (another connection, a slower one): ignored (rule 10), the tool
      // would run to its end. Kept for EARLY_CANCEL_MS, it follows its request if that comes.
      session.early.set(cancelled, { message, at: performance.now() });
      if (session.early.size > EARLY_CANCELS) session.early.delete(session.early.keys().next().value!);
      return;
    }
    // In progress (initialize excepted: never cancelled, rule 39), or seen and held by the session
    // (never to be sent now): either way no answer will come. An answered one has no stream left.
    const running = cancelled === undefined ? undefined : session.proxy.methodInProgress(cancelled);
    const ending = cancelled !== undefined && (running === undefined ? session.seen.has(cancelled) : running !== "initialize");
    session.proxy.receive(message);
    if (ending) endCancelledStream(session, cancelled);
  }

  /**
   * A 2025-era request the client cancelled gets no answer (rule 11), so the v1 transport would
   * hold its response stream, and the connection under it, until the session ends (the v1 SDK's
   * own server does the same): a client aborting calls one after another would fill
   * `--max-connections`. The stream is ended here when that request is the only one on it (a
   * batch's stream ends with its other requests' answers), and a resume of it (GET with
   * `Last-Event-ID`, which an SDK client sends when a stream with event ids ends) gets 204.
   * The transport's map of request id to stream is not public API (`serverRequestStreams`,
   * src/sdk/private.ts): without it the stream is left as the SDK leaves it.
   */
  function endCancelledStream(session: Session, requestId: Id): void {
    const streams = serverRequestStreams(session.transport);
    const stream = streams?.get(requestId);
    if (streams === undefined || typeof stream !== "string") return;
    let shared = false;
    for (const [other, on] of streams) if (on === stream && other !== requestId) shared = true;
    if (!shared) {
      // A client resumes from the last event it read on the stream: its ids are kept, since the
      // event store may drop the events themselves before the resume comes.
      for (const eventId of session.events?.eventIdsOf(stream) ?? []) bounded(session.ended, eventId, 4_096);
      session.transport.closeSSEStream(requestId as never);
    }
    // A batch's stream ends once its requests are answered: this one no longer counts among them.
    streams.delete(requestId);
  }

  async function newSession(request: Request, body: unknown): Promise<Response> {
    if (draining) return notSent(echoId(body), `initialize refused, not sent: this replica is draining (${stopSignal}); connect again`);
    if (sessions.size + opening >= listen.maxSessions) {
      return notSent(echoId(body), `initialize refused, not sent: this replica has ${listen.maxSessions} sessions (--max-sessions)`);
    }
    opening++;
    try {
      const facts: { session: string | null } = { session: null };
      const events = listen.eventsPerSession > 0 ? new SessionEventStore(listen.eventsPerSession) : undefined;
      let session: Session | undefined;
      const transport: LegacyTransport = new v1.WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => `${listen.replica}.${randomUUID()}`,
        onsessioninitialized: (id) => {
          facts.session = id;
          if (session !== undefined && !session.closed) {
            session.id = id;
            sessions.set(id, session);
          }
        },
        onsessionclosed: () => {
          if (session !== undefined) void closeSession(session, "the client ended it (DELETE)");
        },
        ...(events === undefined ? {} : { eventStore: events }),
      });
      const made: Session = {
        id: undefined,
        transport,
        proxy: undefined,
        lastActive: performance.now(),
        closed: false,
        reading: true,
        events,
        ended: new Set(),
        seen: new Set(),
        early: new Map(),
        answering: records === undefined ? undefined : new Map(),
        resumed: records === undefined ? undefined : new Map(),
      };
      session = made;
      const upstream = await io.makeUpstream("legacy")!;
      const sessionRecords = recordsFor(records, listen.replica, facts);
      const proxy = new ProxySession({
        options,
        config,
        upstream,
        records: sessionRecords,
        extras: io.observer === undefined ? {} : { observer: io.observer },
        redact,
        log: (text) => io.log(`[${listen.replica} ${facts.session ?? "new session"}] ${redact(text)}`),
        client: {
          send: (outbound) => {
            // An answer is activity too: the session is idle only from its last message either way.
            made.lastActive = performance.now();
            const watch = sessionRecords === undefined ? undefined : answerWatch(made, sessionRecords, outbound);
            const sent = redactMessage(outbound.message, redact) as object;
            void transport
              .send(sent as never, outbound.clientRequestId === undefined ? undefined : { relatedRequestId: outbound.clientRequestId })
              .then(
                () => watch?.sent(sent),
                (error: unknown) => {
                  log(`could not write to a client: ${(error as Error).message}`);
                  watch?.unwritten((error as Error).message, made.events === undefined ? "events-off" : "refused");
                },
              );
          },
          stopReading: () => (made.reading = false),
          flush: async () => {},
        },
      });
      made.proxy = proxy;
      transport.onmessage = (inbound) => fromSessionClient(made, inbound as JsonRpcMessage);
      // The upstream ended by itself (its server exited): the session ends; the client's next request gets 404 and it initializes again.
      void proxy.done.then(() => void closeSession(made, "its server ended"));
      if (!(await proxy.start())) {
        made.closed = true;
        // Why, as a 2026-07-28 request is told (an audit's: the 2025-era answer did not say).
        const why = proxy.startFailure ?? "the server could not be started";
        return rpcError(502, CONNECTION_CLOSED_ERROR_CODE, `mcp-cancellable proxy: ${why}`, echoId(body));
      }
      // The drain began while the session opened (its server starting): the session and its
      // server go now, and its initialize, not sent yet, is refused as any during the drain (an
      // audit's: the drain did not see an opening session, which then outlived it with its server).
      if (draining) {
        await closeSession(made, "the replica shut down", stopSignal);
        return notSent(echoId(body), `initialize refused, not sent: this replica is draining (${stopSignal}); connect again`);
      }
      let response: Response;
      try {
        await transport.start();
        response = await transport.handleRequest(request, { parsedBody: body });
      } catch (error) {
        // The SDK's transport failed the session's first request: the session and its server go
        // with it (nothing else would end them: it is in no table yet, or its id was never given).
        await closeSession(made, `its initialize failed (${(error as Error).message})`);
        throw error;
      }
      if (made.id === undefined) void closeSession(made, "its initialize was refused");
      return response;
    } finally {
      opening--;
    }
  }

  /** The v1 transport answers each request of a POST on that POST's stream: kept until the answer is sent, or the stream closes. */
  function noteAnswering(answering: Map<Id, http.ServerResponse | null>, body: unknown, res: http.ServerResponse): void {
    const ids: Id[] = [];
    for (const message of Array.isArray(body) ? body : [body]) {
      const id = isRequest(message) ? (message as { id?: unknown }).id : undefined;
      if (!isRequestId(id)) continue;
      ids.push(id);
      answering.delete(id);
      answering.set(id, res);
      if (answering.size > SEEN_IDS) answering.delete(answering.keys().next().value!);
    }
    if (ids.length === 0) return;
    res.once("close", () => {
      for (const id of ids) if (answering.get(id) === res) answering.set(id, null);
    });
  }

  /** A GET that resumes a stream (`Last-Event-ID`): the answers still to come on that stream are written on `res` while it is open. */
  function noteResumed(session: Session, lastEventId: string, res: http.ServerResponse): void {
    const streamId = session.events?.streamIdOf(lastEventId);
    if (session.resumed === undefined || streamId === undefined) return;
    const resumes = session.resumed.get(streamId);
    if (resumes === undefined) session.resumed.set(streamId, [res]);
    else resumes.push(res);
    res.once("close", () => {
      const open = session.resumed?.get(streamId)?.filter((other) => other !== res);
      if (open === undefined || open.length === 0) session.resumed?.delete(streamId);
      else session.resumed!.set(streamId, open);
    });
  }

  /**
   * The answer in `outbound`, when its record was written (`--records`): watched on its POST's
   * response. A 2025-era stream cut before the answer was written whole is no cancel (rule 40):
   * the record keeps its status and says the answer was not written, and whether it is kept for
   * a resume (`Last-Event-ID`, rule 40: the session's events) or lost; unless a GET resumed that
   * stream meanwhile and is open: the transport writes the answer there, and that is watched.
   * Returns what to call once the transport took the answer (`sent`, the object it was given), and
   * when it could not take it at all (`unwritten`).
   */
  function answerWatch(
    session: Session,
    sessionRecords: SessionRecords,
    outbound: Outbound,
  ): { sent(message: object): void; unwritten(error: string, fate: AnswerFate): void } | undefined {
    const id = outbound.clientRequestId;
    const message = outbound.message as { method?: unknown };
    if (id === undefined || message.method !== undefined) return undefined;
    const res = session.answering?.get(id);
    session.answering?.delete(id);
    const line = sessionRecords.take(id);
    if (line === undefined) return undefined;
    let told = false;
    const unwritten = (error: string, fate: AnswerFate): void => {
      if (told) return;
      told = true;
      sessionRecords.unwritten(line, error, fate);
    };
    const fate: AnswerFate = session.events === undefined ? "events-off" : "resumable";
    const watch = (on: http.ServerResponse) => watchAnswer(on, (error) => error !== undefined && unwritten(error, fate));
    if (res !== undefined && res !== null) watch(res);
    const sent = (message: object): void => {
      if (res !== null) return;
      // Its stream closed before the answer came (a dropped stream, rule 40): not written on it,
      // unless a GET resumed the stream and is still open (the transport wrote it there).
      const stream = session.events?.streamOf(message);
      // The first open resume: a second GET at once is held by the transport until it closes (an
      // outside tester's: the later one was watched, and its close marked the answer unwritten).
      const live = stream === undefined ? undefined : session.resumed?.get(stream)?.[0];
      if (live === undefined || live.destroyed) unwritten(ANSWER_CUT, fate);
      else watch(live);
    };
    return { sent, unwritten };
  }

  /** Ends a session: its requests in flight cancelled upstream (by the upstream's mechanism), its streams closed, its stdio server stopped (process group). */
  /** `signal`: the replica was stopped by it (the drain); `by`: when that shutdown of the session must be over (`performance.now()` ms). */
  async function closeSession(session: Session, why: string, signal?: EndSignal, by?: number): Promise<void> {
    if (session.closed) return;
    session.closed = true;
    if (session.id !== undefined) sessions.delete(session.id);
    await session.proxy?.end(
      signal === undefined
        ? { kind: "fatal", why: `the client's session ended: ${why}` }
        : {
            kind: "signal",
            signal,
            why: drainWhy(signal, listen.drainMs),
            ...(by === undefined ? {} : { by }),
          },
    );
    await session.transport.close().catch(() => {});
    if (options.verbose) log(`session ${session.id ?? "(never opened)"} ended: ${why}`);
  }

  const sweep = setInterval(
    () => {
      const now = performance.now();
      for (const session of [...sessions.values()]) {
        if ((session.proxy?.pendingCount ?? 0) === 0 && now - session.lastActive >= listen.sessionIdleMs) {
          void closeSession(session, `idle for ${listen.sessionIdleMs} ms (--session-idle-ms)`);
        }
      }
    },
    Math.max(50, Math.min(30_000, Math.floor(listen.sessionIdleMs / 4))),
  );
  sweep.unref();
  // Keep-alive comment frames on open 2026-07-28 streams, as often as the v2 server's transport
  // sends them (its DEFAULT_SSE_KEEP_ALIVE_MS, 15 s: `--sse-keep-alive-ms`), from one timer rather
  // than one per request; and on 2025-era streams silent half that long or more (between two
  // events only), so a load balancer's read timeout longer than `--sse-keep-alive-ms` never cuts
  // a silent call (the SDK's own transport sends none: its resume then found the stream held).
  const keepAlive = setInterval(() => {
    for (const exchange of exchanges.values()) exchange.keepAlive();
  }, listen.sseKeepAliveMs);
  keepAlive.unref();
  const legacyStreams = new Set<SseWriter>();
  const legacyKeepAlive = setInterval(() => {
    const now = performance.now();
    for (const stream of legacyStreams) {
      if (now - stream.lastWrite < listen.sseKeepAliveMs / 2 || !stream.atBoundary || stream.res.writableNeedDrain) continue;
      stream.res.write(": keepalive\n\n");
      stream.lastWrite = now;
    }
  }, listen.sseKeepAliveMs / 2);
  legacyKeepAlive.unref();

  // ---- HTTP -------------------------------------------------------------------------------------

  /**
   * One request on the MCP path, in the shape `toNodeHandler` (@modelcontextprotocol/node) gives
   * it, with one difference: a 2026-07-28 POST is classified from the body read here and served
   * without a web `Request` (the single-exchange transport reads only its abort signal; a
   * `Request` with its headers and body stream is about 7 KB a request). A 2025-era request gets
   * its `Request` from the SDK's own `toWebRequest`, for the v1 transport.
   */
  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<Response | undefined> {
    const header = (name: string): string | undefined => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    let body: unknown;
    if (req.method === "POST") {
      if (!v2.isJsonContentType(header("content-type") ?? null)) {
        return rpcError(415, -32000, "Unsupported Media Type: Content-Type must be application/json", null);
      }
      const text = await readBody(req, listen.maxBodyBytes);
      try {
        body = JSON.parse(text);
      } catch {
        return rpcError(400, -32700, "Parse error: the request body is not valid JSON", null);
      }
    }
    const outcome = v2.classifyInboundRequest({
      httpMethod: req.method ?? "GET",
      ...optional("protocolVersionHeader", header("mcp-protocol-version")),
      ...optional("mcpMethodHeader", header("mcp-method")),
      ...optional("mcpNameHeader", header("mcp-name")),
      ...(body === undefined ? {} : { body }),
    });
    if (outcome.kind === "reject") return rpcError(outcome.httpStatus, outcome.code, outcome.message, echoId(body), outcome.data);
    if (outcome.kind === "modern") {
      const lite = { headers: { get: (name: string) => header(name) ?? null } } as unknown as Request;
      return serveModern(outcome as unknown as ModernRoute, lite, res);
    }
    // The v1 transport reads the client's going from the request's signal.
    const abort = new AbortController();
    if (res.destroyed) abort.abort();
    else res.on("close", () => !res.writableFinished && abort.abort());
    const webRequest = () => node.toWebRequest(req as Parameters<V2Node["toWebRequest"]>[0], body, { signal: abort.signal });
    let response = await serveLegacy(await webRequest(), body, res);
    const sessionId = header("mcp-session-id");
    if (sessionId !== undefined) {
      // A GET refused 409 (the stream it resumes, or the session's standalone stream, is still
      // held): a client that dropped it and came back at once may be here before its old
      // connection's close is read. Wait for the session's streams to be released, then again.
      const until = performance.now() + RELEASE_WAIT_MS;
      while (response.status === 409 && req.method === "GET" && !abort.signal.aborted) {
        const releasing = [...(openStreams.get(sessionId) ?? [])];
        const left = until - performance.now();
        if (releasing.length === 0 || left <= 0) break;
        await response.body?.cancel().catch(() => {});
        await Promise.race([...releasing, new Promise((resolve) => setTimeout(resolve, left))]);
        // The old stream's reader is cancelled on its close; the transport forgets it in its own
        // callbacks, before the next turn.
        await new Promise((resolve) => setImmediate(resolve));
        response = await serveLegacy(await webRequest(), body);
      }
      if (response.headers.get("content-type")?.startsWith("text/event-stream") === true) trackStream(sessionId, res);
    }
    await writeResponse(res, response, abort.signal, legacyStreams);
    return undefined;
  }

  /** The 2025-era response streams open per session: a promise each, settled when its client's connection closes. */
  const openStreams = new Map<string, Set<Promise<void>>>();
  function trackStream(sessionId: string, res: http.ServerResponse): void {
    let streams = openStreams.get(sessionId);
    if (streams === undefined) openStreams.set(sessionId, (streams = new Set()));
    const closed = new Promise<void>((resolve) => {
      const done = (): void => {
        streams.delete(closed);
        if (streams.size === 0 && openStreams.get(sessionId) === streams) openStreams.delete(sessionId);
        resolve();
      };
      if (res.destroyed) queueMicrotask(done);
      else res.once("close", done);
    });
    streams.add(closed);
  }

  /** Serves one request on the MCP path and writes its response (as `toNodeHandler` writes it: backpressure honoured, the stream cancelled when the client goes). */
  async function serveMcp(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let response: Response | undefined;
    try {
      response = await route(req, res);
    } catch (error) {
      if (error instanceof BodyTooLargeError) {
        response = rpcError(413, -32000, error.message, null, undefined, { connection: "close" });
      } else {
        log(`a request failed inside the front: ${(error as Error).message}`);
        response = rpcError(500, -32603, "Internal error", null);
      }
    }
    if (response !== undefined && !res.headersSent) await writeResponse(res, response);
  }

  const server = http.createServer(
    {
      headersTimeout: listen.headersTimeoutMs,
      requestTimeout: Math.max(listen.requestTimeoutMs, listen.headersTimeoutMs),
      keepAliveTimeout: listen.keepAliveMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(listen.headersTimeoutMs / 2))),
      maxHeaderSize: 16_384,
    },
    (req, res) => {
      const refusal = admit(req, listen, res);
      if (refusal === "health") {
        writeJson(res, 200, { status: "ok", replica: listen.replica });
        return;
      }
      if (refusal === "preflight") {
        res.writeHead(204, PREFLIGHT_HEADERS);
        res.end();
        return;
      }
      if (refusal === "ready") {
        writeJson(res, draining ? 503 : 200, { status: draining ? "draining" : "ready", replica: listen.replica });
        return;
      }
      if (refusal !== undefined) {
        writeJson(res, refusal.status, { jsonrpc: "2.0", id: null, error: { code: -32000, message: refusal.message } }, refusal.headers);
        // A refused request's body is not read: close the connection after the answer.
        if (refusal.status !== 404) res.shouldKeepAlive = false;
        return;
      }
      void serveMcp(req, res);
    },
  );
  server.maxConnections = listen.maxConnections;
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    // Malformed requests, headers too large or too slow: a bare status, no echo of anything sent.
    if (!socket.writable || error.code === "ECONNRESET") {
      socket.destroy();
      return;
    }
    const status = error.code === "HPE_HEADER_OVERFLOW" ? 431 : error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
    // Then closed whole, as node:http's own handler does: an `end()` alone waits for the
    // client's side to close too, and a client that never closes it would keep its connection
    // (--max-connections) for ever.
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy());
    setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = new URL(`http://${host}:${address.port}${listen.path}`);
  // The 2026-07-28 upstream is started now, not by the first request: a stdio server's start-up
  // time would otherwise count against that request's idle timeout.
  void sharedRelay()?.catch((error: unknown) => log(`the 2026-07-28 upstream could not be started: ${(error as Error).message}`));
  io.log(`listening on ${url.href}\n`);

  // ---- drain ------------------------------------------------------------------------------------

  async function drainOnce(): Promise<void> {
    draining = true;
    const count = inFlightNow();
    log(`draining: no new sessions or requests; ${count} request${count === 1 ? "" : "s"} in flight get up to ${listen.drainMs} ms`);
    const deadline = performance.now() + listen.drainMs;
    // A session still opening (its server starting) is waited for too: it sees the drain once
    // started and ends itself, or is registered by then and closed below with the others.
    while ((inFlightNow() > 0 || opening > 0) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    // From here the shutdown is bounded as the stdio proxy's is (SHUTDOWN_BOUND_MS): --help and
    // the Kubernetes grace period in docs/proxy.md count on --drain-ms plus that bound.
    const stopBy = performance.now() + SHUTDOWN_BOUND_MS;
    const left = inFlightNow();
    if (left > 0) log(`drain: ${left} request(s) still in flight after ${listen.drainMs} ms: answered -32000 and cancelled upstream`);
    // As a lost connection is answered (respond.ts): the stable code, the trigger, the summary and the record.
    const answer = (method: string, record: RunRecord | null): LibraryErrorResponse => {
      const data = { code: "CONNECTION_CLOSED", trigger: "connection-closed", summary: record?.summary ?? null, record };
      return {
        code: CONNECTION_CLOSED_ERROR_CODE,
        message: `mcp-cancellable proxy: ${method} was cancelled upstream before its answer came: ${drainWhy(stopSignal, listen.drainMs)}; not retried`,
        data,
      };
    };
    for (const handle of [...exchanges.keys()]) handle.close(`mcp-cancellable proxy: ${drainWhy(stopSignal, listen.drainMs)}`, answer);
    clearInterval(sweep);
    clearInterval(keepAlive);
    clearInterval(legacyKeepAlive);
    server.close();
    server.closeIdleConnections();
    // Every server is stopped at once, each session's and the 2026-07-28 one: a server that
    // ignores SIGTERM takes its whole stop (1.3 s), and one after another they would overrun the
    // 1,800 ms the shutdown after the drain is bounded by (--help, docs/proxy.md).
    const stopping = Promise.all([
      // Each session's shutdown ends ahead of the front's bound: what follows it here (the last
      // answers' 50 ms, the records' end) fits in what is left (an outside tester's: a hung
      // upstream DELETE ran to the session's own 1,800 ms, and the exit came a few ms past the bound).
      ...[...sessions.values()].map((session) =>
        closeSession(session, "the replica shut down", stopSignal, stopBy - FRONT_EXIT_RESERVE_MS),
      ),
      shared?.then(
        (relay) => relay.close(),
        () => undefined,
      ),
    ]);
    // Meanwhile the spans left are exported (every call was cancelled or answered above, so its
    // span has ended), as the stdio proxy's shutdown does, in what is left of the bound less the
    // 50 ms it keeps for the exit.
    const flushing = io.flush?.(stopBy - performance.now() - 50);
    await stopping;
    // A session still opening past the drain's time ends itself once its server started (it sees
    // the drain), refusing its initialize: waited for within the bound, before the connections close.
    while (opening > 0 && performance.now() < stopBy - FRONT_EXIT_RESERVE_MS) await new Promise((resolve) => setTimeout(resolve, 20));
    // Let the last answers reach their sockets before the connections close.
    await new Promise((resolve) => setTimeout(resolve, 50));
    server.closeAllConnections();
    await new Promise<void>((resolve) => (records === undefined ? resolve() : records.end(() => resolve())));
    await flushing;
    log("drained");
  }

  return {
    url,
    drain: (signal = "SIGTERM") => {
      if (drained === undefined) stopSignal = signal;
      return (drained ??= drainOnce());
    },
    stats: () => ({ sessions: sessions.size, inFlight: inFlightNow(), exchanges: exchanges.size, sharedRelay: shared !== undefined }),
  };
}

/** The parts of the v2 server's modern route the front reads. */
interface ModernRoute {
  kind: "modern";
  messageKind: "request" | "notification";
  message: { jsonrpc: "2.0"; method: string; id?: Id; params?: Record<string, unknown> };
  classification: { era: "modern" | "legacy"; revision?: string };
}

/**
 * CORS for a browser page whose Origin the front admits (a localhost one or an `--allow-origin`):
 * its preflight is answered without a token (a browser sends none with it), and every answer
 * carries the origin, so the page can read it and the session id. An Origin the front refuses
 * gets no CORS header at all (its request is refused 403 anyway).
 */
const PREFLIGHT_HEADERS = {
  "access-control-allow-methods": "GET, POST, DELETE",
  "access-control-allow-headers":
    "authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name",
  "access-control-max-age": "600",
} as const;
const EXPOSED_HEADERS = "mcp-session-id, mcp-protocol-version, www-authenticate, retry-after";

/** Health, readiness, a browser's preflight, and the guards in order: path, Host, Origin, token, method. */
function admit(
  req: http.IncomingMessage,
  listen: ListenOptions,
  res: http.ServerResponse,
): Refusal | "health" | "ready" | "preflight" | undefined {
  const path = (req.url ?? "/").split("?")[0];
  if (req.method === "GET" && path === "/healthz") return "health";
  if (req.method === "GET" && path === "/readyz") return "ready";
  if (path !== listen.path) return { status: 404, message: "Not Found" };
  const header = (name: string): string | undefined => {
    const value = req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const origin = header("origin");
  const placeRefusal = checkHost(header("host"), listen) ?? checkOrigin(origin, listen);
  if (placeRefusal !== undefined) return placeRefusal;
  if (origin !== undefined && origin !== "") {
    res.setHeader("access-control-allow-origin", origin);
    res.setHeader("vary", "Origin");
    res.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
    if (req.method === "OPTIONS" && header("access-control-request-method") !== undefined) return "preflight";
  }
  const refusal = checkToken(header("authorization"), listen.token);
  if (refusal !== undefined) return refusal;
  if (req.method !== "POST" && req.method !== "GET" && req.method !== "DELETE") {
    return { status: 405, message: "Method not allowed.", headers: { allow: "GET, POST, DELETE" } };
  }
  return undefined;
}

/** What the front keeps of its shutdown bound for itself after the sessions' shutdowns, ms: the last answers' 50 ms wait, the records' end, the exit. */
const FRONT_EXIT_RESERVE_MS = 150;

/**
 * How long a 2025-era GET refused 409 (its stream still held) waits for the session's streams to
 * be released before the 409 stands, ms: a client that drops a stream and resumes it at once is
 * often here before its old connection's close is read.
 */
const RELEASE_WAIT_MS = 1_000;

/** A request body over `--max-body-bytes` (413, before anything is parsed). */
class BodyTooLargeError extends Error {
  override name = "BodyTooLargeError" as const;
}

/** The request body as text, at most `max` bytes (a declared `Content-Length` over it is refused unread). @throws {BodyTooLargeError} */
function readBody(req: http.IncomingMessage, max: number): Promise<string> {
  const tooLarge = () => new BodyTooLargeError(`Payload Too Large: the request body must not exceed ${max} bytes (--max-body-bytes)`);
  if (Number(req.headers["content-length"]) > max) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= max) {
        chunks.push(chunk);
        return;
      }
      req.removeListener("data", onData);
      reject(tooLarge());
    };
    req.on("data", onData);
    req.once("end", () => resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")));
    // The client went before its body was whole: nothing to answer.
    req.once("close", () => req.complete || reject(new Error("the client closed the connection before its request body was read")));
  });
}

/** An SSE response being written, for the keep-alive frames: when it last wrote, and whether that ended an event. */
interface SseWriter {
  readonly res: http.ServerResponse;
  lastWrite: number;
  atBoundary: boolean;
}

/**
 * Writes a web `Response` to a node response: status and headers, then the body, waiting for `drain`, stopping when the client is gone.
 * @param keepAlive where an SSE body's writer is kept while it is written (the front's keep-alive frames).
 */
async function writeResponse(
  res: http.ServerResponse,
  response: Response,
  signal?: AbortSignal,
  keepAlive?: Set<SseWriter>,
): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of response.headers as unknown as Iterable<[string, string]>) headers[name] = value;
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  // An SSE stream's headers go out now, not with its first event: a 2025-06-18 request gets no
  // priming event, and its client would otherwise see no response at all until the answer.
  if (headers["content-type"]?.startsWith("text/event-stream") === true) res.flushHeaders();
  let drained: (() => void) | undefined;
  const onDrain = (): void => drained?.();
  res.on("drain", onDrain);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  // The client went: the stream is cancelled at once, not when its next event comes (a 2025-era
  // session's SDK transport keeps a stream "active" until then, and refuses its resume with 409).
  const gone = (): void => {
    drained?.();
    reader.cancel().catch(() => {});
  };
  if (signal?.aborted) gone();
  else signal?.addEventListener("abort", gone, { once: true });
  const writer: SseWriter | undefined =
    keepAlive !== undefined && headers["content-type"]?.startsWith("text/event-stream") === true
      ? { res, lastWrite: performance.now(), atBoundary: true }
      : undefined;
  if (writer !== undefined) keepAlive!.add(writer);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || signal?.aborted === true) break;
      if (writer !== undefined) {
        writer.lastWrite = performance.now();
        // The SDK writes each event whole; a comment frame goes only where one ended.
        writer.atBoundary = value.length >= 2 && value[value.length - 1] === 10 && value[value.length - 2] === 10;
      }
      if (!res.write(value)) await new Promise<void>((resolve) => (drained = resolve));
      drained = undefined;
    }
  } catch {
    // The stream failed or was cancelled: end what was written.
  } finally {
    signal?.removeEventListener("abort", gone);
    if (writer !== undefined) keepAlive!.delete(writer);
  }
  res.removeListener("drain", onDrain);
  res.end();
}

function writeJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

function rpcError(
  status: number,
  code: number,
  message: string,
  id: Id | null,
  data?: unknown,
  headers: Record<string, string> = {},
): Response {
  return Response.json(
    { jsonrpc: "2.0", id, error: { code, message, ...(data === undefined ? {} : { data }) } },
    { status, headers: { "content-type": "application/json", ...headers } },
  );
}

/** A request refused before it was sent upstream: 503, `Retry-After`, safe to send again (to this replica later, or to another). */
function notSent(id: Id | null, text: string): Response {
  return rpcError(503, CONNECTION_CLOSED_ERROR_CODE, `mcp-cancellable proxy: ${text}`, id, { code: "NOT_SENT" }, { "retry-after": "1" });
}

function echoId(body: unknown): Id | null {
  const id = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
  return isRequestId(id) ? id : null;
}

/** A request id of `body` (a message or a batch) that is in progress, or used twice in the batch. */
function reusedId(body: unknown, inProgress: (id: Id) => boolean): Id | undefined {
  const seen = new Set<Id>();
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!isRequest(message)) continue;
    const id = (message as { id?: unknown }).id;
    if (!isRequestId(id)) continue;
    if (inProgress(id) || seen.has(id)) return id;
    seen.add(id);
  }
  return undefined;
}

/** The `requestId` a `notifications/cancelled` names, when it is one. */
function requestIdOf(message: JsonRpcMessage): Id | undefined {
  const params = (message as { params?: unknown }).params;
  const id = typeof params === "object" && params !== null ? (params as { requestId?: unknown }).requestId : undefined;
  return typeof id === "string" || typeof id === "number" ? id : undefined;
}

function isRequest(body: unknown): boolean {
  return typeof body === "object" && body !== null && "method" in body && "id" in body;
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/** The methods whose `Mcp-Name` header mirrors a body field (SEP-2243; tasks rows from SEP-2663). */
const MCP_NAME_SOURCE: Record<string, string> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId",
};

/**
 * The presence half of the standard request headers (rule 25; the v2 server's
 * `validateStandardRequestHeaders`, which it does not export): `MCP-Protocol-Version` and
 * `Mcp-Method` on every request, `Mcp-Name` where the body names a tool, prompt, resource or task,
 * equal to it (a `=?base64?...?=` value decoded first). The mismatch cells of the first two are
 * checked by `classifyInboundRequest` already.
 */
export function standardHeaderProblem(request: Request, message: { method: string; params?: Record<string, unknown> }): string | undefined {
  if (request.headers.get("mcp-protocol-version") === null) return "the required MCP-Protocol-Version header is absent";
  if (request.headers.get("mcp-method") === null)
    return `the body names method ${message.method} but the required Mcp-Method header is absent`;
  const field = Object.hasOwn(MCP_NAME_SOURCE, message.method) ? MCP_NAME_SOURCE[message.method] : undefined;
  if (field === undefined) return undefined;
  const value = message.params?.[field];
  if (typeof value !== "string") return undefined;
  const raw = request.headers.get("mcp-name")?.trim();
  if (raw === undefined) return `the body carries params.${field} but the required Mcp-Name header is absent`;
  const sentinel = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/i.exec(raw);
  const named = sentinel === null ? raw : Buffer.from(sentinel[1]!, "base64").toString("utf8");
  if (named !== value)
    return `the body carries params.${field}=${JSON.stringify(value)} but the Mcp-Name header names ${JSON.stringify(named)}`;
  return undefined;
}
