/**
 * task-server: the worked example's report tool as an MCP task (2025-11-25 core tasks), built
 * with the official v1 SDK only: `McpServer` + `StdioServerTransport` + `InMemoryTaskStore`.
 *
 * `generate_quarterly_summary {quarter}` has `execution.taskSupport: "required"`: the server
 * answers the `tools/call` at once with a `CreateTaskResult`, and the work (`--work-ms` ms, in
 * steps with progress on the create request's token) goes on as a task the client polls with
 * `tasks/get`. A `tasks/cancel` marks the task `cancelled` (the SDK does that, rule 35); the work
 * sees it at its next step and stops, so no report is written.
 *
 * With `--create-delay-ms <ms>` the server is slow to answer and deaf to a cancel: it creates the
 * task (and starts the work) as it reads the `tools/call`, but sends the `CreateTaskResult` only
 * `<ms>` later, and it ignores `notifications/cancelled` (rule 10 allows it; the v1 SDK would
 * otherwise abort the handler and never send the `CreateTaskResult`). A client that gave up before
 * the answer only learns the task's id from that late `CreateTaskResult`.
 *
 * Usage: node --import tsx demo/task-server.ts --dir <dir> --work-ms <ms> [--create-delay-ms <ms>]
 * Diagnostics go to stderr (one line per tasks/* request read, and what became of each task;
 * prefixed `[task-server]`, or `[task-server slow-to-answer]` with `--create-delay-ms`);
 * stdout carries only JSON-RPC.
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { reportPath } from "./reports.js";

/** Steps the work is cut into (one progress notification each). */
const STEPS = 8;

function main(): void {
  const { values } = parseArgs({
    options: { dir: { type: "string" }, "work-ms": { type: "string" }, "create-delay-ms": { type: "string" } },
  });
  const dir = values.dir;
  const workMs = Number(values["work-ms"]);
  const createDelayMs = Number(values["create-delay-ms"] ?? 0);
  if (dir === undefined || !(Number.isInteger(workMs) && workMs > 0) || !(Number.isInteger(createDelayMs) && createDelayMs >= 0)) {
    console.error("usage: task-server --dir <dir> --work-ms <ms> [--create-delay-ms <ms>]");
    process.exit(2);
  }
  const log = (text: string): void => console.error(`[task-server${createDelayMs > 0 ? " slow-to-answer" : ""}] ${text}`);
  const taskStore = new InMemoryTaskStore();
  const server = new McpServer(
    { name: "task-server", version: "1.0.0" },
    { capabilities: { tasks: { requests: { tools: { call: {} } }, cancel: {}, list: {} } }, taskStore },
  );
  server.experimental.tasks.registerToolTask(
    "generate_quarterly_summary",
    {
      description: "Generates the quarterly summary report as a task and writes it to the reports directory.",
      inputSchema: { quarter: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/) },
      execution: { taskSupport: "required" },
    },
    {
      createTask: async ({ quarter }, extra) => {
        const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl ?? 60_000, pollInterval: 100 });
        const token = extra._meta?.progressToken;
        log(`task ${task.taskId}: generating ${quarter} (${workMs} ms of work)`);
        void (async () => {
          for (let step = 1; step <= STEPS; step++) {
            await new Promise((resolve) => setTimeout(resolve, workMs / STEPS));
            const now = await extra.taskStore.getTask(task.taskId);
            if (now?.status === "cancelled") {
              log(`task ${task.taskId}: cancelled, stopped at step ${step} of ${STEPS}, nothing written`);
              return;
            }
            if (token !== undefined) {
              await server.server
                .notification({ method: "notifications/progress", params: { progressToken: token, progress: step, total: STEPS } })
                .catch(() => {});
            }
          }
          const file = reportPath(dir, quarter);
          writeFileSync(file, `# ${quarter} summary\n\nRevenue up, costs down.\n`);
          log(`task ${task.taskId}: wrote ${file}`);
          await extra.taskStore
            .storeTaskResult(task.taskId, "completed", { content: [{ type: "text", text: `Wrote ${file}` }] })
            .catch((error: unknown) => log(`task ${task.taskId}: result not stored: ${String(error)}`));
        })();
        if (createDelayMs > 0) {
          await new Promise((resolve) => setTimeout(resolve, createDelayMs));
          log(`task ${task.taskId}: answering the tools/call with the task, ${createDelayMs} ms late`);
        }
        return { task };
      },
      getTask: async (_args, extra) => (await extra.taskStore.getTask(extra.taskId))!,
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as never,
    },
  );
  const transport = new StdioServerTransport();
  server
    .connect(transport)
    .then(() => {
      const deliver = transport.onmessage;
      transport.onmessage = (message: JSONRPCMessage) => {
        if ("method" in message && (message.method.startsWith("tasks/") || message.method === "notifications/cancelled")) {
          if (message.method !== "tasks/get") log(`read ${message.method} ${JSON.stringify(message.params)}`);
          if (message.method === "notifications/cancelled" && createDelayMs > 0) {
            log("ignored notifications/cancelled: the task is answered anyway");
            return;
          }
        }
        deliver?.(message);
      };
    })
    .catch((error: unknown) => {
      log(`failed to start: ${String(error)}`);
      process.exit(1);
    });
}

main();
