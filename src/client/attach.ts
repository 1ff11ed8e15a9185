import { claimClient, markAttached } from "./owner.js";
import { anotherCopyMessage, carrierOf, markAttachedTransport } from "../utils/copies.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { notifyOnCancel } from "../adapters/notification.js";
import { streamableHttpCancellation } from "../adapters/streamable-http/adapter.js";
import type { CancellationAdapter, TransportLike } from "../adapters/types.js";
import { parseCancellationOptions } from "../options/resolve.js";
import type { CancellationOptions } from "../types/options.js";
import { CallRunner } from "../runner/runner.js";
import type { Wire } from "../wire/wire.js";
import type { Message } from "../wire/messages.js";
import type { SendOptions } from "../wire/port.js";
import { isStdioTransport, isStreamableHttpTransport, isV2Client, replaceTransportFetch } from "../sdk/private.js";
import { stdioCancellation } from "../adapters/stdio/index.js";
import { perRequestFetch } from "../adapters/streamable-http/fetch.js";
import type { FetchLike } from "../adapters/streamable-http/fetch.js";
import { createFacade, createSdkShell, sdkCallsOf } from "./facade.js";
import type { CancellableClient, ClientLike, SdkCalls } from "./facade.js";
import { clientWire, connectedTransport } from "./with-cancellation.js";

/** One decorated transport: the wire in its path and the handler it installed on it. */
interface Attached {
  readonly target: object;
  readonly wire: Wire<TransportLike>;
  /** What the decorator put in `target.onmessage` (to tell whether the SDK replaced it since). */
  readonly top: unknown;
}

/** One handle per client, with the options it was attached with: attaching twice returns it. */
const handles = new WeakMap<object, { handle: CancellableClient<TransportLike, ClientLike>; options: CancellationOptions | undefined }>();

/** How an SDK-shaped call's own `timeout` (the SDK request option) meets the client-wide `timeoutMs`. @internal */
export type SdkTimeoutRule =
  /** The call's own wins (it is the more specific); `timeoutMs` is the default of calls without one. */
  | "per-call"
  /** The tighter of the two: for a framework that passes its own timeout on every call (Mastra), where `timeoutMs` would otherwise never apply. */
  | "tighter";

/** Each decorated transport's own `send`, bound to it. */
const originalSends = new WeakMap<object, (message: Message, options?: SendOptions) => Promise<void>>();
/** Each decorated transport's own `close`, bound to it. */
const originalCloses = new WeakMap<object, () => Promise<void>>();

/**
 * The transport's own send, even when an earlier attach already put a wire's there (the SDK
 * started the same transport object again): pipelines never stack.
 */
/** Whether `object[key] = value` would take (an own or inherited writable field or a setter, or a new own field). */
function assignable(object: object, key: string): boolean {
  for (let at: object | null = object; at !== null; at = Object.getPrototypeOf(at) as object | null) {
    const descriptor = Object.getOwnPropertyDescriptor(at, key);
    if (descriptor === undefined) continue;
    // An inherited field is shadowed by a new own one: the object must take new fields.
    if ("value" in descriptor) return descriptor.writable === true && (at === object || Object.isExtensible(object));
    return descriptor.set !== undefined;
  }
  return Object.isExtensible(object);
}

function ownClose(target: TransportLike): () => Promise<void> {
  let close = originalCloses.get(target);
  if (close === undefined) {
    close = (target.close as () => Promise<void>).bind(target);
    originalCloses.set(target, close);
  }
  return close;
}

function ownSend(target: TransportLike): (message: Message, options?: SendOptions) => Promise<void> {
  let send = originalSends.get(target);
  if (send === undefined) {
    send = (target.send as (message: Message, options?: SendOptions) => Promise<void>).bind(target);
    originalSends.set(target, send);
  }
  return send;
}

