// A stdio connection with no handshake to take the server's start (the v2 client pinned to
// 2026-07-28: `connect()` resolves at the spawn, rule 38): its first calls met a server still
// starting, and their idle timeout counted the start as the server's silence (an outside
// tester's, through the proxy: a server that took 1.5 s to start failed a first call with a 1 s
// idle timeout). Until the server's first message, the wire holds each call's idle timeout (the
// maximum total timeout holds throughout); from that message the idle timeout runs as ever.
// A real child: the v2 SDK's own server (serveStdio), which reads nothing for its first 1,200 ms.
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { CallTimeoutError, attachCancellation, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";

const SERVER = fileURLToPath(new URL("../fixtures/http/v2-stdio-server.mjs", import.meta.url));
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

async function connectSlow(startDelayMs: number) {
  const transport = new StdioV2({ command: process.execPath, args: [SERVER, "--start-delay-ms", String(startDelayMs)], stderr: "pipe" });
  const client = new ClientV2({ name: "slow-start", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  const mcp = withCancellation(client as never, stdioCancellation(transport), { timeoutMs: 400 });
  await client.connect(mcp.transport as never);
  cleanup.push(() => client.close());
  return mcp;
}

const slowTransport = (startDelayMs: number) =>
  new StdioV2({ command: process.execPath, args: [SERVER, "--start-delay-ms", String(startDelayMs)], stderr: "pipe" });

describe("stdio: a server's start is not its silence", () => {
  it("attachCancellation after a pinned v2 client connected (its server/discover went to a probe process), and after it reconnects: the first call is answered", async () => {
    const client = new ClientV2({ name: "slow-start", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(slowTransport(1_200));
    cleanup.push(() => client.close());
    const mcp = attachCancellation(client as never, { timeoutMs: 400 });
    await expect(mcp.callTool({ name: "sleep", arguments: { ms: 0 } })).resolves.toHaveProperty("content");
    // A reconnect: a new server, starting again; the next call attaches to its transport.
    await client.close();
    await client.connect(slowTransport(1_200));
    await expect(mcp.callTool({ name: "sleep", arguments: { ms: 0 } })).resolves.toHaveProperty("content");
    expect(mcp.records().map((r) => r.status)).toEqual(["succeeded", "succeeded"]);
  }, 30_000);

  it("v2 client pinned to 2026-07-28, a server that starts in 1,200 ms: the first call, with a 400 ms idle timeout, is answered", async () => {
    const mcp = await connectSlow(1_200);
    const startedAt = performance.now();
    const result = await mcp.callTool({ name: "sleep", arguments: { ms: 0 } });
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(1_000); // it did wait for the start
    expect(result).toHaveProperty("content");
    expect(mcp.records().at(-1)).toMatchObject({ status: "succeeded", cancel: null });
  }, 20_000);

  it("once the server has spoken, a silent call times out at its idle timeout, counted from that message at the latest", async () => {
    const mcp = await connectSlow(1_200);
    const silent = mcp.callTool({ name: "sleep", arguments: { ms: 60_000 } });
    silent.catch(() => {});
    await mcp.callTool({ name: "sleep", arguments: { ms: 0 } }); // the server's first message
    const spokenAt = performance.now();
    await expect(silent).rejects.toBeInstanceOf(CallTimeoutError);
    // Its idle timeout ran from the server's first message (400 ms), not from the hold's bound.
    expect(performance.now() - spokenAt).toBeLessThan(3_000);
    expect(mcp.records().find((r) => r.name === "sleep" && r.status === "cancelled")).toMatchObject({
      status: "cancelled",
      cancel: { trigger: "timeout" },
    });
    // And a silent call made now: the same, from its send.
    const again = performance.now();
    await expect(mcp.callTool({ name: "sleep", arguments: { ms: 60_000 } })).rejects.toBeInstanceOf(CallTimeoutError);
    expect(performance.now() - again).toBeLessThan(3_000);
  }, 20_000);
});
