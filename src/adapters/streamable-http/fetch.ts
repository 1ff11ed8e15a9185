import type { RequestId } from "../../core/cancellable-call.js";
import { sweepComposedSignals } from "../../utils/composed-signals.js";
import { abortSubscribers, onAbort } from "../../utils/abort-link.js";
import { noop } from "../../utils/hooks.js";

/** A `fetch` as the SDK transports call it: `(url, init)`, resolving to a `Response`. */
export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** What the fetch asks of the adapter bound to it (one adapter per fetch, one fetch per transport). */
export interface FetchPort {
  /** The per-request signal for this request id, if the adapter tracks it (aborting it closes the POST). */
  signalFor(id: RequestId): AbortSignal | undefined;
  /**
   * A `GET` with `Last-Event-ID` (the SDK resuming a stream): `"block"` for a stream we closed
   * on purpose (answered 405, which the SDK takes silently), the owning request id for a stream
   * being resumed, or `undefined` when unknown.
   */
  resume(lastEventId: string): "block" | RequestId | undefined;
  /**
   * A request's response stream ended: `eof` (the body ended), `error` (the body broke), `failed`
   * (the fetch rejected or a resume was refused). Called at most once per fetch. `resumed`: it
   * was the stream's resume (`GET` with `Last-Event-ID`), not the request's own POST, so its
   * failure proves nothing about whether the request reached the server.
   */
  ended(id: RequestId, how: "eof" | "error" | "failed", cause: unknown, resumed: boolean): void;
  /**
   * The server answered the `notifications/cancelled` for this request with an HTTP error: the
   * SDK is handed a 202 instead (it would report the error to `onerror` and throw), and the
   * adapter records the refusal on the call.
   */
  refused(id: RequestId, status: number): void;
  /**
   * The request's POST body was fully written on the connection the server accepted (undici's
   * `onRequestSent`): the server has the request, so a notification sent now cannot overtake it
   * (rule 10). Called only by a fetch that can tell (`observesBody`), at most once per request.
   */
  sent(id: RequestId): void;
  /**
   * The body of the `notifications/cancelled` POST for this request was fully written (undici's
   * `onRequestSent`): it went out, whatever becomes of its answer. Only a fetch that can tell.
   */
  cancelSent(id: RequestId): void;
  /**
   * The signal that gives up the `notifications/cancelled` POST for this request (the delivery
   * aborts it when no answer came within `notificationTimeoutMs`), if the delivery is sending one.
   */
  cancelSignal(id: RequestId): AbortSignal | undefined;
  /** The response head of a request's own POST arrived, with this status (any: the server received it). */
  answered(id: RequestId, status: number, contentType: string | null): void;
  /** This fetch cannot report a request's body fully written (not `observesBody`): that fact is unknown. */
  blind(id: RequestId): void;
  /** The transport answers a 401 or 403 by authorizing and sending again (it has an `authProvider`). */
  reauthorizes?(): boolean;
  /**
   * The request's POST is handed to the network now (its fetch called). Until then it is still
   * in this process (the default fetch loading undici on its first use): a cancel then stops it
   * there, and it never leaves. A fetch that cannot tell reports it as it is called.
   */
  dispatched(id: RequestId): void;
  /**
   * The first bytes of the body of a request's own 2xx response arrived (they are handed to the
   * SDK now: what they carry reaches it within the next task). At most once per request.
   */
  bodyStarted(id: RequestId): void;
  /**
   * Must the `notifications/cancelled` for this request go on a connection of its own, opened
   * after the request's (`true`: only its body is known written), or may it take a pooled one
   * (`false`: the server answered the request's head, so it has the request)?
   */
  fresh(id: RequestId): boolean;
}

/**
 * The init key under which the per-request fetch asks its base fetch to report the body fully
 * written (`() => void`). Only `cancellableFetch()`'s own default fetch (undici) honours it; any
 * other fetch ignores a symbol key. @internal
 */
export const ON_BODY_SENT: unique symbol = Symbol("mcp-cancellable.onBodySent");

/**
 * The init key under which the per-request fetch asks its base fetch to send a
 * `notifications/cancelled` on a connection of its own, opened after the request's: the server
 * accepts connections in order, so the request's (accepted earlier, its body written) is read
 * before it. Only `cancellableFetch()`'s default fetch honours it. @internal
 */
export const FRESH_CONNECTION: unique symbol = Symbol("mcp-cancellable.freshConnection");

