import { loadMcpTools } from "@langchain/mcp-adapters";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { withCancellation } from "mcp-cancellable";
import { stdioCancellation } from "mcp-cancellable/stdio";

const client = new Client({ name: "report-agent", version: "1.0.0" });
const mcp = withCancellation(client, stdioCancellation(new StdioClientTransport({ command: "node", args: ["report-server.js"] })), {
  timeoutMs: 30_000, // idle timeout per tool call, ms: applies even though LangChain sets none
  maxTotalTimeoutMs: 120_000, // hard cap from the send, ms
  onRecord: (record) => console.log(record.summary),
});
await client.connect(mcp.transport);

// LangChain calls sdkClient.callTool(params, undefined, { timeout, signal, onprogress }):
// its run's signal cancels the call on the wire. LangChain's `timeout` is a limit from the start
// (an AbortSignal.timeout: progress never extends it); `metadata: { timeoutMs }` alone is our idle timeout.
const tools = await loadMcpTools("reports", mcp.sdkClient);
const run = new AbortController();
const summary = tools.find((tool) => tool.name === "generate_quarterly_summary");
try {
  await summary?.invoke({ quarter: "Q3" }, { signal: run.signal });
} finally {
  await client.close(); // stops the server, also when the call timed out: the process can exit
}
