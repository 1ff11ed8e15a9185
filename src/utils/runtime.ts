// What the JavaScript runtime the library runs in does with HTTP requests, where it matters to a
// cancel and cannot be observed from a request itself.

/**
 * Whether `fetch` may hold a request in a connection queue of the runtime's own, out of the
 * library's sight: a browser (and a worker, an edge runtime) allows six connections per origin
 * over HTTP/1.1 and queues the rest, then sends a queued request whenever a connection frees,
 * even after the caller gave it up, as long as its fetch was not aborted. Node, Deno and Bun
 * (each with `process.versions.node`) hand a request to their own connection pool, unbounded by
 * default. Read at each use (cheap, and a test can stand in for a browser).
 */
export function fetchQueuesOutOfSight(): boolean {
  const runtime = globalThis as { process?: { versions?: { node?: unknown } } };
  return typeof runtime.process?.versions?.node !== "string";
}
