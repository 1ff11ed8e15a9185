import { afterEach, describe, expect, it } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallCancelledError, ConnectionClosedError, withCancellation } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import type { FetchLike } from "../../src/adapters/streamable-http/index.js";
import { eventually, spawnServer } from "../helpers/stdio.js";
import { startV1 } from "../http/servers.js";
import { sleep } from "../helpers/reliability.js";

// Issue 24 item 2: a record never says more than is known, and the library's own delivery
// failures go to the record (once), never to onerror. Real child processes (stdio) and a real
// v1 SDK Streamable HTTP server with resumable streams (an event store) on 127.0.0.1.

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await Promise.race([step().catch(() => {}), sleep(2_000)]);
});

type Stdin = NodeJS.WritableStream & { writableNeedDrain: boolean; destroy(): void };
const stdinOf = (transport: object) => (transport as { _process: { stdin: Stdin } })._process.stdin;

describe("stdio: a cancel line that could not be written", () => {
  it("stdin destroyed: the record says nothing went out and why (mechanism none, undelivered), onerror stays empty", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    const controller = new AbortController();
    const call = server.mcp.callTool({ name: "silent" }, { signal: controller.signal, timeoutMs: 5_000 });
    call.catch(() => {});
    expect(await eventually(() => server.received().some((m) => m.method === "tools/call"))).toBe(true);
    stdinOf(server.transport).destroy(); // as after a crash: the pipe is gone, the process not yet reaped
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    const first = server.mcp.records()[0]!;
    expect(first.cancel).toMatchObject({ mechanism: "none", sentAt: null }); // never claimed sent
    expect(await eventually(() => server.mcp.records()[0]!.revision > 0)).toBe(true);
    const record = server.mcp.records()[0]!;
    expect(record.cancel).toMatchObject({
      mechanism: "none",
      sentAt: null,
      undelivered: { mechanism: "notification", error: "the server's stdin was destroyed" },
    });
    expect(record.summary).toBe("cancelled (aborted), outcome unverified, cancel notification not delivered");
    await sleep(100);
    expect(server.mcp.records()[0]!.revision).toBe(1); // exactly once
    expect(server.cancelsReceived()).toEqual([]);
    expect(server.errors).toEqual([]);
  });

  it("cancel lines waiting behind a full pipe when stdin is destroyed: each is recorded undelivered once, none reaches onerror", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    const controllers = Array.from({ length: 5 }, () => new AbortController());
    const calls = controllers.map((c) => server.mcp.callTool({ name: "silent" }, { signal: c.signal, timeoutMs: 20_000 }));
    for (const call of calls) call.catch(() => {});
    expect(await eventually(() => server.received().filter((m) => m.method === "tools/call").length === 5)).toBe(true);
    void server.mcp.callTool({ name: "block", arguments: { ms: 5_000 } }, { timeoutMs: 20_000 }).catch(() => {});
    expect(await eventually(() => server.stderrLines.some((l) => l.includes('"block"')))).toBe(true);
    void server.mcp.callTool({ name: "silent", arguments: { pad: "x".repeat(256 * 1024) } }, { timeoutMs: 20_000 }).catch(() => {});
    const stdin = stdinOf(server.transport);
    expect(stdin.writableNeedDrain).toBe(true);
    for (const c of controllers) c.abort(); // the lines wait for the pipe
    const cancelled = () => server.mcp.records().filter((r) => r.status === "cancelled" && r.cancel?.trigger === "aborted");
    expect(cancelled().map((r) => r.cancel!.mechanism)).toEqual(Array.from({ length: 5 }, () => "notification"));
    // Not out yet: no sentAt while the lines wait, from the first record on (the record never
    // claims a line still in the queue, not even in the error the caller gets).
    for (const r of cancelled()) expect(r.cancel).toMatchObject({ mechanism: "notification", sentAt: null, undelivered: null });
    expect(cancelled().map((r) => r.revision)).toEqual([0, 0, 0, 0, 0]);
    await sleep(0);
    expect(cancelled().map((r) => r.revision)).toEqual([0, 0, 0, 0, 0]);
    stdin.destroy();
    expect(await eventually(() => cancelled().every((r) => r.revision === 1))).toBe(true);
    for (const r of cancelled()) {
      expect(r.cancel).toMatchObject({ mechanism: "none", sentAt: null, undelivered: { mechanism: "notification" } });
    }
    await sleep(100);
    expect(cancelled().map((r) => r.revision)).toEqual([1, 1, 1, 1, 1]);
    expect(server.errors.filter((e) => /cancel/i.test(e.message) || /destroyed|EPIPE/.test(e.message))).toEqual([]);
  }, 15_000);
});

