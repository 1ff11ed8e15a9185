import { Agent, run } from "@openai/agents";
import { CancellableMCPServerStdio } from "mcp-cancellable/openai-agents";

// In place of the Agents runtime's MCPServerStdio: the same place in `mcpServers`.
const reports = new CancellableMCPServerStdio({
  name: "reports",
  command: "node",
  args: ["report-server.js"],
  timeoutMs: 30_000, // idle timeout per request, ms (Agents sets none of its own here)
  maxTotalTimeoutMs: 120_000, // hard cap from the send, ms
  callOptions: (tool) => (tool === "generate_quarterly_summary" ? { timeoutMs: 90_000 } : undefined),
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
