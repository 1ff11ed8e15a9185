import { afterEach, describe, expect, it } from "vitest";
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import type { DynamicStructuredTool } from "@langchain/core/tools";
import { AIMessage } from "@langchain/core/messages";
import type { ToolMessage } from "@langchain/core/messages";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { PlainErrorToolNode } from "../../examples/langgraph-tool-node.js";
import { attachCancellation } from "../../src/index.js";
import type { CancellationOptions, RunRecord } from "../../src/index.js";
import { eventually, fixture } from "../helpers/stdio.js";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { z } from "zod";
import { closedUnfinished, seen, sleep, startV1, startV2, type TestServer } from "../http/servers.js";
import { SLACK_MS } from "../helpers/timing.js";

// @langchain/mcp-adapters 1.1.4's MultiServerMCPClient creates, connects and owns one v1 SDK
// Client per server (behind a Proxy of its own). The bot reaches each with
// `attachCancellation(await multi.getClient(name))` after `initializeConnections()`; the tools
// from `multi.getTools()` call that client's `callTool(params, undefined, { timeout, signal })`,
// which now goes through the library. A real v1 SDK server over stdio; no language model.

const calls = (mcp: { records(): RunRecord[] }): RunRecord[] => mcp.records().filter((r) => r.method === "tools/call");

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

async function multiServer(config: { defaultToolTimeout?: number } = {}, options: CancellationOptions = {}) {
  const multi = new MultiServerMCPClient({
    ...config,
    mcpServers: {
      reports: { transport: "stdio", command: process.execPath, args: [fixture("sdk-stdio-server.mjs")], stderr: "pipe" },
    },
  });
  cleanups.push(() => multi.close());
  await multi.initializeConnections();
  const client = await multi.getClient("reports");
  const mcp = attachCancellation(client!, options);
  const chunks: string[] = [];
  (mcp.transport as { stderr?: NodeJS.ReadableStream | null }).stderr?.on("data", (chunk: Buffer) => chunks.push(chunk.toString("utf8")));
  const tools = await multi.getTools();
  const tool = (name: string) => tools.find((t) => t.name.endsWith(name)) as DynamicStructuredTool;
  return { multi, client: client!, mcp, tool, stderr: () => chunks.join("") };
}

describe("LangChain JS: MultiServerMCPClient, its own clients reached with attachCancellation", () => {
  it("attaching to the framework's client (a Proxy) keeps its transport; twice gives the same handle", async () => {
    const { multi, client, mcp } = await multiServer();
    expect(attachCancellation(client)).toBe(mcp);
    expect(attachCancellation((await multi.getClient("reports"))!)).toBe(mcp);
    expect((client as unknown as { transport: unknown }).transport).toBe(mcp.transport);
  });

  it("a run's abort (config.signal) reaches the server as one notification; LangChain rejects; one tools/call, recorded cancelled", async () => {
    const { tool, mcp, stderr } = await multiServer();
    const controller = new AbortController();
    const call = tool("sleep").invoke({ ms: 10_000 }, { signal: controller.signal });
    // the request is in the server's handler (a cancel that beats the dispatch is ignored: rule 10)
    expect(await eventually(() => mcp.pendingCount === 1 && /STARTED /.test(stderr()), 5_000)).toBe(true);
    const t0 = performance.now();
    controller.abort(new Error("user pressed stop"));
    const error = await call.catch((e: unknown) => e);
    expect(performance.now() - t0).toBeLessThan(SLACK_MS);
    expect(error).toBeInstanceOf(Error);
    expect(await eventually(() => /ABORTED \d+/.test(stderr()), 5_000)).toBe(true);
    expect(calls(mcp)).toMatchObject([
      { name: "sleep", status: "cancelled", cancel: { trigger: "aborted", mechanism: "notification" }, outcome: "unverified" },
    ]);
    expect(mcp.pendingCount).toBe(0);
  });

  it("the framework's defaultToolTimeout holds at its bound; exactly one cancel reaches the server's handler", async () => {
    const { tool, mcp, stderr } = await multiServer({ defaultToolTimeout: 300 });
    const t0 = performance.now();
    const error = await tool("sleep")
      .invoke({ ms: 10_000 })
      .catch((e: unknown) => e);
    const elapsed = performance.now() - t0;
    expect(error).toBeInstanceOf(Error);
    expect(elapsed).toBeGreaterThanOrEqual(295);
    expect(elapsed).toBeLessThan(300 + SLACK_MS);
    expect(await eventually(() => /ABORTED \d+/.test(stderr()), 5_000)).toBe(true);
    // LangChain passes its timeout both as the SDK's `timeout` (our idle timeout) and as an
    // AbortSignal.timeout of the same length: which fires first is a timer race, so the trigger
    // is not asserted here (langchain.test.ts pins each with one of the two alone).
    const [call, ...more] = calls(mcp);
    expect(more).toEqual([]);
    expect(call).toMatchObject({ status: "cancelled", cancel: { mechanism: "notification" } });
    expect(stderr().match(/ABORTED/g)).toHaveLength(1);
  });

  it("no timeout from the framework: the attach's own idle timeout holds (the SDK's would be 60 s)", async () => {
    const { tool, mcp, stderr } = await multiServer({}, { timeoutMs: 250 });
    const t0 = performance.now();
    const error = await tool("sleep")
      .invoke({ ms: 10_000 })
      .catch((e: unknown) => e);
    expect(String(error)).toMatch(/timed out after 250 ms/);
    expect(performance.now() - t0).toBeLessThan(250 + SLACK_MS);
    expect(await eventually(() => /ABORTED \d+/.test(stderr()), 5_000)).toBe(true);
    expect(calls(mcp)).toMatchObject([{ status: "cancelled", cancel: { trigger: "timeout" } }]);
  });
});

