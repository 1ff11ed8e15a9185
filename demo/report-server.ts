/**
 * report-server: the MCP server of the worked example (README, "The worked example"),
 * built with the official v1 SDK (`McpServer` + `StdioServerTransport`) and nothing else.
 *
 * One tool, `generate_quarterly_summary {quarter}`, which takes `--work-ms` ms to produce the
 * report and then writes `<dir>/<quarter>-summary.md`. `--mode` picks which of the worked example's three
 * cases this server plays when the client cancels mid-way:
 *
 *   stop    (a) The server stops cleanly and sends nothing: the tool honours `extra.signal`
 *               (the SDK aborts it on `notifications/cancelled`, rule 11), so no file is written,
 *               and the SDK sends no response for a cancelled request.
 *   late    (b) The result was sent before the server read the cancel: generation is CPU-bound
 *               and synchronous, so it blocks the event loop past the client's budget. The
 *               response is written to stdout in the same turn the tool returns, before the
 *               cancel waiting on stdin is read: it reaches the client after its cancel (rule 9).
 *   ignore  (c) The server cannot stop and writes the report anyway: the tool ignores the signal
 *               and finishes; the SDK still sends nothing for the cancelled request (rule 11).
 *               Only a separate read of the directory can tell this case from (a).
 *
 * Usage: node --import tsx demo/report-server.ts --mode stop|late|ignore --dir <dir> --work-ms <ms>
 * Diagnostics go to stderr; stdout carries only JSON-RPC.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { MODES, reportPath } from "./reports.js";
import type { Mode } from "./reports.js";

/** Blocks this thread for `ms` ms without yielding to the event loop (no stdin is read meanwhile). */
function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function main(): void {
  const { values } = parseArgs({
    options: { mode: { type: "string" }, dir: { type: "string" }, "work-ms": { type: "string" } },
  });
  const mode = values.mode as Mode;
  const dir = values.dir;
  const workMs = Number(values["work-ms"]);
  if (!MODES.includes(mode) || dir === undefined || !(Number.isInteger(workMs) && workMs > 0)) {
    console.error("usage: report-server --mode stop|late|ignore --dir <dir> --work-ms <ms>");
    process.exit(2);
  }
  const log = (text: string): void => console.error(`[report-server ${mode}] ${text}`);
  // The reports directory exists from the start (a run of the README's snippet named one that did not).
  mkdirSync(dir, { recursive: true });

  const server = new McpServer({ name: "report-server", version: "1.0.0" });
  server.registerTool(
    "generate_quarterly_summary",
    {
      description: "Generates the quarterly summary report and writes it to the reports directory.",
      inputSchema: { quarter: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/) },
    },
    async ({ quarter }, extra) => {
      log(`request ${String(extra.requestId)}: generating ${quarter} (${workMs} ms of work)`);
      const request = `request ${String(extra.requestId)}`;
      extra.signal.addEventListener("abort", () => log(`${request}: the tool's signal aborted: ${String(extra.signal.reason)}`), {
        once: true,
      });
      if (mode === "stop")
        await sleep(workMs, undefined, { signal: extra.signal }); // rejects on cancel: nothing written
      else if (mode === "late")
        blockEventLoop(workMs); // the cancel, if sent, waits unread on stdin
      else await sleep(workMs); // "ignore": the signal is never looked at
      const file = reportPath(dir, quarter);
      // Written synchronously: in "late" mode an awaited write would let the cancel in first.
      writeFileSync(file, `# ${quarter} summary\n\nRevenue up, costs down.\n`);
      log(`${request}: wrote ${file}${extra.signal.aborted ? " (after the cancel)" : ""}`);
      return { content: [{ type: "text", text: `Wrote ${file}` }] };
    },
  );
  const transport = new StdioServerTransport();
  server
    .connect(transport)
    .then(() => {
      // Log every cancel as it is read off stdin, before the SDK acts on it (a demo aid, not needed by MCP).
      const deliver = transport.onmessage;
      transport.onmessage = (message: JSONRPCMessage) => {
        if ("method" in message && message.method === "notifications/cancelled") {
          log(`read notifications/cancelled ${JSON.stringify(message.params)}`);
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
