import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { isCallTimeoutError, withCancellation } from "mcp-cancellable";
import { stdioCancellation } from "mcp-cancellable/stdio";

const client = new Client({ name: "report-bot", version: "1.0.0" });
const mcp = withCancellation(client, stdioCancellation(new StdioClientTransport({ command: "node", args: ["task-server.js"] })));
await client.connect(mcp.transport);

try {
  const result = await mcp.callTool(
    { name: "generate_quarterly_summary", arguments: { quarter: "Q3" } },
    {
      // Run it as a task: ask for a 10-minute TTL; poll at the server's interval (1 s if it gives none).
      task: { ttlMs: 600_000, pollIntervalMs: 1_000, watchMs: 10_000 },
      timeoutMs: 30_000, // idle timeout, ms: once the task exists, every answered poll, status or progress resets it
      maxTotalTimeoutMs: 300_000, // the whole task's budget, ms: nothing resets it
    },
  );
  console.log(result.content);
} catch (error) {
  if (isCallTimeoutError(error)) {
    // Released at once; one tasks/cancel {taskId} went out. The record learns what became of the task.
    console.log(error.record.cancel?.mechanism); // "tasks/cancel"
    console.log(error.record.task?.taskId);
  }
}
console.log(mcp.records().at(-1)?.summary); // e.g. "cancelled (timeout), task cancelled by the server"
await client.close();
