// A real fastmcp server over stdio (fastmcp 4.20, Node 22). Tool "slow-count" (read-only,
// idempotent) reports progress every `intervalMs` for `steps` steps and honours the abort signal
// fastmcp hands its execute (context.signal): it stops, writes "ABORTED <n>" to stderr and reports
// nothing more. "STARTED <n>" is written when call n (counted from 1) begins, "DONE <n>" when it
// completes (fastmcp leaves context.requestId undefined over stdio, hence the counter). A signal
// that aborts after its call completed (fastmcp aborts them when the session closes) writes nothing.
import { FastMCP } from "fastmcp";
import { z } from "zod";

// What reached the server: each notifications/cancelled line read from stdin is echoed to stderr
// as "RECV-CANCEL <requestId>" (a second reader of stdin; fastmcp's SDK transport reads it too).
let pending = "";
process.stdin.on("data", (chunk) => {
  pending += chunk.toString("utf8");
  const lines = pending.split("\n");
  pending = lines.pop() ?? "";
  for (const line of lines) {
    if (!line.includes("notifications/cancelled")) continue;
    const message = JSON.parse(line);
    if (message.method === "notifications/cancelled") process.stderr.write(`RECV-CANCEL ${message.params?.requestId}\n`);
  }
});

let calls = 0;
const server = new FastMCP({ name: "fastmcp-fixture", version: "1.0.0" });

server.addTool({
  name: "slow-count",
  description: "Counts slowly and reports progress; stops when its signal aborts",
  annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false },
  parameters: z.object({ steps: z.number().int().default(50), intervalMs: z.number().int().default(100) }),
  execute: async ({ steps, intervalMs }, { reportProgress, signal }) => {
    const n = ++calls;
    let done = false;
    process.stderr.write(`STARTED ${n}\n`);
    signal.addEventListener("abort", () => done || process.stderr.write(`ABORTED ${n}\n`), { once: true });
    for (let i = 1; i <= steps; i++) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
      if (signal.aborted) {
        done = true;
        return "stopped";
      }
      await reportProgress({ progress: i, total: steps });
    }
    done = true;
    process.stderr.write(`DONE ${n}\n`);
    return `counted ${steps}`;
  },
});

await server.start({ transportType: "stdio" });
