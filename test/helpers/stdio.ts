import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { withCancellation } from "../../src/index.js";
import type { CancellationOptions } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";

export const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

/**
 * Spawns a stdio MCP server as a real child process and connects a v1 SDK client through the
 * library. `stderrLines` collects the server's stderr (fixtures log what they read and do there).
 * `serverArgs`: after the script (the scripted server's `--log-times` makes `receivedAt` say when
 * it read each line).
 */
export async function spawnServer(script: string, options: CancellationOptions = {}, serverArgs: string[] = []) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [fixture(script), ...serverArgs], stderr: "pipe" });
  const stderrLines: string[] = [];
  let buffer = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    stderrLines.push(...parts);
  });
  const client = new Client({ name: "e2e-bot", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  const mcp = withCancellation(client, stdioCancellation(transport), options);
  await client.connect(mcp.transport);
  /** JSON-RPC messages the server read from its stdin (scripted server only). */
  const received = () => receivedAt().map(({ message }) => message);
  /** The same, each with when the server read it (wall clock, ms; `NaN` without `--log-times`). */
  const receivedAt = () =>
    stderrLines
      .map((l) => /^RECV(?:@([\d.]+))? (.*)$/.exec(l))
      .filter((m) => m !== null)
      .map((m) => ({
        at: m[1] === undefined ? Number.NaN : Number(m[1]),
        message: JSON.parse(m[2]!) as { method?: string; id?: number; params?: Record<string, unknown> },
      }));
  const cancelsReceived = () => received().filter((m) => m.method === "notifications/cancelled");
  return { client, transport, mcp, stderrLines, errors, received, receivedAt, cancelsReceived, pid: transport.pid };
}

/** Kept here too for the many tests that import it with this helper; defined in timing.ts. */
export { eventually } from "./timing.js";

/** True while a process with this pid exists. */
export function alive(pid: number | null | undefined): boolean {
  if (pid === null || pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
