import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { McpServer as McpServerV2, createMcpHandler } from "@modelcontextprotocol/server";
import { z } from "zod";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { EventLog } from "./lib/events.js";
import { benchServer } from "./lib/servers.js";
import type { Subject } from "./lib/subject.js";
import { round, rounded, summarize } from "./lib/stats.js";
import type { Summary } from "./lib/stats.js";
import { sleep } from "./lib/env.js";

/** One side of the HTTP cancel-latency run. */
export interface HttpSide {
  /** Abort → the server's response 'close' (ms), over the calls whose stream closed before the cap. */
  close: Summary | null;
  /** Calls whose response stream was still open `capMs` after the abort. */
  openAtCap: number;
  /** Abort → the POSTed `notifications/cancelled` reached the server (ms), when one was sent. */
  notified: Summary | null;
  /** Abort → the caller's promise rejected, ms. */
  callerReleased: Summary | null;
  /** Close samples in ms; a stream still open at the cap counts as `capMs` (for the chart). */
  samples: number[];
  /** What the caller's promise rejected with (the first call). */
  error: string;
}

export interface HttpResult {
  method: string;
  calls: number;
  capMs: number;
  /** A bare fetch() of an SSE endpoint, aborted: the floor. */
  fetch: HttpSide;
  /** The raw v1 SDK against the v1 server (2025-11-25 era). */
  raw: HttpSide;
  /** Ours around the v1 SDK (2025-era: notification, then the stream closes once it is answered). `null` with `oursMissing` saying why. */
  ours: HttpSide | null;
  /** The raw v2 SDK pinned to 2026-07-28 against the v2 server (its own stream close). */
  rawModern: HttpSide | null;
  /** The raw v2 SDK in the 2025-era (not pinned) against the v1 server: the notification POSTed, the stream left open. */
  rawLegacyV2?: HttpSide | null;
  /** Ours around the v2 SDK in the 2025-era, on the transport's own fetch (the library's per-request fetch put under it). */
  oursLegacyV2?: HttpSide | null;
  /** Ours around the v2 SDK in the 2025-era against the v1 server in JSON-response mode (no head before the answer). */
  oursJsonV2?: HttpSide | null;
  /** Ours around the v2 SDK pinned to 2026-07-28 (the stream close is the cancel). */
  oursModern: HttpSide | null;
  oursMissing: string | null;
}

interface Harness {
  url: string;
  log: EventLog;
  server: Server;
  sessions: Map<string, StreamableHTTPServerTransport>;
  stop(): Promise<void>;
}

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
 * Times are `performance.now()` of this process (server and clients share the clock).
 */
