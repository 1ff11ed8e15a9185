import type { RequestId } from "../core/cancellable-call.js";
import { CALL_MARKER, findAnswered } from "./messages.js";
import type { Message } from "./messages.js";
import { BoundedMap } from "../utils/bounded-map.js";
import { Layer } from "./port.js";
import type { MessageExtra, SendOptions } from "./port.js";

/**
 * The listens layer of a connection's pipeline (right below the correlation layer): the SDK's
 * own `subscriptions/listen` requests still open (2026-07-28, rules 12, 32-34). A listen is a
 * long-lived request the SDK made on its own: the correlation layer never cancels it for a call
 * and asks `has` to tell a server's `notifications/cancelled` that ends one (rule 12: a server
 * may cancel a listen it names, and only that) from one that names a call of ours (an anomaly).
 * A listen is forgotten when it is answered, when its send fails, when the SDK cancels it, when
 * the server cancels it (after the message went up), and when its stream is lost (`ended`).
 */
export class ListenTracker extends Layer {
  readonly #open = new Set<RequestId>();
  /**
   * Listens the server ended with their result (rule 34), made on first use: a notification still
   * stamped with one of their subscription ids (rule 33) is late, and dropped, as a call's late
   * messages are (an outside tester's finding: they reached the SDK's handlers). The last 256.
   */
  #ended: BoundedMap<RequestId, true> | undefined;

  /** Listens open (0 once every listen ended). */
  get size(): number {
    return this.#open.size;
  }

  /** True while this id is an open listen. */
  has(id: RequestId): boolean {
    return this.#open.has(id);
  }

  /** The request ended some other way (its stream was lost): forgotten. */
  ended(id: RequestId): void {
    this.#open.delete(id);
  }

  override send(message: Message, options?: SendOptions): Promise<void> {
    const id = message.id;
    if (message.method === "subscriptions/listen" && id !== undefined && id !== null && message.params?.[CALL_MARKER] === undefined) {
      this.#open.add(id);
      const sending = this.below.send(message, options);
      sending.catch(() => this.#open.delete(id));
      return sending;
    }
    if (message.method === "notifications/cancelled" && this.#open.size > 0) {
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof requestId === "string" || typeof requestId === "number") this.#open.delete(requestId);
    }
    return this.below.send(message, options);
  }

  override message(message: Message, extra?: MessageExtra): void {
    if (this.#ended !== undefined && message.id === undefined && this.#ended.has(subscriptionOf(message) as RequestId)) return;
    if (this.#open.size === 0) {
      this.up.message(message, extra);
      return;
    }
    const given =
      message.method === undefined ? message.id : message.method === "notifications/cancelled" ? cancelledId(message) : undefined;
    // Matched as the wire matches answers ("1" answers listen 1): this layer sits below it.
    const id = findAnswered(given, (key) => (this.#open.has(key) ? key : undefined)) ?? given;
    // Its result: the server ended it (rule 34); what it still sends under its id is late. (Read
    // before the message goes up: the correlation layer forgets the listen as it takes its answer.)
    const ended = id !== undefined && id !== null && message.method === undefined && "result" in message && this.#open.has(id);
    this.up.message(message, extra);
    if (id === undefined || id === null) return;
    this.#open.delete(id);
    if (ended) (this.#ended ??= new BoundedMap(ENDED_LISTENS)).set(id, true);
  }

  override closed(): void {
    this.#open.clear();
    this.#ended = undefined;
    this.up.closed();
  }
}

/** How many listens ended with their result are remembered, to drop what their server still sends. */
const ENDED_LISTENS = 256;

/** Where a `subscriptions/listen` stream's messages name their listen: its request id (rule 33). */
export const SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId";

/** The subscription id a notification is stamped with (rule 33), if any. */
export function subscriptionOf(message: Message): unknown {
  return (message.params?._meta as Record<string, unknown> | undefined)?.[SUBSCRIPTION_ID_META];
}

function cancelledId(message: Message): RequestId | undefined {
  const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
  return typeof requestId === "string" || typeof requestId === "number" ? requestId : undefined;
}