/**
 * Adds the library to an MCP SDK client that is ALREADY connected (v1 `@modelcontextprotocol/sdk`
 * `Client`, or v2 `@modelcontextprotocol/client` `Client`), typically one an agent framework
 * created and connected: the same `CancellableClient` surface as `withCancellation`.
 *
 * - The connected transport is decorated in place: `client.transport` keeps its identity
 *   (frameworks compare `client.transport === transport`). Requests already in flight are left
 *   as they are (the SDK's own behaviour).
 * - The client's own `callTool(params, resultSchema?, { timeout, maxTotalTimeout,
 *   resetTimeoutOnProgress, signal, onprogress })` and `request(...)` (and so `listTools`,
 *   `readResource`, ... on the v1 SDK) get the library's behaviour: the SDK options map to the
 *   call options (`timeout` is the idle timeout, ms; `maxTotalTimeout` the maximum total timeout,
 *   ms), an option left out takes the defaults given here, the cancel goes out by the transport's
 *   mechanism, late messages are dropped, and every call gets a run record.
 *   `initialize` is never taken over (rule 39).
 * - When the client reconnects on a new transport, the next call attaches to it.
 *
 * The cancel mechanism is picked by what the transport is: stdio (and any transport without
 * per-request streams) sends `notifications/cancelled` (rule 6); a v2 Streamable HTTP transport
 * closes the request's own stream (2026-07-28: the close is the cancel; 2025-era: the POSTed
 * notification, then the close; rules 6, 28, 40); a v1 Streamable HTTP transport created
 * without `{ fetch: cancellableFetch() }` gets a per-request fetch over its own for its requests
 * from the attach on, so its cancel closes the stream too (record mechanism
 * `notification+stream-close`); only where the SDK no longer has that slot is the cancel the
 * POSTed notification alone (record mechanism `notification`: the stream stays open until the
 * server ends it; a stateless server keeps running the tool).
 *
 * Attaching the same client again returns the same handle; given other options than the first
 * time, it is refused (the first options stay in force, so the new ones would do nothing).
 *
 * @param client a connected SDK client.
 * @param options client-wide defaults (all durations in ms) and where records go, as for
 *   `withCancellation`. A call's own SDK `timeout` wins over `timeoutMs` (its default).
 * @returns the handle; `transport` is the client's current transport, `sdkClient` the client itself.
 * @throws {InvalidOptionError} the client is not a connected SDK client, it already carries the
 *   library through `withCancellation`, it is attached already with other options, or an option
 *   is invalid.
 */
export function attachCancellation<C extends ClientLike>(client: C, options?: CancellationOptions): CancellableClient<TransportLike, C> {
  return attachWith(client, options, "attachCancellation", "per-call");
}

/**
 * `attachCancellation` for an integration: `where` names it in messages, `sdkTimeout` says how
 * a call's own SDK `timeout` meets `timeoutMs`. @internal
 */
export function attachWith<C extends ClientLike>(
  client: C,
  options: CancellationOptions | undefined,
  where: string,
  sdkTimeout: SdkTimeoutRule,
): CancellableClient<TransportLike, C> {
  if (typeof client !== "object" || client === null || typeof client.callTool !== "function" || typeof client.request !== "function") {
    throw new InvalidOptionError("client", `${where}: client must be an MCP SDK Client`);
  }
  const existing = handles.get(client);
  if (existing !== undefined) {
    refuseOtherOptions(existing.options, options, where);
    return existing.handle as CancellableClient<TransportLike, C>;
  }
  const first = connectedTransport(client);
  if (first === undefined) {
    throw new InvalidOptionError(
      "client",
      "attachCancellation: the client is not connected. Connect it first (await client.connect(transport)), or use " +
        "withCancellation(client, transport) before connecting",
    );
  }
  // A transport an earlier attach of this copy decorated (another client's, since closed) is attached anew
  // from its own send; one the library is in the path of otherwise is refused.
  const carrier = carrierOf(first);
  if (carrier === "another") throw new InvalidOptionError("client", anotherCopyMessage("the library on this client's transport", where));
  if (carrier === "view") {
    throw new InvalidOptionError(
      "client",
      `${where}: the client is connected through a transport the library is already in the path of (withCancellation's ` +
        "mcp.transport, the AI SDK's cancellableTransport, or the Agents server's); use that handle",
    );
  }
  const defaults = parseCancellationOptions(options, `${where} options`);
  claimClient(client, where);
  const v2 = isV2Client(client);
  const original = sdkCallsOf(client);
  const sdk = client as object as SdkCalls;
  let current: Attached | undefined;

  const attachTo = (target: TransportLike): Attached => {
    // A transport whose close cannot be replaced (a getter without a setter, a frozen object) keeps
    // its own: checked before anything is changed, so a refusal never leaves it half decorated.
    const closeToo = assignable(target, "close");
    const wire = clientWire(adapterFor(target), client, defaults, {
      connected: true,
      // On 2026-07-28 nothing was answered on this transport before the attach (no initialize; the
      // v2 client's server/discover went to a probe process of its own): a stdio server there may
      // still be starting (an outside tester's: the first call timed out during the start).
      serverSpoke: !negotiated2026(client),
      send: ownSend(target),
      close: closeToo ? ownClose(target) : undefined,
    });
    // In place: the SDK keeps calling target.send and target.close, which are now the wire's (a
    // close sends the cancels still waiting first: a timeout followed at once by client.close()).
    (target as { send: unknown }).send = wire.transport.send;
    if (closeToo) (target as { close: unknown }).close = wire.transport.close;
    // Marked for every copy: a withCancellation of it is refused (a second wire would drop this one's requests).
    markAttachedTransport(target);
    return { target, wire, top: target.onmessage };
  };

  const runner = new CallRunner({
    defaults,
    client,
    wire: () => {
      const target = connectedTransport(client) as TransportLike | undefined;
      if (target === undefined) return current?.wire.open === true ? current.wire : null;
      // Connected again through a transport the library is in the path of (another handle's
      // mcp.transport): a wire of the attach over it would drop that one's requests.
      const carrier = carrierOf(target);
      if (carrier === "view" || carrier === "another") {
        throw new InvalidOptionError(
          "client",
          `${where}: the client is now connected through a transport the library is already in the path of (a handle's ` +
            "mcp.transport), so this call would go through two wires, and the other one would drop it (nothing was sent): " +
            "connect the client to its own SDK transport, or make the call through the handle that carries that transport",
        );
      }
      // A new transport (reconnect), or the same one started again by the SDK (which then set
      // its own handlers over ours): attach to it.
      if (current === undefined || current.target !== target || (!current.wire.open && target.onmessage !== current.top)) {
        current = attachTo(target);
      }
      return current.wire;
    },
  });
  current = attachTo(first as TransportLike);
  const facade = createFacade(runner, original, client, v2);

  // The framework's own calls on the client go through the library too.
  const shell = createSdkShell(runner, original, v2, "client", sdkTimeout === "tighter");
  sdk.callTool = shell.callTool;
  sdk.request = shell.request;
  markAttached(client);

  const handle: CancellableClient<TransportLike, C> = {
    get transport() {
      return (connectedTransport(client) ?? current!.target) as TransportLike;
    },
    callTool: facade.callTool as CancellableClient<TransportLike, C>["callTool"],
    request: facade.request as CancellableClient<TransportLike, C>["request"],
    sdkClient: client,
    records: () => runner.records(),
    get pendingCount() {
      return current?.wire.pendingCount ?? 0;
    },
    get tombstoneCount() {
      return current?.wire.tombstoneCount ?? 0;
    },
  };
  handles.set(client, { handle: handle as CancellableClient<TransportLike, ClientLike>, options });
  return handle;
}

