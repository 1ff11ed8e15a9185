import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eventually, INITIALIZE, RawClient, received, server, sleep, tempDir } from "./helpers.js";
import type { RpcMessage } from "./helpers.js";

// A bound on every wait (issue 29, item 5): initialize, the hold behind notifications/initialized,
// no progress token the proxy does not need, subscriptions/listen left to the client and the session.
const LINE = new URL("./fixtures/line-server.mjs", import.meta.url).pathname;
const SLOW_READER = new URL("./fixtures/slow-reader-server.mjs", import.meta.url).pathname;
const SLACK_MS = 1_500;

const running: RawClient[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const client of running.splice(0)) if (client.exit === undefined) await client.end();
  for (const close of closers.splice(0)) await close();
});
function start(args: string[]): RawClient {
  const client = new RawClient(args);
  running.push(client);
  return client;
}

/**
 * A scripted 2025-era Streamable HTTP server (node:http) that never answers the POST of
 * notifications/initialized (a real SDK server cannot be made to): initialize gets a session,
 * every other request its JSON answer at once.
 */
async function neverAcceptsInitialized(): Promise<{ url: string; posts: string[] }> {
  const posts: string[] = [];
  const hung: ServerResponse[] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== "POST") {
      res.writeHead(req.method === "DELETE" ? 200 : 405).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const message = JSON.parse(Buffer.concat(chunks).toString("utf8")) as RpcMessage;
    posts.push(message.method ?? "response");
    if (message.method === "notifications/initialized") {
      hung.push(res);
      return;
    }
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const result =
      message.method === "initialize"
        ? { protocolVersion: message.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "hangs", version: "1" } }
        : message.method === "tools/list"
          ? { tools: [] }
          : {};
    res
      .writeHead(200, { "content-type": "application/json", "mcp-session-id": "s-1" })
      .end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
  };
  const http: Server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  closers.push(async () => {
    for (const res of hung) res.destroy();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, posts };
}