// Over Streamable HTTP LangChain builds the v1 transport itself, without cancellableFetch(): the
// attach gives its requests a per-request fetch (src/client/attach.ts, the transport's `_fetch`
// through src/sdk/private.ts), so a cancel closes the request's stream as well as POSTing the
// notification (a v1 client speaks a 2025-era revision to both servers). Its SSE fallback (the
// deprecated HTTP+SSE transport, answers on one shared stream) can only get the notification.
describe("LangChain JS: MultiServerMCPClient over Streamable HTTP and its SSE fallback", () => {
  async function overHttp(url: URL, options?: CancellationOptions) {
    const multi = new MultiServerMCPClient({ mcpServers: { reports: { transport: "http", url: url.href } } });
    cleanups.push(() => multi.close());
    await multi.initializeConnections();
    const mcp = attachCancellation((await multi.getClient("reports"))!, options);
    const tools = await multi.getTools();
    return { mcp, tool: (name: string) => tools.find((t) => t.name.endsWith(name)) as DynamicStructuredTool };
  }

  for (const [label, start] of [
    ["v1 stateful server (2025-era, a session)", () => startV1({ stateful: true })],
    ["v2 server, stateless (a 2025-era revision: the notification may land elsewhere, the stream close is what stops it)", () => startV2()],
  ] as const) {
    it(`${label}: a run's abort POSTs the notification and closes the request's stream; recorded notification+stream-close; sent once`, async () => {
      const server: TestServer = await start();
      cleanups.push(() => server.stop());
      const { mcp, tool } = await overHttp(server.url);
      const controller = new AbortController();
      const call = tool("slow").invoke({ ms: 5_000 }, { signal: controller.signal });
      expect(await eventually(() => seen(server, "tools/call")[0]?.start !== undefined, 5_000)).toBe(true);
      controller.abort(new Error("user pressed stop"));
      expect(await call.catch((e: unknown) => e)).toBeInstanceOf(Error);
      expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[0]), 3_000)).toBe(true);
      expect(await eventually(() => seen(server, "tools/call")[0]?.aborted !== undefined, 3_000)).toBe(true);
      expect(calls(mcp)).toMatchObject([{ status: "cancelled", cancel: { trigger: "aborted", mechanism: "notification+stream-close" } }]);
      expect(await eventually(() => seen(server, "notifications/cancelled").length > 0)).toBe(true); // its POST may land after the close
      expect(seen(server, "notifications/cancelled")).toHaveLength(1);
      await sleep(300);
      expect(seen(server, "tools/call")).toHaveLength(1);
      expect(mcp.pendingCount).toBe(0);
    });
  }

  for (const [label, start] of [
    ["v1 stateful server (2025-era)", () => startV1({ stateful: true })],
    ["v2 server, stateless", () => startV2()],
  ] as const) {
    it(`${label}: LangChain's own tool call is verified by the attach's verifiers, no bypass; with awaitVerification its ToolException carries the verified outcome; sent once`, async () => {
      const server: TestServer = await start();
      cleanups.push(() => server.stop());
      const reads: Array<{ name: string; arguments: unknown }> = [];
      const { mcp, tool } = await overHttp(server.url, {
        timeoutMs: 300,
        awaitVerification: true,
        verifiers: {
          slow: ({ name, arguments: args, signal }) => {
            reads.push({ name, arguments: args });
            expect(signal.aborted).toBe(false);
            return "not-applied";
          },
        },
      });
      const error = (await tool("slow")
        .invoke({ ms: 5_000 })
        .catch((e: unknown) => e)) as Error;
      // LangChain raises an isError result as its ToolException: the verified outcome is its text.
      expect(error.name).toBe("ToolException");
      expect(error.message).toMatch(
        /^MCP tool 'slow' on server 'reports' returned an error: The tool call "slow" was cancelled after 0\.\d s \(timed out\); a check afterwards found that its effect was not applied \(not applied as of 0\.\d s\), though a server that goes on with the work could still apply it: check again before calling it again\.$/,
      );
      expect(reads).toEqual([{ name: "slow", arguments: { ms: 5_000 } }]);
      expect(calls(mcp)).toMatchObject([
        { status: "cancelled", outcome: "verified-not-applied", cancel: { trigger: "timeout", mechanism: "notification+stream-close" } },
      ]);
      await sleep(300);
      expect(seen(server, "tools/call")).toHaveLength(1);
    });
  }

  it("the SSE fallback (an HTTP+SSE server): the abort is the POSTed notification, the handler stops; recorded notification", async () => {
    const aborted: string[] = [];
    const started: string[] = [];
    const transports = new Map<string, SSEServerTransport>();
    const web = http.createServer(async (req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (req.method === "GET" && url.pathname === "/mcp") {
        const transport = new SSEServerTransport("/messages", res);
        transports.set(transport.sessionId, transport);
        const mcpServer = new McpServer({ name: "sse", version: "1.0.0" });
        mcpServer.registerTool("slow", { inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
          started.push(String(extra.requestId));
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, ms);
            extra.signal.addEventListener("abort", () => {
              clearTimeout(timer);
              aborted.push(String(extra.requestId));
              resolve();
            });
          });
          return { content: [{ type: "text", text: "done" }] };
        });
        await mcpServer.connect(transport);
        return;
      }
      if (req.method === "POST" && url.pathname === "/messages") {
        await transports.get(url.searchParams.get("sessionId") ?? "")?.handlePostMessage(req, res);
        return;
      }
      res.writeHead(405).end(); // no Streamable HTTP here: LangChain falls back to SSE
    });
    await new Promise<void>((resolve) => web.listen(0, "127.0.0.1", resolve));
    cleanups.push(
      () =>
        new Promise((resolve) => {
          web.closeAllConnections();
          web.close(resolve);
        }),
    );
    const { port } = web.address() as AddressInfo;
    const { mcp, tool } = await overHttp(new URL(`http://127.0.0.1:${port}/mcp`));
    expect(mcp.transport.constructor.name).toBe("SSEClientTransport"); // LangChain fell back
    const controller = new AbortController();
    const call = tool("slow").invoke({ ms: 5_000 }, { signal: controller.signal });
    expect(await eventually(() => mcp.pendingCount === 1, 5_000)).toBe(true);
    // The handler has started (a cancel that beats the dispatch is ignored: rule 10); a fixed
    // 100 ms could end first on a loaded machine.
    expect(await eventually(() => started.length === 1, 10_000)).toBe(true);
    controller.abort();
    expect(await call.catch((e: unknown) => e)).toBeInstanceOf(Error);
    expect(await eventually(() => aborted.length === 1, 3_000)).toBe(true);
    expect(calls(mcp)).toMatchObject([{ status: "cancelled", cancel: { trigger: "aborted", mechanism: "notification" } }]);
  });
});

