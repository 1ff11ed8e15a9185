import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { loadMcpTools } from "@langchain/mcp-adapters";
import type { DynamicStructuredTool } from "@langchain/core/tools";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as ClientV2, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { attachCancellation, isCallTimeoutError, withCancellation } from "../../src/index.js";
import type { CancellationOptions, RunRecord } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { eventually, fixture } from "../helpers/stdio.js";
import { sawDisconnect, seen, startV2 } from "../http/servers.js";
import type { TestServer } from "../http/servers.js";
import { SLACK_MS } from "../helpers/timing.js";

// @langchain/mcp-adapters 1.1.4 with @langchain/core, no language model: the tools that
// loadMcpTools builds are invoked the way an agent invokes them (tool.invoke(args, config)),
// over a real MCP server. loadMcpTools takes mcp.sdkClient (withCancellation) or the framework's
// own client after attachCancellation; it calls client.callTool(params, undefined,
// { timeout, signal, onprogress }).

/** The tools/call records (loadMcpTools' tools/list has its own). */
const calls = (mcp: { records(): RunRecord[] }): RunRecord[] => mcp.records().filter((r) => r.method === "tools/call");

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

async function overStdio(script: string, args: string[], options: CancellationOptions) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [fixture(script), ...args], stderr: "pipe" });
  const chunks: string[] = [];
  transport.stderr?.on("data", (chunk: Buffer) => chunks.push(chunk.toString("utf8")));
  const client = new ClientV1({ name: "langchain-bot", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  const mcp = withCancellation(client, stdioCancellation(transport), options);
  await client.connect(mcp.transport);
  cleanups.push(() => client.close());
  const tools = await loadMcpTools("reports", mcp.sdkClient);
  const tool = (name: string) => tools.find((t) => t.name === name) as DynamicStructuredTool;
  const stderr = () => chunks.join("");
  const received = (method: string) => (stderr().match(new RegExp(`RECV .*"method":"${method.replace("/", "\\/")}"`, "g")) ?? []).length;
  return { client, mcp, tool, stderr, received, errors };
}

describe("LangChain JS: loadMcpTools(serverName, mcp.sdkClient) over stdio", () => {
  it("a run's abort (config.signal) reaches the server as one notification; LangChain rejects with its ToolException; not retried", async () => {
    const { mcp, tool, stderr, errors } = await overStdio("sdk-stdio-server.mjs", [], {});
    const controller = new AbortController();
    const call = tool("sleep").invoke({ ms: 10_000 }, { signal: controller.signal });
    // the request is in the server's handler (a cancel that beats the dispatch is ignored: rule 10)
    expect(await eventually(() => mcp.pendingCount === 1 && /STARTED /.test(stderr()), 5_000)).toBe(true);
    const reason = new Error("user pressed stop");
    controller.abort(reason);
    const t0 = performance.now();
    const error = await call.catch((e: unknown) => e);
    expect(performance.now() - t0).toBeLessThan(SLACK_MS);
    // LangChain's own error kind, naming what happened (it does not keep the cause).
    expect((error as Error).name).toBe("ToolException");
    expect((error as Error).message).toContain("CallCancelledError: tools/call was cancelled by the caller");
    expect(await eventually(() => /ABORTED \d+/.test(stderr()), 5_000)).toBe(true);
    expect(calls(mcp)).toMatchObject([{ name: "sleep", status: "cancelled", cancel: { trigger: "aborted", mechanism: "notification" } }]);
    expect(calls(mcp)).toHaveLength(1); // nothing retried
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0); // nothing left on the run's signal
    expect(mcp.pendingCount).toBe(0);
    expect(errors).toEqual([]);
  });

  it("no timeout from LangChain: our idle timeout fires at its bound; LangChain surfaces it as a ToolException", async () => {
    const { mcp, tool, stderr } = await overStdio("sdk-stdio-server.mjs", [], { timeoutMs: 300 });
    const t0 = performance.now();
    const error = await tool("sleep")
      .invoke({ ms: 10_000 })
      .catch((e: unknown) => e);
    const elapsed = performance.now() - t0;
    expect(elapsed).toBeGreaterThanOrEqual(295);
    expect(elapsed).toBeLessThan(300 + SLACK_MS);
    expect((error as Error).name).toBe("ToolException");
    expect((error as Error).message).toContain("timed out after 300 ms");
    expect(calls(mcp)).toMatchObject([{ status: "cancelled", cancel: { trigger: "timeout", mechanism: "notification" } }]);
    expect(await eventually(() => /ABORTED \d+/.test(stderr()))).toBe(true);
  });

  it("LangChain's own timeout (loadMcpTools defaultToolTimeout) reaches us as the SDK timeout and as a signal: one cancel", async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [fixture("sdk-stdio-server.mjs")], stderr: "pipe" });
    const client = new ClientV1({ name: "langchain-bot", version: "1.0.0" });
    const mcp = withCancellation(client, stdioCancellation(transport));
    await client.connect(mcp.transport);
    cleanups.push(() => client.close());
    const tools = await loadMcpTools("reports", mcp.sdkClient, { defaultToolTimeout: 250 });
    const t0 = performance.now();
    const error = await (tools.find((t) => t.name === "sleep") as DynamicStructuredTool).invoke({ ms: 10_000 }).catch((e: unknown) => e);
    expect(performance.now() - t0).toBeLessThan(250 + SLACK_MS);
    expect(error).toBeInstanceOf(Error);
    await eventually(() => mcp.records().some((r) => r.method === "tools/call"));
    const calls = mcp.records().filter((r) => r.method === "tools/call");
    expect(calls).toHaveLength(1);
    // LangChain turns its timeout into an AbortSignal.timeout as well, of the same length: which
    // of the two fires first is a timer race, and either way the record says timeout (issue 28,
    // item 4; the two cases below hand LangChain's call only one of them). Exactly one cancel.
    expect(calls[0]!.cancel).toMatchObject({ trigger: "timeout", mechanism: "notification" });
    expect((error as Error).message).toMatch(/CallTimeoutError: tools\/call timed out after \d+ ms/);
  });

  it("LangChain's `timeout` is a limit from the start (its AbortSignal.timeout: progress never extends it); `metadata.timeoutMs` alone is our idle timeout, which progress resets (an outside tester's: the docs called `timeout` the idle timeout)", async () => {
    const { mcp, tool } = await overStdio("sdk-stdio-server.mjs", [], { resetTimeoutOnProgress: true, maxTotalTimeoutMs: 1_200 });
    // Progress every 100 ms: an idle timeout of 300 ms never fires.
    const t0 = performance.now();
    const viaTimeout = await tool("ticker")
      .invoke({ every: 100 }, { timeout: 300 })
      .catch((e: unknown) => e);
    expect(performance.now() - t0).toBeLessThan(300 + SLACK_MS);
    expect((viaTimeout as Error).message).toMatch(/timed out after \d+ ms/);
    const t1 = performance.now();
    const viaMetadata = await tool("ticker")
      .invoke({ every: 100 }, { metadata: { timeoutMs: 300 } })
      .catch((e: unknown) => e);
    expect(performance.now() - t1).toBeGreaterThanOrEqual(1_200 - 5); // our maximum total timeout ended it
    expect((viaMetadata as Error).message).toContain("exceeded its maximum total timeout of 1200 ms");
    const [first, second] = calls(mcp);
    expect(first!.cancel).toMatchObject({ trigger: "timeout" });
    expect(first!.progress!.count).toBeLessThanOrEqual(3);
    expect(second!.cancel).toMatchObject({ trigger: "max-total-timeout" }); // never the idle timeout: progress reset it
    expect(second!.progress!.count).toBeGreaterThanOrEqual(5);
  });

  /** A view of `mcp.sdkClient` whose callTool drops one of the SDK options LangChain passes. */
  const dropping = (sdkClient: object, drop: "timeout" | "signal") =>
    new Proxy(sdkClient, {
      get(target, key) {
        const value: unknown = Reflect.get(target, key, target);
        if (key !== "callTool") return typeof value === "function" ? value.bind(target) : value;
        return (params: unknown, schema: unknown, options: Record<string, unknown> = {}) => {
          const { [drop]: _dropped, ...rest } = options;
          return (value as (...args: unknown[]) => Promise<unknown>).call(target, params, schema, rest);
        };
      },
    });

  for (const [kept, trigger] of [
    ["timeout", "timeout"],
    ["signal", "timeout"], // LangChain's AbortSignal.timeout: a timeout, never a user abort (issue 28, item 4)
  ] as const) {
    it(`LangChain's defaultToolTimeout, its ${kept} alone reaching us: the cancel's trigger is ${trigger}, one cancel`, async () => {
      const transport = new StdioClientTransport({ command: process.execPath, args: [fixture("sdk-stdio-server.mjs")], stderr: "pipe" });
      const client = new ClientV1({ name: "langchain-bot", version: "1.0.0" });
      const mcp = withCancellation(client, stdioCancellation(transport));
      await client.connect(mcp.transport);
      cleanups.push(() => client.close());
      const view = dropping(mcp.sdkClient, kept === "timeout" ? "signal" : "timeout") as typeof mcp.sdkClient;
      const tools = await loadMcpTools("reports", view, { defaultToolTimeout: 250 });
      const t0 = performance.now();
      const error = await (tools.find((t) => t.name === "sleep") as DynamicStructuredTool).invoke({ ms: 10_000 }).catch((e: unknown) => e);
      expect(performance.now() - t0).toBeLessThan(250 + SLACK_MS);
      expect(error).toBeInstanceOf(Error);
      expect(await eventually(() => calls(mcp).length === 1)).toBe(true);
      expect(calls(mcp)).toHaveLength(1);
      expect(calls(mcp)[0]!.cancel).toMatchObject({ trigger, mechanism: "notification" });
    });
  }

  it("a late result (a server that ignores the cancel) is discarded and recorded; the tool is not called twice", async () => {
    const { mcp, tool, received, errors } = await overStdio("scripted-server.mjs", ["--list-all"], { timeoutMs: 150 });
    const error = await tool("late")
      .invoke({ ms: 400 })
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe("ToolException");
    expect(await eventually(() => calls(mcp)[0]?.late.results === 1)).toBe(true);
    expect(calls(mcp)[0]).toMatchObject({ outcome: "late-result-discarded", summary: "cancelled (timeout), late result discarded" });
    expect(received("tools/call")).toBe(1);
    expect(received("notifications/cancelled")).toBe(1);
    expect(errors).toEqual([]); // no "unknown message ID"
  });
});

