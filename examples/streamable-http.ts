import { withCancellation } from "mcp-cancellable";
import { cancellableFetch, streamableHttpCancellation } from "mcp-cancellable/streamable-http";

// v1 SDK (@modelcontextprotocol/sdk): create the transport with the cancellable fetch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "report-bot", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL("https://mcp.example.com/mcp"), {
  fetch: cancellableFetch(),
});
const mcp = withCancellation(client, streamableHttpCancellation(transport), { timeoutMs: 30_000 });
await client.connect(mcp.transport);
// ... calls through mcp ...
await client.close(); // ends the session's GET stream too: until then it keeps the process alive

// v2 SDK (@modelcontextprotocol/client): the transport as it is.
//   import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
//   const mcp = withCancellation(client, streamableHttpCancellation(new StreamableHTTPClientTransport(url)));