describe("mcp-cancellable proxy: a bound on every wait", () => {
  it("initialize that gets no answer: -32001 at its limit (the maximum total timeout: it includes the server's start) naming it, and no cancel upstream (rule 39)", async () => {
    const client = start(["--timeout-ms", "100", "--max-total-timeout-ms", "500", ...server(LINE, "--no-initialize")]);
    // The upper bound counts from the server reading initialize, not from the send: on a loaded
    // machine the proxy's own start (before its clock runs) took 3 s once.
    let serverReadAt: number | undefined;
    client.child.stderr.on("data", () => {
      if (serverReadAt === undefined && received(client.stderr).some((m) => m.method === "initialize")) serverReadAt = performance.now();
    });
    const sentAt = performance.now();
    client.send(INITIALIZE());
    const answer = await client.answer("init");
    const answeredAt = performance.now();
    expect(answer.error).toMatchObject({ code: -32001, data: { code: "MAX_TOTAL_TIMEOUT", limitMs: 500 } });
    expect(answer.error!.message).toMatch(/initialize got no answer within 500 ms \(maxTotalTimeoutMs\); not cancelled/);
    expect(answeredAt - sentAt).toBeGreaterThanOrEqual(480);
    expect(serverReadAt).toBeDefined();
    expect(answeredAt - serverReadAt!).toBeLessThan(500 + SLACK_MS);
    await sleep(200);
    expect(received(client.stderr).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
  });

  it("server/discover (the 2026-07-28 handshake) as initialize: not cut by --timeout-ms (it includes the server's start), -32001 at the maximum total timeout, and never cancelled upstream (rule 39, and the library's own choice for server/discover)", async () => {
    const client = start(["--timeout-ms", "100", "--max-total-timeout-ms", "700", ...server(LINE)]);
    const sentAt = performance.now();
    client.send({ jsonrpc: "2.0", id: "discover", method: "server/discover", params: {} });
    const answer = await client.answer("discover");
    expect(answer.error).toMatchObject({ code: -32001, data: { code: "MAX_TOTAL_TIMEOUT" } });
    expect(answer.error!.message).toMatch(
      /not cancelled \(server\/discover never is, as initialize: "Never cancelled" in docs\/spec-rules.md\)/,
    );
    expect(performance.now() - sentAt).toBeGreaterThanOrEqual(650); // not the 100 ms idle timeout
    await sleep(200);
    expect(received(client.stderr).some((m) => m.method === "server/discover")).toBe(true);
    expect(received(client.stderr).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
  });

  it("requests held behind a notifications/initialized the server never accepts: each answered -32001 at its own limit, never sent", async () => {
    const http = await neverAcceptsInitialized();
    const client = start(["--url", http.url, "--timeout-ms", "1000"]);
    client.send(INITIALIZE());
    expect((await client.answer("init")).result).toBeDefined();
    client.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const sentAt = performance.now();
    client.send({ jsonrpc: "2.0", id: "list", method: "tools/list" });
    client.send({ jsonrpc: "2.0", id: "ping", method: "ping" });
    const [list, ping] = await Promise.all([client.answer("list"), client.answer("ping")]);
    const took = performance.now() - sentAt;
    for (const answer of [list, ping]) {
      expect(answer.error).toMatchObject({ code: -32001, data: { code: "REQUEST_TIMEOUT", limitMs: 1000 } });
      expect(answer.error!.message).toMatch(/held waiting for notifications\/initialized to be accepted by the server, and never sent/);
    }
    expect(took).toBeGreaterThanOrEqual(950);
    expect(took).toBeLessThan(1_000 + SLACK_MS);
    expect(http.posts).toEqual(["initialize", "notifications/initialized"]);
  });

  it("requests held behind notifications/initialized that never go upstream each get a --records line: cancelled, never sent, with the client's id (its limit, the client's cancel, the proxy's end; an outside tester's: none on a 2025-era --url)", async () => {
    const http = await neverAcceptsInitialized();
    const { dir, cleanup } = tempDir();
    closers.push(async () => cleanup());
    const file = join(dir, "records.jsonl");
    const client = start(["--records", file, "--url", http.url, "--timeout-ms", "800"]);
    client.send(INITIALIZE());
    expect((await client.answer("init")).result).toBeDefined();
    client.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    client.send({ jsonrpc: "2.0", id: "timed", method: "tools/list" });
    client.send({ jsonrpc: "2.0", id: "dropped", method: "tools/call", params: { name: "echo", arguments: {} } });
    client.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "dropped", reason: "user gave up" } });
    await client.answer("timed");
    client.send({ jsonrpc: "2.0", id: "left", method: "prompts/list" });
    await sleep(100);
    expect(await client.end()).toMatchObject({ code: 0 });
    const lines = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const byId = (id: string) => lines.filter((line) => line.clientRequestId === id);
    expect(byId("dropped")).toEqual([
      expect.objectContaining({
        method: "tools/call",
        name: "echo",
        requestId: null,
        status: "cancelled",
        outcome: "not-sent",
        cancel: expect.objectContaining({ trigger: "aborted", reason: "user gave up", mechanism: "none", sentAt: null }),
        summary: "cancelled (aborted), never sent",
      }),
    ]);
    expect(byId("timed")).toEqual([
      expect.objectContaining({
        method: "tools/list",
        cancel: expect.objectContaining({ trigger: "timeout" }),
        summary: "cancelled (timeout), never sent",
      }),
    ]);
    expect(byId("left")).toEqual([
      expect.objectContaining({
        method: "prompts/list",
        cancel: expect.objectContaining({ trigger: "aborted" }),
        summary: "cancelled (aborted), never sent",
      }),
    ]);
    expect(http.posts).toEqual(["initialize", "notifications/initialized"]);
  });

  it("held behind notifications/initialized: the client's cancel of its request in progress is not taken for its held answer to a server request of the same id (an audit's: the answer was dropped, the cancel never sent)", async () => {
    const client = start(["--timeout-ms", "20000", ...server(SLOW_READER)]);
    client.send(INITIALIZE());
    expect((await client.answer("init")).result).toBeDefined();
    client.send({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "hang", arguments: {} } });
    // The server reads nothing now: a large line fills the pipe, so notifications/initialized waits.
    client.send({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "x".repeat(300_000) } });
    client.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect(await eventually(() => client.messages.some((m) => m.method === "roots/list"))).toBe(true);
    const ask = client.messages.find((m) => m.method === "roots/list")!;
    expect(ask.id).toBe(5); // the server's numbering meets the client's
    client.send({ jsonrpc: "2.0", id: ask.id, result: { roots: [] } }); // held
    client.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 5, reason: "user" } }); // held too
    // Once the server reads again, it gets both: its answer, then the cancel of the call's upstream id.
    expect(await eventually(() => received(client.stderr).some((m) => m.method === "notifications/cancelled"), 8_000)).toBe(true);
    const read = received(client.stderr);
    const call = read.find((m) => m.method === "tools/call")!;
    const answer = read.findIndex((m) => m.method === undefined && m.id === 5 && m.result !== undefined);
    const cancel = read.findIndex((m) => m.method === "notifications/cancelled");
    expect(answer).toBeGreaterThan(-1);
    expect(read[cancel]!.params).toMatchObject({ requestId: call.id, reason: "user" });
    expect(read.filter((m) => m.method === "notifications/cancelled")).toHaveLength(1);
    expect(client.stderr).not.toMatch(/cancelled while held/);
  });

  it("a progress token upstream only where it is needed: the client's own (mapped), or the idle timeout's reset; none with --timeout-ms none or --no-reset-on-progress", async () => {
    const tokens = async (args: string[], meta?: Record<string, unknown>): Promise<unknown> => {
      const client = start([...args, ...server(LINE)]);
      await client.initialize();
      client.send({
        jsonrpc: "2.0",
        id: "e",
        method: "tools/call",
        params: { name: "echo", arguments: {}, ...(meta ? { _meta: meta } : {}) },
      });
      await client.answer("e");
      return received(client.stderr).find((m) => m.method === "tools/call")!.params!._meta?.progressToken;
    };
    expect(await tokens(["--timeout-ms", "none"])).toBeUndefined();
    expect(await tokens(["--no-reset-on-progress"])).toBeUndefined();
    expect(await tokens(["--timeout-ms", "5000", "--max-total-timeout-ms", "5000"])).toBeUndefined();
    expect(await tokens([])).toEqual(expect.stringMatching(/^mcp-cancellable-/)); // the reset of the 60 s idle timeout
    expect(await tokens(["--timeout-ms", "none"], { progressToken: "mine" })).toEqual(expect.stringMatching(/^mcp-cancellable-proxy-/));
  }, 90_000); // five proxies and five servers started one after another

  it("subscriptions/listen is not cut by the request limits; it ends with the client's cancel (one notifications/cancelled upstream)", async () => {
    const client = start(["--timeout-ms", "300", "--max-total-timeout-ms", "600", ...server(LINE)]);
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: "listen", method: "subscriptions/listen", params: {} });
    expect(await eventually(() => client.messages.some((m) => m.method === "notifications/subscriptions/acknowledged"))).toBe(true);
    await sleep(1_000);
    expect(client.answersTo("listen")).toEqual([]);
    expect(received(client.stderr).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
    client.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "listen", reason: "done listening" } });
    const upstreamId = received(client.stderr).find((m) => m.method === "subscriptions/listen")!.id;
    expect(await eventually(() => received(client.stderr).some((m) => m.method === "notifications/cancelled"))).toBe(true);
    expect(
      received(client.stderr)
        .filter((m) => m.method === "notifications/cancelled")
        .map((m) => m.params),
    ).toEqual([{ requestId: upstreamId, reason: "done listening" }]);
  });

  it("a listen's acknowledgement and notifications name it by the client's id (rule 33), not the upstream's", async () => {
    const client = start([...server(LINE)]);
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: "L7", method: "subscriptions/listen", params: { notify: true } });
    expect(await eventually(() => client.messages.some((m) => m.method === "notifications/tools/list_changed"))).toBe(true);
    const upstreamId = received(client.stderr).find((m) => m.method === "subscriptions/listen")!.id;
    expect(upstreamId).not.toBe("L7");
    const stamped = client.messages
      .filter((m) => m.method === "notifications/subscriptions/acknowledged" || m.method === "notifications/tools/list_changed")
      .map((m) => [m.method, (m.params!._meta as Record<string, unknown>)["io.modelcontextprotocol/subscriptionId"]]);
    expect(stamped).toEqual([
      ["notifications/subscriptions/acknowledged", "L7"],
      ["notifications/tools/list_changed", "L7"],
    ]);
  });

  it("after the client cancelled a listen, what its stream still brings is dropped, never relayed under the upstream's id", async () => {
    const client = start([...server(LINE)]);
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: "L8", method: "subscriptions/listen", params: { notifyAfterMs: 300 } });
    expect(await eventually(() => client.messages.some((m) => m.method === "notifications/subscriptions/acknowledged"))).toBe(true);
    client.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "L8" } });
    await sleep(700); // the server's change at 300 ms has come and gone
    expect(client.messages.filter((m) => m.method === "notifications/tools/list_changed")).toEqual([]);
  });

  it("a listen the server ends with its result: the result names it by the client's id, and a change after it is dropped", async () => {
    const client = start([...server(LINE)]);
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: "L9", method: "subscriptions/listen", params: { answerAfterMs: 200 } });
    const answer = await client.answer("L9");
    expect((answer.result as { _meta?: Record<string, unknown> })._meta).toEqual({ "io.modelcontextprotocol/subscriptionId": "L9" });
    await sleep(300);
    expect(client.messages.filter((m) => m.method === "notifications/tools/list_changed")).toEqual([]);
  });

  for (const stringIds of [false, true]) {
    it(`the server ends a listen (rule 12), naming it by its id${stringIds ? " written as a string (an outside tester's)" : ""}: its notifications/cancelled reaches the client under the client's id`, async () => {
      const client = start(["--timeout-ms", "300", ...server(LINE)]);
      await client.initialize();
      client.send({ jsonrpc: "2.0", id: "L", method: "subscriptions/listen", params: { endAfterMs: 400, stringIds } });
      expect(await eventually(() => client.messages.some((m) => m.method === "notifications/cancelled"))).toBe(true);
      expect(client.messages.find((m) => m.method === "notifications/cancelled")!.params).toEqual({
        requestId: "L",
        reason: "server ends the listen",
      });
      expect(client.answersTo("L")).toEqual([]);
    });
  }
});

