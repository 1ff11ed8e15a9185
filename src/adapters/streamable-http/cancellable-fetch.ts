// cancellableFetch() and its default base fetch (undici with its header and body timeouts off).
// Apart from fetch.ts so that the root entry, which reaches the adapter, never pulls in undici.
import { z } from "zod";
import { fnOption, parseOptions } from "../../options/schemas.js";
import { FRESH_CONNECTION, ON_BODY_SENT, ON_DISPATCH, perRequestFetch } from "./fetch.js";
import type { FetchLike, ObservingFetch } from "./fetch.js";

const fetchOptionsSchema = z.strictObject({ fetch: fnOption }).partial();

/** Options of `cancellableFetch`. */
export interface CancellableFetchOptions {
  /**
   * The fetch that sends the requests. Default: undici's `fetch` with an `Agent` whose
   * `headersTimeout` and `bodyTimeout` are 0 (off), so only the call's own timeouts decide how
   * long a request may wait (undici's defaults, also Node's global `fetch`'s, are 300_000 ms
   * each: a tool silent for 5 minutes would lose its stream before a longer `timeoutMs`). Where
   * undici cannot be loaded (a browser, an edge runtime, a Node bundle deployed without
   * `node_modules`), and in Deno, the global `fetch` is used as it is: its own timeouts then
   * apply (Node's: those 300_000 ms; Deno's has none), and no request's body is seen written.
   * A fetch given here is used as it is: its own timeouts then apply.
   */
  fetch?: FetchLike;
}

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
  if (options.fetch !== undefined) return perRequestFetch(options.fetch);
  return defaultFetch();
}

/** `cancellableFetch()` over its default base fetch (see `cancellableFetch`). @internal */
export function defaultFetch(): FetchLike {
  const own = ownDefaultFetch();
  return perRequestFetch(own.fetch, own.close);
}

/** The header and body timeouts of the default dispatcher, in ms (0 = off). @internal */
export const DEFAULT_DISPATCHER_TIMEOUTS_MS = { headersTimeout: 0, bodyTimeout: 0 } as const;

interface Undici {
  Agent: typeof import("undici").Agent;
  fetch: typeof import("undici").fetch;
}

/**
 * The module name, in a variable: a bundler leaves `import(UNDICI)` alone instead of pulling the
 * Node-only undici into a browser bundle (the magic comments keep webpack and Vite quiet about
 * it). In Node, Deno and Bun it loads as usual; where it cannot (a browser), the global `fetch`
 * is used.
 */
const UNDICI = "undici";

let undici: Promise<Undici | undefined> | undefined;
/** What `undici` resolved to (`undefined`: not loadable here), or `null` before it settled. */
let loaded: Undici | undefined | null = null;

/**
 * Whether undici is imported here: not in Deno, where Deno's own `fetch` is used. npm's undici
 * on Deno never errors a response body whose connection the server dropped: a server killed
 * mid-call went unseen, and its call waited for its idle timeout and was recorded a timeout with
 * a cancel (an outside tester's; Deno's `fetch` sees the drop at once, and has no 300 s timeouts
 * of its own to turn off). Without env access its import also failed part way and kept a
 * connection of the process open after the transport's close (the process never exited).
 */
function undiciMayLoad(): boolean {
  return (globalThis as { Deno?: unknown }).Deno === undefined;
}

/** Starts loading undici once per process (the global `fetch` where it cannot be loaded). */
function loadUndici(): Promise<Undici | undefined> {
  if (undici === undefined && !undiciMayLoad()) {
    loaded = undefined;
    undici = Promise.resolve(undefined);
  }
  undici ??= import(/* webpackIgnore: true */ /* @vite-ignore */ UNDICI).then(
    ({ Agent, fetch }): Undici => {
      loaded = { Agent, fetch };
      return loaded;
    },
    () => {
      loaded = undefined;
      return undefined;
    },
  );
  return undici;
}

const noop = (): void => {};

/**
 * Whether the fetch in use reports each request's body fully written (undici's `onRequestSent`,
 * through the dispatcher it is given): a fact of the fetch the requests actually go through,
 * known once the load of undici settled. `false` until then, and `false` where it failed (the
 * global `fetch` reports nothing of the kind: an outside tester's, a Node bundle without
 * `node_modules` and Deno without `--allow-env` recorded a timed-out call the server had run as
 * never sent, and sent no notification for it), in Bun (its built-in `undici` module ignores the
 * dispatcher: every request aborted before its response head was taken for one never sent), and
 * without Node's `process` (npm's undici is not what runs there).
 */
function undiciReportsBody(): boolean {
  if (loaded === null || loaded === undefined) return false;
  const runtime = globalThis as { Bun?: unknown; process?: { versions?: { node?: unknown } } };
  return runtime.Bun === undefined && typeof runtime.process?.versions?.node === "string";
}