describe("LangChain JS over Streamable HTTP: a framework-owned v2 client, attachCancellation", () => {
  let server: TestServer;
  afterEach(async () => server?.stop());

  it("2026-07-28: the run's abort closes the request's stream, the handler stops, no notification", async () => {
    server = await startV2();
    const client = new ClientV2({ name: "langchain-bot", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new StreamableHTTPClientTransport(server.url));
    cleanups.push(() => client.close());
    const mcp = attachCancellation(client, { timeoutMs: 5_000 });
    const tools = await loadMcpTools("reports", mcp.sdkClient as never);
    const slow = tools.find((t) => t.name === "slow") as DynamicStructuredTool;
    const controller = new AbortController();
    const call = slow.invoke({ ms: 5_000 }, { signal: controller.signal });
    expect(await eventually(() => server.events.some((e) => e.kind === "handler-start"))).toBe(true);
    controller.abort();
    await expect(call).rejects.toThrow();
    const record = mcp.records().find((r) => r.method === "tools/call")!;
    expect(record.cancel).toMatchObject({ trigger: "aborted", mechanism: "stream-close" });
    expect(await eventually(() => sawDisconnect(seen(server, "tools/call").find((c) => c.http.id === record.requestId)))).toBe(true);
    expect(await eventually(() => seen(server, "tools/call").find((c) => c.http.id === record.requestId)?.aborted !== undefined)).toBe(
      true,
    );
    expect(seen(server, "notifications/cancelled")).toEqual([]);
    expect(seen(server, "tools/call")).toHaveLength(1); // not retried
    expect(mcp.pendingCount).toBe(0);
    // Nothing leaks: no response left open on the server for the cancelled call.
    expect(await eventually(() => server.openResponses().every((e) => e.rpc !== "tools/call"))).toBe(true);
  });

  it("a timeout through the attached client is our CallTimeoutError inside LangChain's ToolException", async () => {
    server = await startV2();
    const client = new ClientV2({ name: "langchain-bot", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new StreamableHTTPClientTransport(server.url));
    cleanups.push(() => client.close());
    const mcp = attachCancellation(client, { timeoutMs: 200 });
    const tools = await loadMcpTools("reports", client as never);
    const error = await (tools.find((t) => t.name === "slow") as DynamicStructuredTool).invoke({ ms: 5_000 }).catch((e: unknown) => e);
    expect((error as Error).message).toContain("timed out after 200 ms");
    const record = mcp.records().find((r) => r.method === "tools/call")!;
    expect(record.cancel).toMatchObject({ trigger: "timeout", mechanism: "stream-close" });
    expect(isCallTimeoutError(error)).toBe(false); // LangChain wraps it: its own error kind
  });
});
