import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

/** Hooks a harness passes to observe the `hang` tool from the server side. */
export interface HangHooks {
  /** The tool's handler was entered (the server is now idle, awaiting the cancel). */
  started?(tag: string, requestId: string | number): void;
  /** The handler's `extra.signal` aborted: the server's SDK acted on the cancel. */
  aborted?(tag: string): void;
}

/**
 * A v1 `McpServer` with the bench's tools:
 * - `echo`: returns `{content:[{type:"text",text:"ok"}]}` at once (the per-call overhead tool);
 * - `hang {tag}`: never answers; returns (nothing is sent, the SDK drops it) once its signal aborts;
 * - `ticker {intervalMs, stopAfterMs}`: sends `notifications/progress` every `intervalMs` ms,
 *   and answers after `stopAfterMs` ms (so a caller that gave up cannot leave it running);
 * - `clock`: the server's `performance.timeOrigin + performance.now()` in ms (clock-offset calibration).
 */
export function benchServer(hooks: HangHooks = {}): McpServer {
  const server = new McpServer({ name: "bench-server", version: "1.0.0" });
  server.registerTool("echo", { description: "answers at once" }, async () => ({
    content: [{ type: "text", text: "ok" }],
  }));
  server.registerTool(
    "hang",
    { description: "never answers until cancelled", inputSchema: { tag: z.string() } },
    async ({ tag }, extra) => {
      hooks.started?.(tag, extra.requestId);
      await new Promise<void>((resolve) => {
        if (extra.signal.aborted) resolve();
        else extra.signal.addEventListener("abort", () => resolve(), { once: true });
      });
      hooks.aborted?.(tag);
      return { content: [{ type: "text", text: "cancelled" }] };
    },
  );
  server.registerTool(
    "ticker",
    {
      description: "progress every intervalMs, answers after stopAfterMs",
      inputSchema: { intervalMs: z.number().int(), stopAfterMs: z.number().int() },
    },
    async ({ intervalMs, stopAfterMs }, extra) => {
      const token = extra._meta?.progressToken;
      let progress = 0;
      await new Promise<void>((resolve) => {
        const interval = setInterval(() => {
          if (token === undefined) return;
          progress += 1;
          extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress } }).catch(() => {});
        }, intervalMs);
        const stop = (): void => {
          clearInterval(interval);
          clearTimeout(deadline);
          resolve();
        };
        const deadline = setTimeout(stop, stopAfterMs);
        extra.signal.addEventListener("abort", stop, { once: true });
      });
      return { content: [{ type: "text", text: `ticked ${progress}` }] };
    },
  );
  server.registerTool("clock", { description: "server clock, ms since the epoch" }, async () => ({
    content: [{ type: "text", text: String(performance.timeOrigin + performance.now()) }],
  }));
  return server;
}

/** Connects a fresh `benchServer` over the SDK's `InMemoryTransport`; returns the client's end. */
export async function inMemoryServer(hooks?: HangHooks): Promise<{ transport: InMemoryTransport; server: McpServer }> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const server = benchServer(hooks);
  await server.connect(serverTransport);
  return { transport: clientTransport, server };
}

/**
 * A silent in-memory peer: answers `initialize` (so `client.connect` succeeds) and nothing
 * else, ever. Requests and `notifications/cancelled` are dropped on arrival, so every call
 * stays pending until it is cancelled. Counts what it received.
 */
export function silentPeer(): { transport: InMemoryTransport; received: { requests: number; cancels: number } } {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const received = { requests: 0, cancels: 0 };
  serverTransport.onmessage = (message: JSONRPCMessage) => {
    if (!("method" in message)) return;
    if (message.method === "notifications/cancelled") received.cancels++;
    if (!("id" in message)) return;
    if (message.method === "initialize") {
      void serverTransport.send({
        jsonrpc: "2.0",
        id: message.id,
        result: {
          protocolVersion: (message.params as { protocolVersion: string }).protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "silent-peer", version: "1.0.0" },
        },
      });
      return;
    }
    received.requests++;
  };
  void serverTransport.start();
  return { transport: clientTransport, received };
}
