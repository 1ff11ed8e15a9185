// Process-wide counters: a call id and a connection id are unique in the process, across every
// client, wrapper and integration (records from several connections can share one log), and
// across every copy of the library loaded in it (its ES module and CommonJS builds, or two
// installed versions): the counters live on `globalThis` under a registered symbol, so the
// copies share them (an outside tester's finding: each build counted from 1, and one log got
// two calls under `callId` 1).

const COUNTERS = Symbol.for("mcp-cancellable/ids");
const counters = ((globalThis as Record<symbol, unknown>)[COUNTERS] ??= { call: 0, connection: 0 }) as {
  call: number;
  connection: number;
};

/** The next call id (the record's `callId`, and the wire's key for the call). */
export function nextCallId(): number {
  return ++counters.call;
}

/** The next connection id (the record's `connectionId`). */
export function nextConnectionId(): number {
  return ++counters.connection;
}
