import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

/** What the server saw: each HTTP request (method, JSON-RPC method, id, session header) and its status, by generation. */
export interface Seen {
  generation: number;
  http: string;
  rpc: string | undefined;
  id: unknown;
  session: string | undefined;
  /** The request's headers, as the server got them. */
  headers: Record<string, string | string[] | undefined>;
  status?: number;
}

export interface RestartableServer {
  readonly url: URL;
  readonly seen: Seen[];
  /** Sessions the current generation has (0 right after a restart). */
  sessions(): number;
  /**
   * A restart on the same port: every connection dropped, every session forgotten (as when the
   * process restarts), then listening again. `refuseInitialize`: the new generation answers
   * initialize with HTTP 500 (a server that cannot start a session).
   */
  restart(options?: { refuseInitialize?: boolean }): Promise<void>;
  /** Forgets every session (a request naming one gets `unknownSession`) while their open streams go on: a server that expires a session under a call still running. */
  expire(): void;
  stop(): Promise<void>;
}

/**
 * The v1 SDK's stateful Streamable HTTP server (McpServer + StreamableHTTPServerTransport, one
 * transport per session) on 127.0.0.1, restartable on the same port. A request naming a session
 * it does not know gets `unknownSession`: 404 (the spec, and the SDK transport's own answer), or
 * the 400 of the SDK's own example servers ({"error":{"code":-32000,"message":"Bad Request: No
 * valid session ID provided"}}). Tools: `bad400` (answered HTTP 400 with a JSON-RPC error naming the request's id, before any session check), `echo {text}`, `slow {ms}` (aborts on the cancel), `big {bytes}` (a text of that many bytes), `burst {count}` (`count` progress
 * notifications as fast as it can, then its result).
 */
export async function startRestartable(unknownSession: 404 | 400 = 404): Promise<RestartableServer> {
  const seen: Seen[] = [];
  let generation = 1;
  let refuse = false;
  let sessions = new Map<string, StreamableHTTPServerTransport>();
  const build = (): McpServer => {
    const mcp = new McpServer({ name: "restartable", version: "1.0.0" });
    mcp.registerTool("echo", { inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: "text", text: `echo ${text}` }],
    }));
    mcp.registerTool("slow", { inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        extra.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
      return { content: [{ type: "text", text: `slept ${ms}` }] };
    });
    mcp.registerTool("big", { inputSchema: { bytes: z.number() } }, async ({ bytes }) => ({
      content: [{ type: "text", text: "x".repeat(bytes) }],
    }));
    mcp.registerTool("burst", { inputSchema: { count: z.number() } }, async ({ count }, extra) => {
      const token = extra._meta?.progressToken;
      if (token !== undefined) {
        for (let i = 1; i <= count; i++) {
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: count } });
        }
      }
      return { content: [{ type: "text", text: `burst ${count}` }] };
    });
    return mcp;
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const parsed = raw === "" ? undefined : (JSON.parse(raw) as { method?: string; id?: unknown });
    const header = req.headers["mcp-session-id"];
    const sid = typeof header === "string" ? header : undefined;
    const entry: Seen = {
      generation,
      http: req.method ?? "",
      rpc: parsed?.method,
      id: parsed?.id,
      session: sid,
      headers: { ...req.headers },
    };
    seen.push(entry);
    res.on("close", () => (entry.status = res.statusCode));
    // `bad400`: a server that answers a request it refuses with HTTP 400 and its JSON-RPC error (the request's own id).
    // `{ idForm: "string" }`: the id written as a string; `{ idForm: "other" }`: another request's id.
    const call = parsed as { params?: { name?: unknown; arguments?: { idForm?: unknown } } } | undefined;
    if (parsed?.method === "tools/call" && call?.params?.name === "bad400") {
      const form = call.params.arguments?.idForm;
      const id = form === "string" ? String(parsed.id) : form === "other" ? 9_999 : parsed.id;
      res
        .writeHead(400, { "content-type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32602, message: "argument 'q' is required" } }));
      return;
    }
    let transport = sid === undefined ? undefined : sessions.get(sid);
    if (transport === undefined) {
      if (sid !== undefined || req.method !== "POST" || parsed?.method !== "initialize") {
        if (unknownSession === 404) res.writeHead(404).end();
        else
          res
            .writeHead(400, { "content-type": "application/json" })
            .end(
              JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" }, id: null }),
            );
        return;
      }
      if (refuse) {
        res.writeHead(500).end("cannot start a session");
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      const own = sessions;
      created.onclose = () => {
        if (created.sessionId !== undefined) own.delete(created.sessionId);
      };
      await build().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, parsed);
  };
  let server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  const close = async (): Promise<void> => {
    const old = sessions;
    sessions = new Map();
    for (const transport of old.values()) await transport.close().catch(() => {});
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return {
    url,
    seen,
    sessions: () => sessions.size,
    async restart(options = {}) {
      await close();
      generation++;
      refuse = options.refuseInitialize === true;
      server = createServer((req, res) => {
        handle(req, res).catch((error: unknown) => {
          if (!res.headersSent) res.writeHead(500).end(String(error));
        });
      });
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    },
    expire() {
      sessions = new Map();
    },
    stop: close,
  };
}
