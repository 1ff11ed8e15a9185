// Deno without env access (`--allow-env=MCP_TEST_URL` only): a client's close leaves nothing that
// keeps the process alive. Run by test/runtimes/harness.mjs against a v1 server with sessions
// (test/fixtures/runtime/v1-session-server.mjs: the session's GET stream is open), which sees the
// "closed" line and then waits for the process to exit on its own (no Deno.exit here). undici
// cannot be imported there; its import, failing part way, left a connection open and the process
// running (an outside tester's: 5 runs of 8 never exited).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { withCancellation } from "../../dist/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../dist/streamable-http.js";

const url = new URL(globalThis.Deno?.env.get("MCP_TEST_URL") ?? globalThis.process?.env.MCP_TEST_URL);
const client = new Client({ name: "exit-check", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() });
const mcp = withCancellation(client, streamableHttpCancellation(transport), { timeoutMs: 5_000 });
await client.connect(mcp.transport);
// A call that reports progress for a second (its response stream open, the session's GET too).
await mcp.callTool(
  { name: "ticks", arguments: { every: 100, count: 10 } },
  { timeoutMs: 300, resetTimeoutOnProgress: true, onprogress: () => {} },
);
await mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 300 }).catch(() => {});
await client.close();
console.log("closed");