/**
 * Closes (or destroys) a dispatcher, best effort: Bun's `undici` module has `Agent`s without
 * `destroy`, whose methods return no promise; a rejection is dropped.
 */
function end(dispatcher: object, how: "close" | "destroy"): void {
  const methods = dispatcher as { close?: () => unknown; destroy?: () => unknown };
  try {
    const ended = how === "destroy" && typeof methods.destroy === "function" ? methods.destroy() : methods.close?.();
    if (ended instanceof Promise) ended.catch(noop);
  } catch {
    // Closing is best effort: the transport has aborted every request already.
  }
}

/**
 * The default fetch of one `cancellableFetch()`: undici's fetch with header and body timeouts
 * off, through a dispatcher of its own (made on first use, closed with the transport), so every
 * server address's connection pool goes with its transport; the global fetch where undici is
 * missing (its own timeouts then apply, and it reports no body written: `observesBody` false).
 */
function ownDefaultFetch(): { fetch: ObservingFetch; close: () => void } {
  let dispatcher: InstanceType<Undici["Agent"]> | undefined;
  /** One-connection dispatchers of notifications on their way (closed when answered, destroyed with the transport). */
  const fresh = new Set<InstanceType<Undici["Agent"]>>();
  const send = (lib: Undici | undefined, url: string | URL, init: RequestInit | undefined): Promise<Response> => {
    const marks = init as { [ON_BODY_SENT]?: () => void; [ON_DISPATCH]?: () => void; [FRESH_CONNECTION]?: true } | undefined;
    const onBodySent = marks?.[ON_BODY_SENT];
    // Handed to the network now (a cancel before this stopped it here: its signal is aborted).
    marks?.[ON_DISPATCH]?.();
    if (lib === undefined) {
      // No undici (a browser, a bundle without it): the global fetch, as it is. It cannot report
      // the body written, and `observesBody` says so: no ON_BODY_SENT is asked of it.
      return globalThis.fetch(url, init);
    }
    if (marks?.[FRESH_CONNECTION] === true) {
      // A connection of its own, opened now: after the request's (see FRESH_CONNECTION).
      const own = new lib.Agent({ ...DEFAULT_DISPATCHER_TIMEOUTS_MS, connections: 1, pipelining: 0 });
      fresh.add(own);
      const done = (): void => {
        fresh.delete(own);
        end(own, "close");
      };
      const sent = lib.fetch(url, { ...(init as object), dispatcher: onBodySent === undefined ? own : tap(own, onBodySent) } as Parameters<
        Undici["fetch"]
      >[1]) as unknown as Promise<Response>;
      sent.then(done, done);
      return sent;
    }
    dispatcher ??= new lib.Agent({ ...DEFAULT_DISPATCHER_TIMEOUTS_MS });
    const through = onBodySent === undefined ? dispatcher : tap(dispatcher, onBodySent);
    return lib.fetch(url, { ...(init as object), dispatcher: through } as Parameters<Undici["fetch"]>[1]) as unknown as Promise<Response>;
  };
  // Loaded now, not on the first request: a first call made at once would otherwise spend its
  // own timeout (tens of ms) waiting for the module, with its request still in this process.
  const loading = loadUndici();
  const fetch: FetchLike = (url, init) => {
    if (loaded !== null) return send(loaded, url, init);
    return loading.then((lib) => send(lib, url, init));
  };
  // Once undici is loaded, requests go to it at once, without waiting a tick on the promise.
  // Whether it sees each body written is read at each request, from the fetch in use (see
  // `undiciReportsBody`); until the load settles the request waits for it (`deciding`).
  Object.defineProperties(fetch, {
    observesBody: { get: undiciReportsBody },
    deciding: { get: () => (loaded === null ? loading : undefined) },
  });
  return {
    fetch: fetch as ObservingFetch,
    close: () => {
      const closing = dispatcher;
      dispatcher = undefined;
      // The transport has aborted every request already: nothing is cut short.
      if (closing !== undefined) end(closing, "destroy");
      for (const own of fresh) end(own, "destroy");
      fresh.clear();
    },
  };
}

/**
 * The dispatcher for one request: the shared one, with undici's `onRequestSent` (the body fully
 * written on the connection) reported. undici's fetch calls only `dispatch` (and reads
 * `isMockActive`); the handler is the fetch's own, extended, so `this` stays consistent.
 */
function tap(dispatcher: InstanceType<Undici["Agent"]>, onBodySent: () => void): InstanceType<Undici["Agent"]> {
  type Handler = { onRequestSent?: () => void };
  return {
    isMockActive: false,
    dispatch(options: unknown, handler: Handler) {
      const observed = Object.create(handler) as Handler;
      observed.onRequestSent = function (this: Handler) {
        onBodySent();
        return handler.onRequestSent?.call(this);
      };
      return (dispatcher.dispatch as (options: unknown, handler: Handler) => boolean)(options, observed);
    },
  } as unknown as InstanceType<Undici["Agent"]>;
}
