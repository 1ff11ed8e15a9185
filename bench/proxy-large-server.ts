/**
 * The proxy bench's large-result server: a v1 McpServer on StdioServerTransport with one tool,
 * `big {bytes}`, whose result is one text of that many bytes (made once per size, then reused),
 * so a result of 10 or 40 MB is one line of that size on stdout. Writes nothing on stderr.
 * Run as a child: node --import tsx bench/proxy-large-server.ts
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const texts = new Map<number, string>();
const server = new McpServer({ name: "bench-large", version: "1.0.0" });
server.registerTool(
  "big",
  { description: "a text result of `bytes` bytes", inputSchema: { bytes: z.number().int().min(1) } },
  async ({ bytes }) => {
    let text = texts.get(bytes);
    if (text === undefined) {
      text = "x".repeat(bytes);
      texts.set(bytes, text);
    }
    return { content: [{ type: "text", text }] };
  },
);
await server.connect(new StdioServerTransport());
