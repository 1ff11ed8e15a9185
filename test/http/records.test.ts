import { afterEach, describe, expect, it } from "vitest";
import { ConnectionClosedError } from "../../src/index.js";
import { neverLeft } from "../../src/adapters/streamable-http/adapter.js";
import { connectV1, connectV2 } from "./clients.js";
import { eventually, startV1, startV2 } from "./servers.js";

// Issue 15, items 8 and 9: what the run record says over Streamable HTTP when the request never
// left (a refused connection), and the adapter's counts once a plain-JSON call resolved.
// Real servers and sockets on 127.0.0.1.

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

const clients = [
  ["v1 client", startV1, (url: URL) => connectV1(url)],
  ["v2 client (2025-era)", startV1, (url: URL) => connectV2(url)],
  ["v2 client (2026-07-28)", startV2, (url: URL) => connectV2(url, { pin: true })],
] as const;

describe("a request that never reached the wire is recorded 'never sent' (item 8)", () => {
  for (const [name, start, connect] of clients) {
    it(`${name}: the server stopped listening, so the connection is refused: never sent, not 'outcome unverified'`, async () => {
      const server = await start({ stateful: true });
      const { mcp, close } = await connect(server.url);
      cleanup.push(close);
      await server.stop(); // the port now refuses connections
      const error = await mcp.callTool({ name: "slow", arguments: { ms: 10 } }, { timeoutMs: 3_000 }).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(ConnectionClosedError);
      const record = (error as ConnectionClosedError).record;
      expect(record).toMatchObject({
        status: "cancelled",
        outcome: "not-sent",
        cancel: { trigger: "connection-closed", mechanism: "none" },
      });
      expect(record.summary).toBe("cancelled (connection-closed), never sent");
      expect(record.requestId).not.toBeNull(); // the id it would have had is kept, for correlation
      expect((error as Error).message).toMatch(/was never sent: the connection failed before it reached the server/);
      expect(mcp.pendingCount).toBe(0);
    });
  }

  it("a server that drops the connection mid-response stays 'outcome unverified' (it may have done the work)", async () => {
    const server = await startV1({ stateful: true });
    cleanup.push(() => server.stop());
    const { mcp, close } = await connectV1(server.url);
    cleanup.push(close);
    const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 3_000 });
    call.catch(() => {});
    // Mid-response: the handler runs (a fixed 150 ms could pass before the request was out on a
    // loaded machine).
    expect(await eventually(() => server.events.some((e) => e.kind === "handler-start"), 10_000)).toBe(true);
    server.drop();
    const error = await call.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect((error as ConnectionClosedError).record.outcome).toBe("unverified");
  });

  it("neverLeft: only connect-phase codes prove nothing left", () => {
    const refused = new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
    const dns = new TypeError("fetch failed", {
      cause: Object.assign(new Error("getaddrinfo ENOTFOUND x.invalid"), { code: "ENOTFOUND" }),
    });
    const both = new TypeError("fetch failed", {
      cause: new AggregateError([
        Object.assign(new Error("a"), { code: "ECONNREFUSED" }),
        Object.assign(new Error("b"), { code: "ECONNREFUSED" }),
      ]),
    });
    const reset = new TypeError("fetch failed", { cause: Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }) });
    const terminated = new TypeError("terminated");
    expect([neverLeft(refused), neverLeft(dns), neverLeft(both)]).toEqual([true, true, true]);
    expect([neverLeft(reset), neverLeft(terminated), neverLeft(undefined)]).toEqual([false, false, false]);
  });
});

describe("adapter.stats() once nothing is in flight (item 9)", () => {
  for (const [name, start, connect] of [
    ["v1 client, v1 server answering plain JSON", () => startV1({ stateful: false, json: true }), (url: URL) => connectV1(url)],
    ["v2 client, v2 server answering plain JSON", () => startV2({ responseMode: "json" }), (url: URL) => connectV2(url, { pin: true })],
  ] as const) {
    it(`${name}: every count is 0 as soon as the call resolved`, async () => {
      const server = await start();
      cleanup.push(() => server.stop());
      const { mcp, adapter, close } = await connect(server.url);
      cleanup.push(close);
      for (let i = 0; i < 3; i++) {
        await mcp.callTool({ name: "slow", arguments: { ms: 5 } }, { timeoutMs: 3_000 });
        expect(adapter.stats()).toMatchObject({ streams: 0, sending: 0, flushing: 0, checks: 0, resuming: 0 });
      }
    });
  }
});