async function startHarness(): Promise<Harness> {
  const log = new EventLog();
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const tags = new Map<string, string>(); // `${session}:${requestId}` → tag
  /** Logs the close of every tagged tools/call's response and the arrival of every POSTed cancel. */
  const observe = (body: unknown, res: ServerResponse, session: string): void => {
    const arrivedAt = performance.now();
    for (const message of Array.isArray(body) ? body : [body]) {
      const m = message as { method?: string; id?: unknown; params?: Record<string, unknown> } | undefined;
      if (m?.method === "tools/call") {
        const tag = (m.params?.arguments as { tag?: string } | undefined)?.tag;
        if (tag !== undefined) {
          tags.set(`${session}:${String(m.id)}`, tag);
          res.on("close", () => log.push({ event: "close", tag, t: performance.now() }));
        }
      } else if (m?.method === "notifications/cancelled") {
        const tag = tags.get(`${session}:${String(m.params?.requestId)}`);
        if (tag !== undefined) log.push({ event: "notified", tag, t: arrivedAt });
      }
    }
  };
  const hooks = {
    started: (tag: string) => log.push({ event: "started", tag, t: performance.now() }),
    aborted: (tag: string) => log.push({ event: "aborted", tag, t: performance.now() }),
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
      res.on("close", () => log.push({ event: "close", tag, t: performance.now() }));
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
  return { url: `http://127.0.0.1:${port}`, log, server, sessions, stop: () => modernHandler.close() };
}

interface Observation {
  tag: string;
  abortedAt: number;
  released: number;
  error: string;
}

interface McpSide {
  call(tag: string, signal: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
  pending(): number;
}

async function openRaw(url: string): Promise<McpSide> {
  const client = new Client({ name: "bench-http-raw", version: "1.0.0" });
  client.onerror = () => {};
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
  return {
    call: (tag, signal) => client.callTool({ name: "hang", arguments: { tag } }, undefined, { signal }),
    close: () => client.close(),
    pending: () => 0,
  };
}

async function openOurs(url: string, subject: Subject): Promise<McpSide> {
  const client = new Client({ name: "bench-http-ours", version: "1.0.0" });
  client.onerror = () => {};
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { fetch: subject.http!.cancellableFetch() });
  const adapter = subject.http!.streamableHttpCancellation(transport as never) as Parameters<Subject["root"]["withCancellation"]>[1];
  const mcp = subject.root.withCancellation(client, adapter);
  await client.connect(mcp.transport as never);
  return {
    call: (tag, signal) => mcp.callTool({ name: "hang", arguments: { tag } }, { signal }),
    close: () => client.close(),
    pending: () => mcp.pendingCount,
  };
}

const PIN_MODERN = { versionNegotiation: { mode: { pin: "2026-07-28" } } } as const;

/** The v2 SDK client in the 2025-era (not pinned) on its own fetch, raw or with the library, to `/mcp` or `/mcpjson`. */
async function openV2Legacy(url: string, path: string, subject: Subject | null): Promise<McpSide> {
  const client = new ClientV2({ name: "bench-http-v2-legacy", version: "1.0.0" });
  client.onerror = () => {};
  const transport = new TransportV2(new URL(`${url}${path}`));
  if (subject === null) {
    await client.connect(transport);
    return {
      call: (tag, signal) => client.callTool({ name: "hang", arguments: { tag } }, { signal }),
      close: () => client.close(),
      pending: () => 0,
    };
  }
  const adapter = subject.http!.streamableHttpCancellation(transport as never) as Parameters<Subject["root"]["withCancellation"]>[1];
  const mcp = subject.root.withCancellation(client as never, adapter);
  await client.connect(mcp.transport as never);
  return {
    call: (tag, signal) => mcp.callTool({ name: "hang", arguments: { tag } }, { signal }),
    close: () => client.close(),
    pending: () => mcp.pendingCount,
  };
}

async function openRawModern(url: string): Promise<McpSide> {
  const client = new ClientV2({ name: "bench-http-raw-v2", version: "1.0.0" }, PIN_MODERN);
  client.onerror = () => {};
  await client.connect(new TransportV2(new URL(`${url}/mcp2`)));
  return {
    call: (tag, signal) => client.callTool({ name: "hang", arguments: { tag } }, { signal }),
    close: () => client.close(),
    pending: () => 0,
  };
}

async function openOursModern(url: string, subject: Subject): Promise<McpSide> {
  const client = new ClientV2({ name: "bench-http-ours-v2", version: "1.0.0" }, PIN_MODERN);
  client.onerror = () => {};
  const transport = new TransportV2(new URL(`${url}/mcp2`));
  const adapter = subject.http!.streamableHttpCancellation(transport as never) as Parameters<Subject["root"]["withCancellation"]>[1];
  const mcp = subject.root.withCancellation(client as never, adapter);
  await client.connect(mcp.transport as never);
  return {
    call: (tag, signal) => mcp.callTool({ name: "hang", arguments: { tag } }, { signal }),
    close: () => client.close(),
    pending: () => mcp.pendingCount,
  };
}

/** Starts a call, waits until the server's tool is running, aborts; does not wait for the close. */
async function abortOne(log: EventLog, side: McpSide, tag: string): Promise<Observation> {
  const controller = new AbortController();
  const observation: Observation = { tag, abortedAt: 0, released: Number.NaN, error: "" };
  const settled = side.call(tag, controller.signal).then(
    () => {
      observation.error = "resolved (unexpected)";
    },
    (reason: unknown) => {
      observation.released = performance.now() - observation.abortedAt;
      observation.error = reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason);
    },
  );
  await log.wait((e) => e.event === "started" && e.tag === tag, 5_000, `start of ${tag}`);
  observation.abortedAt = performance.now();
  controller.abort();
  await settled;
  return observation;
}

