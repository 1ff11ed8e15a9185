import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { isStreamableHttpTransport } from "../sdk/private.js";
import type { CancellationAdapter, TransportLike } from "./types.js";

/**
 * The cancel mechanism of stdio and of any transport without per-request streams (the SDK's
 * in-memory transport, a custom one): send `notifications/cancelled {requestId, reason}` and do
 * not wait for it (rules 6, 31). A failed send is recorded on the call (`cancel.undelivered`),
 * never reported to `onerror`: it is the library's own delivery, not a fault of the server.
 * @throws {InvalidOptionError} for a Streamable HTTP transport: a notification alone would leave
 *   the request's stream open, and on 2026-07-28 it is not even expected (rules 6, 28, 40).
 */
export function notificationCancellation<T extends TransportLike>(transport: T): CancellationAdapter<T> {
  if (isStreamableHttpTransport(transport)) {
    throw new InvalidOptionError(
      "transport",
      "a Streamable HTTP transport needs streamableHttpCancellation(transport) from mcp-cancellable/streamable-http: " +
        "a cancel there closes the request's stream (rules 6, 28, 40 in docs/spec-rules.md); a notification alone leaves it open",
    );
  }
  return notifyOnCancel(transport);
}

/**
 * The notification mechanism without the Streamable HTTP guard, for a caller that wants exactly
 * that on HTTP (the probe POSTs the 2025-era notification and keeps the stream open to watch
 * the server). @internal
 */
export function notifyOnCancel<T extends TransportLike>(transport: T): CancellationAdapter<T> {
  return {
    transport,
    cancel({ notification, send, delivery }) {
      const undelivered = (error: unknown): void =>
        delivery({ sent: "none", failed: { mechanism: "notification", error: error instanceof Error ? error.message : String(error) } });
      try {
        send(notification).catch(undelivered);
      } catch (error) {
        // Thrown before cancel() returned: the record is made right after it.
        queueMicrotask(() => undelivered(error));
        return "none";
      }
      return "notification";
    },
  };
}
