/**
 * The worked example over Streamable HTTP: a bot asks for `generate_quarterly_summary`, the
 * report takes longer than the bot's budget, the bot gives up. Over HTTP the cancel is closing
 * that request's own response stream, so the server sees its connection close:
 *
 *   (h1) the v1 SDK client (2025-11-25) against a v1 SDK server with sessions: the library POSTs
 *        `notifications/cancelled`, waits for its 202, then closes the stream (rule 40);
 *   (h2) the v2 SDK client pinned to 2026-07-28 against a v2 SDK server: the stream close is the
 *        cancel, and no notification is sent (rules 6, 28).
 *
 * Each server runs in this process on 127.0.0.1 (port 0) and records what it saw: when the
 * `tools/call` response closed and whether the server had finished it, and when the tool's
 * abort signal fired. A verify read of the reports directory then tells whether the report was
 * written. `runHttpDemo()` returns the printable lines and whether every check held.
 */
import http from "node:http";
import { randomUUID } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import * as z from "zod";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { McpServer as McpServerV2, createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { isCallTimeoutError, withCancellation } from "../src/index.js";
import type { CancelMechanism, RunRecord } from "../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../src/adapters/streamable-http/index.js";
import { reportPath } from "./reports.js";

/** The bot's patience, in ms (the worked example's 30 s, shortened). */
const BUDGET_MS = 800;
/** How long the report takes, in ms: well past the budget. */
const WORK_MS = 1_600;
/** Wait after the cancel before the verify read, in ms: past the moment the report would have been written. */
const VERIFY_DELAY_MS = WORK_MS - BUDGET_MS + 400;

/** What the server saw, each at ms since the call was sent. */
interface ServerSaw {
  /** The tools/call response closed; `finished` false: before it ended. */
  closed?: { at: number; finished: boolean; headersSent: boolean };
  /** The notifications/cancelled POST, if any, and its HTTP status. */
  cancelPosts: Array<{ at: number; status?: number }>;
  /** The tool's abort signal fired. */
  aborted?: { at: number; reason: string };
}

/** One server on 127.0.0.1:0 with the report tool; `saw` is reset per call. */
interface DemoServer {
  url: URL;
  saw: ServerSaw;
  sentAt: number;
  stop(): Promise<void>;
}

/** The report tool: works WORK_MS, stops when its signal aborts, writes the report otherwise. */
async function generate(saw: () => ServerSaw, sentAt: () => number, dir: string, quarter: string, signal: AbortSignal) {
  signal.addEventListener("abort", () => (saw().aborted = { at: since(sentAt()), reason: String(signal.reason) }), { once: true });
  await sleep(WORK_MS, undefined, { signal }).catch(() => {});
  if (signal.aborted) throw new Error("report generation stopped");
  writeFileSync(reportPath(dir, quarter), `# ${quarter} summary\n`);
  return { content: [{ type: "text" as const, text: `Wrote ${quarter}` }] };
}

const since = (t: number): number => Math.round(performance.now() - t);

/** Notes the tools/call and notifications/cancelled requests' fate on the server. */
function observe(server: DemoServer, res: http.ServerResponse, body: unknown): void {
  const method = (body as { method?: string } | undefined)?.method;
  const saw = server.saw;
  if (method === "tools/call") {
    res.on("close", () => (saw.closed = { at: since(server.sentAt), finished: res.writableFinished, headersSent: res.headersSent }));
  } else if (method === "notifications/cancelled") {
    const post: ServerSaw["cancelPosts"][number] = { at: since(server.sentAt) };
    saw.cancelPosts.push(post);
    res.on("close", () => (post.status = res.statusCode));
  }
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? undefined : (JSON.parse(text) as unknown);
}

async function listen(handler: http.RequestListener): Promise<{ url: URL; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The v1 SDK's McpServer + StreamableHTTPServerTransport, one transport per session. */
async function startV1Server(dir: string): Promise<DemoServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const demo: DemoServer = { url: new URL("http://127.0.0.1"), saw: { cancelPosts: [] }, sentAt: 0, stop: async () => {} };
  const listening = await listen(async (req, res) => {
    const body = req.method === "POST" ? await readJson(req) : undefined;
    observe(demo, res, body);
    const sid = req.headers["mcp-session-id"];
    let transport = typeof sid === "string" ? sessions.get(sid) : undefined;
    if (transport === undefined) {
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      const server = new McpServerV1({ name: "report-server-http", version: "1.0.0" });
      server.registerTool("generate_quarterly_summary", { inputSchema: { quarter: z.string() } }, ({ quarter }, extra) =>
        generate(
          () => demo.saw,
          () => demo.sentAt,
          dir,
          quarter,
          extra.signal,
        ),
      );
      await server.connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  });
  demo.url = listening.url;
  demo.stop = async () => {
    for (const transport of sessions.values()) await transport.close().catch(() => {});
    await listening.close();
  };
  return demo;
}

/** The v2 SDK's createMcpHandler (2026-07-28) through toNodeHandler. */
async function startV2Server(dir: string): Promise<DemoServer> {
  const demo: DemoServer = { url: new URL("http://127.0.0.1"), saw: { cancelPosts: [] }, sentAt: 0, stop: async () => {} };
  const handler = createMcpHandler(() => {
    const server = new McpServerV2({ name: "report-server-http", version: "1.0.0" });
    server.registerTool("generate_quarterly_summary", { inputSchema: z.object({ quarter: z.string() }) }, ({ quarter }, ctx) =>
      generate(
        () => demo.saw,
        () => demo.sentAt,
        dir,
        quarter,
        ctx.mcpReq.signal,
      ),
    );
    return server;
  });
  const node = toNodeHandler(handler);
  const listening = await listen(async (req, res) => {
    const body = req.method === "POST" ? await readJson(req) : undefined;
    observe(demo, res, body);
    await node(req as Parameters<typeof node>[0], res, body);
  });
  demo.url = listening.url;
  demo.stop = async () => {
    await handler.close();
    await listening.close();
  };
  return demo;
}

interface Scenario {
  label: string;
  title: string;
  mechanism: CancelMechanism;
  /** Whether the 2025-era notification POST is expected (and answered 202 before the close). */
  notification: boolean;
  start(dir: string): Promise<DemoServer>;
  connect(url: URL): Promise<{ mcp: ReturnType<typeof withCancellation>; close(): Promise<void>; errors: Error[] }>;
}

const SCENARIOS: Scenario[] = [
  {
    label: "h1",
    title: "v1 SDK client, 2025-11-25, v1 server with sessions",
    mechanism: "notification+stream-close",
    notification: true,
    start: startV1Server,
    async connect(url) {
      const client = new ClientV1({ name: "report-bot", version: "1.0.0" });
      const errors: Error[] = [];
      client.onerror = (error) => errors.push(error);
      const mcp = withCancellation(client, streamableHttpCancellation(new TransportV1(url, { fetch: cancellableFetch() })));
      await client.connect(mcp.transport);
      return { mcp, errors, close: () => client.close() };
    },
  },
  {
    label: "h2",
    title: "v2 SDK client pinned to 2026-07-28, v2 server",
    mechanism: "stream-close",
    notification: false,
    start: startV2Server,
    async connect(url) {
      const client = new ClientV2({ name: "report-bot", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
      const errors: Error[] = [];
      client.onerror = (error) => errors.push(error);
      const mcp = withCancellation(client, streamableHttpCancellation(new TransportV2(url)));
      await client.connect(mcp.transport);
      return { mcp, errors, close: () => client.close() };
    },
  },
];

async function runScenario(scenario: Scenario, dir: string, lines: string[], problems: string[]): Promise<void> {
  const { label } = scenario;
  const check = (ok: boolean, what: string): void => {
    if (!ok) problems.push(`[${label}] ${what}`);
  };
  const server = await scenario.start(dir);
  const bot = await scenario.connect(server.url);
  try {
    server.saw = { cancelPosts: [] };
    server.sentAt = performance.now();
    let error: unknown;
    try {
      await bot.mcp.callTool(
        { name: "generate_quarterly_summary", arguments: { quarter: "Q3" } },
        {
          timeoutMs: BUDGET_MS,
          reason: `exceeded ${BUDGET_MS}ms budget`,
          verifyDelayMs: VERIFY_DELAY_MS,
          verify: () => (existsSync(reportPath(dir, "Q3")) ? "applied" : "not-applied"),
        },
      );
      problems.push(`[${label}] the call resolved; it should have timed out`);
    } catch (caught) {
      error = caught;
    }
    const releasedAt = since(server.sentAt);
    check(isCallTimeoutError(error), `expected a CallTimeoutError, got ${String(error)}`);
    const record: RunRecord | undefined = isCallTimeoutError(error) ? await error.verification : undefined;
    const saw = server.saw;
    check(
      record?.cancel?.mechanism === scenario.mechanism,
      `mechanism ${String(record?.cancel?.mechanism)}, expected ${scenario.mechanism}`,
    );
    check(record?.outcome === "verified-not-applied", `outcome ${String(record?.outcome)}, expected verified-not-applied`);
    check(saw.closed !== undefined && !saw.closed.finished, "the server did not see the tools/call response close before it ended");
    check(saw.aborted !== undefined, "the tool's abort signal did not fire");
    check(saw.closed === undefined || saw.closed.at < WORK_MS, "the response closed only after the work would have ended");
    if (scenario.notification) {
      check(
        saw.cancelPosts.length === 1 && saw.cancelPosts[0]!.status === 202,
        `expected one cancel POST answered 202, saw ${JSON.stringify(saw.cancelPosts)}`,
      );
    } else {
      check(saw.cancelPosts.length === 0, `expected no cancel POST, saw ${saw.cancelPosts.length}`);
    }
    check(bot.errors.length === 0, `client.onerror: ${bot.errors.map((e) => e.message).join("; ")}`);
    check(bot.mcp.pendingCount === 0, "a call is still pending");
    check(!existsSync(reportPath(dir, "Q3")), "the report was written");

    lines.push(`[${label}] ${scenario.title}`);
    lines.push(`     bot: released at +${releasedAt} ms; ${record?.summary ?? "no record"}; mechanism ${record?.cancel?.mechanism ?? "?"}`);
    // What the server saw, in the order it happened.
    const cancelPost = saw.cancelPosts[0];
    const events: Array<{ at: number; text: string }> = [];
    if (cancelPost !== undefined)
      events.push({
        at: cancelPost.at,
        text: `notifications/cancelled POSTed at +${cancelPost.at} ms, answered ${cancelPost.status ?? "?"}`,
      });
    if (saw.closed !== undefined) {
      events.push({
        at: saw.closed.at,
        text: `tools/call response closed at +${saw.closed.at} ms${saw.closed.finished ? "" : ", before the server had finished it"}`,
      });
    }
    if (saw.aborted !== undefined) events.push({ at: saw.aborted.at, text: `tool's signal aborted at +${saw.aborted.at} ms` });
    events.sort((x, y) => x.at - y.at);
    lines.push(
      `  server: ${cancelPost === undefined ? "no notifications/cancelled POST; " : ""}${events.map((event) => event.text).join("; ")}`,
    );
  } finally {
    await bot.close();
    await server.stop();
  }
}

/**
 * Runs the worked example over Streamable HTTP in both protocol eras.
 * @returns `ok` when every check held; `lines` to print (problems included).
 */
export async function runHttpDemo(): Promise<{ ok: boolean; lines: string[] }> {
  const lines = [
    `\nOver Streamable HTTP (budget ${BUDGET_MS} ms, the report takes ${WORK_MS} ms): the cancel closes the request's own stream`,
  ];
  const problems: string[] = [];
  const root = await mkdtemp(join(tmpdir(), "mcp-cancellable-http-demo-"));
  try {
    // The scenarios share nothing (own server, own directory): they run side by side, lines in order.
    const outputs = await Promise.all(
      SCENARIOS.map(async (scenario) => {
        const own: string[] = [];
        await mkdir(join(root, scenario.label));
        await runScenario(scenario, join(root, scenario.label), own, problems).catch((error: unknown) => {
          problems.push(`[${scenario.label}] the scenario failed: ${error instanceof Error ? error.message : String(error)}`);
        });
        return own;
      }),
    );
    lines.push(...outputs.flat());
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  if (problems.length > 0) lines.push(`\nHTTP DEMO FAILED: ${problems.length} check(s):`, ...problems.map((p) => `  - ${p}`));
  else lines.push("OK: over HTTP the server saw each cancelled call's stream close, and the records say how it was cancelled.");
  return { ok: problems.length === 0, lines };
}
