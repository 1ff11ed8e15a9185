/**
 * The proxy bench's stdio server: the bench's v1 McpServer (bench/lib/servers.ts: `echo`,
 * `hang`) on StdioServerTransport, with no hooks, so it writes nothing on stderr (10,000
 * pending calls leave no log lines behind). Run as a child: node --import tsx bench/proxy-stdio-server.ts
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { benchServer } from "./lib/servers.js";

await benchServer().connect(new StdioServerTransport());
