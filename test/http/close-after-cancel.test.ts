import { createServer } from "node:http";
import type { Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallTimeoutError, withCancellation } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { eventually, sleep } from "./servers.js";

// A 2025-era cancel whose notification is still unanswered when the client closes: the close
// clears what the adapter keeps, and the delivery's close step that comes after it puts nothing
// back (an audit's: a resume token and a request id were kept by the closed adapter).

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

/** A scripted server (node:http): each tools/call gets an SSE head and a priming event id, never an answer; a notifications/cancelled POST is never answered. */
async function neverAnswers(): Promise<{ url: URL; seen: string[]; sockets: Set<Socket> }> {
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      if (req.method !== "POST") {
        res.writeHead(req.method === "DELETE" ? 200 : 405).end();
        return;
      }
      const message = JSON.parse(body) as { id?: number; method?: string };
      seen.push(message.method ?? "response");
      if (message.method === "initialize") {
        res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s1" });
        const result = { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "raw", version: "1" } };
        res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
      } else if (message.method === "tools/call") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(`id: prime-${message.id}\ndata:\n\n`);
      } else if (message.method !== "notifications/cancelled") {
        res.writeHead(202).end();
      }
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), seen, sockets };
}

describe("Streamable HTTP (2025 era): a close while a cancel's notification is unanswered", () => {
  it("the adapter keeps nothing after the close, the delivery's later close step included; no socket left", async () => {
    const server = await neverAnswers();
    const transport = new StreamableHTTPClientTransport(server.url, { fetch: cancellableFetch() });
    const client = new Client({ name: "close-after-cancel", version: "1.0.0" });
    const adapter = streamableHttpCancellation(transport, { flushTimeoutMs: 100 });
    const mcp = withCancellation(client, adapter);
    await client.connect(mcp.transport);
    cleanup.push(() => client.close());
    await expect(mcp.callTool({ name: "x" }, { timeoutMs: 200 })).rejects.toBeInstanceOf(CallTimeoutError);
    expect(await eventually(() => server.seen.includes("notifications/cancelled"))).toBe(true);
    await client.close();
    // The close aborted the unanswered POST: its delivery ends, and its close step runs after it.
    await sleep(300);
    const { resumesRefused: _refused, ...held } = adapter.stats();
    expect(held).toEqual({ streams: 0, sending: 0, flushing: 0, checks: 0, resuming: 0, blockedTokens: 0, holding: 0, cancelMarks: 0 });
    expect(await eventually(() => server.sockets.size === 0)).toBe(true);
  });
});