/**
 * The init key under which the per-request fetch asks its base fetch to report the moment it
 * hands the request to the network (`() => void`): `cancellableFetch()`'s default fetch calls it
 * when undici's fetch is called, which on first use waits for undici to load. @internal
 */
export const ON_DISPATCH: unique symbol = Symbol("mcp-cancellable.onDispatch");

/**
 * A base fetch that reports the body fully written when asked (`ON_BODY_SENT`), and the dispatch
 * (`ON_DISPATCH`). @internal
 */
export type ObservingFetch = FetchLike & {
  /**
   * It reports each request's body fully written. Read at each request: the default fetch knows
   * it only once it knows which fetch it sends with (undici, or the global `fetch` where undici
   * cannot be loaded); until then it says false.
   */
  readonly observesBody?: boolean;
  /** While it does not yet know which fetch it sends with (undici loading): settles once it does. */
  readonly deciding?: Promise<unknown> | undefined;
};

/** Per-fetch state: the adapter bound to it, and how to close its own dispatcher. */
interface Registry {
  port: FetchPort | undefined;
  /** The base fetch reports each request's body fully written (read live: see `ObservingFetch.observesBody`). */
  readonly observesBody: boolean;
  owner: object | undefined;
  /** Closes the default fetch's dispatcher (its connection pools); `undefined` for a fetch given by the caller. */
  close: (() => void) | undefined;
}

const registries = new WeakMap<object, Registry>();

/**
 * The mark of this copy's per-request fetches (a symbol of its own, under a fixed description):
 * another copy of the library tells one of them from a plain fetch by it, and refuses it by name.
 */
export const PER_REQUEST_FETCH: unique symbol = Symbol("mcp-cancellable.perRequestFetch");

/**
 * Errors of `notifications/cancelled` POSTs that failed at the fetch (network, abort): the
 * adapter records them on the call and retries once, so the SDK's own echo of them in `onerror`
 * is swallowed.
 */
const cancelFailures = new WeakSet<object>();
/** Those of them that failed because the POST was aborted here (given up, the transport closing), whatever the error says. */
const cancelAborts = new WeakSet<object>();

/**
 * True for the rejection of a `notifications/cancelled` POST whose fetch failed on its own (a
 * network failure, in whatever words: not one aborted here): the one the delivery sends again. @internal
 */
export function isCancelSendNetworkFailure(error: unknown): boolean {
  return typeof error === "object" && error !== null && cancelFailures.has(error) && !cancelAborts.has(error);
}

/** True for the rejection of a `notifications/cancelled` POST (see `cancelFailures`). @internal */
export function isCancelSendFailure(error: unknown): boolean {
  return typeof error === "object" && error !== null && cancelFailures.has(error);
}

/**
 * The answer to a `notifications/cancelled` POST: an HTTP error (but the auth challenges 401 and
 * 403, which the SDK answers by authorizing and sending again) goes to the adapter's record, and
 * the SDK gets a 202 (its only reaction to an error would be `onerror` and a throw the adapter
 * already handles). Anything else passes unchanged: so does a redirect the SDK follows by its
 * default `redirectPolicy` (a 307 or 308 to the same origin, which keeps the POST and its body),
 * POSTing the notification again where it points (an outside tester's: behind a server's 307 from
 * /mcp to /mcp/, every cancel's notification was taken for refused, and never reached the server).
 * Any other redirect (a 301, 302 or 303, which would turn the POST into a GET; another origin) is
 * a refusal: the SDK would throw on it, and its error would reach `onerror`.
 */
