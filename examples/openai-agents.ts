import { existsSync } from "node:fs";
import { Agent, run } from "@openai/agents";
import { CancellableMCPServerStdio } from "mcp-cancellable/openai-agents";

// In place of the Agents runtime's MCPServerStdio: the same place in `mcpServers`.
const reports = new CancellableMCPServerStdio({
  name: "reports",
  command: "node",
  args: ["report-server.js"],
  timeoutMs: 30_000, // idle timeout per request, ms (Agents sets none of its own here)
  maxTotalTimeoutMs: 120_000, // hard cap from the send, ms
  callOptions: (tool, args) =>
    tool === "generate_quarterly_summary"
      ? {
          timeoutMs: 90_000,
          // After a cancel: an idempotent read of the side effect, waited for before the model's next turn.
          verify: () => (existsSync(`reports/${String(args.quarter)}-summary.md`) ? "applied" : "not-applied"),
          verifyDelayMs: 2_000,
          awaitVerification: (record) =>
            `cancelled after ${Math.round(record.elapsedMs / 1000)} s; the report was ${record.outcome === "verified-applied" ? "" : "not "}created`,
        }
      : undefined,
  onRecord: (record) => console.log(record.summary), // "cancelled (aborted), late result discarded"
});
await reports.connect();

const agent = new Agent({ name: "report-bot", instructions: "Write the quarterly summary.", mcpServers: [reports] });
const stop = new AbortController(); // stop.abort() cancels the tool call on the server too
try {
  const result = await run(agent, "Summarise Q3", { signal: stop.signal });
  console.log(result.finalOutput);
} finally {
  await reports.close();
}
