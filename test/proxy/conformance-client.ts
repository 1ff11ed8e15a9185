// The client command for the official MCP conformance client scenarios with mcp-cancellable
// proxy between the scenario's server and a client (.ci/conformance.sh, mode "proxy"): the runner
// starts its test server and runs this with the server's URL as the last argument and the
// scenario in MCP_CONFORMANCE_SCENARIO. This is the bare v1 SDK client over stdio whose server
// command is `mcp-cancellable proxy --url <scenario url>`; every message the scenario's server
// sees was sent by the proxy's Streamable HTTP upstream (the library's adapter and its
// cancellable fetch), relayed from the client.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { fileURLToPath } from "node:url";

const url = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO;
const log = (...parts: unknown[]) => console.error(`[proxy ${scenario}]`, ...parts);
if (url === undefined || !/^https?:\/\//.test(url)) {
  log("usage: conformance-client.ts <server url>");
  process.exit(2);
}

const entry = fileURLToPath(new URL("../../src/cli/index.ts", import.meta.url));
const transport = new StdioClientTransport({
  command: process.execPath,
  args: ["--import", "tsx", entry, "proxy", "--timeout-ms", "20000", "--url", url],
  stderr: "pipe",
});
// The proxy's stderr: kept, so the run can show the proxy was the one between (its closing count).
let proxyStderr = "";
transport.stderr?.on("data", (chunk: Buffer) => {
  proxyStderr += chunk.toString("utf8");
  process.stderr.write(chunk);
});
const client = new Client({ name: "mcp-cancellable-conformance-proxy", version: "0.1.0" });

const scenarios: Record<string, () => Promise<void>> = {
  async initialize() {
    log("server", JSON.stringify(client.getServerVersion()));
  },
  async tools_call() {
    await client.listTools();
    const result = await client.callTool({ name: "add_numbers", arguments: { a: 5, b: 3 } });
    if (result.isError) throw new Error("add_numbers returned isError");
  },
  // The server ends the POST stream after a priming event and `retry: 500`; the proxy's upstream
  // must resume with GET + Last-Event-ID, and the client gets the result over stdio.
  async "sse-retry"() {
    await client.listTools();
    const result = await client.callTool({ name: "test_reconnection", arguments: {} });
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
  await client.connect(transport);
  await run();
  await client.close();
  clearTimeout(watchdog);
  // The proxy writes its count when the client closes its stdin: without it nothing went through the proxy.
  for (let waited = 0; !/mcp-cancellable proxy: done: /.test(proxyStderr) && waited < 5_000; waited += 50)
    await new Promise((r) => setTimeout(r, 50));
  const done = /mcp-cancellable proxy: done: [^\n]*/.exec(proxyStderr)?.[0];
  if (done === undefined) {
    log("the proxy never reported its end: was it between the client and the server?");
    process.exit(5);
  }
  log(done);
  process.exit(0);
} catch (error) {
  log("error", error);
  process.exit(1);
}
