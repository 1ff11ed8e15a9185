import { createMCPClient } from "@ai-sdk/mcp";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { cancellableTransport } from "mcp-cancellable/ai-sdk";
import { stdioCancellation } from "mcp-cancellable/stdio";

const transport = cancellableTransport(stdioCancellation(new StdioClientTransport({ command: "node", args: ["report-server.js"] })), {
  timeoutMs: 30_000, // idle timeout per request, ms: the AI SDK sets none
  maxTotalTimeoutMs: 120_000, // hard cap from the send, ms
  onRecord: (record) => console.log(record.summary),
});
const mcp = await createMCPClient({ transport });
try {
  // Hand `tools` to generateText/streamText with an `abortSignal`: the AI SDK passes it to each
  // tool call, and an abort sends notifications/cancelled for that request.
  const tools = await mcp.tools();
  const stop = new AbortController();
  const summary = tools["generate_quarterly_summary"];
  await summary?.execute?.({ quarter: "Q3" }, { toolCallId: "call_1", messages: [], abortSignal: stop.signal });
  console.log(transport.records());
} finally {
  await mcp.close();
}
