// Task servers on 127.0.0.1 (port 0), started and stopped by the tests:
// - the v1 SDK's McpServer with an InMemoryTaskStore over Streamable HTTP (2025-11-25 core tasks);
// - a scripted node:http server following the 2026-07-28 tasks extension text (io.modelcontextprotocol/tasks):
//   resultType "task", tasks/get with pollIntervalMs, an empty acknowledgement for tasks/cancel,
//   Mcp-Name checked against params.taskId. No SDK implements that extension yet.
// Each records every JSON-RPC message it received (method, id, params, Mcp-Name header).
import http from "node:http";
import { afterEach } from "vitest";
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import * as z from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import { ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";

export interface Seen {
  method: string | undefined;
  id: unknown;
  params: Record<string, unknown> | undefined;
  mcpName: string | undefined;
}

export interface TaskServer {
  url: URL;
  seen: Seen[];
  /**
   * Scripted 2026-07-28 server: the `tools/call` requests whose connection closed before the
   * server answered them (the client's cancel), with the task each had created (`null`: none),
   * in the order the closes came.
   */
  closedBeforeAnswer?: { id: unknown; taskId: string | null }[];
  /** What became of each task the server ran: "completed" or "cancelled". */
  fates: Map<string, string>;
  /** The status of every task the server holds now (its task store). */
  statuses(): string[];
  stop(): Promise<void>;
}

function readBody(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      try {
        resolve(text.length === 0 ? undefined : JSON.parse(text));
      } catch (error) {
        reject(error);
      }
    });
    req.on("error", reject);
  });
}

function record(seen: Seen[], req: http.IncomingMessage, body: unknown): void {
  for (const message of Array.isArray(body) ? body : body === undefined ? [] : [body]) {
    const m = message as { method?: string; id?: unknown; params?: Record<string, unknown> };
    const name = req.headers["mcp-name"];
    seen.push({ method: m.method, id: m.id, params: m.params, mcpName: typeof name === "string" ? name : undefined });
  }
}

function listen(server: http.Server): Promise<URL> {
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve(new URL(`http://127.0.0.1:${port}/mcp`));
    });
  });
}

function stopper(server: http.Server, cleanup: () => void): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      cleanup();
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

/**
 * The v1 SDK server with a task store: tool `report` ({ms}) runs ms in 5 steps as a task
 * (execution.taskSupport "required"), sending progress on the create request's token; a
 * cancelled task stops.
 */
/**
 * `pollInterval`: the interval (ms) the server suggests in its tasks; 20 unless given.
 * `onToolCall`: called as each `tools/call` request has been read, before the server handles it.
 * `refuse`: an HTTP status to answer a request with (by its JSON-RPC method) instead of the server.
 * `dropAfterHead`: which requests (by method) get a response head and then a destroyed connection.
 */
