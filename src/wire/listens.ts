import type { RequestId } from "../core/cancellable-call.js";
import { CALL_MARKER, findAnswered } from "./messages.js";
import type { Message } from "./messages.js";
import { BoundedMap } from "../utils/bounded-map.js";
import { Layer } from "./port.js";
import type { MessageExtra, SendOptions } from "./port.js";
import type { CancelRequest } from "./types.js";
import type { CancelMechanism } from "../types/record.js";

/**
 * The listens layer of a connection's pipeline (right below the correlation layer): the SDK's
 * own `subscriptions/listen` requests still open (2026-07-28, rules 12, 32-34). A listen is a
 * long-lived request the SDK made on its own: the correlation layer never cancels it for a call
 * and asks `has` to tell a server's `notifications/cancelled` that ends one (rule 12: a server
 * may cancel a listen it names, and only that) from one that names a call of ours (an anomaly).
 * A listen is forgotten when it is answered, when its send fails, when the SDK cancels it, when
 * the server cancels it (after the message went up), when its stream is lost and when the call
 * that made it settles (`ended`); what the server still sends under an ended listen is dropped.
 */
export class ListenTracker extends Layer {
  /** The SDK's own listens still open (`has`). */
  readonly #open = new Set<RequestId>();
  /** Every listen still open: the SDK's own and the library's calls' (a proxied client's). */
  readonly #live = new Set<RequestId>();
  /**
   * Listens that ended, made on first use: a notification still stamped with one of their
   * subscription ids (rule 33) is late, and dropped, as a call's late messages are, however the
   * listen ended (its result, rule 34; the server's `notifications/cancelled`, rule 12; the
   * client's cancel; its stream lost; a call's listen settled): outside testers' findings, they
   * reached the SDK's handlers. The last 256.
   */
  #ended: BoundedMap<RequestId, true> | undefined;

  /** Listens open (0 once every listen ended). */
  get size(): number {
    return this.#open.size;
  }

  /** True while this id is an open listen of the SDK's own. */
  has(id: RequestId): boolean {
    return this.#open.has(id);
  }

  /** The listen ended some other way (its stream was lost, or the call that made it settled): forgotten, and what still comes for it is late. */
  ended(id: RequestId): void {
    this.#open.delete(id);
    this.#end(id);
  }

  #end(given: RequestId): void {
    const id = findAnswered(given, (key) => (this.#live.has(key) ? key : undefined));
    if (id !== undefined && this.#live.delete(id)) (this.#ended ??= new BoundedMap(ENDED_LISTENS)).set(id, true);
  }

  override send(message: Message, options?: SendOptions): Promise<void> {
    const id = message.id;
    if (message.method === "subscriptions/listen" && id !== undefined && id !== null) {
      this.#live.add(id);
      // A call's listen is the correlation layer's to end (`ended` once the call settled).
      if (message.params?.[CALL_MARKER] !== undefined) return this.below.send(message, options);
      this.#open.add(id);
      const sending = this.below.send(message, options);
      sending.catch(() => {
        this.#open.delete(id);
        this.#live.delete(id);
      });
      return sending;
    }
    if (message.method === "notifications/cancelled" && this.#live.size > 0) {
      // The client ends a listen (the SDK's `close()` on stdio): what the server still sends for it is late.
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof requestId === "string" || typeof requestId === "number") this.ended(requestId);
    }
    return this.below.send(message, options);
  }

  /** The client cancels a request (its abort, a timeout, the SDK's `close()` of a listen): a listen's stream is over. */
  override cancel(request: CancelRequest): CancelMechanism {
    if (this.#live.size > 0) this.ended(request.requestId);
    return this.below.cancel(request);
  }

  override message(message: Message, extra?: MessageExtra): void {
    const ended = this.#ended;
    // Matched as answers are ("1" names listen 1: the wire takes an answer so).
    if (
      ended !== undefined &&
      message.id === undefined &&
      findAnswered(subscriptionOf(message), (key) => (ended.has(key) ? true : undefined))
    ) {
      return;
    }
    if (this.#live.size === 0) {
      this.up.message(message, extra);
      return;
    }
    const given =
      message.method === undefined ? message.id : message.method === "notifications/cancelled" ? cancelledId(message) : undefined;
    // Matched as the wire matches answers ("1" answers listen 1): this layer sits below it.
    const id = findAnswered(given, (key) => (this.#live.has(key) ? key : undefined)) ?? given;
    // Its answer, or the server's cancel of it (rules 12, 34), goes up first (the correlation
    // layer forgets the listen as it takes it); what the server still sends under its id is late.
    this.up.message(message, extra);
    if (id === undefined || id === null) return;
    this.ended(id);
  }

  override closed(): void {
    this.#open.clear();
    this.#live.clear();
    this.#ended = undefined;
    this.up.closed();
  }
}

/** How many ended listens are remembered, to drop what their server still sends. */
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
