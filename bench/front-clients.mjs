// The HTTP front bench's 1,000 clients (bench/front.ts), in their own process so their sockets
// and buffers stay out of the front's heap: N 2026-07-28 `tools/call` "hang" requests to URL,
// each on its own connection, all in flight at once. Prints `OPEN <n>` once every response's
// headers came, then reads every body to its end and prints `DONE <json>`: per request, the
// number of JSON-RPC answers it got (each must be exactly 1: the front's drain answers -32000).
// Run as a child: node bench/front-clients.mjs URL N
import { Agent, fetch } from "undici";

const [url, count] = [process.argv[2], Number(process.argv[3])];
const agent = new Agent({ connections: count + 10, pipelining: 0, keepAliveTimeout: 60_000 });
const meta = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1" },
};
const responses = await Promise.all(
  Array.from({ length: count }, (_, i) =>
    fetch(url, {
      method: "POST",
      dispatcher: agent,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "hang",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "hang", arguments: {}, _meta: meta } }),
    }),
  ),
);
process.stdout.write(`OPEN ${responses.length}\n`);
const answers = await Promise.all(
  responses.map(async (response) => {
    const text = await response.text().catch(() => "");
    return text.split("\n").filter((line) => line.startsWith("data: ") && line.includes('"id"')).length;
  }),
);
process.stdout.write(`DONE ${JSON.stringify(answers)}\n`);
await agent.close();
