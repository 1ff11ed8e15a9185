// Process-wide counters: a call id and a connection id are unique in the process, across every
// client, wrapper and integration (records from several connections can share one log).

let callNumber = 0;
let connectionNumber = 0;

/** The next call id (the record's `callId`, and the wire's key for the call). */
export function nextCallId(): number {
  return ++callNumber;
}

/** The next connection id (the record's `connectionId`). */
export function nextConnectionId(): number {
  return ++connectionNumber;
}
