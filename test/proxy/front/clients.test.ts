import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { connectV1, connectV2 } from "../../http/clients.js";
import { eventually, fixture, server } from "../helpers.js";
import { messagesOf, post2026, startFront, stopFronts } from "./helpers.js";

// `mcp-cancellable proxy --listen`: real SDK clients, both lines and both eras, over Streamable
// HTTP to the front, which runs a real SDK server on stdio (the v2 server: 2026-07-28 and the
// 2025 handshake). The server writes "STARTED <id>" when a tool's handler runs and "ABORTED <id>
// reason=..." when its abort signal fires (its stderr passes through the front's).
const V2_STDIO = fixture("http/v2-stdio-server.mjs");
const open: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
  await stopFronts();
});

const lines = (text: string, prefix: string): string[] => text.split("\n").filter((line) => line.startsWith(prefix));

describe("proxy --listen: SDK clients through the HTTP front", () => {
  it("raw v1 SDK client (2025-era session): tools answered; an abort POSTs notifications/cancelled, which reaches the server's handler under the upstream id", async () => {
    const front = await startFront(server(V2_STDIO));
    const client = new Client({ name: "front-v1", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(front.url);
    await client.connect(transport);
    open.push(() => client.close());
    expect(transport.sessionId).toMatch(/\./); // <replica>.<uuid>
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain("sleep");
    await expect(client.callTool({ name: "sleep", arguments: { ms: 20 } })).resolves.toMatchObject({ content: [{ text: "slept 20" }] });
    const controller = new AbortController();
    const call = client.callTool({ name: "sleep", arguments: { ms: 10_000 } }, undefined, { signal: controller.signal });
    expect(await eventually(() => lines(front.stderr(), "STARTED").length === 2)).toBe(true);
    controller.abort("user pressed stop");
    await expect(call).rejects.toThrow();
    expect(await eventually(() => lines(front.stderr(), "ABORTED").length === 1)).toBe(true);
    // The server saw the cancel under the id it knows (its own second request: upstream id 3 after initialize 1, tools/list 2: ids are the relay's, from 1).
    expect(lines(front.stderr(), "ABORTED")[0]).toContain('reason="user pressed stop"');
    await expect(client.callTool({ name: "sleep", arguments: { ms: 10 } })).resolves.toMatchObject({ content: [{ text: "slept 10" }] });
  });

  it("raw v2 SDK client pinned to 2026-07-28: answered; an abort closes its response stream, which the front carries upstream as notifications/cancelled", async () => {
    const front = await startFront(server(V2_STDIO));
    const client = new ClientV2({ name: "front-v2", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new TransportV2(front.url));
    open.push(() => client.close());
    await expect(client.callTool({ name: "sleep", arguments: { ms: 20 } })).resolves.toMatchObject({ content: [{ text: "slept 20" }] });
    const controller = new AbortController();
    const call = client.callTool({ name: "sleep", arguments: { ms: 10_000 } }, { signal: controller.signal });
    expect(await eventually(() => lines(front.stderr(), "STARTED").length === 2)).toBe(true);
    controller.abort();
    await expect(call).rejects.toThrow();
    expect(await eventually(() => lines(front.stderr(), "ABORTED").length === 1)).toBe(true);
    expect(lines(front.stderr(), "ABORTED")[0]).toContain("The client closed its response stream");
  });

  it("v2 SDK client without a pin (2025-era session) and the library's own wrapped clients (both lines): answered; the proxy's idle timeout answers -32001 naming the limit and cancels upstream", async () => {
    const front = await startFront(["--timeout-ms", "1000", ...server(V2_STDIO)]);
    const raw = new ClientV2({ name: "front-v2-legacy", version: "1.0.0" });
    const rawTransport = new TransportV2(front.url);
    await raw.connect(rawTransport);
    open.push(() => raw.close());
    expect(rawTransport.sessionId).toBeDefined();
    await expect(raw.callTool({ name: "sleep", arguments: { ms: 10 } })).resolves.toMatchObject({ content: [{ text: "slept 10" }] });
    const timedOut = await raw.callTool({ name: "sleep", arguments: { ms: 5_000 } }).catch((e: unknown) => e);
    expect((timedOut as { code?: unknown }).code).toBe(-32001);
    expect(await eventually(() => lines(front.stderr(), "ABORTED").length === 1)).toBe(true);

    const v1 = await connectV1(front.url);
    open.push(v1.close);
    await expect(v1.mcp.callTool({ name: "sleep", arguments: { ms: 10 } })).resolves.toMatchObject({ content: [{ text: "slept 10" }] });
    const v2 = await connectV2(front.url, { pin: true });
    open.push(v2.close);
    await expect(v2.mcp.callTool({ name: "sleep", arguments: { ms: 10 } })).resolves.toMatchObject({ content: [{ text: "slept 10" }] });
    const error = await v1.client
      .callTool({ name: "sleep", arguments: { ms: 5_000 } }, undefined, { timeout: 20_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32001);
    expect((error as McpError).data).toMatchObject({ trigger: "timeout", limitMs: 1000, record: { clientRequestId: expect.anything() } });
  });

  it("ids are per client: two 2026-07-28 clients use the same id on the shared server; one closes its stream, the other's call is answered; a cancel POSTed for that id reaches nobody", async () => {
    const front = await startFront(server(V2_STDIO));
    const a = new AbortController();
    const first = post2026(
      front.url,
      { id: 7, method: "tools/call", params: { name: "sleep", arguments: { ms: 10_000 } } },
      { signal: a.signal },
    );
    const second = post2026(front.url, { id: 7, method: "tools/call", params: { name: "sleep", arguments: { ms: 600 } } });
    expect(await eventually(() => lines(front.stderr(), "STARTED").length === 2)).toBe(true);
    // A 2026-07-28 client's notifications/cancelled for id 7: no client-to-server notifications on this era (rule 28): dropped.
    const stray = await post2026(front.url, { method: "notifications/cancelled", params: { requestId: 7 } });
    expect(stray.status).toBe(202);
    // The stream's headers came at once (an SSE stream); closing it is the cancel.
    const firstBody = first.then((response) => response.text()).catch((error: unknown) => error);
    a.abort();
    expect(await firstBody).toBeInstanceOf(Error);
    expect(await eventually(() => lines(front.stderr(), "ABORTED").length === 1)).toBe(true);
    const answered = await messagesOf(await second);
    expect(answered.at(-1)).toMatchObject({ id: 7, result: { content: [{ text: "slept 600" }] } });
    expect(lines(front.stderr(), "ABORTED")).toHaveLength(1);
  });

  it("the first request the front ever sends upstream (a 2026-07-28 tools/call to a v1 SDK stdio server) can be cancelled: its upstream id is never 0, which the v1 SDK's cancel handler ignores", async () => {
    const front = await startFront(server(fixture("sdk-stdio-server.mjs")));
    const a = new AbortController();
    const first = post2026(
      front.url,
      { id: 1, method: "tools/call", params: { name: "sleep", arguments: { ms: 10_000 } } },
      { signal: a.signal },
    );
    expect(await eventually(() => lines(front.stderr(), "STARTED").length === 1)).toBe(true);
    expect(lines(front.stderr(), "STARTED")[0]).not.toBe("STARTED 0");
    const body = first.then((response) => response.text()).catch((error: unknown) => error);
    a.abort();
    expect(await body).toBeInstanceOf(Error);
    expect(await eventually(() => lines(front.stderr(), "ABORTED").length === 1)).toBe(true);
  });

  it.skipIf(!existsSync("/usr/bin/curl"))(
    "a plain curl session: initialize (a session id), notifications/initialized, tools/call, DELETE; then the session is gone; a 2026-07-28 call with curl",
    async () => {
      const front = await startFront(server(V2_STDIO));
      const curl = (args: string[]) => {
        const run = spawnSync("/usr/bin/curl", ["-sS", "--max-time", "10", "-D", "-", ...args, front.url.href], { encoding: "utf8" });
        return { status: Number(/^HTTP\/1\.1 (\d+)/m.exec(run.stdout)?.[1]), text: run.stdout };
      };
      const post = ["-X", "POST", "-H", "content-type: application/json", "-H", "accept: application/json, text/event-stream"];
      const init = curl([
        ...post,
        "-d",
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"8"}}}',
      ]);
      expect(init.status).toBe(200);
      const session = /^mcp-session-id: (\S+)/im.exec(init.text)?.[1];
      expect(session).toBeDefined();
      const inSession = [...post, "-H", `mcp-session-id: ${session}`, "-H", "mcp-protocol-version: 2025-06-18"];
      expect(curl([...inSession, "-d", '{"jsonrpc":"2.0","method":"notifications/initialized"}']).status).toBe(202);
      const call = curl([
        ...inSession,
        "-d",
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":10}}}',
      ]);
      expect(call.text).toContain('"slept 10"');
      expect(curl(["-X", "DELETE", "-H", `mcp-session-id: ${session}`, "-H", "mcp-protocol-version: 2025-06-18"]).status).toBe(200);
      expect(curl([...inSession, "-d", '{"jsonrpc":"2.0","id":3,"method":"tools/list"}']).status).toBe(404);
      const modern = curl([
        ...post,
        "-H",
        "mcp-protocol-version: 2026-07-28",
        "-H",
        "mcp-method: tools/call",
        "-H",
        "mcp-name: sleep",
        "-d",
        '{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"sleep","arguments":{"ms":10},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"curl","version":"8"}}}}',
      ]);
      expect(modern.status).toBe(200);
      expect(modern.text).toContain('"slept 10"');
    },
  );
  it("--verbose logs each relayed message of a 2026-07-28 request (the client's id beside the upstream's) and its cancel, as the stdio proxy does", async () => {
    const front = await startFront(["--verbose", ...server(V2_STDIO)]);
    const client = new ClientV2({ name: "front-verbose", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new TransportV2(front.url));
    open.push(() => client.close());
    await expect(client.callTool({ name: "sleep", arguments: { ms: 5 } })).resolves.toMatchObject({ content: [{ text: "slept 5" }] });
    const controller = new AbortController();
    const call = client.callTool({ name: "sleep", arguments: { ms: 10_000 } }, { signal: controller.signal });
    expect(await eventually(() => lines(front.stderr(), "STARTED").length === 2)).toBe(true);
    controller.abort();
    await expect(call).rejects.toThrow();
    expect(await eventually(() => front.stderr().includes("client->proxy cancel of tools/call"))).toBe(true);
    const logged = front
      .stderr()
      .split("\n")
      .filter((line) => /client->|server->/.test(line));
    const calls = logged.filter((line) => line.includes("client->server tools/call"));
    expect(calls).toHaveLength(2);
    // Each line names the client's id and the relay's own upstream id.
    expect(calls[0]).toMatch(/client->server tools\/call id \S+ \(upstream \d+\)/);
    expect(logged.filter((line) => /server->client result id \S+ \(upstream \d+\)/.test(line)).length).toBeGreaterThanOrEqual(2);
    expect(logged.filter((line) => line.includes("client->proxy cancel of tools/call"))).toHaveLength(1);
    expect(logged.find((line) => line.includes("client->proxy cancel"))).toContain("The client closed its response stream");
  });
});