async function takeRefusal(
  url: string | URL | Request,
  response: Response,
  body: unknown,
  refused: FetchPort["refused"] | undefined,
  reauthorizes: boolean,
): Promise<Response> {
  if (response.ok) {
    // Answered: its head is the answer (a notification's 2xx carries nothing the SDK reads). A
    // body that never ends kept the v2 SDK's `response.text()` of a 202 waiting, and the
    // notification was recorded unanswered (an outside tester's): the body is let go.
    if (response.body === null) return response;
    await response.body.cancel().catch(noop);
    return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
  // 401 and 403 go to an SDK that authorizes and sends again (an `authProvider`); without one the
  // SDK only throws (to `onerror`): the server refused the notification (an outside tester's).
  if (followed(url, response) || (reauthorizes && (response.status === 401 || response.status === 403)) || refused === undefined)
    return response;
  const id = cancelledIdOf(body);
  if (id === undefined) return response;
  await response.body?.cancel().catch(noop);
  refused(id, response.status);
  return new Response(null, { status: 202, statusText: "Accepted (refusal recorded by mcp-cancellable)", headers: response.headers });
}

/** A 307 or 308 to another URL of the same origin: the redirect the SDKs' default `redirectPolicy` follows with the POST and its body. */
function followed(url: string | URL | Request, response: Response): boolean {
  if (response.status !== 307 && response.status !== 308) return false;
  const location = response.headers.get("location");
  if (location === null) return false;
  try {
    const from = new URL(typeof url === "string" || url instanceof URL ? url : url.url);
    const to = new URL(location, from);
    return to.origin === from.origin && to.href !== from.href; // to itself: a loop the SDK stops, throwing
  } catch {
    return false;
  }
}

/** The `requestId` a `notifications/cancelled` body names. */
function cancelledIdOf(body: unknown): RequestId | undefined {
  if (typeof body !== "string") return undefined;
  try {
    const id = (JSON.parse(body) as { params?: { requestId?: unknown } }).params?.requestId;
    return typeof id === "string" || typeof id === "number" ? id : undefined;
  } catch {
    return undefined;
  }
}

/** What reports a cancel body's notification written (see `FetchPort.cancelSent`). */
function cancelSentReporter(port: FetchPort | undefined, body: unknown): (() => void) | undefined {
  const id = cancelledIdOf(body);
  return port === undefined || id === undefined ? undefined : () => port.cancelSent(id);
}

/** The signal that gives up a cancel body's POST (see `FetchPort.cancelSignal`). */
function cancelSignalFor(port: FetchPort | undefined, body: unknown): AbortSignal | undefined {
  const id = cancelledIdOf(body);
  return port === undefined || id === undefined ? undefined : port.cancelSignal(id);
}

/** Whether a cancel body's notification must take a connection of its own (see `FetchPort.fresh`). */
function freshFor(port: FetchPort | undefined, body: unknown): boolean {
  const id = cancelledIdOf(body);
  return port === undefined || id === undefined || port.fresh(id);
}

function mark(error: unknown, aborted: boolean): void {
  if (typeof error !== "object" || error === null) return;
  cancelFailures.add(error);
  if (aborted) cancelAborts.add(error);
}

/**
 * The per-request fetch behind `cancellableFetch` (see cancellable-fetch.ts, which picks the base
 * fetch: kept apart so the root entry, which reaches this module through the adapter, never
 * pulls in undici). `close` releases the base fetch's own dispatcher when the transport closes.
 * @internal
 */
export function perRequestFetch(base: ObservingFetch, close?: () => void): FetchLike {
  const registry: Registry = {
    port: undefined,
    owner: undefined,
    close,
    get observesBody() {
      return base.observesBody === true;
    },
  };
  const fetch: FetchLike = (url, init) => send(registry, base, url, init);
  registries.set(fetch, registry);
  Object.defineProperty(fetch, PER_REQUEST_FETCH, { value: true });
  return fetch;
}

/**
 * Binds a `cancellableFetch` to the adapter that will drive it. Returns false when `fetch` is
 * not one; throws when it is already bound to another adapter (one fetch per transport).
 * @internal
 */
export function bindFetch(fetch: unknown, owner: object, port: FetchPort): boolean {
  const registry = typeof fetch === "function" ? registries.get(fetch) : undefined;
  if (registry === undefined) return false;
  if (registry.owner !== undefined && registry.owner !== owner) {
    throw new TypeError("this cancellableFetch() is already bound to another transport: create one per transport");
  }
  registry.owner = owner;
  registry.port = port;
  return true;
}

/**
 * Releases a fetch bound with `bindFetch` (the transport closed): the adapter lets go of it,
 * and the default dispatcher (its connection pool for the server's address) is closed, so a
 * transport leaves nothing behind. A transport started again gets a new dispatcher. @internal
 */
export function unbindFetch(fetch: unknown, owner: object): void {
  const registry = typeof fetch === "function" ? registries.get(fetch) : undefined;
  if (registry?.owner !== owner) return;
  registry.port = undefined;
  registry.close?.();
}

/**
 * True when `fetch` is a `cancellableFetch()` that reports each request's body fully written (its
 * default fetch, once undici is loaded and used; false while it loads, and where it cannot be). @internal
 */
export function observesBody(fetch: unknown): boolean {
  return typeof fetch === "function" && registries.get(fetch)?.observesBody === true;
}

/**
 * True when `fetch` is a `cancellableFetch()` over the library's own base fetch (undici, or the
 * runtime's `fetch`), which sends each request once: its failure's error codes are those of the
 * one attempt. A fetch given by the caller may try again (a retrying fetch: the first attempt
 * reached the server, the second was refused), so its last error proves nothing of what went out. @internal
 */
export function sendsEachOnce(fetch: unknown): boolean {
  return typeof fetch === "function" && registries.get(fetch)?.close !== undefined;
}

/** True when `fetch` is a `cancellableFetch()`. @internal */
export function isCancellableFetch(fetch: unknown): boolean {
  return typeof fetch === "function" && registries.has(fetch);
}

async function send(registry: Registry, base: ObservingFetch, url: string | URL, init: RequestInit = {}): Promise<Response> {
  const method = (init.method ?? "GET").toUpperCase();
  const port = registry.port;
  let id: RequestId | undefined;
  let resumed = false;
  let resumeToken: string | undefined;
  let cancel = false;
  if (method === "POST") {
    id = requestIdOf(init.body);
    cancel = id === undefined && isCancelBody(init.body);
  } else if (method === "GET" && port !== undefined) {
    const lastEventId = new Headers(init.headers).get("last-event-id");
    if (lastEventId !== null) {
      resumeToken = lastEventId;
      const verdict = port.resume(lastEventId);
      // The SDK's GET resume takes a 405 silently: no onerror, no retry.
      if (verdict === "block")
        return new Response(null, { status: 405, statusText: "Method Not Allowed (stream cancelled by the client)" });
      if (verdict !== undefined) {
        id = verdict;
        resumed = true;
      }
    }
  }
  const controller = new AbortController();
  // The v2 transport composes its own signal with the request's (`AbortSignal.any`): on Node 20
  // each composition stays on the transport's signal for the connection's life unless swept.
  sweepComposedSignals(init.signal);
  const unlinkTransport = link(init.signal ?? undefined, controller);
  const unlinkRequest = link(id !== undefined ? port?.signalFor(id) : cancel ? cancelSignalFor(port, init.body) : undefined, controller);
  let released = false;
  const release = (how?: "eof" | "error" | "failed", cause?: unknown): void => {
    if (released) return;
    released = true;
    unlinkTransport();
    unlinkRequest();
    if (how !== undefined && id !== undefined) port?.ended(id, how, cause, resumed);
  };
  // Whether the base fetch sees the body written is a fact of the fetch it sends with: the
  // default one knows it once undici loaded or failed to (it holds the request until then anyway).
  const deciding = base.deciding;
  if (deciding !== undefined) await deciding;
  const observes = registry.observesBody;
  // A request's own POST: the base fetch (undici) says when its body is fully written.
  const requestId = method === "POST" ? id : undefined;
  const onBodySent = requestId === undefined || !observes ? undefined : () => port?.sent(requestId);
  // Cancelled while it waited: it never leaves (the base fetch rejects it at once), nothing to report.
  if (requestId !== undefined && !observes && !controller.signal.aborted) {
    port?.blind(requestId);
    port?.dispatched(requestId);
  }
  let response: Response;
  try {
    const sendInit =
      onBodySent !== undefined
        ? { ...init, signal: controller.signal, [ON_BODY_SENT]: onBodySent, [ON_DISPATCH]: () => port?.dispatched(requestId!) }
        : cancel && observes
          ? {
              ...init,
              signal: controller.signal,
              [ON_BODY_SENT]: cancelSentReporter(port, init.body),
              ...(freshFor(port, init.body) ? { [FRESH_CONNECTION]: true } : {}),
            }
          : { ...init, signal: controller.signal };
    response = await base(url, sendInit as RequestInit);
  } catch (error) {
    if (cancel) mark(error, controller.signal.aborted);
    release("failed", error);
    throw error;
  }
  if (cancel) {
    release();
    return takeRefusal(url, response, init.body, port?.refused, port?.reauthorizes?.() === true);
  }
  if (requestId !== undefined) port?.answered(requestId, response.status, response.headers.get("content-type"));
  // Only a request's own 2xx stream (or its resume) carries its response; other answers (a 202
  // for a notification, an HTTP error the SDK reports itself) only need the listeners released.
  const tracked = response.ok && method === "POST" ? id !== undefined : resumed;
  if (resumed && !response.ok) {
    release("failed", new Error(`resuming the stream answered HTTP ${response.status}`));
    return response;
  }
  if (response.body === null) {
    release(tracked ? "eof" : undefined);
    return response;
  }
  const started = tracked && requestId !== undefined ? () => port?.bodyStarted(requestId) : undefined;
  const resumedFrom = resumed ? { token: resumeToken!, closed: controller.signal } : undefined;
  const body = watch(response.body, (how, cause) => release(tracked && how !== "cancel" ? how : undefined, cause), started, resumedFrom);
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * A pass-through body that reports once how it ended, and (`onStart`) its first chunk.
 *
 * `resumedFrom`: the body is a stream's resume (`GET` with `Last-Event-ID: token`). When it is
 * closed on purpose (`closed` aborted: the call's cancel, or the transport's close) before any
 * event id came on it, it ends with an event carrying `token` instead of an error: the v1 SDK
 * (1.32.2 client/streamableHttp.js `_handleSseStream`) keeps the last event id per stream, so
 * from an error on a resume that carried none it tries again with no `Last-Event-ID` at all, a
 * bare `GET` that reached the server (409 beside the session's own stream) and `onerror` each
 * time (an outside tester's finding). With the token it tries the resume again, which the
 * adapter refuses in the client (405, taken silently).
 */
function watch(
  body: ReadableStream<Uint8Array>,
  onEnd: (how: "eof" | "error" | "cancel", cause?: unknown) => void,
  onStart?: () => void,
  resumedFrom?: { readonly token: string; readonly closed: AbortSignal },
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let onFirst = onStart;
  /** An event id came on the resumed stream (the SDK resumes from it then). */
  let sawId = false;
  let decoder: TextDecoder | undefined;
  let tail = "";
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        onEnd("error", error);
        if (resumedFrom?.closed.aborted && !sawId) {
          controller.enqueue(new TextEncoder().encode(`\n\nid: ${resumedFrom.token}\ndata:\n\n`));
          controller.close();
        } else controller.error(error);
        return;
      }
      if (chunk.done) {
        onEnd("eof");
        controller.close();
      } else {
        if (resumedFrom !== undefined && !sawId) {
          decoder ??= new TextDecoder();
          const text = tail + decoder.decode(chunk.value, { stream: true });
          sawId = /(^|[\r\n])id:/.test(text);
          tail = text.slice(-4);
        }
        controller.enqueue(chunk.value);
        if (onFirst !== undefined) {
          const first = onFirst;
          onFirst = undefined;
          first();
        }
      }
    },
    cancel(reason) {
      onEnd("cancel", reason);
      return reader.cancel(reason);
    },
  });
}

