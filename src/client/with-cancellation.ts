import { claimClient, refuseAttached } from "./owner.js";
import { anotherCopyMessage, fromAnotherCopy } from "../utils/copies.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { notificationCancellation, refuseCarried } from "../adapters/notification.js";
import type { AdapterOrTransport, CancellationAdapter, TransportLike, TransportOf } from "../adapters/types.js";
import { ADAPTER_LAYERS } from "../wire/port.js";
import { parseCancellationOptions } from "../options/resolve.js";
import type { CancellationOptions } from "../types/options.js";
import type { Wire } from "../wire/wire.js";
import { CallRunner, openWire } from "../runner/runner.js";
import type { WireExtras } from "../runner/runner.js";
import { createFacade, createSdkShell, sdkCallsOf, sdkClientOver } from "./facade.js";
import { isStdioTransport, isV2Client } from "../sdk/private.js";
import { stdioCancellation } from "../adapters/stdio/index.js";
import type { CancellableClient, ClientLike } from "./facade.js";

export type {
  CallToolParams,
  CallToolResultOf,
  CancellableClient,
  ClientLike,
  RequestOptions,
  RequestParams,
  RequestResultOf,
  ResultSchema,
  ToolCallOptions,
  ToolResult,
} from "./facade.js";

/**
 * Wraps an MCP SDK client (v1 `@modelcontextprotocol/sdk` `Client`, or v2
 * `@modelcontextprotocol/client` `Client`) and its transport so every call gets an idle
 * timeout, a maximum total timeout, the caller's `AbortSignal`, a cancel sent with the
 * transport's own mechanism, late messages discarded, and a run record.
 *
 * @param client the SDK client; connect it with the returned `transport`.
 * @param transport a cancellation adapter (`stdioCancellation(...)`, `streamableHttpCancellation(...)`),
 *   or a plain transport, which gets `notifications/cancelled` (rule 6: stdio, in-memory).
 * @param options client-wide defaults (all durations in ms) and where records go.
 * @throws {InvalidOptionError} an option is invalid, naming it.
 */
export function withCancellation<A extends AdapterOrTransport, C extends ClientLike = ClientLike>(
  client: C,
  transport: A,
  options?: CancellationOptions,
): CancellableClient<TransportOf<A>, C> {
  type T = TransportOf<A>;
  if (typeof client !== "object" || client === null || typeof client.callTool !== "function") {
    throw new InvalidOptionError("client", "withCancellation: client must be an MCP SDK Client");
  }
  if (connectedTransport(client) !== undefined) {
    throw new InvalidOptionError(
      "client",
      "withCancellation: this client is already connected (or a client.connect() of it failed and it was not closed: " +
        "the SDK keeps the transport until client.close()). Use attachCancellation(client, options) for a client that " +
        "is already connected (an agent framework's, for example); to connect it again, await client.close() first; " +
        "or call withCancellation before client.connect() and connect with client.connect(mcp.transport)",
    );
  }
  refuseAttached(client, "withCancellation");
  const adapter: CancellationAdapter<T> = toAdapter(transport);
  const defaults = parseCancellationOptions(options, "withCancellation options");
  claimClient(client, "withCancellation");
  // v2 clients take (params, options); v1 clients take (params, resultSchema, options).
  const v2 = isV2Client(client);
  // The transport's own close is left as it is: it is not only the bot's (the SDK's in-memory
  // pair calls it when the other side closes), so a close there is the connection's end, not the
  // client giving its calls up. `client.close()` goes through the wire.
  const wire = clientWire(adapter, client, defaults);
  const runner = new CallRunner({
    defaults,
    client,
    wire: () => {
      // Usage mistakes are usage errors (nothing is sent), never a closed connection that a
      // bot's "cancelled" branch would swallow.
      const current = connectedTransport(client);
      if (current !== undefined && current !== wire.transport) {
        throw new InvalidOptionError(
          "transport",
          "the client is connected through another transport than mcp.transport, so this call would bypass the library " +
            "(nothing was sent): connect with client.connect(mcp.transport), or use attachCancellation(client) to add " +
            "cancellation to the client as it is connected",
        );
      }
      if (!wire.started) {
        throw new InvalidOptionError(
          "client",
          "the client is not connected yet (nothing was sent): call await client.connect(mcp.transport) before calling tools",
        );
      }
      return wire;
    },
  });
  const own = sdkCallsOf(client);
  const facade = createFacade(runner, own, client, v2);
  let sdkClient: C | undefined;
  return {
    transport: wire.transport,
    callTool: facade.callTool as CancellableClient<T, C>["callTool"],
    request: facade.request as CancellableClient<T, C>["request"],
    get sdkClient() {
      return (sdkClient ??= sdkClientOver(client, createSdkShell(runner, own, v2, "sdkClient")));
    },
    records: () => runner.records(),
    get pendingCount() {
      return wire.pendingCount;
    },
    get tombstoneCount() {
      return wire.tombstoneCount;
    },
  };
}

