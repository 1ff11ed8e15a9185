import { afterEach, describe, expect, it, vi } from "vitest";
import { CallCancelledError, CallTimeoutError } from "../../src/index.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import type { RawHttpServer } from "../fixtures/reliability/raw-http-server.js";
import { connectV2 } from "../http/clients.js";
import { sleep } from "../helpers/reliability.js";
import { eventually } from "../helpers/stdio.js";

// 2025-era cancels where the runtime holds requests in a connection queue of its own, out of the
// library's sight: a browser allows six connections per origin over HTTP/1.1 and sends a queued
// request whenever one frees, even after its caller gave it up, unless its fetch was aborted (an
// outside tester's finding in Chromium). Here the runtime is taken for a browser
// (src/utils/runtime.ts) and the fetch is one with such a queue (2 connections), against a raw
// 2025-era server on 127.0.0.1. The Chromium leg (test/runtimes/checks.mjs) runs the same in a
// real browser.
vi.mock("../../src/utils/runtime.js", () => ({ fetchQueuesOutOfSight: () => true }));

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await Promise.race([step().catch(() => {}), sleep(2_000)]);
});

/**
 * A fetch that allows `slots` requests at a time and queues the rest, as a browser does per
 * origin: a queued request goes when a slot frees (a response read to its end, or aborted); an
 * aborted queued request never goes.
 */
function queueingFetch(slots: number): typeof globalThis.fetch {
  let open = 0;
  const waiting: Array<() => void> = [];
  const release = (): void => {
    const next = waiting.shift();
    if (next !== undefined) next();
    else open--;
  };
  const acquire = (signal: AbortSignal | null | undefined): Promise<void> => {
    if (open < slots) {
      open++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const go = (): void => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = (): void => {
        waiting.splice(waiting.indexOf(go), 1);
        reject(signal!.reason);
      };
      waiting.push(go);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  };
  return async (url, init) => {
    await acquire(init?.signal);
    let released = false;
    const once = (): void => {
      if (released) return;
      released = true;
      release();
    };
    init?.signal?.addEventListener("abort", once, { once: true });
    let response: Response;
    try {
      response = await globalThis.fetch(url, init);
    } catch (error) {
      once();
      throw error;
    }
    if (response.body === null) {
      once();
      return response;
    }
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            once();
            controller.close();
          } else controller.enqueue(value);
        } catch (error) {
          once();
          controller.error(error);
        }
      },
      cancel(reason) {
        once();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

describe("2025-era cancels in a runtime that queues requests out of sight (a browser)", () => {
  async function setup() {
    const server = await startRawHttp();
    cleanup.push(() => server.stop());
    // flushTimeoutMs 2,000: a wait for a head or an answer would show as seconds, not ms.
    const client = await connectV2(server.url, { fetch: queueingFetch(2) }, { flushTimeoutMs: 2_000 });
    cleanup.push(() => client.close());
    return { server, ...client };
  }
  const requestsOf = (server: RawHttpServer, rpc: string) => server.events.filter((e) => e.kind === "request" && e.rpc === rpc);

  it("a call aborted while its POST waits for a connection never reaches the server, though a connection frees right after", async () => {
    const { server, mcp, errors } = await setup();
    // Both connections held: one answered after 300 ms, one never.
    const answered = mcp.callTool({ name: "late", arguments: { ms: 300 } });
    const held = mcp.callTool({ name: "hang" }, { timeoutMs: 5_000 }).catch((error: unknown) => error);
    expect(await eventually(() => requestsOf(server, "tools/call").length === 2, 2_000)).toBe(true);
    const controller = new AbortController();
    const queued = mcp.callTool({ name: "echo" }, { signal: controller.signal }).catch((error: unknown) => error);
    await sleep(50);
    controller.abort();
    expect(await queued).toBeInstanceOf(CallCancelledError);
    await answered; // its connection is free now: a request still queued would go on it
    await sleep(300);
    expect(requestsOf(server, "tools/call").map((e) => e.tool)).toEqual(["late", "hang"]);
    const record = mcp.records().find((r) => r.name === "echo")!;
    // It may have been on the wire for all the library can tell: never claimed not sent.
    expect(record).toMatchObject({ status: "cancelled", outcome: "unverified", cancel: { mechanism: "notification+stream-close" } });
    void held;
    expect(errors).toEqual([]);
  });

  it("calls that hold every connection, cancelled together: their notifications reach the server at once, not after flushTimeoutMs", async () => {
    const { server, mcp, errors, adapter } = await setup();
    const started = performance.now();
    const calls = [1, 2].map(() => mcp.callTool({ name: "hang" }, { timeoutMs: 200 }).catch((error: unknown) => error));
    for (const outcome of await Promise.all(calls)) expect(outcome).toBeInstanceOf(CallTimeoutError);
    const settled = performance.now() - started;
    // Each stream closes as its notification is handed to fetch: the notifications take the
    // connections the streams held, instead of waiting behind them for flushTimeoutMs.
    expect(await eventually(() => requestsOf(server, "notifications/cancelled").length === 2, 1_000)).toBe(true);
    expect(performance.now() - started - settled).toBeLessThan(1_000);
    expect(await eventually(() => adapter.stats().flushing === 0 && adapter.stats().streams === 0, 1_000)).toBe(true);
    for (const record of mcp.records()) {
      expect(record.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
    }
    expect(errors).toEqual([]);
  });
});
