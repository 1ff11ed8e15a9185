import { GoogleGenAI, mcpToTool } from "@google/genai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { withCancellation } from "mcp-cancellable";
import { stdioCancellation } from "mcp-cancellable/stdio";

const client = new Client({ name: "gemini-bot", version: "1.0.0" });
const mcp = withCancellation(client, stdioCancellation(new StdioClientTransport({ command: "node", args: ["report-server.js"] })), {
  timeoutMs: 30_000, // GenAI passes no AbortSignal and, by default, no timeout: this bounds every tool call, ms
  maxTotalTimeoutMs: 120_000,
});
await client.connect(mcp.transport);

const ai = new GoogleGenAI({});
const response = await ai.models.generateContent({
  model: "gemini-2.5-flash",
  contents: "Write the Q3 summary.",
  config: { tools: [mcpToTool(mcp.sdkClient)] }, // { timeout } here becomes our idle timeout
});
console.log(response.text, mcp.records());
await client.close(); // stops the server: the process can exit
