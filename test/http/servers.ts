// Real MCP servers over Streamable HTTP on 127.0.0.1, port 0, started and stopped by the tests:
// the v1 SDK's StreamableHTTPServerTransport (stateful with session ids, or stateless), the v2
// SDK's createMcpHandler (2026-07-28 plus the stateless 2025 fallback), and server-everything as
// a child process. Each server records what it saw, so tests can assert the server observed the
// disconnect: every HTTP request, every response 'close' (writableFinished=false: it closed before
// the response ended) and the `slow` tool's start, abort signal and end.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as z from "zod";
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { EventStore } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { McpServer as McpServerV2, createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";

/** One thing a server saw; `t` is ms since the server started (performance.now()). */
export type ServerEvent =
  | {
      t: number;
      kind: "http";
      seq: number;
      http: string;
      rpc: string | undefined;
      id: unknown;
      cancelOf: unknown;
      lastEventId: string | undefined;
      pv: string | undefined;
      session: boolean;
    }
  | {
      t: number;
      kind: "close";
      seq: number;
      http: string;
      rpc: string | undefined;
      id: unknown;
      status: number;
      writableFinished: boolean;
      headersSent: boolean;
    }
  | { t: number; kind: "handler-start"; id: unknown }
  | { t: number; kind: "handler-end"; id: unknown; aborted: boolean }
  | { t: number; kind: "handler-aborted"; id: unknown; reason: string };

export interface TestServer {
  readonly tag: string;
  readonly url: URL;
  readonly events: ServerEvent[];
  /** ms on the same clock as the events' `t`. */
  now(): number;
  /** Responses whose 'close' has not fired yet (the standalone GET stream included). */
  openResponses(): Array<Extract<ServerEvent, { kind: "http" }>>;
  /** Destroys every TCP connection without closing the MCP side (a crash, a load balancer reset). */
  drop(): void;
  stop(): Promise<void>;
}

const now = (t0: number): number => Math.round(performance.now() - t0);

/** The tool every server exposes: runs `ms` in 10 steps, with progress when asked, and records its life. */
async function slow(
  record: (event: ServerEvent) => void,
  t0: number,
  id: unknown,
  ms: number,
  signal: AbortSignal,
  progress: ((step: number) => Promise<void>) | undefined,
): Promise<{ content: Array<{ type: "text"; text: string }> }> {
  record({ t: now(t0), kind: "handler-start", id });
  signal.addEventListener("abort", () => record({ t: now(t0), kind: "handler-aborted", id, reason: String(signal.reason) }), {
    once: true,
  });
  for (let step = 1; step <= 10; step++) {
    await new Promise((resolve) => setTimeout(resolve, ms / 10));
    if (signal.aborted) {
      record({ t: now(t0), kind: "handler-end", id, aborted: true });
      throw new Error("aborted");
    }
    await progress?.(step).catch(() => {});
  }
  record({ t: now(t0), kind: "handler-end", id, aborted: false });
  return { content: [{ type: "text", text: `done after ${ms} ms` }] };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Records the request and its response's 'close'; returns nothing the handler needs. */
function observe(
  events: ServerEvent[],
  t0: number,
  seq: number,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  parsed: unknown,
): void {
  const message = (Array.isArray(parsed) ? parsed[0] : parsed) as
    | { method?: string; id?: unknown; params?: { requestId?: unknown }; result?: unknown; error?: unknown }
    | undefined;
  const rpc = message?.method ?? (message && ("result" in message || "error" in message) ? "response" : undefined);
  const header = (name: string): string | undefined => {
    const value = req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  events.push({
    t: now(t0),
    kind: "http",
    seq,
    http: req.method ?? "",
    rpc,
    id: message?.id,
    cancelOf: message?.method === "notifications/cancelled" ? message.params?.requestId : undefined,
    lastEventId: header("last-event-id"),
    pv: header("mcp-protocol-version"),
    session: header("mcp-session-id") !== undefined,
  });
  res.on("close", () =>
    events.push({
      t: now(t0),
      kind: "close",
      seq,
      http: req.method ?? "",
      rpc,
      id: message?.id,
      status: res.statusCode,
      writableFinished: res.writableFinished,
      headersSent: res.headersSent,
    }),
  );
}

function openOf(events: ServerEvent[]): Array<Extract<ServerEvent, { kind: "http" }>> {
  const closed = new Set(events.flatMap((e) => (e.kind === "close" ? [e.seq] : [])));
  return events.flatMap((e) => (e.kind === "http" && !closed.has(e.seq) ? [e] : []));
}

async function listen(server: http.Server): Promise<URL> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no address");
  return new URL(`http://127.0.0.1:${address.port}/mcp`);
}

/**
 * A raw node:http server on 127.0.0.1, port 0, for what no SDK server does (a result written with
 * the 202, an answer on another stream, a redirect): `handle` gets each request with its body read.
 * Its URL's path is /mcp; `stop()` closes every connection, then the server.
 */
export async function startRaw(
  handle: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void,
): Promise<{ url: URL; stop(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    void readBody(req).then((body) => handle(req, res, body));
  });
  const url = await listen(server);
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** server-everything's resumable event store, in memory. */
class MemoryEventStore implements EventStore {
  readonly #events = new Map<string, { streamId: string; message: unknown }>();
  async storeEvent(streamId: string, message: unknown): Promise<string> {
    const eventId = randomUUID();
    this.#events.set(eventId, { streamId, message });
    return eventId;
  }
  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.#events.get(eventId)?.streamId;
  }
  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: never) => Promise<void> }): Promise<string> {
    const entries = [...this.#events.entries()];
    const start = entries.findIndex(([id]) => id === lastEventId);
    if (start === -1) return lastEventId;
    const streamId = entries[start]![1].streamId;
    for (const [eventId, event] of entries.slice(start + 1)) {
      if (event.streamId === streamId) await send(eventId, event.message as never);
    }
    return streamId;
  }
}

