// Calls that time out together on a 2025-era Streamable HTTP connection: every caller is released
// before any of their cancels' notification POSTs runs (each is a fetch and a connection, then the
// stream's close), so the POSTs never hold the release of calls due with them or next. An outside
// tester's: 200 calls timing out together were released up to 0.8 s after their limit, the raw
// SDK's within 0.3 s: each settle started its POST at once, and the POSTs ran before the next
// settles. Rules 6 and 40 (the notification still goes, once each, and the stream closes). A real
// v1 SDK server on 127.0.0.1 (test/http/servers.ts) and the v1 client over `cancellableFetch()`,
// wrapped to count the notification POSTs it starts.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { CallCancelledError, CallTimeoutError, withCancellation } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { eventually, startV1 } from "./servers.js";

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

/**
 * A real v1 server on 127.0.0.1 and a wrapped v1 client over `cancellableFetch()`, whose
 * transport counts the notification POSTs it starts (`posts()`); both closed after the test.
 */
async function connectCounting(name: string) {
  const server = await startV1();
  cleanup.push(() => server.stop());
  const transport = new StreamableHTTPClientTransport(server.url, { fetch: cancellableFetch() });
  // Each notification the library hands the transport is a POST it starts then.
  let posts = 0;
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if ((message as { method?: string }).method === "notifications/cancelled") posts++;
    return send(message, options);
  };
  const client = new Client({ name, version: "1.0.0" });
  const mcp = withCancellation(client, streamableHttpCancellation(transport));
  await client.connect(mcp.transport);
  cleanup.push(() => client.close());
  return { server, mcp, posts: () => posts };
}

describe("2025-era Streamable HTTP: calls timing out together are all released before their notifications go", () => {
  it("50 calls with one deadline: at each caller's release no notification POST has started; then one POST each, every record notification+stream-close, delivered", async () => {
    const { server, mcp, posts } = await connectCounting("mass-timeout");
    const calls = 50;
    // One deadline for all (each call's timeoutMs is what is left until it, in whole ms), far
    // enough for every request to reach the server first: their notifications are decided at once.
    const deadline = performance.now() + 3_000;
    const postsAtRelease: number[] = [];
    const settled = Array.from({ length: calls }, () =>
      mcp.callTool({ name: "slow", arguments: { ms: 30_000 } }, { timeoutMs: Math.max(1, Math.ceil(deadline - performance.now())) }).then(
        () => undefined,
        (error: unknown) => {
          postsAtRelease.push(posts());
          return error;
        },
      ),
    );
    expect(await eventually(() => server.events.filter((e) => e.kind === "handler-start").length === calls, 10_000)).toBe(true);
    expect(performance.now()).toBeLessThan(deadline); // else the test proves nothing: every request was in before the deadline
    const errors = await Promise.all(settled);
    expect(errors.every((error) => error instanceof CallTimeoutError)).toBe(true);
    expect(postsAtRelease).toEqual(Array.from({ length: calls }, () => 0));
    // Then each call's notification goes, once, and is answered; each stream is closed.
    expect(await eventually(() => mcp.records().every((r) => r.cancel?.sentAt != null) && posts() === calls, 10_000)).toBe(true);
    expect(await eventually(() => server.events.filter((e) => e.kind === "handler-aborted").length === calls, 10_000)).toBe(true);
    expect(mcp.records().filter((r) => r.method === "tools/call")).toHaveLength(calls);
    for (const record of mcp.records().filter((r) => r.method === "tools/call")) {
      expect(record).toMatchObject({
        status: "cancelled",
        cancel: { trigger: "timeout", mechanism: "notification+stream-close", undelivered: null },
      });
    }
    expect(posts()).toBe(calls);
  }, 30_000);
});

describe("2025-era Streamable HTTP: calls aborted together on one signal are all released before their notifications go", () => {
  it("200 calls on one AbortController: at each caller's release no notification POST has started; then one POST each, every record notification+stream-close", async () => {
    // An outside tester's: 600 calls on one aborted signal were released up to 1.3 s after the
    // abort (the raw SDK's within 0.15 s): the abort settles in slices, and each slice's POSTs
    // started before the next slice.
    const { server, mcp, posts } = await connectCounting("mass-abort");
    const calls = 200;
    const controller = new AbortController();
    const postsAtRelease: number[] = [];
    const settled = Array.from({ length: calls }, () =>
      mcp.callTool({ name: "slow", arguments: { ms: 30_000 } }, { signal: controller.signal }).then(
        () => undefined,
        (error: unknown) => {
          postsAtRelease.push(posts());
          return error;
        },
      ),
    );
    expect(await eventually(() => server.events.filter((e) => e.kind === "handler-start").length === calls, 10_000)).toBe(true);
    controller.abort();
    const errors = await Promise.all(settled);
    expect(errors.every((error) => error instanceof CallCancelledError)).toBe(true);
    expect(postsAtRelease).toEqual(Array.from({ length: calls }, () => 0));
    expect(await eventually(() => mcp.records().every((r) => r.cancel?.sentAt != null) && posts() === calls, 10_000)).toBe(true);
    expect(await eventually(() => server.events.filter((e) => e.kind === "handler-aborted").length === calls, 10_000)).toBe(true);
    for (const record of mcp.records().filter((r) => r.method === "tools/call")) {
      expect(record).toMatchObject({
        status: "cancelled",
        cancel: { trigger: "aborted", mechanism: "notification+stream-close", undelivered: null },
      });
    }
    expect(posts()).toBe(calls);
  }, 30_000);
});
