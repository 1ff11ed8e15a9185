import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { attachCancellation, isCallTimeoutError } from "mcp-cancellable";
import { cancellableFetch } from "mcp-cancellable/streamable-http";

// A client that something else (an agent framework) created and connected.
const transport = new StreamableHTTPClientTransport(new URL("http://127.0.0.1:3000/mcp"), {
  fetch: cancellableFetch(), // v1 HTTP only: lets a cancel close that request's stream
});
const client = new Client({ name: "framework-owned", version: "1.0.0" });
await client.connect(transport);

const mcp = attachCancellation(client, { timeoutMs: 30_000, onRecord: (record) => console.log(record.summary) });
console.log(client.transport === transport); // true: decorated in place

// The framework keeps calling the client as before; its SDK options are mapped to ours.
try {
  await client.callTool({ name: "generate_quarterly_summary", arguments: { quarter: "Q3" } }, undefined, {
    timeout: 10_000, // idle timeout, ms
    signal: AbortSignal.timeout(60_000),
  });
} catch (error) {
  if (isCallTimeoutError(error)) console.log(error.record.cancel?.mechanism); // "notification+stream-close"
}
console.log(mcp.records().length);
await client.close();
