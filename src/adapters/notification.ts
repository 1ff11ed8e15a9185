import type { CancellationAdapter, TransportLike } from "./types.js";

/**
 * The cancel mechanism of stdio and of any transport without per-request streams (the SDK's
 * in-memory transport, a custom one): send `notifications/cancelled {requestId, reason}` and do
 * not wait for it (rules 6, 31). A failed send goes to the transport's `onerror`.
 */
export function notificationCancellation<T extends TransportLike>(transport: T): CancellationAdapter<T> {
  return {
    transport,
    cancel({ notification, send, reportError }) {
      try {
        send(notification).catch(reportError);
      } catch (error) {
        reportError(error);
      }
      return "notification";
    },
  };
}
