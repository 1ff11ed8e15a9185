import type { RequestId } from "../core/cancellable-call.js";

/**
 * The SDK's own `subscriptions/listen` requests still open (2026-07-28, rules 12, 32-34). A
 * listen is a long-lived request the SDK made on its own: the wire never cancels it for a call,
 * forgets it when it is answered, when its send fails, when its stream is lost or when the SDK
 * cancels it, and lets a server's `notifications/cancelled` end it (rule 12: a server may cancel
 * a listen it names, and only that).
 */
export class ListenTracker {
  readonly #open = new Set<RequestId>();

  /** Listens open (0 once every listen ended). */
  get size(): number {
    return this.#open.size;
  }

  /** The SDK sent a request of its own: followed when it is a listen. */
  sent(id: RequestId, method: string): void {
    if (method === "subscriptions/listen") this.#open.add(id);
  }

  /** True while this id is an open listen. */
  has(id: RequestId): boolean {
    return this.#open.has(id);
  }

  /** The request ended (answered, its send failed, its stream lost, cancelled): forgotten. */
  ended(id: RequestId): void {
    this.#open.delete(id);
  }

  /** The connection closed. */
  clear(): void {
    this.#open.clear();
  }
}
