// The HTTP cancel-latency bench's server (bench/http-latency.ts), run in a worker thread of its
// own (bench/http-harness-worker.ts) so that what the server does (parsing a notification, running
// the SDK's handlers) never shares an event loop with the client being measured: as with a real
// server in another process. Times are `performance.timeOrigin + performance.now()` (ms), the same
// clock in every thread of the process.
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { McpServer as McpServerV2, createMcpHandler } from "@modelcontextprotocol/server";
import { z } from "zod";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { BenchEvent } from "./lib/events.js";
import { benchServer } from "./lib/servers.js";

/** Milliseconds on a clock every thread of the process shares. */
export const now = (): number => performance.timeOrigin + performance.now();

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text.length === 0 ? undefined : JSON.parse(text);
}

/**
 * The HTTP side: one node:http server on 127.0.0.1:0 with
 * - `/mcp`: v1 StreamableHTTPServerTransport (stateful, one session per client) to a fresh bench
 *   McpServer per session; every `tools/call` logs when its response emits 'close', every
 *   POSTed `notifications/cancelled` logs its arrival;
 * - `/mcp2`: the v2 SDK's `createMcpHandler` (2026-07-28; stateless 2025 fallback), a fresh
 *   v2 McpServer per request, with the same `hang` tool;
 * - `/sse?tag=`: a bare SSE endpoint (headers, one comment, then silence) that logs its 'close'.
 * Times are `now()` of this process (server and clients share the clock).
 */
export async function serveHarness(log: { push(event: BenchEvent): void }): Promise<{ url: string; stop(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const tags = new Map<string, string>(); // `${session}:${requestId}` → tag
  /** Logs the close of every tagged tools/call's response and the arrival of every POSTed cancel. */
  const observe = (body: unknown, res: ServerResponse, session: string): void => {
    const arrivedAt = now();
    for (const message of Array.isArray(body) ? body : [body]) {
      const m = message as { method?: string; id?: unknown; params?: Record<string, unknown> } | undefined;
      if (m?.method === "tools/call") {
        const tag = (m.params?.arguments as { tag?: string } | undefined)?.tag;
        if (tag !== undefined) {
          tags.set(`${session}:${String(m.id)}`, tag);
          res.on("close", () => log.push({ event: "close", tag, t: now() }));
        }
      } else if (m?.method === "notifications/cancelled") {
        const tag = tags.get(`${session}:${String(m.params?.requestId)}`);
        if (tag !== undefined) log.push({ event: "notified", tag, t: arrivedAt });
      }
    }
  };
  const hooks = {
    started: (tag: string) => log.push({ event: "started", tag, t: now() }),
    aborted: (tag: string) => log.push({ event: "aborted", tag, t: now() }),
  };
  // The v2 SDK's handler: 2026-07-28 (a stream close cancels the handler), stateless 2025 fallback.
  const modernHandler = createMcpHandler(
    () => {
      const server = new McpServerV2({ name: "bench-server-v2", version: "1.0.0" });
      server.registerTool("hang", { inputSchema: z.object({ tag: z.string() }) }, async ({ tag }, ctx) => {
        hooks.started(tag);
        const signal = ctx.mcpReq.signal;
        await new Promise<void>((resolve) => {
          if (signal.aborted) resolve();
          else signal.addEventListener("abort", () => resolve(), { once: true });
        });
        hooks.aborted(tag);
        return { content: [{ type: "text", text: "cancelled" }] };
      });
      return server;
    },
    { responseMode: "sse", legacy: "stateless", onerror: () => {} },
  );
  const modern = toNodeHandler(modernHandler);
  const onRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/sse") {
      const tag = url.searchParams.get("tag") ?? "";
      res.on("close", () => log.push({ event: "close", tag, t: now() }));
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(": open\n\n");
      return;
    }
    if (url.pathname !== "/mcp" && url.pathname !== "/mcp2" && url.pathname !== "/mcpjson") {
      res.writeHead(404).end();
      return;
    }
    const body = req.method === "POST" ? await readBody(req) : undefined;
    if (url.pathname === "/mcp2") {
      observe(body, res, "v2");
      await modern(req as never, res, body);
      return;
    }
    const sessionHeader = req.headers["mcp-session-id"];
    const session = typeof sessionHeader === "string" ? sessionHeader : "";
    observe(body, res, session);
    let transport = sessions.get(session);
    if (transport === undefined) {
      if ((body as { method?: string } | undefined)?.method !== "initialize") {
        res
          .writeHead(400, { "content-type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no session" } }));
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: url.pathname === "/mcpjson",
        onsessioninitialized: (id) => {
          sessions.set(id, created);
        },
      });
      created.onclose = () => {
        if (created.sessionId !== undefined) sessions.delete(created.sessionId);
      };
      const mcpServer = benchServer(hooks);
      await mcpServer.connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  };
  const server = createServer((req, res) => {
    onRequest(req, res).catch((error: unknown) => {
      process.stderr.write(`[http harness] ${String(error)}\n`);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      await modernHandler.close();
      for (const transport of sessions.values()) await transport.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
