import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { attachCancellation, ConnectionClosedError, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { alive, eventually, spawnServer } from "../helpers/stdio.js";

const SCRIPTED = fileURLToPath(new URL("../fixtures/scripted-server.mjs", import.meta.url));

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
    await expect(server.mcp.callTool({ name: "echo" }, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(await eventually(() => !alive(server.pid), 10_000)).toBe(true);
    expect(closes).toBe(1);
  }, 20_000);

  it("the same with the v2 SDK's client and transport", async () => {
    const transport = new StdioV2({
      command: process.execPath,
      args: [SCRIPTED],
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

  it("a client attached after its server closed its stdout: the next call settles connection-closed, not at its timeout", async () => {
    // An outside tester's: the watch listened for an `end` already emitted, and missed it.
    const transport = new StdioClientTransport({ command: process.execPath, args: [SCRIPTED], stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => void (stderr += chunk.toString("utf8")));
    const client = new Client({ name: "e2e-bot", version: "1.0.0" });
    const errors: Error[] = [];
    client.onerror = (error) => void errors.push(error);
    await client.connect(transport);
    cleanup.push(() => client.close());
    const pid = transport.pid; // read now: the SDK forgets it at its close
    void client.callTool({ name: "close-stdout", arguments: { ms: 0 } }).catch(() => {});
    expect(await eventually(() => stderr.includes("STDOUT-CLOSED"))).toBe(true);
    const stdout = (transport as unknown as { _process: { stdout: { readableEnded: boolean } } })._process.stdout;
    expect(await eventually(() => stdout.readableEnded)).toBe(true);
    const mcp = attachCancellation(client);
    const started = performance.now();
    // A tool the server never answers (it reads on, and runs on: it writes nothing).
    await expect(mcp.callTool({ name: "silent" }, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(errors.map((error) => error.message)).toContainEqual(expect.stringContaining("closed its stdout"));
    expect(mcp.pendingCount).toBe(0);
    // Stopped (its stdin ended, then signalled: it ignores the end), not left behind the test.
    expect(pid).toBeGreaterThan(0);
    expect(await eventually(() => !alive(pid), 10_000)).toBe(true);
  }, 20_000);

  it("a server that exited while a process it started holds its pipes open: closed as an exit, no word of a server that kept running", async () => {
    // An outside tester's: the SDK's `onclose` waits for every pipe of the process, so the exit
    // went unseen by it, and the error said the server "kept running".
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    let closes = 0;
    server.client.onclose = () => void closes++;
    const started = performance.now();
    const leaving = server.mcp.callTool({ name: "exit-held", arguments: { ms: 50, holdMs: 5_000 } }, { timeoutMs: 20_000 });
    await expect(leaving).rejects.toBeInstanceOf(ConnectionClosedError);
    const helper = Number(/HELD-BY (\d+)/.exec(server.stderrLines.join("\n"))?.[1]);
    if (helper > 0) cleanup.push(async () => void (alive(helper) && process.kill(helper, "SIGKILL")));
    expect(performance.now() - started).toBeLessThan(4_000); // before the helper lets the pipes go
    expect(server.errors.map((error) => error.message).filter((text) => text.includes("kept running"))).toEqual([]);
    expect(await eventually(() => closes === 1)).toBe(true);
    expect(server.mcp.pendingCount).toBe(0);
  });

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
