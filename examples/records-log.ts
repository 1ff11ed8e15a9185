import { createWriteStream } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { jsonLines, withCancellation } from "mcp-cancellable";
import { stdioCancellation } from "mcp-cancellable/stdio";

// One log for every connection: each line carries callId (unique in the process) and connectionId.
const log = createWriteStream("calls.jsonl", { flags: "a" });
const onRecord = jsonLines((line) => log.write(line)); // default revisions: "changed"
const session = new AbortController(); // aborted when the bot shuts down: ends every call

for (const script of ["report-server.js", "search-server.js"]) {
  const client = new Client({ name: "report-bot", version: "1.0.0" });
  const transport = stdioCancellation(new StdioClientTransport({ command: "node", args: [script] }));
  const mcp = withCancellation(client, transport, { timeoutMs: 30_000, onRecord });
  await client.connect(mcp.transport);
  const stopButton = new AbortController(); // this call only
  // Several signals: the first to abort cancels the call (no AbortSignal.any needed).
  await mcp.callTool({ name: "status" }, { signal: [session.signal, stopButton.signal] }).catch(() => {});
  await client.close();
}
