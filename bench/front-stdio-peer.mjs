// The HTTP front bench's stdio server (bench/front.ts): plain Node, no SDK. Answers `initialize`;
// `tools/call` "echo" at once; "hang" never. For each `tools/call` it reads it writes
// `CALL <id> <ns>` on stderr, and for each `notifications/cancelled` `CANCELLED <requestId> <ns>`,
// where <ns> is process.hrtime.bigint() (CLOCK_MONOTONIC, the same clock in every process), so
// the bench can time a cancel from the client's stream close to its arrival here.
// Run as a child: node bench/front-stdio-peer.mjs [--quiet]
import { createInterface } from "node:readline";

const quiet = process.argv.includes("--quiet");
const write = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
createInterface({ input: process.stdin }).on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  const { id, method, params } = message ?? {};
  if (method === "initialize") {
    write({
      jsonrpc: "2.0",
      id,
      result: { protocolVersion: params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "front-peer", version: "1" } },
    });
  } else if (method === "tools/call") {
    if (!quiet) process.stderr.write(`CALL ${JSON.stringify(id)} ${process.hrtime.bigint()}\n`);
    if (params?.name === "echo") write({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "ok" }], resultType: "complete" } });
  } else if (method === "notifications/cancelled") {
    if (!quiet) process.stderr.write(`CANCELLED ${JSON.stringify(params?.requestId)} ${process.hrtime.bigint()}\n`);
  } else if (method === "server/discover") {
    write({
      jsonrpc: "2.0",
      id,
      result: {
        supportedVersions: ["2026-07-28"],
        capabilities: { tools: {} },
        serverInfo: { name: "front-peer", version: "1" },
        resultType: "complete",
      },
    });
  } else if (method === "tools/list") {
    write({
      jsonrpc: "2.0",
      id,
      result: {
        tools: [
          { name: "echo", inputSchema: { type: "object" } },
          { name: "hang", inputSchema: { type: "object" } },
        ],
      },
    });
  } else if (id !== undefined && method !== undefined) {
    write({ jsonrpc: "2.0", id, result: {} });
  }
});
