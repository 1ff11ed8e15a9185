import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { CallCancelledError, CallTimeoutError, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { eventually } from "./servers.js";
import { SLACK_MS } from "../helpers/timing.js";

// The facade with the v2 SDK client (@modelcontextprotocol/client) over stdio: its
// callTool(params, options) signature and its errors, against the v2 server (serveStdio) in both
// eras and the v1 server. On stdio the cancel is notifications/cancelled in every era (rule 31).
const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0)) await close().catch(() => {});
});

async function connect(script: string, pin: boolean) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [fixture(script)], stderr: "pipe" });
  const stderr: string[] = [];
  transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString("utf8")));
  const client = new Client(
    { name: "v2-stdio-test", version: "1.0.0" },
    pin ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : undefined,
  );
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  const mcp = withCancellation(client, stdioCancellation(transport));
  await client.connect(mcp.transport);
  open.push(() => client.close());
  return { client, mcp, errors, stderr: () => stderr.join("") };
}

describe("v2 SDK client over stdio", () => {
  for (const [script, pin, era] of [
    ["http/v2-stdio-server.mjs", true, "modern"],
    ["http/v2-stdio-server.mjs", false, "legacy"],
    ["sdk-stdio-server.mjs", false, "legacy"],
  ] as const) {
    it(`${script} (${era}): a result comes back; an abort sends one notification that reaches the handler`, async () => {
      const { client, mcp, errors, stderr } = await connect(script, pin);
      expect(client.getProtocolEra()).toBe(era);
      await expect(mcp.callTool({ name: "sleep", arguments: { ms: 10 } })).resolves.toMatchObject({ content: [{ text: "slept 10" }] });
      const controller = new AbortController();
      const call = mcp.callTool({ name: "sleep", arguments: { ms: 5_000 } }, { signal: controller.signal, reason: "user gave up" });
      setTimeout(() => controller.abort(), 100);
      const started = performance.now();
      await expect(call).rejects.toBeInstanceOf(CallCancelledError);
      expect(performance.now() - started).toBeLessThan(100 + SLACK_MS);
      expect(await eventually(() => /ABORTED .*reason="user gave up"/.test(stderr()))).toBe(true);
      const record = mcp.records()[1]!;
      expect(record.cancel).toMatchObject({ trigger: "aborted", reason: "user gave up", mechanism: "notification" });
      await expect(mcp.callTool({ name: "sleep", arguments: { ms: 5_000 } }, { timeoutMs: 100 })).rejects.toBeInstanceOf(CallTimeoutError);
      const list = await mcp.request<{ tools: Array<{ name: string }> }>({ method: "tools/list" });
      expect(list.tools.map((tool) => tool.name)).toContain("sleep");
      expect(mcp.pendingCount).toBe(0);
      expect(errors).toEqual([]);
    });
  }
});
