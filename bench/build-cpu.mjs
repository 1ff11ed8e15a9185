/**
 * CPU per wrapped call of one build of the library, in a process of its own: for an A/B of two
 * builds where `bench/ab.ts` (both in one process) cannot tell them apart, such as a change to
 * process-wide state (Node's timer lists). The v1 SDK in memory to its own McpServer, 1,000 in
 * flight (`conc`) or one at a time (`seq`), 60 rounds of 5 x 1,000 calls after 30 of warm-up;
 * prints the median CPU and wall per call. Run each build in turn, alternating, a few times.
 * Run: node --expose-gc bench/build-cpu.mjs <buildDir> [seq|conc]   (buildDir: bench/.tmp/build of a clone, as bench/run.ts builds it)
 */
import { pathToFileURL } from "node:url";
const [dir, mode = "conc"] = process.argv.slice(2);
const { withCancellation } = await import(pathToFileURL(`${dir}/index.js`).href);
const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
const { McpServer } = await import("@modelcontextprotocol/sdk/server/mcp.js");
const { InMemoryTransport } = await import("@modelcontextprotocol/sdk/inMemory.js");
const [a, b] = InMemoryTransport.createLinkedPair();
const server = new McpServer({ name: "s", version: "1" });
server.registerTool("echo", {}, async () => ({ content: [{ type: "text", text: "ok" }] }));
await server.connect(b);
const client = new Client({ name: "c", version: "1" });
const mcp = withCancellation(client, a);
await client.connect(mcp.transport);
const batch = 1000;
const round = async () => {
  if (mode === "conc") {
    const ps = [];
    for (let i = 0; i < batch; i++) ps.push(mcp.callTool({ name: "echo", arguments: {} }));
    await Promise.all(ps);
  } else for (let i = 0; i < batch; i++) await mcp.callTool({ name: "echo", arguments: {} });
};
for (let i = 0; i < 30; i++) await round();
const cpu = [],
  wall = [];
for (let r = 0; r < 60; r++) {
  const c0 = process.cpuUsage(),
    t0 = performance.now();
  for (let k = 0; k < 5; k++) await round();
  const c = process.cpuUsage(c0);
  wall.push(((performance.now() - t0) * 1000) / (5 * batch));
  cpu.push((c.user + c.system) / (5 * batch));
}
const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1];
console.log(`${mode} cpu ${med(cpu).toFixed(2)} µs wall ${med(wall).toFixed(2)} µs`);
await client.close();
