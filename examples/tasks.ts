import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { isCallTimeoutError, withCancellation } from "mcp-cancellable";
import { stdioCancellation } from "mcp-cancellable/stdio";

// After a cancel, what became of the task comes in a later revision of the record; onRecord gets each one.
let taskEnded = () => {};
const taskOutcome = new Promise<void>((resolve) => {
  taskEnded = resolve;
});
const client = new Client({ name: "report-bot", version: "1.0.0" });
const transport = stdioCancellation(new StdioClientTransport({ command: "node", args: ["task-server.js"] }));
const mcp = withCancellation(client, transport, {
  onRecord: (record) => {
    if (record.outcome.startsWith("task-")) taskEnded(); // task-cancelled, task-completed-anyway, task-failed
  },
});
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
    // Released at once: one tasks/cancel {taskId} went out, and the server has not answered it yet.
    console.log(error.record.cancel?.mechanism); // "tasks/cancel"
    console.log(error.record.task?.taskId);
    console.log(error.record.summary); // "cancelled (max-total-timeout), outcome unverified"
    // Wait for the task's answer, at most watchMs (10 s): if none comes, the outcome stays unverified.
    await Promise.race([taskOutcome, sleep(10_000, undefined, { ref: false })]);
  }
}
console.log(mcp.records().at(-1)?.summary); // e.g. "cancelled (max-total-timeout), task cancelled by the server"
await client.close();
