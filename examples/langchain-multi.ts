import { existsSync } from "node:fs";
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import { attachCancellation } from "mcp-cancellable";

// MultiServerMCPClient creates and connects one SDK client per server itself: attach to each
// once it is connected, before its tools are used.
const multi = new MultiServerMCPClient({
  mcpServers: { reports: { transport: "stdio", command: "node", args: ["report-server.js"] } },
});
await multi.initializeConnections();
const client = await multi.getClient("reports");
if (client === undefined) throw new Error("the reports server did not connect");
const mcp = attachCancellation(client, {
  timeoutMs: 30_000, // idle timeout per tool call, ms: applies even though LangChain sets none
  maxTotalTimeoutMs: 120_000, // hard cap from the send, ms
  // LangChain's own tool calls, verified after a cancel: no bypass of its tools.
  verifiers: {
    generate_quarterly_summary: ({ arguments: args }) =>
      existsSync(`reports/${String(args.quarter)}-summary.md`) ? "applied" : "not-applied",
  },
  awaitVerification: true, // LangChain's ToolException then carries what the check found
  onRecord: (record) => console.log(record.summary),
});

const tools = await multi.getTools(); // their callTool now goes through mcp
const run = new AbortController();
const summary = tools.find((tool) => tool.name.endsWith("generate_quarterly_summary"));
try {
  await summary?.invoke({ quarter: "Q3" }, { signal: run.signal });
} finally {
  console.log(mcp.records().map((record) => record.summary));
  await multi.close(); // also when the call timed out or was cancelled
}
