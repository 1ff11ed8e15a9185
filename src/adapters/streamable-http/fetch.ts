import type { RequestId } from "../../core/cancellable-call.js";
import { z } from "zod";
import { fnOption, parseOptions } from "../../types/options.js";
import { abortSubscribers, onAbort } from "../../utils/abort-link.js";

const fetchOptionsSchema = z.strictObject({ fetch: fnOption }).partial();

/** A `fetch` as the SDK transports call it: `(url, init)`, resolving to a `Response`. */
export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** Options of `cancellableFetch`. */
export interface CancellableFetchOptions {
  /**
   * The fetch that sends the requests. Default: undici's `fetch` with an `Agent` whose
   * `headersTimeout` and `bodyTimeout` are 0 (off), so only the call's own timeouts decide how
   * long a request may wait (undici's defaults, also Node's global `fetch`'s, are 300_000 ms
   * each: a tool silent for 5 minutes would lose its stream before a longer `timeoutMs`). Where
   * undici cannot be loaded (a browser, an edge runtime) the global `fetch` is used.
   * A fetch given here is used as it is: its own timeouts then apply.
   */
  fetch?: FetchLike;
}

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
   * (the fetch rejected or a resume was refused). Called at most once per fetch.
   */
  ended(id: RequestId, how: "eof" | "error" | "failed", cause?: unknown): void;
}

/** Per-fetch state: the adapter bound to it. */
interface Registry {
  port: FetchPort | undefined;
  owner: object | undefined;
}

const registries = new WeakMap<object, Registry>();

/**
 * A `fetch` for the Streamable HTTP client transport that gives every POST its own
 * `AbortController`, so one request's response stream (and its TCP connection) can be closed
 * without touching the others. Pass it as the transport's `fetch` option; one per transport:
 *
 * ```ts
 * const transport = new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() });
 * const mcp = withCancellation(client, streamableHttpCancellation(transport));
 * ```
 *
 * On its own (before `streamableHttpCancellation` binds it) it only forwards to the base fetch,
 * each request on its own controller linked to the transport's signal (no listener is left on
 * that long-lived signal once the response body ends).
 */
export function cancellableFetch(options: CancellableFetchOptions = {}): FetchLike {
  parseOptions(fetchOptionsSchema, options, "cancellableFetch options");
  const registry: Registry = { port: undefined, owner: undefined };
  const base = options.fetch ?? defaultFetch;
  const fetch: FetchLike = (url, init) => send(registry, base, url, init);
  registries.set(fetch, registry);
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

/** Releases a fetch bound with `bindFetch` (the transport closed). @internal */
export function unbindFetch(fetch: unknown, owner: object): void {
  const registry = typeof fetch === "function" ? registries.get(fetch) : undefined;
  if (registry?.owner === owner) registry.port = undefined;
}

async function send(registry: Registry, base: FetchLike, url: string | URL, init: RequestInit = {}): Promise<Response> {
  const method = (init.method ?? "GET").toUpperCase();
  const port = registry.port;
  let id: RequestId | undefined;
  let resumed = false;
  if (method === "POST") {
    id = requestIdOf(init.body);
  } else if (method === "GET" && port !== undefined) {
    const lastEventId = new Headers(init.headers).get("last-event-id");
    if (lastEventId !== null) {
      const verdict = port.resume(lastEventId);
      // The SDK's GET resume takes a 405 silently: no onerror, no retry.
      if (verdict === "block") return new Response(null, { status: 405, statusText: "Method Not Allowed (stream cancelled by the client)" });
      if (verdict !== undefined) {
        id = verdict;
        resumed = true;
      }
    }
  }
  const controller = new AbortController();
  const unlinkTransport = link(init.signal ?? undefined, controller);
  const unlinkRequest = link(id === undefined ? undefined : port?.signalFor(id), controller);
  let released = false;
  const release = (how?: "eof" | "error" | "failed", cause?: unknown): void => {
    if (released) return;
    released = true;
    unlinkTransport();
    unlinkRequest();
    if (how !== undefined && id !== undefined) port?.ended(id, how, cause);
  };
  let response: Response;
  try {
    response = await base(url, { ...init, signal: controller.signal });
  } catch (error) {
    release("failed", error);
    throw error;
  }
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
  const body = watch(response.body, (how, cause) => release(tracked && how !== "cancel" ? how : undefined, cause));
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** A pass-through body that reports once how it ended. */
function watch(
  body: ReadableStream<Uint8Array>,
  onEnd: (how: "eof" | "error" | "cancel", cause?: unknown) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        onEnd("error", error);
        controller.error(error);
        return;
      }
      if (chunk.done) {
        onEnd("eof");
        controller.close();
      } else {
        controller.enqueue(chunk.value);
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

function noop(): void {}

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

/** The header and body timeouts of the default dispatcher, in ms (0 = off). @internal */
export const DEFAULT_DISPATCHER_TIMEOUTS_MS = { headersTimeout: 0, bodyTimeout: 0 } as const;

let undici: Promise<FetchLike | undefined> | undefined;
/** The fetch `undici` resolved to, once loaded: later requests go out without waiting a tick on the promise. */
let loaded: FetchLike | undefined;

/** undici's fetch with header and body timeouts off, loaded on first use; the global fetch where undici is missing. */
const defaultFetch: FetchLike = (url, init) => {
  if (loaded !== undefined) return loaded(url, init);
  undici ??= loadUndici();
  return undici.then((fetch) => {
    loaded = fetch ?? ((u, i) => globalThis.fetch(u, i));
    return loaded(url, init);
  });
};

async function loadUndici(): Promise<FetchLike | undefined> {
  try {
    const { Agent, fetch } = await import("undici");
    const dispatcher = new Agent({ ...DEFAULT_DISPATCHER_TIMEOUTS_MS });
    return (url, init) =>
      fetch(url, { ...(init as object), dispatcher } as Parameters<typeof fetch>[1]) as unknown as Promise<Response>;
  } catch {
    return undefined;
  }
}

