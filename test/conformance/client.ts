// The client command for the official MCP conformance suite (@modelcontextprotocol/conformance).
// The runner starts a test server and runs this with the server URL as the last argument and
// the scenario in MCP_CONFORMANCE_SCENARIO. By default every call goes through mcp-cancellable
// (the v1 SDK client, the Streamable HTTP adapter with its cancellable fetch); with --bare the
// same steps run on the bare SDK client, so .ci/conformance.sh can show the wrapper makes no
// scenario fail that the bare SDK passes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { withCancellation } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";

const url = process.argv.at(-1);
const bare = process.argv.includes("--bare");
const scenario = process.env.MCP_CONFORMANCE_SCENARIO;
const log = (...parts: unknown[]) => console.error(`[${bare ? "bare" : "wrapped"} ${scenario}]`, ...parts);
if (url === undefined || !/^https?:\/\//.test(url)) {
  log("usage: client.ts [--bare] <server url>");
  process.exit(2);
}

const client = new Client({ name: "mcp-cancellable-conformance", version: "0.1.0" });
let call: (name: string, args: Record<string, unknown>) => Promise<{ isError?: boolean | undefined; content?: unknown }>;
let transport: StreamableHTTPClientTransport;
if (bare) {
  transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  call = async (name, args) => (await client.callTool({ name, arguments: args })) as { isError?: boolean };
} else {
  transport = new StreamableHTTPClientTransport(new URL(url), { fetch: cancellableFetch() });
  const mcp = withCancellation(client, streamableHttpCancellation(transport), { timeoutMs: 20_000 });
  await client.connect(mcp.transport);
  call = (name, args) => mcp.callTool({ name, arguments: args });
}

const scenarios: Record<string, () => Promise<void>> = {
  async initialize() {
    log("server", JSON.stringify(client.getServerVersion()));
  },
  async tools_call() {
    await client.listTools();
    const result = await call("add_numbers", { a: 5, b: 3 });
    if (result.isError) throw new Error("add_numbers returned isError");
  },
  // The server ends the POST stream after a priming event and `retry: 500`; the client must
  // resume with GET + Last-Event-ID. The adapter refuses resumes only for streams it cancelled.
  async "sse-retry"() {
    await client.listTools();
    const result = await call("test_reconnection", {});
    log("result", JSON.stringify(result.content));
  },
};

const run = scenario === undefined ? undefined : scenarios[scenario];
if (run === undefined) {
  log("unsupported scenario");
  process.exit(3);
}
const watchdog = setTimeout(() => {
  log("did not finish within 25 s");
  process.exit(4);
}, 25_000);
try {
  await run();
  await client.close();
  clearTimeout(watchdog);
  process.exit(0);
} catch (error) {
  log("error", error);
  process.exit(1);
}