async function fetchOne(url: string, tag: string): Promise<Observation> {
  const controller = new AbortController();
  const response = await fetch(`${url}/sse?tag=${tag}`, { signal: controller.signal });
  const reader = response.body!.getReader();
  await reader.read(); // the comment: the stream is open end to end
  const observation: Observation = { tag, abortedAt: performance.now(), released: 0, error: "AbortError" };
  controller.abort();
  await reader.read().catch(() => {});
  observation.released = performance.now() - observation.abortedAt;
  return observation;
}

/** Closes (capped), notifications and releases of a side, once every stream had `capMs` to close. */
function sideResult(log: EventLog, observations: Observation[], capMs: number): HttpSide {
  const closes: number[] = [];
  const samples: number[] = [];
  const notified: number[] = [];
  let openAtCap = 0;
  for (const o of observations) {
    const close = log.events.find((e) => e.event === "close" && e.tag === o.tag);
    const ms = close === undefined ? Number.POSITIVE_INFINITY : close.t - o.abortedAt;
    if (ms <= capMs) {
      closes.push(ms);
      samples.push(round(ms));
    } else {
      openAtCap++;
      samples.push(capMs);
    }
    const notice = log.events.find((e) => e.event === "notified" && e.tag === o.tag);
    if (notice !== undefined) notified.push(notice.t - o.abortedAt);
  }
  return {
    close: closes.length > 0 ? rounded(summarize(closes)) : null,
    openAtCap,
    notified: notified.length > 0 ? rounded(summarize(notified)) : null,
    callerReleased: rounded(summarize(observations.map((o) => o.released))),
    samples,
    error: observations[0]?.error ?? "",
  };
}

/**
 * Cancel latency on Streamable HTTP: abort → the server's response 'close', for a bare `fetch`
 * of an SSE endpoint (the floor); in the 2025-era the raw v1 SDK (which leaves the stream open:
 * measured up to `capMs`) and ours around it; in the 2026-07-28 era the raw v2 SDK pinned to it
 * and ours around that. The order of the sides alternates per round.
 */
