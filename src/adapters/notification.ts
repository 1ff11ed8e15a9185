import { InvalidOptionError } from "../errors/InvalidOptionError.js";
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
