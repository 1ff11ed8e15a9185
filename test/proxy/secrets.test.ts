// An HTTP upstream's `--header` secret (a bearer token) never reaches a client or the log, even
// when the upstream echoes what it was sent: in a tool's result (here an `isError` one), and in an
// HTTP error's body. Both fronts: the stdio proxy (`proxy --url`) and the HTTP front
// (`proxy --listen --url`). The upstream is the v2 SDK's own stateless server on 127.0.0.1; its
// `whoami` tool answers with the Authorization header its request came with.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import * as z from "zod";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { proxyCommand, RawClient, tempDir } from "./helpers.js";
import { messagesOf, post2026, startFront, stopFronts } from "./front/helpers.js";

const SECRET = "upstream-secret-9d3e5b7a1c44";
const open: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
  await stopFronts();
});

/** The echoing upstream: `whoami` returns the request's Authorization header as an error result; `/refuse` answers 401 with it in the body. */
async function echoingUpstream(): Promise<URL> {
  let authorization = "";
  const handler = toNodeHandler(
    createMcpHandler(
      () => {
        const server = new McpServer({ name: "echo", version: "1.0.0" });
        server.registerTool("whoami", { inputSchema: z.object({}) }, () => ({
          content: [{ type: "text", text: `you sent authorization=${authorization}` }],
          isError: true,
        }));
        return server;
      },
      { legacy: "stateless", onerror: () => {} },
    ),
  );
  const server = http.createServer((req, res) => {
    authorization = String(req.headers.authorization);
    if (req.url === "/refuse") {
      req.resume();
      res.writeHead(401, { "content-type": "text/plain" });
      res.end(`refused: you sent authorization=${authorization}`);
      return;
    }
    void handler(req as never, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  open.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
}

describe("an upstream that echoes the --header secret", () => {
  it("stdio proxy --url: the tool's result reaches the client with [redacted] in place of the token; nothing on stdout or stderr holds it", async () => {
    const url = await echoingUpstream();
    const transport = new StdioClientTransport({
      ...proxyCommand(["--url", url.href, "--era", "2026-07-28", "--header", `Authorization: Bearer ${SECRET}`, "--verbose"]),
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const raw: string[] = [];
    const client = new Client({ name: "secrets", version: "1.0.0" });
    await client.connect(transport);
    open.push(() => client.close());
    const onmessage = transport.onmessage;
    transport.onmessage = (message) => {
      raw.push(JSON.stringify(message));
      onmessage?.(message);
    };
    const result = await client.callTool({ name: "whoami", arguments: {} });
    expect(result).toMatchObject({ isError: true, content: [{ text: "you sent authorization=[redacted]" }] });
    expect(raw.join("\n")).not.toContain(SECRET);
    expect(stderr).not.toContain(SECRET);
  });

  it("stdio proxy --url: a 401 whose body echoes the token: the client's error and the log say [redacted]", async () => {
    const url = await echoingUpstream();
    const transport = new StdioClientTransport({
      ...proxyCommand(["--url", new URL("/refuse", url).href, "--header", `Authorization: Bearer ${SECRET}`]),
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new Client({ name: "secrets", version: "1.0.0" });
    const error = await client.connect(transport).catch((e: unknown) => e);
    open.push(() => client.close());
    expect(error).toBeInstanceOf(Error); // the 401 ends the connect
    expect(String((error as Error).message)).not.toContain(SECRET);
    expect(stderr).toContain("[redacted]");
    expect(stderr).not.toContain(SECRET);
  });

  it("HTTP front --url: the tool's result reaches the client with [redacted] in place of the token", async () => {
    const url = await echoingUpstream();
    const front = await startFront(["--url", url.href, "--era", "2026-07-28", "--header", `Authorization: Bearer ${SECRET}`]);
    const response = await post2026(front.url, { id: 1, method: "tools/call", params: { name: "whoami", arguments: {} } });
    const messages = await messagesOf(response);
    expect(messages.at(-1)).toMatchObject({ id: 1, result: { isError: true, content: [{ text: "you sent authorization=[redacted]" }] } });
    expect(JSON.stringify(messages)).not.toContain(SECRET);
    expect(front.stderr()).not.toContain(SECRET);
  });
});

// An outside tester's token with a `"` in it came back to the client whole: the proxy looked for
// it in the message's JSON, where it is `\"`. A token with a quote, a backslash and a non-ASCII
// (Latin-1: a header value's bytes) letter, echoed in a JSON-RPC error's message.
describe("an upstream that echoes a --header secret JSON would escape", () => {
  const TOKEN = 'tok"en\\clé-5f0a7c';

  /** Answers every POST with a JSON-RPC error naming the Authorization header it got (the tester's echo-upstream.mjs). */
  async function jsonEchoUpstream(): Promise<string> {
    const server = http.createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        const id = (JSON.parse(body || "{}") as { id?: unknown }).id ?? null;
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32602, message: `bad credentials: ${req.headers.authorization}` } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    open.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  }

  it("stdio proxy --url: the client's error, the log and the --records line say [redacted], the token in no form", async () => {
    const { dir, cleanup } = tempDir();
    open.push(async () => cleanup());
    const file = join(dir, "records.jsonl");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: ${NAME} in a --header value is the option's own syntax, not a template.
    const client = new RawClient(["--url", await jsonEchoUpstream(), "--header", "Authorization: Bearer ${MCP_TOKEN}", "--records", file], {
      MCP_TOKEN: TOKEN,
    });
    open.push(() => client.end());
    client.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
    });
    // The whole value is a secret too (longest first).
    expect((await client.answer(1)).error?.message).toBe("bad credentials: [redacted]");
    client.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    await client.answer(2);
    await client.end();
    const written = readFileSync(file, "utf8");
    expect(written).toContain("[redacted]");
    // The token's plain end: left in any encoding (raw, \", \u00e9), it would show.
    for (const text of [JSON.stringify(client.messages), client.stderr, written]) expect(text).not.toContain("5f0a7c");
  });
});
