import { existsSync } from "node:fs";
import { MCPClient } from "@mastra/mcp";
import { attachMastra } from "mcp-cancellable/mastra";

const mcp = new MCPClient({ servers: { reports: { command: "node", args: ["report-server.js"] } }, timeout: 60_000 });
const attached = await attachMastra(mcp, {
  timeoutMs: 30_000, // with Mastra's own timeout (60 s here), the tighter one is the idle timeout, ms
  maxTotalTimeoutMs: 120_000, // hard cap from the send, ms
  // After a cancel, Mastra's own tool call is verified by the tool's MCP name (not reports_...).
  verifiers: {
    generate_quarterly_summary: ({ arguments: args }) =>
      existsSync(`reports/${String(args.quarter)}-summary.md`) ? "applied" : "not-applied",
  },
  verifyDelayMs: 2_000,
  awaitVerification: true, // the model's next turn reads what the check found, not "timed out"
  onRecord: (record) => console.log(record.summary),
});
const tools = await mcp.listTools(); // hand them to a Mastra Agent: each call now goes through the library
console.log(Object.keys(tools), attached.records());
await mcp.disconnect(); // when the agent is done: stops the server, so the process can exit