/**
 * A second attach of one client: its options must be the first attach's (each option the same
 * value; no options at all is fine), else they would be ignored. @throws {InvalidOptionError}
 * naming the first option that differs. @internal
 */
export function refuseOtherOptions(first: CancellationOptions | undefined, again: CancellationOptions | undefined, where: string): void {
  if (again === undefined || again === first) return;
  const before = (first ?? {}) as Record<string, unknown>;
  const now = again as Record<string, unknown>;
  for (const key of new Set([...Object.keys(before), ...Object.keys(now)])) {
    if (before[key] !== now[key]) {
      throw new InvalidOptionError(
        key,
        `${where}: this client is attached already, with other options ("${key}" differs): the first attach's options stay in force, ` +
          "so these would do nothing. Attach once with the options you want, or call again with the same options (or none) to get the handle",
      );
    }
  }
}

/**
 * The v2 client negotiated 2026-07-28 or later (its public `getNegotiatedProtocolVersion()`):
 * no `initialize` was answered on its transport. False for a v1 client, which always initializes.
 */
function negotiated2026(client: object): boolean {
  const read = (client as { getNegotiatedProtocolVersion?: unknown }).getNegotiatedProtocolVersion;
  if (typeof read !== "function") return false;
  try {
    const version: unknown = read.call(client);
    return typeof version === "string" && version >= "2026-07-28";
  } catch {
    return false;
  }
}

/**
 * The cancel mechanism for a transport that is already connected, by what it is: a Streamable
 * HTTP transport that can close one request's stream gets the Streamable HTTP adapter; a v1
 * Streamable HTTP transport created without `cancellableFetch()` gets the POSTed notification
 * alone (the most a connected v1 transport allows); everything else (stdio, in-memory) the
 * notification (rule 6); a stdio transport the stdio adapter (its write queue). The pipeline's
 * bottom calls the transport's original `send`, so the adapter's own sends bypass the wire
 * installed on the transport itself.
 */
function adapterFor(target: TransportLike): CancellationAdapter<TransportLike> {
  if (isStdioTransport(target)) return stdioCancellation(target);
  if (!isStreamableHttpTransport(target)) return notifyOnCancel(target);
  try {
    return streamableHttpCancellation(target);
  } catch (error) {
    if (!(error instanceof InvalidOptionError && error.option === "transport")) throw error;
  }
  // A v1 transport created without cancellableFetch() (LangChain's MultiServerMCPClient builds
  // them so): its fetch cannot close one request's socket. Its requests from now on go through a
  // per-request fetch over the one it had (the transport's private `_fetch`, the one guarded
  // write: src/sdk/private.ts), so a cancel closes the request's stream too (record mechanism
  // notification+stream-close). Where that slot is gone, the POSTed notification is the most it
  // allows (a stateful 2025 server stops the tool; the stream stays open until the server ends
  // it): record mechanism notification.
  const upgraded = replaceTransportFetch(target, (current) => {
    const base =
      typeof current === "function" ? (current as FetchLike) : (url: string | URL, init?: RequestInit) => globalThis.fetch(url, init);
    return perRequestFetch(base);
  });
  if (upgraded) {
    try {
      return streamableHttpCancellation(target);
    } catch (error) {
      if (!(error instanceof InvalidOptionError && error.option === "transport")) throw error;
    }
  }
  return notifyOnCancel(target);
}
