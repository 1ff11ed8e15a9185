// `mcp-cancellable/core`: what someone writing their own cancellation adapter, or driving the
// state machine without the client facade, needs. A bot author needs none of it: the root entry
// (`mcp-cancellable`) has the facade, the options, the errors and the run record. Like the root,
// this entry imports no `node:` module.

/** The per-request state machine (idle and maximum total timeouts, signal, late state, record). */
export { CancellableCall } from "./core/cancellable-call.js";
export type { CallHooks, CallIds, CallInit, RequestId } from "./core/cancellable-call.js";
/** The record's one human line, as `RunRecord.summary` has it. */
export { summarize } from "./core/record.js";
/** The adapter that sends `notifications/cancelled` (stdio, in-memory, custom transports). */
export { notificationCancellation } from "./adapters/notification.js";
export type { AdapterOrTransport, CancellationAdapter, CancelRequest, TransportLike, TransportOf, WireHooks } from "./wire/types.js";
export type { CancelledNotification, Message } from "./wire/messages.js";
export type { ResolvedCallOptions } from "./types/options.js";
