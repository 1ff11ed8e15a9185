import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { ConnectionClosedError, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { alive, eventually, spawnServer } from "../helpers/stdio.js";

// A stdio server that closes its stdout and keeps running (an outside tester's chaos run): nothing
// it answers can arrive, yet the SDK's transport closes only when the process exits, so each
// pending call waited out its own timeout and was recorded a timeout. The stdio adapter watches
// the child's stdout (src/adapters/stdio/stdout-end.ts): 200 ms after it ended with the process
// still running, the connection counts as closed, as on an exit.

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

describe("a stdio server that closes its stdout and keeps running", () => {
  it("its pending calls settle connection-closed at once (not at their timeouts), onerror says why, onclose runs once, and the server is stopped", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    let closes = 0;
    server.client.onclose = () => void closes++;
    const started = performance.now();
    const silent = server.mcp.callTool({ name: "silent" }, { timeoutMs: 20_000 });
    const closing = server.mcp.callTool({ name: "close-stdout", arguments: { ms: 50 } }, { timeoutMs: 20_000 });
    await expect(silent).rejects.toBeInstanceOf(ConnectionClosedError);
    await expect(closing).rejects.toBeInstanceOf(ConnectionClosedError);
    // Well before either timeout: the 50 ms, the 200 ms grace, a loaded machine's slack.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(server.stderrLines.some((line) => line.startsWith("STDOUT-CLOSED"))).toBe(true);
    const records = server.mcp.records().filter((record) => record.method === "tools/call");
    expect(records).toHaveLength(2);
    for (const record of records) expect(record).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed" } });
    expect(server.errors.map((error) => error.message)).toContainEqual(expect.stringContaining("closed its stdout"));
    expect(await eventually(() => closes === 1)).toBe(true);
    expect(server.mcp.pendingCount).toBe(0);
    // A call after it fails at once, as on any closed connection.
    await expect(server.mcp.callTool({ name: "echo" }, { timeoutMs: 20_000 })).rejects.toThrow();
    expect(await eventually(() => !alive(server.pid), 10_000)).toBe(true);
    expect(closes).toBe(1);
  }, 20_000);

  it("the same with the v2 SDK's client and transport", async () => {
    const transport = new StdioV2({
      command: process.execPath,
      args: [fileURLToPath(new URL("../fixtures/scripted-server.mjs", import.meta.url))],
      stderr: "pipe",
    });
    const client = new ClientV2({ name: "e2e-bot", version: "1.0.0" });
    const errors: Error[] = [];
    client.onerror = (error) => void errors.push(error);
    const mcp = withCancellation(client, stdioCancellation(transport));
    await client.connect(mcp.transport);
    cleanup.push(() => client.close());
    const pid = transport.pid;
    const silent = mcp.callTool({ name: "silent", arguments: {} }, { timeoutMs: 20_000 });
    void mcp.callTool({ name: "close-stdout", arguments: { ms: 50 } }, { timeoutMs: 20_000 }).catch(() => {});
    await expect(silent).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(errors.map((error) => error.message)).toContainEqual(expect.stringContaining("closed its stdout"));
    expect(mcp.pendingCount).toBe(0);
    expect(await eventually(() => !alive(pid), 10_000)).toBe(true);
  }, 20_000);

  it("a server that exits (its stdout ends with it) is an exit as before: no word of a closed stdout", async () => {
    const server = await spawnServer("scripted-server.mjs");
    let closes = 0;
    server.client.onclose = () => void closes++;
    const crash = server.mcp.callTool({ name: "crash", arguments: { ms: 20 } }, { timeoutMs: 20_000 });
    await expect(crash).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(await eventually(() => closes === 1)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 400)); // past the grace
    expect(server.errors.map((error) => error.message).filter((text) => text.includes("stdout"))).toEqual([]);
    expect(closes).toBe(1);
  });
});