export async function startV1TaskServer(
  options: {
    pollInterval?: number;
    onToolCall?: () => void;
    /** An HTTP status to answer a request with instead of the server (a proxy's hiccup), or undefined. */
    refuse?: (method: string | undefined) => number | undefined;
    /** True: the request's response head (SSE) goes out, then its connection is destroyed (a proxy's hiccup after the head). */
    dropAfterHead?: (method: string | undefined) => boolean;
  } = {},
): Promise<TaskServer> {
  const seen: Seen[] = [];
  const fates = new Map<string, string>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const taskStore = new InMemoryTaskStore();
  const taskMessageQueue = new InMemoryTaskMessageQueue();

  const build = (): McpServer => {
    const server = new McpServer(
      { name: "task-server", version: "1.0.0" },
      {
        capabilities: { tasks: { requests: { tools: { call: {} } }, cancel: {}, list: {} } },
        taskStore,
        taskMessageQueue,
      },
    );
    // `ask` ({question}): a task that asks the client (elicitation/create, queued for its
    // tasks/result stream: the task is input_required meanwhile) and completes with the answer;
    // a task cancelled while it waits records its fate "cancelled" and never completes.
    server.experimental.tasks.registerToolTask(
      "ask",
      { inputSchema: { question: z.string() }, execution: { taskSupport: "required" } },
      {
        createTask: async ({ question }, extra) => {
          const task = await extra.taskStore.createTask({ ttl: 60_000, pollInterval: options.pollInterval ?? 20 });
          void (async () => {
            let answer: { action: string; content?: Record<string, unknown> | undefined };
            try {
              answer = await extra.sendRequest(
                {
                  method: "elicitation/create",
                  params: { message: question, requestedSchema: { type: "object", properties: { reply: { type: "string" } } } },
                },
                ElicitResultSchema,
                // relatedTask: queued for the task's tasks/result stream, the task input_required meanwhile (typed out, honoured at run time)
                { relatedTask: { taskId: task.taskId }, timeout: 60_000 } as unknown as Parameters<typeof extra.sendRequest>[2],
              );
            } catch {
              fates.set(task.taskId, "cancelled");
              return;
            }
            const now = await extra.taskStore.getTask(task.taskId);
            if (now?.status === "cancelled") {
              fates.set(task.taskId, "cancelled");
              return;
            }
            await extra.taskStore
              .storeTaskResult(task.taskId, "completed", {
                content: [{ type: "text", text: `answered: ${JSON.stringify(answer.content ?? answer.action)}` }],
              })
              .then(() => fates.set(task.taskId, "completed"))
              .catch(() => fates.set(task.taskId, "cancelled"));
          })();
          return { task };
        },
        getTask: async (_args, extra) => (await extra.taskStore.getTask(extra.taskId))!,
        getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as never,
      },
    );
    server.experimental.tasks.registerToolTask(
      "report",
      { inputSchema: { ms: z.number() }, execution: { taskSupport: "required" } },
      {
        createTask: async ({ ms }, extra) => {
          const task = await extra.taskStore.createTask({ ttl: 60_000, pollInterval: options.pollInterval ?? 20 });
          const token = extra._meta?.progressToken;
          let step = 0;
          const tick = (): void => {
            const timer = setTimeout(async () => {
              timers.delete(timer);
              const now = await extra.taskStore.getTask(task.taskId);
              if (now === null || now === undefined || now.status === "cancelled") {
                fates.set(task.taskId, "cancelled");
                return;
              }
              step++;
              if (token !== undefined) {
                await server.server
                  .notification({ method: "notifications/progress", params: { progressToken: token, progress: step, total: 5 } })
                  .catch(() => {});
              }
              if (step < 5) return tick();
              await extra.taskStore
                .storeTaskResult(task.taskId, "completed", { content: [{ type: "text", text: `report done in ${ms} ms` }] })
                .then(() => fates.set(task.taskId, "completed"))
                .catch(() => fates.set(task.taskId, "cancelled"));
            }, ms / 5);
            timers.add(timer);
          };
          tick();
          return { task };
        },
        getTask: async (_args, extra) => (await extra.taskStore.getTask(extra.taskId))!,
        getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as never,
      },
    );
    return server;
  };

  const httpServer = http.createServer(async (req, res) => {
    const body = req.method === "POST" ? await readBody(req) : undefined;
    record(seen, req, body);
    if ((body as { method?: unknown } | undefined)?.method === "tools/call") options.onToolCall?.();
    const refused = options.refuse?.((body as { method?: string } | undefined)?.method);
    if (refused !== undefined) {
      res.writeHead(refused, { "content-type": "text/plain" }).end("busy");
      return;
    }
    if (options.dropAfterHead?.((body as { method?: string } | undefined)?.method) === true) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.flushHeaders();
      setTimeout(() => req.socket.destroy(), 5);
      return;
    }
    if (req.method === "GET") seen.push({ method: "GET", id: undefined, params: undefined, mcpName: undefined });
    const sessionId = req.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
    if (transport === undefined) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void transports.set(id, transport!),
      });
      await build().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  const url = await listen(httpServer);
  return {
    url,
    seen,
    fates,
    statuses: () => taskStore.getAllTasks().map((task) => task.status),
    stop: stopper(httpServer, () => {
      for (const timer of timers) clearTimeout(timer);
      for (const transport of transports.values()) void transport.close();
      taskStore.cleanup();
    }),
  };
}

