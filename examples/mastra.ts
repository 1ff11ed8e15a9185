import { MCPClient } from "@mastra/mcp";
import { attachMastra } from "mcp-cancellable/mastra";

const mcp = new MCPClient({ servers: { reports: { command: "node", args: ["report-server.js"] } }, timeout: 30_000 });
const attached = await attachMastra(mcp, { maxTotalTimeoutMs: 120_000, onRecord: (record) => console.log(record.summary) });
const tools = await mcp.listTools(); // hand them to a Mastra Agent: each call now goes through the library
console.log(Object.keys(tools), attached.records());
