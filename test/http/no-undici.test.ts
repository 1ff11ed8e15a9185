import { afterEach, describe, expect, it, vi } from "vitest";
import { CallTimeoutError } from "../../src/index.js";
import { cancellableFetch } from "../../src/adapters/streamable-http/index.js";
import { observesBody } from "../../src/adapters/streamable-http/fetch.js";
import { connectV1, connectV2 } from "./clients.js";
import { eventually, sawDisconnect, seen, sleep, startV1, startV2 } from "./servers.js";
import type { TestServer } from "./servers.js";

// Where `import("undici")` fails (a Node bundle deployed without node_modules, Deno without
// --allow-env), cancellableFetch() sends with the global fetch, which never reports a body
// written. An outside tester's: the fetch still said it did (decided from the runtime alone), so
// a timed-out call the server had and ran was recorded `never sent` (`not-sent`, mechanism
// `none`), and on a 2025-era JSON-response server no notifications/cancelled was POSTed: the tool
// ran to its end. Here undici fails to load in the whole file (the module cannot be resolved), and
// the servers are real, on 127.0.0.1.
vi.mock("undici", () => {
  throw new Error("Cannot find package 'undici' imported from the bundle");
});

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await Promise.race([step().catch(() => {}), sleep(2_000)]);
});

async function server(start: () => Promise<TestServer>): Promise<TestServer> {
  const started = await start();
  cleanup.push(() => started.stop());
  return started;
}

const timedOut = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe("cancellableFetch() where undici cannot be loaded (the global fetch)", () => {
  it("no undici: the fetch does not claim to see bodies written, once it knows it sends with the global fetch", async () => {
    const fetch = cancellableFetch();
    // The first request waits for the load: after it, the fetch in use is known.
    await fetch(new URL("http://127.0.0.1:9/")).catch(() => {});
    expect(observesBody(fetch)).toBe(false);
    expect(observesBody(cancellableFetch())).toBe(false);
  });

  for (const [name, connect] of [
    ["v1 client", connectV1],
    ["v2 client (2025-era)", connectV2],
  ] as const) {
    it(`no undici, ${name}, 2025-era JSON-response server: a timed-out call the server ran is unverified, never not-sent, and its notifications/cancelled reaches the server`, async () => {
      const target = await server(() => startV1({ json: true }));
      const client = await connect(target.url);
      cleanup.push(client.close);
      const error = await timedOut(client.mcp.callTool({ name: "slow", arguments: { ms: 3_000 } }, { timeoutMs: 400 }));
      expect(error).toBeInstanceOf(CallTimeoutError);
      const id = (error as CallTimeoutError).requestId;
      // The server had the request and started it.
      expect(seen(target, "tools/call").some((call) => call.http.id === id && call.start !== undefined)).toBe(true);
      // The notification goes once the request may have arrived (the flush bound: the global fetch cannot tell when).
      expect(await eventually(() => seen(target, "notifications/cancelled").some((c) => c.http.cancelOf === id), 3_000)).toBe(true);
      expect(await eventually(() => client.adapter.stats().flushing === 0, 3_000)).toBe(true);
      const record = client.mcp.records().at(-1)!;
      expect(record.requestId).toBe(id);
      expect(record.outcome).not.toBe("not-sent");
      expect(record).toMatchObject({
        status: "cancelled",
        outcome: "unverified",
        cancel: { trigger: "timeout", mechanism: "notification+stream-close", undelivered: null },
      });
      expect(record.summary).not.toContain("never sent");
      // The cancel stopped the tool: it did not run to its end.
      const call = seen(target, "tools/call").find((c) => c.http.id === id)!;
      expect(call.end?.aborted ?? true).toBe(true);
    });
  }

  it("no undici, v2 client, 2026-07-28 server: a timed-out call the server ran is unverified (mechanism stream-close), never not-sent", async () => {
    const target = await server(() => startV2());
    const client = await connectV2(target.url, { pin: true });
    cleanup.push(client.close);
    const error = await timedOut(client.mcp.callTool({ name: "slow", arguments: { ms: 3_000 } }, { timeoutMs: 400 }));
    expect(error).toBeInstanceOf(CallTimeoutError);
    const id = (error as CallTimeoutError).requestId;
    const call = () => seen(target, "tools/call").find((c) => c.http.id === id);
    expect(call()?.start).toBeDefined(); // the server had it and ran it
    // Its stream was closed: the server saw the disconnect (that is the cancel, rule 28).
    expect(await eventually(() => sawDisconnect(call()), 3_000)).toBe(true);
    await sleep(100); // the POST's failure (our abort) comes back: it must not revise the record to not-sent
    const record = client.mcp.records().at(-1)!;
    expect(record.requestId).toBe(id);
    expect(record.outcome).not.toBe("not-sent");
    expect(record).toMatchObject({
      status: "cancelled",
      outcome: "unverified",
      cancel: { trigger: "timeout", mechanism: "stream-close", undelivered: null },
    });
    expect(record.summary).not.toContain("never sent");
  });
});
