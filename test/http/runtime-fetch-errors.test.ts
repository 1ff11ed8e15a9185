import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ConnectionClosedError, withCancellation } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { connectV2 } from "./clients.js";
import { eventually, seen, sleep, startV1, startV2 } from "./servers.js";
import type { TestServer } from "./servers.js";

// A fetch's network failure in the words of other runtimes, and of a caller's own fetch. Outside
// testers': Bun rejects with a `TypeError` carrying `code: "ECONNRESET"` (or `"ECONNREFUSED"`) and
// no cause, a browser with `TypeError("Failed to fetch")`; the adapter knew a network failure only
// by undici's words ("fetch failed", "terminated") or a cause, so a server gone mid-call, and one
// that refused the connection, failed the call as an error (`failed`, outcome `error`) instead of
// `connection-closed`, and a 2025-era cancel notification whose POST failed so was not retried.
// And a caller's fetch that tries again: its last error (refused) was taken as proof that the
// request never left, though its first attempt had reached the server. The rejection of the
// transport's fetch is the fact now, whatever it says; an error's code proves "never sent" only
// for a fetch that sends each request once (the library's own).
//
// Here undici cannot load (the library's own fetch is then the runtime's `fetch`), and the
// runtime's `fetch` is the real one with its network failures rethrown in another runtime's shape.
// Real servers on 127.0.0.1.
vi.mock("undici", () => {
  throw new Error("Cannot find package 'undici'");
});

const realFetch = globalThis.fetch;
const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await Promise.race([step().catch(() => {}), sleep(2_000)]);
  vi.unstubAllGlobals();
});

async function server(start: () => Promise<TestServer>): Promise<TestServer> {
  const started = await start();
  cleanup.push(() => started.stop());
  return started;
}

type Shape = (original: unknown) => Error;
const refusedCause = (original: unknown): boolean => {
  const cause = (original as { cause?: { code?: unknown; errors?: Array<{ code?: unknown }> } }).cause;
  return cause?.code === "ECONNREFUSED" || cause?.errors?.some((e) => e.code === "ECONNREFUSED") === true;
};
const bun: Shape = (original) =>
  refusedCause(original)
    ? Object.assign(new TypeError("Unable to connect. Is the computer able to access the url?"), { code: "ECONNREFUSED" })
    : Object.assign(new TypeError("The socket connection was closed unexpectedly."), { code: "ECONNRESET" });
const chromium: Shape = () => new TypeError("Failed to fetch");
const usersOwn: Shape = () => new Error("my-http-layer: upstream went away");

/** The real fetch, its network failures rethrown in another shape (an abort stays an abort). */
function shaped(shape: Shape): typeof globalThis.fetch {
  return async (input, init) => {
    try {
      return await realFetch(input, init);
    } catch (error) {
      if ((error as Error).name === "AbortError" || init?.signal?.aborted === true) throw error;
      throw shape(error);
    }
  };
}

const CASES = [
  // [what, the runtime's fetch or a caller's, shape, whether its refused connection proves never sent]
  ["Bun's fetch (a TypeError with a code, no cause)", "runtime", bun, true],
  ["a browser's fetch (TypeError: Failed to fetch)", "runtime", chromium, false],
  ["a caller's own fetch (a plain Error in its own words)", "caller", usersOwn, false],
] as const;