/**
 * The wire between an SDK client and its transport, with the client-wide defaults (every SDK
 * client shell makes its wires here: withCancellation, attachCancellation, the Agents server).
 * Its transport is marked as carrying the library. `connected`: the transport is already
 * started (attachCancellation). @internal
 */
export function clientWire<T extends TransportLike>(
  adapter: CancellationAdapter<T>,
  client: object,
  defaults: CancellationOptions,
  extras: Omit<WireExtras, "client"> = {},
): Wire<T> {
  const wire = openWire(adapter, defaults, { ...extras, client });
  return wire;
}

/** The transport the SDK client is connected through (v1 and v2: the `transport` getter), if any. */
export function connectedTransport(client: object): object | undefined {
  const transport = (client as { transport?: unknown }).transport;
  return typeof transport === "object" && transport !== null ? transport : undefined;
}

/** A cancellation adapter as it is, or a plain transport with the notification mechanism. @internal */
export function toAdapter<A extends AdapterOrTransport>(transport: A, where = "withCancellation"): CancellationAdapter<TransportOf<A>> {
  type T = TransportOf<A>;
  const refused = `${where}: transport must be an MCP transport or a cancellation adapter`;
  if (typeof transport !== "object" || transport === null) throw new InvalidOptionError("transport", refused);
  // The library is in its path already (a handle's mcp.transport, the AI SDK's cancellableTransport,
  // or a transport attachCancellation decorated), or under an adapter's: a second wire over it would
  // take the first one's requests for settled calls of its own and drop them (outside testers': no
  // call of the second handle reached the server).
  refuseCarried(transport, where);
  const inner = (transport as { transport?: unknown }).transport;
  if (typeof inner === "object" && inner !== null) refuseCarried(inner, where);
  // Its cancel would be taken for a plain notification, its layers unseen (an outside tester's: a
  // 2026-07-28 cancel went out as a notification, its stream left open).
  if (fromAnotherCopy(transport, ADAPTER_LAYERS)) throw new InvalidOptionError("transport", anotherCopyMessage("this adapter", where));
  // A transport of its own (send and start) is one, even with `cancel` and `transport` members (a
  // wrapper around another transport): it gets the notification, and its own send is used.
  const isTransport = typeof (transport as T).send === "function" && typeof (transport as T).start === "function";
  if (!isTransport && "cancel" in transport && "transport" in transport && typeof transport.cancel === "function") {
    const inner = (transport as { transport?: unknown }).transport as T | null | undefined;
    if (typeof inner !== "object" || inner === null || typeof inner.send !== "function" || typeof inner.start !== "function") {
      throw new InvalidOptionError(
        "transport",
        `${where}: transport is taken for a cancellation adapter (it has cancel() and transport), but its transport is not an MCP transport (send and start functions)`,
      );
    }
    return transport as unknown as CancellationAdapter<T>;
  }
  if (!isTransport) {
    throw new InvalidOptionError(
      "transport",
      `${refused}${typeof (transport as { callTool?: unknown }).callTool === "function" ? " (this is an MCP client, not its transport)" : ""}`,
    );
  }
  // An SDK stdio transport given as it is gets the stdio adapter, as `attachCancellation` gives it:
  // the notification alone, through the SDK's own `send`, left a server that stopped reading to
  // one `drain` listener per write and the exit's cancels to one write each (no write queue).
  if (isStdioTransport(transport)) return stdioCancellation(transport as T);
  return notificationCancellation(transport as T);
}