/**
 * A scripted 2026-07-28 server with the tasks extension: `server/discover`, and `tools/call` of
 * `report` ({ms, ignoreCancel?, answerDelayMs?}) answered with a task (resultType "task",
 * pollIntervalMs 20) when the request declares the extension, else with its result. The answer
 * is written `answerDelayMs` (default 0) after the request was read; a task is created at once,
 * when the request is read, and a close of the request's connection before the answer (the
 * 2026-07-28 cancel) ends a plain call's work but not a task that exists: its answer is lost and
 * the task runs on (`closedBeforeAnswer`). tasks/get inlines the result; tasks/cancel
 * answers with an empty acknowledgement and (cooperative) marks the task cancelled 5 ms later,
 * unless the call said `ignoreCancel`: then the task goes on and completes at `ms` anyway.
 */
export async function startRaw2026TaskServer(): Promise<TaskServer> {
  const seen: Seen[] = [];
  const fates = new Map<string, string>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const tasks = new Map<string, { status: string; createdAt: string; result?: unknown; ignoreCancel?: boolean }>();
  const closedBeforeAnswer: { id: unknown; taskId: string | null }[] = [];
  const later = (ms: number, fn: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };
  const taskView = (taskId: string) => {
    const task = tasks.get(taskId)!;
    return {
      taskId,
      status: task.status,
      createdAt: task.createdAt,
      lastUpdatedAt: new Date().toISOString(),
      ttlMs: 60_000,
      pollIntervalMs: 20,
      ...(task.status === "completed" ? { result: task.result } : {}),
    };
  };
  const answer = (req: http.IncomingMessage, m: { id?: unknown; method?: string; params?: Record<string, unknown> }) => {
    const ok = (result: Record<string, unknown>) => ({ jsonrpc: "2.0", id: m.id, result: { resultType: "complete", ...result } });
    const fail = (code: number, message: string) => ({ jsonrpc: "2.0", id: m.id, error: { code, message } });
    const params = m.params ?? {};
    switch (m.method) {
      case "server/discover":
        return ok({
          supportedVersions: ["2026-07-28"],
          capabilities: { tools: {}, extensions: { "io.modelcontextprotocol/tasks": {} } },
          serverInfo: { name: "raw-2026-tasks", version: "1.0.0" },
        });
      case "tools/list":
        return ok({ tools: [{ name: "report", inputSchema: { type: "object" } }] });
      case "tools/call": {
        const args = (params.arguments ?? {}) as { ms?: number; ignoreCancel?: boolean };
        const ms = Number(args.ms ?? 100);
        const meta = (params._meta ?? {}) as Record<string, { extensions?: Record<string, unknown> }>;
        const declared = meta["io.modelcontextprotocol/clientCapabilities"]?.extensions?.["io.modelcontextprotocol/tasks"] !== undefined;
        if (!declared) return ok({ content: [{ type: "text", text: "done at once" }] });
        const taskId = randomUUID();
        tasks.set(taskId, { status: "working", createdAt: new Date().toISOString(), ignoreCancel: args.ignoreCancel === true });
        later(ms, () => {
          const task = tasks.get(taskId)!;
          if (task.status !== "working") return;
          task.status = "completed";
          task.result = { content: [{ type: "text", text: `report done in ${ms} ms` }], resultType: "complete" };
          fates.set(taskId, "completed");
        });
        return { jsonrpc: "2.0", id: m.id, result: { resultType: "task", ...taskView(taskId) } };
      }
      case "tasks/get":
      case "tasks/cancel": {
        const taskId = params.taskId;
        if (typeof taskId !== "string" || !tasks.has(taskId)) return fail(-32602, "unknown task");
        if (req.headers["mcp-name"] !== taskId) return fail(-32020, "Mcp-Name does not match params.taskId");
        if (m.method === "tasks/get") return ok(taskView(taskId));
        later(5, () => {
          const task = tasks.get(taskId)!;
          if (task.status === "working" && task.ignoreCancel !== true) {
            task.status = "cancelled";
            fates.set(taskId, "cancelled");
          }
        });
        return ok({});
      }
      default:
        return fail(-32601, `method not found: ${m.method}`);
    }
  };
  const httpServer = http.createServer(async (req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const body = (await readBody(req)) as { id?: unknown; method?: string; params?: Record<string, unknown> };
    record(seen, req, body);
    if (body.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const reply = answer(req, body);
    const delay = Number((body.params?.arguments as { answerDelayMs?: unknown } | undefined)?.answerDelayMs ?? 0);
    if (body.method !== "tools/call" || !(delay > 0)) {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply));
      return;
    }
    const created = (reply as { result?: { resultType?: unknown; taskId?: unknown } }).result;
    const taskId = created?.resultType === "task" ? String(created.taskId) : null;
    let answered = false;
    res.on("close", () => {
      if (!answered) closedBeforeAnswer.push({ id: body.id, taskId });
    });
    later(delay, () => {
      if (res.destroyed) return; // the client closed the stream: the answer (and with it the task id) is lost
      answered = true;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply));
    });
  });
  const url = await listen(httpServer);
  return {
    url,
    seen,
    fates,
    closedBeforeAnswer,
    statuses: () => [...tasks.values()].map((task) => task.status),
    stop: stopper(httpServer, () => {
      for (const timer of timers) clearTimeout(timer);
    }),
  };
}