/**
 * Links a long-lived parent signal (the transport's, or the SDK's per-request one) to a
 * per-request controller; the returned function unlinks it. Built on `onAbort`: one `abort`
 * listener per parent fans out to every linked controller, so concurrent requests add no
 * listeners (no MaxListenersExceededWarning) and none is left once they end; no
 * `AbortSignal.any`, which on Node 20 retains every composed signal on the long-lived one.
 * @internal
 */
export function link(parent: AbortSignal | undefined, child: AbortController): () => void {
  if (parent === undefined) return noop;
  if (parent.aborted) {
    child.abort(parent.reason);
    return noop;
  }
  return onAbort(parent, () => child.abort(parent.reason));
}

/** How many per-request controllers are linked to this signal right now. @internal */
export const linkedCount: (parent: AbortSignal) => number = abortSubscribers;

/** The JSON-RPC id of a single request body (a string), or `undefined` (notification, response, batch). */
function requestIdOf(body: unknown): RequestId | undefined {
  // A body without `"id"` anywhere is no request (a notification, such as a cancel): no parse.
  if (typeof body !== "string" || !body.includes('"id"')) return undefined;
  let message: unknown;
  try {
    message = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const { method, id } = message as { method?: unknown; id?: unknown };
  return typeof method === "string" && (typeof id === "string" || typeof id === "number") ? id : undefined;
}

/** True when a POST body is a single `notifications/cancelled`. */
function isCancelBody(body: unknown): boolean {
  return typeof body === "string" && body.includes('"notifications/cancelled"') && /^\s*\{/.test(body);
}
