// The gateway bench's stdio peer (bench/gateway.ts): answers `initialize` and nothing else, ever,
// so every call stays pending until it is cancelled or times out. Plain Node (no tsx, no SDK),
// so a hundred of them start fast and stay small. Run as a child: node bench/silent-stdio-peer.mjs
import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  if (message?.method !== "initialize") return;
  const answer = {
    jsonrpc: "2.0",
    id: message.id,
    result: {
      protocolVersion: message.params?.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: "silent-stdio-peer", version: "1.0.0" },
    },
  };
  process.stdout.write(`${JSON.stringify(answer)}\n`);
});
lines.on("close", () => process.exit(0));
