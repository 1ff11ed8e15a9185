import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Client as ClientV2, InMemoryTransport as InMemoryV2 } from "@modelcontextprotocol/client";
import { McpServer as McpServerV2 } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { inMemoryServer, silentPeer } from "./servers.js";
import type { Subject } from "./subject.js";

/**
 * The SDK lines every overhead and scale figure is measured on, raw beside wrapped:
 * - `v1`: `@modelcontextprotocol/sdk` Client and McpServer;
 * - `v2-legacy`: `@modelcontextprotocol/client` Client (its default, the 2025-era) and the v2 McpServer;
 * - `v2-2026`: the v2 Client pinned to 2026-07-28, against the v2 server's `serveStdio` entry
 *   (2026-07-28 plus the 2025 handshake) run over the v2 InMemoryTransport.
 * All in memory, in the bench process.
 */
export type Line = "v1" | "v2-legacy" | "v2-2026";
export const LINES: readonly Line[] = ["v1", "v2-legacy", "v2-2026"];
export const LINE_LABEL: Record<Line, string> = {
  v1: "v1 SDK",
  "v2-legacy": "v2 SDK, legacy era",
  "v2-2026": "v2 SDK pinned 2026-07-28",
};

/** Call options both sides understand: a signal and/or an idle timeout (ms). */
export interface LineCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** One connected client of a line, raw or wrapped. */
export interface LineClient {
  /** Calls `name` (`echo` answers at once; `never` never answers). */
  call(name: "echo" | "never", options?: LineCallOptions): Promise<unknown>;
  /** The wrapper's counters (null for raw). */
  counts(): { pending: number | null; tombstones: number | null; records: number | null };
  /** `notifications/cancelled` the peer has been handed (v2 lines; null on v1, whose silent peer counts its own). */
  peerCancels(): number | null;
  close(): Promise<void>;
}

/** How the peer of a v2 line treats the client's `notifications/cancelled`. */
export interface PeerOptions {
  /**
   * Drop them unread, before the v2 server's transport handler (which parses each with zod and
   * aborts the tool's handler): the peer's own work on the cancels, which an in-memory peer does on
   * the client's thread, is then left out of the client's figures. They are still counted.
   */
  dropCancels?: boolean;
}

/**
 * Counts the `notifications/cancelled` given to `transport`'s handler (set by the server's
 * `connect`), and with `drop` keeps them from it.
 */
function countPeerCancels(transport: object, drop: boolean): () => number {
  let cancels = 0;
  let handler: ((message: unknown, extra?: unknown) => void) | undefined;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler,
    set: (next: typeof handler) => {
      handler =
        next === undefined
          ? undefined
          : (message, extra) => {
              if ((message as { method?: unknown }).method === "notifications/cancelled") {
                cancels++;
                if (drop) return;
              }
              next(message, extra);
            };
    },
  });
  return () => cancels;
}

type WithCancellation = Subject["root"]["withCancellation"];

function v2Server(): McpServerV2 {
  const server = new McpServerV2({ name: "bench-v2", version: "1.0.0" });
  server.registerTool("echo", { description: "answers at once" }, async () => ({ content: [{ type: "text", text: "ok" }] }));
  server.registerTool("never", { description: "answers only when cancelled" }, async (ctx) => {
    const signal = (ctx as unknown as { mcpReq: { signal: AbortSignal } }).mcpReq.signal;
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener("abort", () => resolve(), { once: true });
    });
    return { content: [{ type: "text", text: "cancelled" }] };
  });
  return server;
}

/** The raw SDK's request options for these call options (the SDK's `timeout` is the idle timeout). */
function sdkOptions(o: LineCallOptions | undefined): { signal?: AbortSignal; timeout?: number } | undefined {
  if (o === undefined) return undefined;
  const out: { signal?: AbortSignal; timeout?: number } = {};
  if (o.signal !== undefined) out.signal = o.signal;
  if (o.timeoutMs !== undefined) out.timeout = o.timeoutMs;
  return out;
}

const PIN = { versionNegotiation: { mode: { pin: "2026-07-28" } } } as const;

/**
 * Opens a client of `line` to an in-memory server: the bench server (`echo`) or, with
 * `silent`, a peer where `never` is never answered (v1: the silent peer, which answers nothing
 * but initialize; v2: the v2 server's `never` tool, which waits for the cancel).
 * `wrap` null: the raw SDK; otherwise the library's `withCancellation`.
 */
export async function openLine(line: Line, wrap: WithCancellation | null, silent: boolean, peer: PeerOptions = {}): Promise<LineClient> {
  const noCounts = () => ({ pending: null, tombstones: null, records: null });
  if (line === "v1") {
    const transport = silent ? silentPeer().transport : (await inMemoryServer()).transport;
    const client = new Client({ name: "bench-v1", version: "1.0.0" });
    if (wrap === null) {
      await client.connect(transport);
      return {
        call: (name, o) => client.callTool({ name, arguments: {} }, undefined, sdkOptions(o)),
        counts: noCounts,
        peerCancels: () => null,
        close: () => client.close(),
      };
    }
    const mcp = wrap(client, transport);
    await client.connect(mcp.transport);
    return {
      call: (name, o) => mcp.callTool({ name, arguments: {} }, o),
      counts: () => ({ pending: mcp.pendingCount, tombstones: mcp.tombstoneCount, records: mcp.records().length }),
      peerCancels: () => null,
      close: () => client.close(),
    };
  }
  const [clientSide, serverSide] = InMemoryV2.createLinkedPair();
  const peerCancels = countPeerCancels(serverSide, peer.dropCancels === true);
  if (line === "v2-2026") serveStdio(() => v2Server(), { transport: serverSide as never });
  else await v2Server().connect(serverSide);
  const client = new ClientV2({ name: `bench-${line}`, version: "1.0.0" }, line === "v2-2026" ? PIN : undefined);
  if (wrap === null) {
    await client.connect(clientSide);
    return {
      call: (name, o) => client.callTool({ name, arguments: {} }, sdkOptions(o)),
      counts: noCounts,
      peerCancels,
      close: () => client.close(),
    };
  }
  const mcp = wrap(client as never, clientSide as never);
  await client.connect(mcp.transport as never);
  return {
    call: (name, o) => mcp.callTool({ name, arguments: {} }, o),
    counts: () => ({ pending: mcp.pendingCount, tombstones: mcp.tombstoneCount, records: mcp.records().length }),
    peerCancels,
    close: () => client.close(),
  };
}
