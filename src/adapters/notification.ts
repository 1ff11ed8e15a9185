import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { anotherCopyMessage, carrierOf } from "../utils/copies.js";
import { isStreamableHttpTransport } from "../sdk/private.js";
import type { CancellationAdapter, TransportLike } from "./types.js";
import { ADAPTER_LAYERS } from "../wire/port.js";
import type { LayeredAdapter } from "../wire/port.js";
import { notify } from "../wire/pipe.js";

/**
 * The cancel mechanism of stdio and of any transport without per-request streams (the SDK's
 * in-memory transport, a custom one): send `notifications/cancelled {requestId, reason}` and do
 * not wait for it (rules 6, 31). A failed send is recorded on the call (`cancel.undelivered`),
 * never reported to `onerror`: it is the library's own delivery, not a fault of the server.
 * @throws {InvalidOptionError} for a Streamable HTTP transport: a notification alone would leave
 *   the request's stream open, and on 2026-07-28 it is not even expected (rules 6, 28, 40).
 */
export function notificationCancellation<T extends TransportLike>(transport: T): CancellationAdapter<T> {
  refuseStreamableHttp(transport);
  return notifyOnCancel(transport);
}

/**
 * Refuses a Streamable HTTP transport where only a notification would be sent (see
 * `notificationCancellation`). @internal
 * @throws {InvalidOptionError} (option `transport`) naming `streamableHttpCancellation`.
 */
export function refuseStreamableHttp(transport: object): void {
  if (!isStreamableHttpTransport(transport)) return;
  throw new InvalidOptionError(
    "transport",
    "a Streamable HTTP transport needs streamableHttpCancellation(transport) from mcp-cancellable/streamable-http: " +
      "a cancel there closes the request's stream (rules 6, 28, 40 in docs/spec-rules.md); a notification alone leaves it open",
  );
}

/**
 * Refuses a transport the library is already in the path of: a second wire over it would drop
 * the first one's requests. An adapter (`attached: "passes"`) refuses a handle's `mcp.transport`
 * (of this copy or another) and lets a transport this copy's `attachCancellation` decorated pass
 * (the attach makes its adapter anew when the SDK starts it again); `withCancellation` refuses
 * that one too. @internal
 * @throws {InvalidOptionError} (option `transport`).
 */
export function refuseCarried(transport: object, where: string, attached: "passes" | "refused" = "refused"): void {
  // Every entry point's gate for a transport: one that cannot take the handlers the library sets
  // (`onmessage`, `onclose`, `onerror`; on Streamable HTTP its fetch) is refused here, naming it
  // (an outside tester's: a frozen transport failed with a bare TypeError from inside the library).
  if (!Object.isExtensible(transport)) {
    throw new InvalidOptionError(
      "transport",
      `${where}: transport cannot be extended (frozen, sealed or made non-extensible): the library sets its onmessage, onclose and onerror handlers (and, on Streamable HTTP, its fetch); pass the transport as it was made`,
    );
  }
  const carrier = carrierOf(transport);
  if (carrier === undefined || (carrier === "attached" && attached === "passes")) return;
  throw new InvalidOptionError(
    "transport",
    carrier === "another"
      ? anotherCopyMessage("the library on this transport", where)
      : carrier === "view"
        ? `${where}: this transport carries the library already (a handle's mcp.transport, the AI SDK's cancellableTransport, ` +
          "or the Agents server's), and a second wrap of it would drop the first one's requests: pass the SDK's own transport " +
          "(or its adapter), or keep using the handle that carries it"
        : `${where}: attachCancellation decorated this transport in place (its send goes through that attach's wire), and a ` +
          "second wrap of it would drop the first one's requests: give this wrapper a new SDK transport, or, once the client " +
          "that attached it has closed, connect the new client with client.connect(transport) and attachCancellation(client)",
  );
}

/**
 * The notification mechanism without the Streamable HTTP guard, for a caller that wants exactly
 * that on HTTP (the probe POSTs the 2025-era notification and keeps the stream open to watch
 * the server). @internal
 */
export function notifyOnCancel<T extends TransportLike>(transport: T): CancellationAdapter<T> {
  const adapter: CancellationAdapter<T> & LayeredAdapter = {
    transport,
    // In a pipeline the bottom port's own cancel is this mechanism (no layer needed).
    [ADAPTER_LAYERS]: () => [],
    cancel: (request) => notify({ send: request.send }, request),
  };
  return adapter;
}