/** A v1 client through the library over the real v1 server, with a fetch the test can slow down for resumes. */
async function connect(url: URL, base: FetchLike) {
  const transport = new TransportV1(url, { fetch: cancellableFetch({ fetch: base }) });
  const client = new ClientV1({ name: "honest-records", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  const mcp = withCancellation(client, streamableHttpCancellation(transport));
  await client.connect(mcp.transport);
  return { client, transport, mcp, errors };
}

const isResume = (init?: RequestInit) => (init?.method ?? "GET") === "GET" && new Headers(init?.headers).has("last-event-id");

describe("Streamable HTTP (v1, resumable streams): resumes and the record", () => {
  it("a resume that fails after the server died mid-call (two progress messages in) is connection-closed, outcome unverified, never 'never sent'", async () => {
    const server = await startV1({ eventStore: true });
    let stopped = false;
    cleanup.push(() => (stopped ? Promise.resolve() : server.stop()));
    let resumes = 0;
    const { client, mcp, errors } = await connect(server.url, (url, init) => {
      if (isResume(init)) resumes++;
      return fetch(url, init);
    });
    cleanup.push(() => client.close());
    let progress = 0;
    const call = mcp.callTool({ name: "slow", arguments: { ms: 20_000 } }, { timeoutMs: 30_000, onprogress: () => progress++ });
    call.catch(() => {});
    expect(await eventually(() => progress >= 2, 5_000)).toBe(true);
    await server.stop(); // connections destroyed and the port closed: the SDK's resume is refused
    stopped = true;
    await expect(call).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(resumes).toBeGreaterThanOrEqual(1); // it was the resume that failed
    const record = mcp.records()[0]!;
    expect(record).toMatchObject({
      status: "cancelled",
      outcome: "unverified",
      cancel: { trigger: "connection-closed", mechanism: "none" },
    });
    expect(record.summary).toBe("cancelled (connection-closed), outcome unverified");
    expect(errors.filter((e) => e.message.includes("mcp-cancellable"))).toEqual([]);
  }, 15_000);

  it("a call cancelled while the SDK resumes its stream: the failed resume (our abort) never reaches onerror", async () => {
    const server = await startV1({ eventStore: true });
    cleanup.push(() => server.stop());
    let resumes = 0;
    // Resumes are slow to answer (a congested network): the cancel comes while one is on its way.
    const slowResumes: FetchLike = (url, init) => {
      if (!isResume(init)) return fetch(url, init);
      resumes++;
      const signal = init!.signal!;
      return new Promise<Response>((resolve, reject) => {
        const timer = setTimeout(() => resolve(fetch(url, init)), 3_000);
        signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            reject(signal.reason);
          },
          { once: true },
        );
      });
    };
    const { client, mcp, errors } = await connect(server.url, slowResumes);
    cleanup.push(() => client.close());
    let progress = 0;
    const controller = new AbortController();
    const call = mcp.callTool(
      { name: "slow", arguments: { ms: 20_000 } },
      { timeoutMs: 30_000, signal: controller.signal, onprogress: () => progress++ },
    );
    call.catch(() => {});
    expect(await eventually(() => progress >= 2, 5_000)).toBe(true);
    server.drop(); // the stream breaks; the session lives on: the SDK resumes after about 1 s
    expect(await eventually(() => resumes === 1, 4_000)).toBe(true);
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    await sleep(2_500); // the SDK's next attempt (refused by the adapter: a silent 405)
    // Only the server's fault (the dropped connections) reaches onerror, not our abort of the resume.
    expect(errors.map((e) => e.message).filter((m) => m !== "SSE stream disconnected: TypeError: terminated")).toEqual([]);
    const record: RunRecord = mcp.records()[0]!;
    expect(record.cancel).toMatchObject({ trigger: "aborted", mechanism: "notification+stream-close" });
  }, 20_000);

  it("client.close() with resumes still scheduled: the SDK's attempts after the close never reach onerror", async () => {
    const server = await startV1({ eventStore: true });
    cleanup.push(() => server.stop());
    const { client, mcp, errors } = await connect(server.url, (url, init) => fetch(url, init));
    const progress = [0, 0, 0];
    const calls = progress.map((_, i) =>
      mcp.callTool({ name: "slow", arguments: { ms: 20_000 } }, { timeoutMs: 30_000, onprogress: () => progress[i]!++ }),
    );
    for (const call of calls) call.catch(() => {});
    expect(await eventually(() => progress.every((p) => p >= 1), 5_000)).toBe(true);
    server.drop(); // three streams break: the SDK schedules a resume for each (and clears only the last at close)
    await sleep(200);
    await client.close();
    for (const call of calls) await expect(call).rejects.toBeInstanceOf(ConnectionClosedError);
    await sleep(4_000); // past the SDK's first and second attempts (1 s, then 1.5 s)
    expect(errors.map((e) => e.message).filter((m) => m !== "SSE stream disconnected: TypeError: terminated")).toEqual([]);
  }, 20_000);
});
