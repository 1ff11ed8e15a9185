import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { isCallTimeoutError, withCancellation } from "mcp-cancellable";
import { stdioCancellation } from "mcp-cancellable/stdio";

const client = new Client({ name: "report-bot", version: "1.0.0" });
const server = new StdioClientTransport({ command: "node", args: ["report-server.js"] });
const mcp = withCancellation(client, stdioCancellation(server)); // wrap before connecting
await client.connect(mcp.transport);

try {
  const result = await mcp.callTool({ name: "generate_quarterly_summary", arguments: { quarter: "Q3" } }, { timeoutMs: 30_000 });
  console.log(result.content[0]); // the SDK's own CallToolResult type
} catch (error) {
  if (!isCallTimeoutError(error)) throw error; // a server's JSON-RPC error stays the SDK's error
  console.log(error.record.summary); // "cancelled (timeout), outcome unverified": the cancel went out
}
await client.close();
