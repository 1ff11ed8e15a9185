// 2026-07-28 multi round-trip (an `input_required` result): the v2 client pinned to 2026-07-28
// asks its elicitation handler (a person) and sends the tools/call again with the answers, under
// a new id. Through the library that next round goes out bound to the same call, the wait for the
// person pauses the idle timeout (bounded by clientWaitTimeoutMs), and the call settles once, with
// the final result (an outside tester's: the next round was dropped and the call hung with no
// timer). A real v2 server (createMcpHandler, stateless) on 127.0.0.1.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { acceptedContent, createMcpHandler, inputRequired, McpServer } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { afterEach, describe, expect, it } from "vitest";
import * as z from "zod";
import { isCallTimeoutError, withCancellation } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { until } from "../helpers/timing.js";

const schema = { type: "object" as const, properties: { reply: { type: "string" as const } } };
const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
});

async function serve(): Promise<{ url: URL; rounds: unknown[] }> {
  const rounds: unknown[] = [];
  const node = toNodeHandler(
    createMcpHandler(
      () => {
        const server = new McpServer({ name: "mrtr", version: "1.0.0" });
        server.registerTool("confirm", { inputSchema: z.object({}) }, async (_args, ctx) => {
          const got = acceptedContent(ctx.mcpReq.inputResponses, "q");
          if (got === undefined) {
            return inputRequired({ inputRequests: { q: inputRequired.elicit({ message: "sure?", requestedSchema: schema }) } });
          }
          return { content: [{ type: "text", text: `confirmed ${JSON.stringify(got)}` }] };
        });
        // Works 600 ms in each round, with progress every 150 ms (1 to 4, each round anew: each round is a request).
        server.registerTool("steps", { inputSchema: z.object({}) }, async (_args, ctx) => {
          const token = ctx.mcpReq._meta?.progressToken;
          for (let step = 1; step <= 4; step++) {
            await new Promise((resolve) => setTimeout(resolve, 150));
            if (token !== undefined)
              await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: step, total: 4 } });
          }
          const got = acceptedContent(ctx.mcpReq.inputResponses, "q");
          if (got === undefined) {
            return inputRequired({ inputRequests: { q: inputRequired.elicit({ message: "sure?", requestedSchema: schema }) } });
          }
          return { content: [{ type: "text", text: "stepped" }] };
        });
        return server;
      },
      { legacy: "stateless", onerror: () => {} },
    ),
  );
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const parsed = raw === "" ? undefined : (JSON.parse(raw) as { method?: string; params?: { inputResponses?: unknown } });
    if (parsed?.method === "tools/call") rounds.push(parsed.params?.inputResponses ?? null);
    await node(req as Parameters<typeof node>[0], res, parsed);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  open.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), rounds };
}

async function connect(
  url: URL,
  personMs: number,
  options: { timeoutMs?: number; clientWaitTimeoutMs?: number; resetTimeoutOnProgress?: boolean },
) {
  const client = new Client(
    { name: "mrtr-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const handlerSignals: AbortSignal[] = [];
  client.setRequestHandler("elicitation/create", async (_request, ctx) => {
    handlerSignals.push(ctx.mcpReq.signal);
    await new Promise((resolve) => setTimeout(resolve, personMs));
    return { action: "accept", content: { reply: "yes" } };
  });
  const records: RunRecord[] = [];
  const mcp = withCancellation(client, streamableHttpCancellation(new StreamableHTTPClientTransport(url)), {
    ...options,
    onRecord: (record) => void records.push(record),
  });
  await client.connect(mcp.transport);
  open.push(() => client.close());
  return { mcp, records, handlerSignals, close: () => client.close() };
}

describe("2026-07-28 multi round-trip through the library", () => {
  it("the next round goes out with the answers and the call settles once with the final result; the person's wait does not count as the server's silence", async () => {
    const { url, rounds } = await serve();
    // The idle timeout (300 ms) is shorter than the person takes (600 ms): paused meanwhile.
    const { mcp, records, handlerSignals } = await connect(url, 600, { timeoutMs: 300, clientWaitTimeoutMs: 5_000 });
    const result = await mcp.callTool({ name: "confirm", arguments: {} });
    expect(handlerSignals.map((signal) => signal.aborted)).toEqual([false]); // answered: the person's form was never withdrawn
    expect(result.content).toEqual([{ type: "text", text: 'confirmed {"reply":"yes"}' }]);
    expect(rounds).toHaveLength(2);
    expect(rounds[0]).toBeNull();
    expect(rounds[1]).toMatchObject({ q: { action: "accept" } });
    expect(records.filter((r) => r.method === "tools/call").map((r) => r.status)).toEqual(["succeeded"]);
    expect(mcp.pendingCount).toBe(0);
  });

  it("each round's progress resets the idle timeout: a round is a request of its own, its progress starts again at 1 (rule 21; an outside tester's)", async () => {
    const { url, rounds } = await serve();
    const { mcp, records } = await connect(url, 50, { timeoutMs: 400, resetTimeoutOnProgress: true });
    const result = await mcp.callTool({ name: "steps", arguments: {} });
    expect(result.content).toEqual([{ type: "text", text: "stepped" }]);
    expect(rounds).toHaveLength(2);
    expect(records.find((r) => r.method === "tools/call")).toMatchObject({ status: "succeeded", progress: { count: 8 } });
  });

  it("a person slower than clientWaitTimeoutMs: the call times out naming it, and the next round is never sent", async () => {
    const { url, rounds } = await serve();
    const { mcp, records, handlerSignals } = await connect(url, 1_000, { timeoutMs: 5_000, clientWaitTimeoutMs: 300 });
    const error = await mcp.callTool({ name: "confirm", arguments: {} }).catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    // The client's own handler (a person's form) learns the call is over: its signal aborts with
    // the call's error, where it ran on to the end before.
    await until(() => handlerSignals[0]?.aborted === true, 1_000);
    expect(handlerSignals).toHaveLength(1);
    expect(handlerSignals[0]!.reason).toMatchObject({ limitName: "clientWaitTimeoutMs" });
    expect(error).toMatchObject({ code: "REQUEST_TIMEOUT", limitName: "clientWaitTimeoutMs", timeoutMs: 300 });
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // the person answers meanwhile
    expect(rounds).toHaveLength(1);
    expect(records.filter((r) => r.method === "tools/call")).toHaveLength(1);
    expect(records.find((r) => r.method === "tools/call")).toMatchObject({ status: "cancelled", cancel: { trigger: "timeout" } });
    expect(mcp.pendingCount).toBe(0);
  });

  it("client.close() while the person answers: the call ends as the client's close (not a lost connection), the handler's signal aborts, no next round", async () => {
    const { url, rounds } = await serve();
    const { mcp, records, handlerSignals, close } = await connect(url, 1_000, { timeoutMs: 5_000, clientWaitTimeoutMs: 5_000 });
    const call = mcp.callTool({ name: "confirm", arguments: {} }).catch((e: unknown) => e);
    await until(() => handlerSignals.length === 1);
    await close();
    const error = await call;
    expect(error).toMatchObject({ code: "CONNECTION_CLOSED", message: expect.stringMatching(/when the client closed its connection/) });
    expect(records.find((r) => r.method === "tools/call")).toMatchObject({
      cancel: { trigger: "connection-closed", reason: "The client closed the connection", mechanism: "none" },
    });
    expect(handlerSignals[0]!.aborted).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // the person answers meanwhile
    expect(rounds).toHaveLength(1);
  });
});
