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

/** The message refusing a transport the library is already in the path of (`where`: the function refusing it). @internal */
export function carriedMessage(where: string): string {
  return (
    `${where}: this transport carries the library already (it is a handle's mcp.transport, or a transport ` +
    "attachCancellation decorated), and a second wrap of it would drop the first one's requests: pass the SDK's own " +
    "transport (or its adapter), or keep using the handle that carries it"
  );
}

/**
 * Refuses a handle's `mcp.transport` (of this copy or another) given to an adapter: a second
 * wire over it would drop the first one's requests. A transport this copy's `attachCancellation`
 * decorated passes (the attach makes its adapter anew when the SDK starts it again); a
 * `withCancellation` of it is refused there. @internal
 * @throws {InvalidOptionError} (option `transport`).
 */
export function refuseView(transport: object, where: string): void {
  const carrier = carrierOf(transport);
  if (carrier === "view") throw new InvalidOptionError("transport", carriedMessage(where));
  if (carrier === "another") throw new InvalidOptionError("transport", anotherCopyMessage("the library on this transport", where));
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
