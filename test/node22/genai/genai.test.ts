import { afterEach, describe, expect, it } from "vitest";
import { mcpToTool } from "@google/genai";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as ClientV2, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { CallTimeoutError, attachCancellation, withCancellation } from "../../../src/index.js";
import type { CancellationOptions, RunRecord } from "../../../src/index.js";
import { stdioCancellation } from "../../../src/adapters/stdio/index.js";
import { eventually, fixture } from "../../helpers/stdio.js";
import { sawDisconnect, seen, startV2 } from "../../http/servers.js";
import type { TestServer } from "../../http/servers.js";
import { SLACK_MS } from "../../helpers/timing.js";

// @google/genai 3.x (Node >= 22), no model: mcpToTool(...clients) gives a CallableTool whose
// callTool(functionCalls) is what automatic function calling runs. It lists the tools, then calls
// client.callTool(params, undefined, { timeout }?) with no AbortSignal at all: without the library
// a silent tool holds the model turn forever. mcpToTool takes mcp.sdkClient (withCancellation) or
// the client itself after attachCancellation.

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

const calls = (mcp: { records(): RunRecord[] }): RunRecord[] => mcp.records().filter((r) => r.method === "tools/call");

async function overStdio(script: string, args: string[], options: CancellationOptions) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [fixture(script), ...args], stderr: "pipe" });
  const chunks: string[] = [];
  transport.stderr?.on("data", (chunk: Buffer) => chunks.push(chunk.toString("utf8")));
  const client = new ClientV1({ name: "gemini-bot", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  const mcp = withCancellation(client, stdioCancellation(transport), options);
  await client.connect(mcp.transport);
  cleanups.push(() => client.close());
  const stderr = () => chunks.join("");
  const received = (method: string) => (stderr().match(new RegExp(`RECV .*"method":"${method.replace("/", "\\/")}"`, "g")) ?? []).length;
  return { client, mcp, stderr, received, errors };
}

describe("Google GenAI: mcpToTool(mcp.sdkClient) over stdio", () => {
  it("a result comes back through the CallableTool, with a record", async () => {
    const { mcp } = await overStdio("sdk-stdio-server.mjs", [], {});
    const tool = mcpToTool(mcp.sdkClient);
    const parts = await tool.callTool([{ name: "sleep", args: { ms: 5 } }]);
    expect(parts).toMatchObject([{ functionResponse: { name: "sleep", response: { content: [{ text: "slept 5" }] } } }]);
    expect(calls(mcp)).toMatchObject([{ status: "succeeded" }]);
  });

  it("GenAI sets no timeout and passes no signal: our idle timeout fires at its bound, the notification reaches the handler", async () => {
    const { mcp, stderr, errors } = await overStdio("sdk-stdio-server.mjs", [], { timeoutMs: 300 });
    const tool = mcpToTool(mcp.sdkClient);
    await tool.tool(); // lists the tools first, as a model turn does
    const t0 = performance.now();
    const error = await tool.callTool([{ name: "sleep", args: { ms: 10_000 } }]).catch((e: unknown) => e);
    const elapsed = performance.now() - t0;
    expect(error).toBeInstanceOf(CallTimeoutError); // GenAI passes it through as it is
    expect(elapsed).toBeGreaterThanOrEqual(295);
    expect(elapsed).toBeLessThan(300 + SLACK_MS);
    expect(await eventually(() => /ABORTED \d+/.test(stderr()))).toBe(true);
    expect(calls(mcp)).toMatchObject([{ status: "cancelled", cancel: { trigger: "timeout", mechanism: "notification" } }]);
    expect(mcp.pendingCount).toBe(0);
    expect(errors).toEqual([]);
  });

  it("GenAI's own timeout (mcpToTool(client, { timeout })) becomes our idle timeout", async () => {
    const { mcp } = await overStdio("sdk-stdio-server.mjs", [], {});
    const tool = mcpToTool(mcp.sdkClient, { timeout: 200 });
    const error = await tool.callTool([{ name: "sleep", args: { ms: 10_000 } }]).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "REQUEST_TIMEOUT", timeoutMs: 200 });
  });

  it("a late result is discarded and recorded; the tool is called once", async () => {
    const { mcp, received, errors } = await overStdio("scripted-server.mjs", ["--list-all"], { timeoutMs: 150 });
    const tool = mcpToTool(mcp.sdkClient);
    await expect(tool.callTool([{ name: "late", args: { ms: 400 } }])).rejects.toBeInstanceOf(CallTimeoutError);
    expect(await eventually(() => calls(mcp)[0]?.late.results === 1)).toBe(true);
    expect(calls(mcp)[0]).toMatchObject({ outcome: "late-result-discarded" });
    expect(received("tools/call")).toBe(1);
    expect(received("notifications/cancelled")).toBe(1);
    expect(errors).toEqual([]);
  });
});

describe("Google GenAI over Streamable HTTP: the user's connected v2 client, attachCancellation", () => {
  let server: TestServer;
  afterEach(async () => server?.stop());

  it("2026-07-28: our timeout closes the request's stream; the handler stops; no notification; not retried", async () => {
    server = await startV2();
    const client = new ClientV2({ name: "gemini-bot", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new StreamableHTTPClientTransport(server.url));
    cleanups.push(() => client.close());
    const mcp = attachCancellation(client, { timeoutMs: 250 });
    const tool = mcpToTool(client as never);
    const error = await tool.callTool([{ name: "slow", args: { ms: 5_000 } }]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    const record = calls(mcp)[0]!;
    expect(record.cancel).toMatchObject({ trigger: "timeout", mechanism: "stream-close" });
    expect(await eventually(() => sawDisconnect(seen(server, "tools/call").find((c) => c.http.id === record.requestId)))).toBe(true);
    expect(await eventually(() => seen(server, "tools/call").find((c) => c.http.id === record.requestId)?.aborted !== undefined)).toBe(
      true,
    );
    expect(seen(server, "notifications/cancelled")).toEqual([]);
    expect(seen(server, "tools/call")).toHaveLength(1);
    expect(mcp.pendingCount).toBe(0);
  });
});