export async function runHttpLatency(calls: number, capMs: number, subject: Subject, log: (line: string) => void): Promise<HttpResult> {
  const harness = await startHarness();
  type Kind = "fetch" | "raw" | "ours" | "rawModern" | "oursModern" | "rawLegacyV2" | "oursLegacyV2" | "oursJsonV2";
  const sides = new Map<Kind, McpSide | null>([["fetch", null]]);
  sides.set("raw", await openRaw(harness.url));
  sides.set("rawModern", await openRawModern(harness.url));
  sides.set("rawLegacyV2", await openV2Legacy(harness.url, "/mcp", null));
  let oursMissing: string | null = null;
  if (subject.http === null) {
    oursMissing = "src/adapters/streamable-http/index.ts does not exist yet (or lacks streamableHttpCancellation/cancellableFetch)";
  } else {
    try {
      sides.set("ours", await openOurs(harness.url, subject));
      sides.set("oursModern", await openOursModern(harness.url, subject));
      sides.set("oursLegacyV2", await openV2Legacy(harness.url, "/mcp", subject));
      sides.set("oursJsonV2", await openV2Legacy(harness.url, "/mcpjson", subject));
    } catch (error) {
      oursMissing = `the adapter could not be used: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  const warmup = 5;
  const seen = new Map<Kind, Observation[]>([...sides.keys()].map((kind) => [kind, []]));
  const kinds = [...sides.keys()];
  for (let i = 0; i < warmup + calls; i++) {
    const order = i % 2 === 0 ? kinds : [...kinds].reverse();
    for (const kind of order) {
      const tag = `${kind}-${i}`;
      const side = sides.get(kind) ?? null;
      const observation = side === null ? await fetchOne(harness.url, tag) : await abortOne(harness.log, side, tag);
      // Every side but the raw SDKs in the 2025-era closes its stream: wait for that close (bounded by the cap).
      if (kind !== "raw" && kind !== "rawLegacyV2") await harness.log.maybe((e) => e.event === "close" && e.tag === tag, capMs);
      if (i >= warmup) seen.get(kind)!.push(observation);
    }
  }
  // The raw SDK's streams: every one gets the full cap after its abort before it is judged.
  const lastRaw = Math.max(seen.get("raw")!.at(-1)?.abortedAt ?? 0, seen.get("rawLegacyV2")!.at(-1)?.abortedAt ?? 0) || performance.now();
  await sleep(Math.max(0, lastRaw + capMs + 50 - performance.now()));
  const result: HttpResult = {
    method:
      "node:http server on 127.0.0.1:0 in the bench process (one clock: performance.now()); 2025-era: v1 SDK clients against a v1 " +
      "StreamableHTTPServerTransport (stateful, one McpServer per session); 2026-07-28 era: v2 SDK clients pinned to 2026-07-28 against " +
      "the v2 createMcpHandler (responseMode sse); abort when the server reports the `hang` tool running; latency = abort → the tools/call POST's " +
      `response 'close' on the server; a stream not closed ${capMs} ms after its abort is counted open at the cap; ` +
      "floor: fetch() of a bare SSE endpoint aborted with an AbortController after its first chunk; sides alternate per call; 5 warm-up calls discarded",
    calls,
    capMs,
    fetch: sideResult(harness.log, seen.get("fetch")!, capMs),
    raw: sideResult(harness.log, seen.get("raw")!, capMs),
    ours: sides.has("ours") ? sideResult(harness.log, seen.get("ours")!, capMs) : null,
    rawModern: sideResult(harness.log, seen.get("rawModern")!, capMs),
    oursModern: sides.has("oursModern") ? sideResult(harness.log, seen.get("oursModern")!, capMs) : null,
    rawLegacyV2: sideResult(harness.log, seen.get("rawLegacyV2")!, capMs),
    oursLegacyV2: sides.has("oursLegacyV2") ? sideResult(harness.log, seen.get("oursLegacyV2")!, capMs) : null,
    oursJsonV2: sides.has("oursJsonV2") ? sideResult(harness.log, seen.get("oursJsonV2")!, capMs) : null,
    oursMissing,
  };
  for (const [kind, side] of sides) {
    if (side !== null && side.pending() !== 0) throw new Error(`http ${kind}: ${side.pending()} calls left pending`);
  }
  for (const side of sides.values()) await side?.close();
  for (const transport of harness.sessions.values()) await transport.close();
  await harness.stop();
  harness.server.closeAllConnections();
  await new Promise<void>((resolve) => harness.server.close(() => resolve()));
  log(
    `  http: fetch p50 ${result.fetch.close?.p50} ms; 2025-era: ours ${result.ours?.close?.p50 ?? "n/a"} ms, raw v1 open at the ${capMs} ms cap ${result.raw.openAtCap}/${calls}; ` +
      `2026-07-28: ours ${result.oursModern?.close?.p50 ?? "n/a"} ms, raw v2 ${result.rawModern?.close?.p50 ?? "n/a"} ms; ` +
      `notification at the server: ours v1 ${result.ours?.notified?.p50 ?? "n/a"} ms, raw v1 ${result.raw.notified?.p50 ?? "n/a"} ms, ` +
      `ours v2 2025-era ${result.oursLegacyV2?.notified?.p50 ?? "n/a"} ms (close ${result.oursLegacyV2?.close?.p50 ?? "n/a"}), ` +
      `raw v2 2025-era ${result.rawLegacyV2?.notified?.p50 ?? "n/a"} ms, ours v2 on a JSON-response server ${result.oursJsonV2?.notified?.p50 ?? "n/a"} ms`,
  );
  return result;
}
