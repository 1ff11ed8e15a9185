import { existsSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { attachCancellation } from "mcp-cancellable";

// A client an agent framework created and connected: its own tool calls are verified, no bypass.
const client = new Client({ name: "framework-owned", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: "node", args: ["report-server.js"] }));

const mcp = attachCancellation(client, {
  timeoutMs: 30_000,
  verifiers: {
    // ctx: the tool's name and arguments, the run record, a signal aborted after verifyTimeoutMs
    generate_quarterly_summary: ({ arguments: args }) =>
      existsSync(`reports/${String(args.quarter)}-summary.md`) ? "applied" : "not-applied",
    "*": () => "not-applied", // every other tool (read-only ones: nothing to find)
  },
  verifyDelayMs: 2_000, // the same window options as verify: verifyTimeoutMs, verifyWindowMs, verifyIntervalMs
  awaitVerification: true, // the framework's tool gets the verified outcome instead of the timeout
});
// The framework calls the tool as it would; a timeout is verified before the framework sees it.
try {
  await client.callTool({ name: "generate_quarterly_summary", arguments: { quarter: "Q3" } });
} catch {
  // awaitVerification: true gives agent frameworks the verified outcome as the tool's result
}
console.log(mcp.records().map((record) => record.outcome)); // ["completed"], or ["verified-applied"] after a timeout
await client.close();