describe("a fetch's network failure in another runtime's words", () => {
  for (const [what, whose, shape, provesUnsent] of CASES) {
    const fetchOption = () => {
      if (whose === "runtime") {
        vi.stubGlobal("fetch", shaped(shape));
        return {};
      }
      return { fetch: shaped(shape) };
    };

    it(`${what}, v2 client on a 2025-era server that drops the call's connection before its answer: connection-closed, outcome unverified, not failed`, async () => {
      const target = await server(() => startV1({ json: true, breakToolCallAfterMs: 300 }));
      const client = await connectV2(target.url, fetchOption());
      cleanup.push(client.close);
      const error = await client.mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 4_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectionClosedError);
      expect(seen(target, "tools/call")).toHaveLength(1); // it reached the server
      expect(client.mcp.records().at(-1)).toMatchObject({
        status: "cancelled",
        outcome: "unverified",
        cancel: { trigger: "connection-closed", mechanism: "none" },
      });
    });

    it(`${what}, v2 client pinned to 2026-07-28, its server gone: connection-closed, never failed; never sent only where the error proves it (${provesUnsent ? "a refused connection's code, the one attempt" : "it cannot"})`, async () => {
      const target = await startV2();
      const client = await connectV2(target.url, { pin: true, ...fetchOption() });
      cleanup.push(client.close);
      await client.mcp.callTool({ name: "slow", arguments: { ms: 1 } });
      await target.stop();
      await sleep(200); // the pooled connection's close seen: the next request opens one, refused
      const error = await client.mcp.callTool({ name: "slow", arguments: { ms: 1 } }, { timeoutMs: 4_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectionClosedError);
      const record = client.mcp.records().at(-1)!;
      expect(record).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed", mechanism: "none" } });
      expect(record.outcome).toBe(provesUnsent ? "not-sent" : "unverified");
    });

    it(`${what}: a 2025-era cancel notification whose first POST failed so is sent again, once, and reaches the server`, async () => {
      const target = await server(() => startV1());
      // The first notifications/cancelled POST fails in this shape; everything else goes through.
      let failed = 0;
      const flaky: typeof globalThis.fetch = async (input, init) => {
        if (failed === 0 && typeof init?.body === "string" && init.body.includes('"notifications/cancelled"')) {
          failed++;
          throw shape(new TypeError("fetch failed", { cause: Object.assign(new Error("reset"), { code: "ECONNRESET" }) }));
        }
        return realFetch(input, init);
      };
      const transport = new TransportV1(target.url, { fetch: cancellableFetch({ fetch: flaky }) });
      const client = new ClientV1({ name: "retry", version: "1.0.0" });
      const mcp = withCancellation(client, streamableHttpCancellation(transport));
      await client.connect(mcp.transport);
      cleanup.push(() => client.close());
      const error = await mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 300 }).catch((e: unknown) => e);
      const id = (error as { requestId?: unknown }).requestId;
      expect(await eventually(() => seen(target, "notifications/cancelled").some((c) => c.http.cancelOf === id), 3_000)).toBe(true);
      expect(failed).toBe(1);
      expect(seen(target, "notifications/cancelled")).toHaveLength(1);
      expect(
        await eventually(
          () =>
            mcp.records().at(-1)?.cancel?.undelivered === null && mcp.records().at(-1)?.cancel?.mechanism === "notification+stream-close",
          3_000,
        ),
      ).toBe(true);
    });
  }

  it("a caller's fetch that tries again: its first attempt reached the server, the second was refused: unverified, never `not-sent` (the last error's code proves nothing of the first)", async () => {
    const target = await server(() => startV1({ json: true, breakToolCallAfterMs: 300 }));
    // A port nothing listens on any more: a connection to it is refused (ECONNREFUSED).
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/mcp`;
    await new Promise((resolve) => closed.close(resolve));
    const retrying: typeof globalThis.fetch = async (input, init) => {
      try {
        return await realFetch(input, init);
      } catch (error) {
        if ((error as Error).name === "AbortError" || init?.signal?.aborted === true) throw error;
        return realFetch(closedUrl, init); // its retry, refused
      }
    };
    const v1 = new ClientV1({ name: "retrying", version: "1.0.0" });
    const v1mcp = withCancellation(
      v1,
      streamableHttpCancellation(new TransportV1(target.url, { fetch: cancellableFetch({ fetch: retrying }) })),
    );
    await v1.connect(v1mcp.transport);
    cleanup.push(() => v1.close());
    const v2 = await connectV2(target.url, { fetch: retrying });
    cleanup.push(v2.close);
    for (const mcp of [v1mcp, v2.mcp]) {
      const error = await mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 4_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectionClosedError);
      const record = mcp.records().at(-1)!;
      expect(record).toMatchObject({ status: "cancelled", outcome: "unverified", cancel: { trigger: "connection-closed" } });
      console.log("REC", record.summary, record.outcome);
      expect(record.summary).not.toContain("never sent");
    }
    expect(seen(target, "tools/call")).toHaveLength(2); // each reached the server
  });
});

describe("isNetworkError, for a fetch the adapter cannot watch: its runtime's words", () => {
  it("undici's, Bun's (a code), the browsers'; never Node's own argument errors (an `ERR_` code) nor other TypeErrors", async () => {
    const { isNetworkError } = await import("../../src/adapters/streamable-http/streams.js");
    expect(isNetworkError(new TypeError("fetch failed", { cause: new Error("x") }))).toBe(true);
    expect(isNetworkError(Object.assign(new TypeError("The socket connection was closed unexpectedly."), { code: "ECONNRESET" }))).toBe(
      true,
    );
    for (const words of ["Failed to fetch", "NetworkError when attempting to fetch resource.", "Load failed"]) {
      expect(isNetworkError(new TypeError(words))).toBe(true);
    }
    expect(isNetworkError(Object.assign(new TypeError('Invalid header value: "x\\n"'), { code: "ERR_INVALID_CHAR" }))).toBe(false);
    expect(isNetworkError(new TypeError("x is not a function"))).toBe(false);
    expect(isNetworkError(new Error("fetch failed"))).toBe(false);
  });
});