/** The requests `s` received with this method, in order. */
export const methods = (s: TaskServer, method: string) => s.seen.filter((m) => m.method === method);

/** What one test starts, stopped after it (the client first): the test sets `started.server` and `started.closeClient`. */
export function stoppedAfterEach(): { server?: TaskServer | undefined; closeClient?: (() => Promise<void>) | undefined } {
  const started: { server?: TaskServer | undefined; closeClient?: (() => Promise<void>) | undefined } = {};
  afterEach(async () => {
    await started.closeClient?.();
    await started.server?.stop();
    started.server = undefined;
    started.closeClient = undefined;
  });
  return started;
}

/** A message the scripted stdio task server read (a `RECV` line of its stderr). */
export interface ReadMessage {
  method?: string;
  params?: { taskId?: string; _meta?: Record<string, unknown> };
}

/**
 * The v2 client pinned to 2026-07-28 over stdio, through the library, to the scripted extension
 * server (test/fixtures/tasks/raw-2026-task-server.mjs, a child process): `read(method)` lists the
 * messages of that method the server read, `lines()` its stderr's lines, `records` each record
 * revision, `close` ends both.
 */
export async function connectRaw2026Stdio(name: string) {
  const { Client } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  const { withCancellation } = await import("../../src/index.js");
  const { stdioCancellation } = await import("../../src/adapters/stdio/index.js");
  const script = new URL("../fixtures/tasks/raw-2026-task-server.mjs", import.meta.url).pathname;
  const transport = new StdioClientTransport({ command: process.execPath, args: [script], stderr: "pipe" });
  const stderr: string[] = [];
  transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString("utf8")));
  const client = new Client({ name, version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  const records: import("../../src/index.js").RunRecord[] = [];
  const mcp = withCancellation(client, stdioCancellation(transport), { onRecord: (r) => records.push(r) });
  await client.connect(mcp.transport);
  const lines = (): string[] => stderr.join("").split("\n");
  const read = (method: string): ReadMessage[] =>
    lines()
      .filter((line) => line.startsWith("RECV "))
      .map((line) => JSON.parse(line.slice(5)) as ReadMessage)
      .filter((m) => m.method === method);
  return { mcp, records, read, lines, close: () => client.close() };
}
