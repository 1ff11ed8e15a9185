/**
 * The proxy bench's Streamable HTTP server, in its own process: the bench's v1 McpServer
 * (bench/lib/servers.ts) on the v1 SDK's StreamableHTTPServerTransport, stateful (one transport
 * per session, 2025 era), on 127.0.0.1 port 0. Prints `PORT <n>` on stdout once listening.
 * Run as a child: node --import tsx bench/proxy-http-server.ts
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { benchServer } from "./lib/servers.js";

const sessions = new Map<string, StreamableHTTPServerTransport>();
const server = createServer((req, res) => {
  (async () => {
    const header = req.headers["mcp-session-id"];
    let transport = typeof header === "string" ? sessions.get(header) : undefined;
    if (transport === undefined) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, created);
        },
      });
      created.onclose = () => {
        if (created.sessionId !== undefined) sessions.delete(created.sessionId);
      };
      await benchServer().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res);
  })().catch((error: unknown) => {
    process.stderr.write(`[proxy http server] ${String(error)}\n`);
    if (!res.headersSent) res.writeHead(500).end();
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`PORT ${(server.address() as AddressInfo).port}\n`);
});