export interface V1Options {
  /** One transport per session (session ids) when true; a fresh server per POST when false. */
  stateful?: boolean;
  /** Resumable streams: priming event ids on every SSE stream (protocol >= 2025-11-25). */
  eventStore?: boolean;
  /** `enableJsonResponse`: the headers wait for the result (the "no headers yet" case). */
  json?: boolean;
  /** Holds each notifications/cancelled POST this long (ms) before handling it: a slow answer. */
  holdCancelMs?: number;
  /** Destroys each tools/call POST's socket this long (ms) after it came (its stream broken mid-call; the session lives on). */
  breakToolCallAfterMs?: number;
}

/** The v1 SDK's McpServer + StreamableHTTPServerTransport over node:http. */
export async function startV1({
  stateful = true,
  eventStore = false,
  json = false,
  holdCancelMs = 0,
  breakToolCallAfterMs,
}: V1Options = {}): Promise<TestServer> {
  const tag = `v1-${stateful ? "stateful" : "stateless"}${json ? "-json" : ""}${eventStore ? "-es" : ""}`;
  const t0 = performance.now();
  const events: ServerEvent[] = [];
  const record = (event: ServerEvent): void => void events.push(event);
  const build = (): McpServerV1 => {
    const server = new McpServerV1({ name: "v1-test", version: "1.0.0" });
    server.registerTool("slow", { inputSchema: { ms: z.number().optional() } }, ({ ms = 5_000 }, extra) => {
      const token = extra._meta?.progressToken;
      return slow(
        record,
        t0,
        extra.requestId,
        ms,
        extra.signal,
        token === undefined
          ? undefined
          : (step) =>
              extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: step, total: 10 } }),
      );
    });
    return server;
  };
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let seq = 0;
  const server = http.createServer(async (req, res) => {
    try {
      const raw = req.method === "POST" ? await readBody(req) : "";
      const parsed: unknown = raw ? JSON.parse(raw) : undefined;
      observe(events, t0, ++seq, req, res, parsed);
      if (breakToolCallAfterMs !== undefined && (parsed as { method?: string } | undefined)?.method === "tools/call") {
        setTimeout(() => req.socket.destroy(), breakToolCallAfterMs);
      }
      if (holdCancelMs > 0 && (parsed as { method?: string } | undefined)?.method === "notifications/cancelled") {
        await new Promise((resolve) => setTimeout(resolve, holdCancelMs));
      }
      if (stateful) {
        const sid = req.headers["mcp-session-id"];
        let transport = typeof sid === "string" ? sessions.get(sid) : undefined;
        if (transport === undefined) {
          if (sid !== undefined || req.method !== "POST") {
            res.writeHead(404).end();
            return;
          }
          const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            enableJsonResponse: json,
            ...(eventStore ? { eventStore: new MemoryEventStore() } : {}),
            onsessioninitialized: (id) => void sessions.set(id, created),
          });
          created.onclose = () => {
            if (created.sessionId !== undefined) sessions.delete(created.sessionId);
          };
          await build().connect(created);
          transport = created;
        }
        await transport.handleRequest(req, res, parsed);
      } else {
        if (req.method !== "POST") {
          res.writeHead(405, { allow: "POST" }).end();
          return;
        }
        const mcp = build();
        const transport = new StreamableHTTPServerTransport({ enableJsonResponse: json }); // no session ids
        // The SDK's stateless idiom: a disconnect closes the transport, which aborts the handler.
        res.on("close", () => {
          void transport.close();
          void mcp.close();
        });
        await mcp.connect(transport);
        await transport.handleRequest(req, res, parsed);
      }
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    }
  });
  const url = await listen(server);
  return {
    tag,
    url,
    events,
    now: () => now(t0),
    openResponses: () => openOf(events),
    drop: () => server.closeAllConnections(),
    async stop() {
      for (const transport of sessions.values()) await transport.close().catch(() => {});
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The v2 SDK's createMcpHandler (2026-07-28, stateless 2025 fallback) via toNodeHandler. */
export async function startV2({ responseMode = "auto" }: { responseMode?: "auto" | "sse" | "json" } = {}): Promise<TestServer> {
  const t0 = performance.now();
  const events: ServerEvent[] = [];
  const record = (event: ServerEvent): void => void events.push(event);
  const handler = createMcpHandler(
    () => {
      const server = new McpServerV2({ name: "v2-test", version: "1.0.0" });
      server.registerTool("slow", { inputSchema: z.object({ ms: z.number().optional() }) }, ({ ms = 5_000 }, ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        return slow(
          record,
          t0,
          ctx.mcpReq.id,
          ms,
          ctx.mcpReq.signal,
          token === undefined
            ? undefined
            : (step) =>
                ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: step, total: 10 } }),
        );
      });
      return server;
    },
    { responseMode, legacy: "stateless", onerror: () => {} },
  );
  const node = toNodeHandler(handler);
  let seq = 0;
  const server = http.createServer(async (req, res) => {
    const raw = req.method === "POST" ? await readBody(req) : "";
    let parsed: unknown;
    try {
      parsed = raw ? JSON.parse(raw) : undefined;
    } catch {
      parsed = undefined;
    }
    observe(events, t0, ++seq, req, res, parsed);
    await node(req as Parameters<typeof node>[0], res, parsed);
  });
  const url = await listen(server);
  return {
    tag: `v2-${responseMode}`,
    url,
    events,
    now: () => now(t0),
    openResponses: () => openOf(events),
    drop: () => server.closeAllConnections(),
    async stop() {
      await handler.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * server-everything in streamableHttp mode as a child process (endpoint /mcp, stateful, with an
 * event store). Its entry listens on PORT on every interface, so a preload forces 127.0.0.1 and
 * prints the port; it also reports each request and response 'close' on stdout (no `rpc`/`id`:
 * express reads the body).
 */
export async function startEverything(): Promise<TestServer> {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("@modelcontextprotocol/server-everything/package.json");
  const entry = join(dirname(manifest), "dist", "index.js");
  const hook = fileURLToPath(new URL("../fixtures/http/everything-hook.mjs", import.meta.url));
  const child = spawn(process.execPath, ["--import", hook, entry, "streamableHttp"], {
    env: { ...process.env, PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const t0 = performance.now();
  const events: ServerEvent[] = [];
  const lines: string[] = [];
  let carry = "";
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      carry += chunk.toString("utf8");
      const parts = carry.split("\n");
      carry = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        const listening = /^LISTENING 127\.0\.0\.1:(\d+)/.exec(line);
        if (listening) resolve(Number(listening[1]));
        if (line.startsWith("HTTP ")) {
          const e = JSON.parse(line.slice(5)) as { seq: number; http: string; lastEventId?: string; session?: string };
          events.push({
            t: now(t0),
            kind: "http",
            seq: e.seq,
            http: e.http,
            rpc: undefined,
            id: undefined,
            cancelOf: undefined,
            lastEventId: e.lastEventId,
            pv: undefined,
            session: e.session === "yes",
          });
        } else if (line.startsWith("CLOSE ")) {
          const e = JSON.parse(line.slice(6)) as { seq: number; http: string; status: number; writableFinished: boolean };
          events.push({
            t: now(t0),
            kind: "close",
            seq: e.seq,
            http: e.http,
            rpc: undefined,
            id: undefined,
            status: e.status,
            writableFinished: e.writableFinished,
            headersSent: true,
          });
        }
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk: Buffer) => lines.push(chunk.toString("utf8")));
    child.once("exit", (code) => reject(new Error(`server-everything exited ${code}: ${lines.join("\n")}`)));
  });
  return {
    tag: "everything",
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    events,
    now: () => now(t0),
    openResponses: () => openOf(events),
    drop: () => {
      throw new Error("drop() is not available for a child process");
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Kept here too for the many tests that import it with this helper; defined in timing.ts. */
export { eventually } from "../helpers/timing.js";

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One request as the server saw it: its arrival, its response's 'close', and (tools/call) the handler's life. */
export interface Seen {
  http: Extract<ServerEvent, { kind: "http" }>;
  close: Extract<ServerEvent, { kind: "close" }> | undefined;
  start: ServerEvent | undefined;
  aborted: Extract<ServerEvent, { kind: "handler-aborted" }> | undefined;
  end: Extract<ServerEvent, { kind: "handler-end" }> | undefined;
}

/** The requests with this JSON-RPC method the server saw, in arrival order. */
export function seen(server: TestServer, rpc: string): Seen[] {
  const { events } = server;
  return events.flatMap((e) => {
    if (e.kind !== "http" || e.rpc !== rpc) return [];
    const handler = (kind: ServerEvent["kind"]) =>
      rpc === "tools/call" ? events.find((h) => h.kind === kind && "id" in h && h.id === e.id && h.t >= e.t) : undefined;
    return [
      {
        http: e,
        close: events.find((c): c is Extract<ServerEvent, { kind: "close" }> => c.kind === "close" && c.seq === e.seq),
        start: handler("handler-start"),
        aborted: handler("handler-aborted") as Seen["aborted"],
        end: handler("handler-end") as Seen["end"],
      },
    ];
  });
}

/** True once the server's handler for this call has started (its request id is the client's). */
export const started = (server: TestServer, id: unknown): boolean => server.events.some((e) => e.kind === "handler-start" && e.id === id);

/**
 * The server's response to this request closed before it ended. Where the close is what stops
 * the handler (stateless servers, 2026-07-28), also before its handler finished; on a stateful
 * 2025 server the notification may stop the handler first: use `closedUnfinished` there.
 */
export function closedUnfinished(call: Seen | undefined): boolean {
  return call?.close !== undefined && !call.close.writableFinished;
}

/** The server's response to this request closed before it ended, and before its handler finished. */
export function sawDisconnect(call: Seen | undefined): boolean {
  if (call?.close === undefined || call.close.writableFinished) return false;
  return call.end === undefined || call.close.t <= call.end.t;
}
