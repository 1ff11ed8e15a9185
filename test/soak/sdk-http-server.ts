// The soak's 2025-era Streamable HTTP servers: the v1 SDK's own `Server` and
// `StreamableHTTPServerTransport`, stateful (a session per client connection), answering in SSE
// (the response head as the request is taken up) or in JSON (`enableJsonResponse`: nothing until
// the answer), on node:http at 127.0.0.1, port 0. Tools, as the soak's other servers have them:
//   echo      answers at once
//   sse-echo  one progress notification, then the result
//   fail      a JSON-RPC error (-32603)
//   silent    never answers (ends when the SDK aborts it: the cancel, or the transport closed)
//   late      ignores the cancel; answers after arguments.ms (the SDK drops the answer of a cancelled request)
//   progress  progress every arguments.every ms, arguments.steps times, then nothing until aborted
// It logs what the SDK's own protocol layer saw, per client connection (the client sends
// `x-soak-connection`): a tools/call taken up (its transport's `onmessage`, where the SDK
// registers the request's AbortController at once), its response written (its transport's `send`,
// once it went), each `notifications/cancelled` handed to the protocol, and a notification POST
// whose own answer never finished. Times: performance.now() of this process (the soak's clock).
import http from "node:http";
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** What the server tells the soak, per client connection (`connection`: the `x-soak-connection` header). */
export interface SdkServerLog {
  /** A POST carrying a tools/call (`cancel`: a notification naming `id`) reached the request handler at `t`. */
  arrived(connection: number, id: unknown, t: number, cancel: boolean): void;
  took(connection: number, id: unknown, t: number): void;
  answered(connection: number, id: unknown, t: number): void;
  cancelled(connection: number, requestId: unknown, t: number): void;
  /** A notification POST naming `requestId` whose answer did not finish (its connection died under it). */
  unanswered(connection: number, requestId: unknown): void;
}

export interface SdkHttpServer {
  readonly url: URL;
  /**
   * POST exchanges the client closed that the SDK still holds, over the live sessions. In JSON
   * mode the v1 SDK answers a POST only once every request in it has its response, and it never
   * sends one for a cancelled request: each such exchange (its socket, request, response and
   * promise, about 15 KB) stays until the session ends. Memory of the server, not of the client.
   */
  held(): number;
  /** A crash: every TCP connection destroyed and every session forgotten at once (a later request with one gets 404). */
  crash(): Promise<void>;
  stop(): Promise<void>;
}

export const CONNECTION_HEADER = "x-soak-connection";

const TOOLS = ["echo", "sse-echo", "fail", "silent", "late", "progress"];

