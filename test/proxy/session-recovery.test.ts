import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { eventually, proxyCommand, RawClient, tempDir } from "./helpers.js";
import type { ProxyRecord } from "./helpers.js";
import { startRestartable } from "./restartable-server.js";
import type { RestartableServer } from "./restartable-server.js";

// A 2025-era HTTP server that loses the session (issue 29, item 3): the v1 SDK's stateful
// StreamableHTTPServerTransport server restarted on the same port; the client is the v1 SDK
// client over stdio, spawning the proxy as a desktop config line would.
const { dir, cleanup } = tempDir();
afterAll(cleanup);
const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
});

async function connect(args: string[]) {
  const transport = new StdioClientTransport({ ...proxyCommand(args), stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name: "session-recovery", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  await client.connect(transport);
  open.push(() => client.close());
  return { client, errors, stderr: () => stderr };
}

async function serve(status: 404 | 400): Promise<RestartableServer> {
  const server = await startRestartable(status);
  open.push(() => server.stop());
  return server;
}

describe("proxy --url: a session the server lost is started anew", () => {
  for (const status of [404, 400] as const) {
    it(`HTTP ${status} for the session: that call answered -32000 naming the status (recorded as received, never sent again); initialize and notifications/initialized replayed; the next calls go to the new session`, async () => {
      const server = await serve(status);
      const records = join(dir, `recovery-${status}.jsonl`);
      const { client, stderr } = await connect(["--url", server.url.href, "--records", records]);
      await expect(client.callTool({ name: "echo", arguments: { text: "one" } })).resolves.toMatchObject({
        content: [{ text: "echo one" }],
      });
      await server.restart();

      const error = await client.callTool({ name: "echo", arguments: { text: "two" } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(-32000);
      expect((error as McpError).message).toMatch(new RegExp(`the server answered HTTP ${status} for the session`));

      await expect(client.callTool({ name: "echo", arguments: { text: "three" } })).resolves.toMatchObject({
        content: [{ text: "echo three" }],
      });
      await expect(client.listTools()).resolves.toMatchObject({
        tools: expect.arrayContaining([expect.objectContaining({ name: "echo" })]),
      });

      const second = server.seen.filter((s) => s.generation === 2);
      // The call that met the lost session reached the new server once, and was not sent again.
      const twos = second.filter((s) => s.rpc === "tools/call");
      expect(twos.map((s) => s.status)).toEqual([status, 200]);
      expect(second.filter((s) => s.rpc === "initialize")).toHaveLength(1);
      expect(second.filter((s) => s.rpc === "notifications/initialized")).toHaveLength(1);
      const init = second.findIndex((s) => s.rpc === "initialize");
      expect(second[init]!.session).toBeUndefined();
      const after = second.filter((s, i) => i > init && s.http === "POST");
      expect(new Set(after.map((s) => s.session)).size).toBe(1);
      expect(after[0]!.session).toBeDefined();
      expect(server.sessions()).toBe(1);
      expect(stderr()).toMatch(new RegExp(`answered HTTP ${status} for the session: starting a new one`));
      expect(stderr()).toMatch(/a new session is on/);

      await client.close();
      const lines = readFileSync(records, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as ProxyRecord);
      const lost = lines.filter((r) => r.status === "failed");
      expect(lost).toHaveLength(1);
      expect(lost[0]).toMatchObject({ method: "tools/call", name: "echo", cancel: null, error: { code: -32000 } });
      expect(lost[0]!.outcome).not.toBe("not-sent");
    });
  }

  it("HTTP 400 with the server's JSON-RPC error for that request: its answer, relayed as it is; no new session (an outside tester's)", async () => {
    const server = await serve(400);
    const records = join(dir, "bad400.jsonl");
    const { client, stderr } = await connect(["--url", server.url.href, "--records", records]);
    await expect(client.callTool({ name: "echo", arguments: { text: "one" } })).resolves.toMatchObject({ content: [{ text: "echo one" }] });
    const error = await client.callTool({ name: "bad400", arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
    expect((error as McpError).message).toMatch(/argument 'q' is required/);
    await expect(client.callTool({ name: "echo", arguments: { text: "two" } })).resolves.toMatchObject({ content: [{ text: "echo two" }] });
    expect(server.seen.filter((s) => s.rpc === "initialize")).toHaveLength(1);
    expect(new Set(server.seen.filter((s) => s.http === "POST" && s.rpc !== "initialize").map((s) => s.session)).size).toBe(1);
    expect(server.sessions()).toBe(1);
    expect(stderr()).not.toMatch(/starting a new one/);
    await client.close();
    const lines = readFileSync(records, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as ProxyRecord & { name?: string; error?: { code?: unknown; httpStatus?: unknown } });
    expect(lines.find((r) => r.name === "bad400")).toMatchObject({ status: "failed", error: { code: -32602, httpStatus: 400 } });
  });

  it("HTTP 400 naming the request by its id as a string, or naming another request: no new session (an outside tester's)", async () => {
    const server = await serve(400);
    const { client, stderr } = await connect(["--url", server.url.href]);
    await client.callTool({ name: "echo", arguments: { text: "one" } });
    const asString = await client.callTool({ name: "bad400", arguments: { idForm: "string" } }).catch((e: unknown) => e);
    expect((asString as McpError).code).toBe(-32602);
    const other = await client.callTool({ name: "bad400", arguments: { idForm: "other" } }).catch((e: unknown) => e);
    expect((other as McpError).code).toBe(-32000);
    expect((other as McpError).message).not.toMatch(/for the session/);
    await expect(client.callTool({ name: "echo", arguments: { text: "two" } })).resolves.toMatchObject({ content: [{ text: "echo two" }] });
    expect(server.seen.filter((s) => s.rpc === "initialize")).toHaveLength(1);
    expect(server.sessions()).toBe(1);
    expect(stderr()).not.toMatch(/starting a new one/);
  });

  it("a call still running in the lost session: its cancel goes to that session, never to the new one, and its record names it (an outside tester's)", async () => {
    const server = await serve(404);
    const records = join(dir, "recovery-old-call.jsonl");
    const { client } = await connect(["--url", server.url.href, "--records", records, "--timeout-ms", "1500"]);
    await client.callTool({ name: "echo", arguments: { text: "one" } });
    const first = server.seen.find((s) => s.rpc === "tools/call")!.session;
    const slow = client.callTool({ name: "slow", arguments: { ms: 10_000 } }).catch((e: unknown) => e);
    // The slow call reached the server in the first session (a fixed 200 ms could end first on a
    // loaded machine, and the call go in the next one).
    const callsIn = (session: string | undefined) => server.seen.filter((s) => s.rpc === "tools/call" && s.session === session);
    expect(await eventually(() => callsIn(first).length === 2, 10_000)).toBe(true);
    server.expire(); // the slow call's stream stays open
    expect(((await client.callTool({ name: "echo", arguments: { text: "two" } }).catch((e: unknown) => e)) as McpError).code).toBe(-32000);
    await expect(client.callTool({ name: "echo", arguments: { text: "three" } })).resolves.toMatchObject({
      content: [{ text: "echo three" }],
    });
    const second = server.seen.filter((s) => s.rpc === "tools/call").at(-1)!.session;
    expect(second).not.toBe(first);
    expect(((await slow) as McpError).code).toBe(-32001);
    // Its cancel reached the server (the client's -32001 does not wait for it), then 300 ms for one
    // more that must not come.
    expect(await eventually(() => server.seen.some((s) => s.rpc === "notifications/cancelled"), 10_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const slowId = callsIn(first)[1]!.id;
    const cancels = server.seen.filter((s) => s.rpc === "notifications/cancelled");
    expect(cancels.map((c) => c.session)).toEqual([first]);
    expect(cancels).toHaveLength(1);
    await client.close();
    const lines = readFileSync(records, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as ProxyRecord & { sessionId?: string; requestId?: unknown });
    const slowRecords = lines.filter((r) => r.requestId === slowId);
    expect(slowRecords.length).toBeGreaterThan(0);
    for (const record of slowRecords) expect(record.sessionId).toBe(first);
  });

  it("the client leaves right after the call that met the lost session: its record names the session it was sent in, and a session the proxy opened on the restarted server is DELETEd", async () => {
    const server = await serve(404);
    const records = join(dir, "recovery-leave.jsonl");
    const { client, stderr } = await connect(["--url", server.url.href, "--records", records]);
    await client.callTool({ name: "echo", arguments: { text: "one" } });
    await server.restart();
    const error = await client.callTool({ name: "echo", arguments: { text: "two" } }).catch((e: unknown) => e);
    expect((error as McpError).code).toBe(-32000);
    await client.close(); // at once: the new session's initialize may be on its way
    const second = server.seen.filter((s) => s.generation === 2);
    const opened = second.filter((s) => s.rpc === "initialize" && s.status === 200).length;
    expect(second.filter((s) => s.http === "DELETE" && s.status === 200)).toHaveLength(opened);
    expect(server.sessions()).toBe(0);
    if (opened > 0) expect(stderr()).toMatch(/deleted the session/);
    const lines = readFileSync(records, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as ProxyRecord);
    const first = lines.find((r) => r.status === "succeeded")!;
    const lost = lines.find((r) => r.status === "failed")!;
    expect(first.sessionId).toEqual(expect.any(String));
    expect(lost.sessionId).toBe(first.sessionId); // the session the request went in, not null
  });

  it("the new session cannot be started (the restarted server refuses initialize): the proxy exits 1, so the host starts it again", async () => {
    const server = await serve(404);
    const client = new RawClient(["--url", server.url.href]);
    open.push(async () => void (await client.end()));
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: "one", method: "tools/call", params: { name: "echo", arguments: { text: "one" } } });
    expect((await client.answer("one")).result).toBeDefined();
    await server.restart({ refuseInitialize: true });
    client.send({ jsonrpc: "2.0", id: "two", method: "tools/call", params: { name: "echo", arguments: { text: "two" } } });
    expect((await client.answer("two")).error).toMatchObject({ code: -32000, message: expect.stringMatching(/HTTP 404 for the session/) });
    const exit = await Promise.race([client.exited, new Promise((resolve) => setTimeout(() => resolve("still running"), 8_000))]);
    expect(exit).toMatchObject({ code: 1 });
    expect(client.stderr).toMatch(/a new session: initialize could not be sent \(.*cannot start a session\)/);
  });
});