// What a LangGraph agent's model is told of a failed tool call: its prebuilt ToolNode (the tool
// runner of createReactAgent) turns a thrown error into `Error: <message>\n Please fix your
// mistakes.`, an invitation to call a side-effecting tool again. The library's message says
// whether the call ran; to hand the model that alone, run the ToolNode with handleToolErrors:
// false and turn the error into the tool message yourself (examples/langgraph-tool-node.ts, shown
// in docs/frameworks.md).
describe("LangChain JS: what the model is told (LangGraph's ToolNode, no language model)", () => {
  const toolCall = (name: string, args: Record<string, unknown>) =>
    new AIMessage({ content: "", tool_calls: [{ id: "call_1", name, args, type: "tool_call" }] });

  it("by default the model reads our words, then 'Please fix your mistakes.'; with the errors turned into tool messages, our words alone", async () => {
    const { tool, mcp } = await multiServer({}, { timeoutMs: 250 });
    const sleepTool = tool("sleep");
    const plain = (await new ToolNode([sleepTool]).invoke({ messages: [toolCall(sleepTool.name, { ms: 10_000 })] })) as {
      messages: ToolMessage[];
    };
    const told = String(plain.messages[0]!.content);
    expect(told).toMatch(
      /^Error: Error calling tool sleep: CallTimeoutError: tools\/call timed out after 250 ms \(the idle timeout, timeoutMs; request id \d+\) and was cancelled; whether it ran is unknown \(outcome unverified\): check before calling it again\n Please fix your mistakes\.$/,
    );
    const ours = (await new PlainErrorToolNode([sleepTool]).invoke({ messages: [toolCall(sleepTool.name, { ms: 10_000 })] })) as {
      messages: ToolMessage[];
    };
    expect(String(ours.messages[0]!.content)).toMatch(/^Error calling tool sleep: CallTimeoutError: .*check before calling it again$/);
    expect(String(ours.messages[0]!.content)).not.toMatch(/fix your mistakes/);
    expect(calls(mcp)).toHaveLength(2); // one tools/call each, none retried
  });
});
