/**
 * The stdio bench server: a v1 McpServer (bench/lib/servers.ts) on StdioServerTransport that
 * reports, as `BENCH {json}` lines on stderr, with wall-clock times in ms
 * (`performance.timeOrigin + performance.now()`):
 * - `started {tag, requestId}`: the `hang` tool was entered;
 * - `cancel-read {requestId, t, dispatchedAt}`: a `notifications/cancelled` arrived; `t` is when
 *   the stdin chunk holding it was read (a `data` listener that runs before the SDK's), and
 *   `dispatchedAt` when the SDK's transport handed the parsed message on;
 * - `aborted {tag}`: the tool's `extra.signal` aborted.
 * Run as a child: node --import tsx bench/stdio-server.ts
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { benchServer } from "./lib/servers.js";

const wall = (): number => performance.timeOrigin + performance.now();
const report = (event: Record<string, unknown>): void => {
  process.stderr.write(`BENCH ${JSON.stringify(event)}\n`);
};

let chunkReadAt = 0;
const server = benchServer({
  started: (tag, requestId) => report({ event: "started", tag, requestId, t: wall() }),
  aborted: (tag) => report({ event: "aborted", tag, t: wall() }),
});
const transport = new StdioServerTransport();
await server.connect(transport);
process.stdin.prependListener("data", () => {
  chunkReadAt = wall();
});
const deliver = transport.onmessage;
transport.onmessage = (message: JSONRPCMessage) => {
  if ("method" in message && message.method === "notifications/cancelled") {
    report({ event: "cancel-read", requestId: message.params?.requestId as string | number, t: chunkReadAt, dispatchedAt: wall() });
  }
  deliver?.(message);
};