interface Arguments {
  ms?: number;
  every?: number;
  steps?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The v1 SDK server, one per session. */
function build(): Server {
  const server = new Server({ name: "soak-v1", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((name) => ({ name, inputSchema: { type: "object" as const } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const id = extra.requestId;
    const args = (request.params.arguments ?? {}) as Arguments;
    const token = request.params._meta?.progressToken;
    const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });
    const progress = (step: number) =>
      token === undefined
        ? Promise.resolve()
        : extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: step } }).catch(() => {});
    const aborted = () =>
      new Promise<never>((_, reject) => {
        const stop = () => reject(new Error("aborted"));
        if (extra.signal.aborted) stop();
        else extra.signal.addEventListener("abort", stop, { once: true });
      });
    switch (request.params.name) {
      case "echo":
        return text(`echo ${String(id)}`);
      case "sse-echo":
        await progress(1);
        return text(`sse-echo ${String(id)}`);
      case "fail":
        throw new McpError(ErrorCode.InternalError, `failed ${String(id)}`);
      case "silent":
        return aborted();
      case "late":
        await sleep(args.ms ?? 0);
        return text(`late ${String(id)}`);
      case "progress": {
        const { every = 10, steps = 200 } = args;
        for (let step = 1; step <= steps && !extra.signal.aborted; step++) {
          await sleep(every);
          await progress(step);
        }
        return aborted();
      }
      default:
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${request.params.name}`);
    }
  });
  return server;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

type Message = { method?: string; id?: unknown; params?: { requestId?: unknown }; result?: unknown; error?: unknown };

/** Starts the server; `json` answers in JSON (`enableJsonResponse`), else in SSE. */
export async function startSdkHttp({ json, log }: { json: boolean; log: SdkServerLog }): Promise<SdkHttpServer> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server }>();
  /** Per session transport: its exchanges the client closed before the SDK answered (see `held`). */
  const held = new Map<StreamableHTTPServerTransport, number>();
  const connectionOf = (req: http.IncomingMessage): number => Number(req.headers[CONNECTION_HEADER] ?? -1);

  /** A new session for a client connection: the SDK's transport, its `onmessage` and `send` watched. */
  async function open(connection: number): Promise<StreamableHTTPServerTransport> {
    const server = build();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: json,
      onsessioninitialized: (id) => void sessions.set(id, { transport, server }),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    const take = transport.onmessage!;
    transport.onmessage = (message, extra) => {
      const m = message as Message;
      if (m.method === "tools/call") log.took(connection, m.id, performance.now());
      else if (m.method === "notifications/cancelled") log.cancelled(connection, m.params?.requestId, performance.now());
      take(message, extra);
    };
    const send = transport.send.bind(transport);
    transport.send = async (message: JSONRPCMessage, options) => {
      const m = message as Message;
      const t = performance.now();
      await send(message, options);
      // Only a response that went (a dead session's send throws): its time is when it was handed over.
      if (m.method === undefined && ("result" in m || "error" in m)) log.answered(connection, m.id, t);
    };
    return transport;
  }

  const server = http.createServer(async (req, res) => {
    const arrived = performance.now();
    try {
      const raw = req.method === "POST" ? await readBody(req) : "";
      const parsed: unknown = raw ? JSON.parse(raw) : undefined;
      const message = parsed as Message | undefined;
      if (message?.method === "tools/call") log.arrived(connectionOf(req), message.id, arrived, false);
      if (message?.method === "notifications/cancelled") {
        const connection = connectionOf(req);
        log.arrived(connection, message.params?.requestId, arrived, true);
        res.on("close", () => {
          if (!res.writableFinished) log.unanswered(connection, message.params?.requestId);
        });
      }
      const sid = req.headers["mcp-session-id"];
      let transport = typeof sid === "string" ? sessions.get(sid)?.transport : undefined;
      if (transport === undefined) {
        if (sid !== undefined || req.method !== "POST") {
          res.writeHead(404, { "content-type": "application/json" });
          res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }));
          return;
        }
        transport = await open(connectionOf(req));
      }
      const handled = transport;
      let pending = true;
      let counted = false;
      res.on("close", () => {
        if (pending && !res.writableFinished && message?.method === "tools/call") {
          counted = true;
          held.set(handled, (held.get(handled) ?? 0) + 1);
        }
      });
      await transport.handleRequest(req, res, parsed);
      pending = false;
      if (counted && held.has(handled)) held.set(handled, held.get(handled)! - 1);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    }
  });
  // Idle keep-alive sockets outlive the client's own (undici's 4 s), as in the raw server.
  server.keepAliveTimeout = 60_000;
  // The accept queue as deep as the kernel allows (net.core.somaxconn, 4096 here), not node's 511:
  // this server shares its process and two cores with 200 calls in flight, and with 511 its queue
  // overflowed all through the run (25,843 ListenOverflows in 20 s). An overflowing queue drops
  // SYNs and final ACKs, so a connection the client opened later (a notification's) can be
  // accepted seconds before an earlier one (its request's): the client sees its body written
  // either way, and nothing on the client can tell (docs/delivery.md, "What the client cannot see").
  await new Promise<void>((resolve) => server.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, resolve));
  const { port } = server.address() as AddressInfo;

  /** Forgets every session and closes its SDK side (aborting its handlers), as a dead process would. */
  const forget = async (): Promise<void> => {
    const all = [...sessions.values()];
    sessions.clear();
    held.clear();
    for (const { server: mcp } of all) await mcp.close().catch(() => {});
  };
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    held: () => [...held.values()].reduce((sum, n) => sum + n, 0),
    async crash() {
      server.closeAllConnections();
      await forget();
    },
    async stop() {
      await forget();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