describe("proxy: waiting on the client is not the server's silence (issue 29, item 4)", () => {
  const SCRIPTED = new URL("../fixtures/scripted-server.mjs", import.meta.url).pathname;
  const ask = { jsonrpc: "2.0", id: "q", method: "tools/call", params: { name: "ask", arguments: {} } };

  it("an elicitation the person answers after the idle timeout: the call is not cut meanwhile, and gets the server's answer", async () => {
    const client = start(["--timeout-ms", "300", ...server(SCRIPTED)]);
    await client.initialize();
    client.send(ask);
    expect(await eventually(() => client.messages.some((m) => m.method === "elicitation/create"))).toBe(true);
    const question = client.messages.find((m) => m.method === "elicitation/create")!;
    await sleep(900); // three idle timeouts: the person is still reading the form
    expect(client.answersTo("q")).toEqual([]);
    client.send({ jsonrpc: "2.0", id: question.id, result: { action: "accept", content: { reply: "yes" } } });
    const answer = await client.answer("q");
    expect(answer.result).toBeDefined();
    expect(received(client.stderr).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
  });

  for (const [how, args] of [
    ["--client-wait-timeout-ms", ["--client-wait-timeout-ms", "600"]],
    ["the config file's clientWaitTimeoutMs", ["--config", "CONFIG"]],
  ] as const) {
    it(`${how} bounds the wait for the person: past it the call is answered -32001 naming clientWaitTimeoutMs, and cancelled upstream`, async () => {
      let flags: string[] = [...args];
      if (flags[1] === "CONFIG") {
        const { dir, cleanup } = (await import("./helpers.js")).tempDir();
        closers.push(async () => cleanup());
        const file = `${dir}/limits.json`;
        (await import("node:fs")).writeFileSync(file, JSON.stringify({ defaults: { clientWaitTimeoutMs: 600 } }));
        flags = ["--config", file];
      }
      const client = start(["--timeout-ms", "300", ...flags, ...server(SCRIPTED)]);
      await client.initialize();
      client.send(ask);
      expect(await eventually(() => client.messages.some((m) => m.method === "elicitation/create"))).toBe(true);
      const asked = performance.now();
      const answer = await client.answer("q");
      expect(performance.now() - asked).toBeGreaterThanOrEqual(600 - 50); // not the idle timeout's 300 ms
      expect(answer.error).toMatchObject({ code: -32001 });
      expect(answer.error!.message).toMatch(/clientWaitTimeoutMs/);
      expect(answer.error!.message).not.toMatch(/the idle timeout, timeoutMs/);
      expect(await eventually(() => received(client.stderr).some((m) => m.method === "notifications/cancelled"))).toBe(true);
    });
  }
});
