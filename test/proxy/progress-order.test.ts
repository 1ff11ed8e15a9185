import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it } from "vitest";
import { RawClient, eventually, proxyCommand, received, server, sleep } from "./helpers.js";
import type { RpcMessage } from "./helpers.js";
import { PING_ID_PREFIX, PING_WAIT_MS } from "../../src/cli/proxy/stdio-front.js";
import { startRestartable } from "./restartable-server.js";

// Progress written just before its result (issue 29, item 5). The v1 SDK client handles a
// notification a microtask after a response read in the same chunk, and drops the request's
// progress handler at the response (typescript-sdk #2580): progress read in one chunk with its
// result is lost. The proxy lets the result wait until the progress before it left for the client.
const LINE = new URL("./fixtures/line-server.mjs", import.meta.url).pathname;
const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
});

async function v1(args: string[]) {
  const client = new Client({ name: "progress-order", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  await client.connect(new StdioClientTransport({ ...proxyCommand(args), stderr: "ignore" }));
  open.push(() => client.close());
  return { client, errors };
}

async function burst(client: Client, count: number): Promise<number[]> {
  const progress: number[] = [];
  await client.callTool({ name: "burst", arguments: { count } }, undefined, { onprogress: (p) => progress.push(p.progress) });
  return progress;
}

/** A raw client's proxy over the line server, initialized; ended after the test. */
async function rawClient(): Promise<RawClient> {
  const client = new RawClient(server(LINE));
  open.push(async () => void (await client.end()));
  await client.initialize();
  return client;
}

/** A tools/call from the raw client, with a progress token when given. */
function call(client: RawClient, id: string, name: string, args: Record<string, unknown>, progressToken?: string): void {
  const params = progressToken === undefined ? { name, arguments: args } : { name, arguments: args, _meta: { progressToken } };
  client.send({ jsonrpc: "2.0", id, method: "tools/call", params });
}

/** A ping of the proxy's own to its client. */
const ping = (m: RpcMessage): boolean => m.method === "ping" && String(m.id).startsWith(PING_ID_PREFIX);

describe("mcp-cancellable proxy: a result is written after the progress before it", () => {
  it("stdio: a server that writes 20 progress notifications and its result in one write; the v1 SDK client gets 20 of 20, every time", async () => {
    const { client, errors } = await v1(server(LINE));
    for (let round = 0; round < 5; round++) {
      expect(await burst(client, 20)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    }
    expect(errors).toEqual([]);
  });

  it("--url: the v1 SDK's HTTP server sends 100 progress notifications then the result; the v1 SDK stdio client gets 100 of 100, every time", async () => {
    const http = await startRestartable();
    open.push(() => http.stop());
    const { client, errors } = await v1(["--url", http.url.href]);
    for (let round = 0; round < 5; round++) {
      expect((await burst(client, 100)).length).toBe(100);
    }
    expect(errors).toEqual([]);
  });
});

describe("mcp-cancellable proxy: the answers held for the client's ping (outside testers')", () => {
  it("a client that never answers the ping: one wait of PING_WAIT_MS, then timed gaps; an answer with no progress before it waits for none; progress still comes before each answer", async () => {
    const client = await rawClient();
    const started = performance.now();
    for (let i = 0; i < 10; i++) {
      call(client, `b${i}`, "burst", { count: 3 }, `p${i}`);
    }
    call(client, "echo", "echo", {});
    const arrived = new Map<unknown, number>();
    const all = await eventually(() => {
      for (const m of client.messages) if (m.method === undefined && !arrived.has(m.id)) arrived.set(m.id, performance.now() - started);
      return arrived.size === 12; // init, ten bursts, the echo
    }, 10_000);
    expect(all).toBe(true);
    expect(client.messages.filter(ping).length).toBeGreaterThanOrEqual(1);
    const order = client.messages.filter((m) => m.method === undefined && m.id !== "init").map((m) => m.id);
    // The echo, answered without progress, is not held behind the ten answers waiting on the ping.
    expect(order.indexOf("echo")).toBeLessThan(order.indexOf("b1"));
    // Each burst's three progress notifications reached the client before its answer.
    for (let i = 0; i < 10; i++) {
      const at = client.messages.findIndex((m) => m.id === `b${i}` && m.method === undefined);
      const progress = client.messages.filter(
        (m, index) =>
          index < at && m.method === "notifications/progress" && (m.params as { progressToken?: unknown }).progressToken === `p${i}`,
      );
      expect(progress).toHaveLength(3);
    }
    // One wait for the unanswered ping, not one per answer (it was ten waits, 2.5 s: one client's answers behind each other).
    const bursts = Array.from({ length: 10 }, (_, i) => arrived.get(`b${i}`)!);
    expect(Math.max(...bursts) - Math.min(...bursts)).toBeLessThan(5 * PING_WAIT_MS);
  });

  it("the client answers the proxy's ping twice: neither answer reaches the server (the second did)", async () => {
    const client = await rawClient();
    call(client, "b", "burst", { count: 2 }, "p");
    expect(await eventually(() => client.messages.some(ping))).toBe(true);
    const id = client.messages.find(ping)!.id;
    client.send({ jsonrpc: "2.0", id, result: {} });
    client.send({ jsonrpc: "2.0", id, result: {} });
    await client.answer("b");
    call(client, "echo", "echo", {});
    await client.answer("echo"); // the server has read everything before it
    expect(received(client.stderr).filter((m) => String(m.id).startsWith(PING_ID_PREFIX))).toEqual([]);
  });
});

describe("mcp-cancellable proxy: a request's own lines keep their order, and no other request's wait holds them (a second pass)", () => {
  const progressOf = (m: RpcMessage, token: string): boolean =>
    m.method === "notifications/progress" && (m.params as { progressToken?: unknown }).progressToken === token;

  it("SIGTERM while a call's progress waits behind another answer's ping: its -32000 comes after its progress, never before", async () => {
    const client = await rawClient();
    call(client, "x", "ticks", { every: 20 }, "px");
    expect(await eventually(() => client.messages.some((m) => progressOf(m, "px")))).toBe(true);
    call(client, "a", "burst", { count: 2 }, "pa");
    expect(await eventually(() => client.messages.some(ping))).toBe(true); // never answered
    await sleep(120);
    client.child.kill("SIGTERM");
    expect((await client.exited).code).toBe(143);
    const answer = client.messages.findIndex((m) => m.id === "x" && m.method === undefined);
    expect(answer).toBeGreaterThan(0);
    expect(client.messages.slice(answer).filter((m) => progressOf(m, "px"))).toEqual([]);
    const aProgress = client.messages.flatMap((m, index) => (progressOf(m, "pa") ? [index] : []));
    const aAnswer = client.messages.findIndex((m) => m.id === "a" && m.method === undefined);
    expect(aAnswer).toBeGreaterThan(Math.max(...aProgress));
    // x's -32000 (the proxy's own) waited for a gap after its progress too, so behind a's held
    // answer (a third pass: written at once, it came in one read with x's last progress).
    expect(answer).toBeGreaterThan(aAnswer);
  });

  it("an answer waits on its own request's progress only, however long ago it left (not yet known read): one ping for it, none for another request's streaming progress", async () => {
    const client = await rawClient();
    call(client, "x", "ticks", { every: 20 }, "px");
    call(client, "y", "progress-then", { ms: 500 }, "py");
    // y's progress left 500 ms before its answer (a client busy that long would read both at once).
    expect(await eventually(() => client.messages.some(ping), 5_000)).toBe(true);
    await sleep(100);
    expect(client.answersTo("y")).toEqual([]); // held for the ping
    const [asked] = client.messages.filter(ping);
    client.send({ jsonrpc: "2.0", id: asked!.id, result: {} });
    await client.answer("y");
    expect(client.messages.filter(ping)).toHaveLength(1);
  });

  it("a server request under an id like the proxy's pings (a proxy in front of another): the client's answer reaches the server, and the proxy's own pings take other ids", async () => {
    const client = await rawClient();
    const askId = `${PING_ID_PREFIX}1`;
    call(client, "s", "ask", { askId });
    expect(await eventually(() => client.messages.some((m) => m.id === askId && m.method === "sampling/createMessage"))).toBe(true);
    // Its own ping after progress, while the server's request is open: another id.
    call(client, "b", "burst", { count: 1 }, "pb");
    expect(await eventually(() => client.messages.some(ping))).toBe(true);
    const pings = client.messages.filter(ping).map((m) => m.id);
    expect(pings).not.toContain(askId);
    for (const id of pings) client.send({ jsonrpc: "2.0", id, result: {} });
    client.send({ jsonrpc: "2.0", id: askId, result: { role: "assistant", content: { type: "text", text: "yes" }, model: "m" } });
    const answer = await client.answer("s");
    expect(JSON.stringify(answer.result)).toContain("yes");
    await client.answer("b");
    expect(
      received(client.stderr)
        .filter((m) => m.method === undefined && String(m.id).startsWith(PING_ID_PREFIX))
        .map((m) => m.id),
    ).toEqual([askId]);
  });
});
