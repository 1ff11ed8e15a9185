import { existsSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { isCallTimeoutError, isMcpCancellableError, jsonLines, withCancellation } from "mcp-cancellable";
import { stdioCancellation } from "mcp-cancellable/stdio";

const client = new Client({ name: "report-bot", version: "1.0.0" });
const mcp = withCancellation(client, stdioCancellation(new StdioClientTransport({ command: "node", args: ["report-server.js"] })), {
  timeoutMs: 30_000, // idle timeout per request, ms
  maxTotalTimeoutMs: 120_000, // hard cap from the send, ms: holds even while progress arrives
  resetTimeoutOnProgress: true,
  onRecord: jsonLines((line) => process.stdout.write(line)), // the run record, as JSON Lines
});
await client.connect(mcp.transport);

const userAbort = new AbortController();
try {
  const result = await mcp.callTool(
    { name: "generate_quarterly_summary", arguments: { quarter: "Q3" } },
    {
      timeoutMs: 10_000,
      reason: "exceeded 10s budget",
      signal: userAbort.signal,
      // After a cancel: a separate, idempotent read tells whether the side effect happened.
      verify: () => (existsSync("reports/Q3-summary.md") ? "applied" : "not-applied"),
      verifyDelayMs: 2_000,
    },
  );
  console.log(result.content);
} catch (error) {
  if (isCallTimeoutError(error)) console.log(error.record.summary); // "cancelled (timeout), outcome unverified"
  if (isMcpCancellableError(error))
    console.log((await error.verification).summary); // "cancelled (timeout), verified applied"
  else throw error; // a JSON-RPC error from the server: the SDK's own error, untouched
} finally {
  await client.close();
}
