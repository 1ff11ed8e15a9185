// What the HTTP front puts on each call's span (`--otel`): the replica, the client's own request
// id, its session (2025-era) and era, beside what the library's recorder puts there itself (the
// upstream's request id as `jsonrpc.request.id`, the method, the tool, the cancel). The recorder
// reads them once, synchronously, when the call starts: the front sets them around the code that
// sends the request upstream.
import type { Attributes } from "@opentelemetry/api";

export const ATTR_PROXY_REPLICA = "mcp_cancellable.proxy.replica";
export const ATTR_PROXY_CLIENT_REQUEST_ID = "mcp_cancellable.proxy.client_request_id";
export const ATTR_PROXY_CLIENT_SESSION_ID = "mcp_cancellable.proxy.client_session_id";
export const ATTR_PROXY_CLIENT_ERA = "mcp_cancellable.proxy.client_era";

/** The client facts of the request being sent now. */
export interface FrontCallFacts {
  readonly clientRequestId: string | number;
  readonly clientSession: string | null;
  readonly era: "2025" | "2026-07-28";
}

let replica: string | undefined;
let current: FrontCallFacts | undefined;

/** This process's replica name (set once by the front). */
export function setReplica(name: string): void {
  replica = name;
}

/** Runs `send` with `facts` as the current request's (restored after, even if it throws). */
export function withCallFacts<T>(facts: FrontCallFacts, send: () => T): T {
  const previous = current;
  current = facts;
  try {
    return send();
  } finally {
    current = previous;
  }
}

/** The recorder's `attributes` option: the replica, and the current request's client facts when a front request is being sent. */
export function frontSpanAttributes(): Attributes | undefined {
  if (replica === undefined) return undefined;
  const attributes: Attributes = { [ATTR_PROXY_REPLICA]: replica };
  if (current === undefined) return attributes;
  attributes[ATTR_PROXY_CLIENT_REQUEST_ID] = String(current.clientRequestId);
  attributes[ATTR_PROXY_CLIENT_ERA] = current.era;
  if (current.clientSession !== null) attributes[ATTR_PROXY_CLIENT_SESSION_ID] = current.clientSession;
  return attributes;
}
