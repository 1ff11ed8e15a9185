import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { afterEach, describe, expect, it } from "vitest";
import { attachCancellation, withCancellation } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { connectV1, connectV2 } from "../http/clients.js";
import { startV1, startV2 } from "../http/servers.js";

// Tool arguments that cannot be serialised (a BigInt, a cycle, a `toJSON` that throws) are the
// caller's bug, not a lost connection: on every transport the call fails with the serialiser's own
// error, as on the raw SDK, its record `failed`, `not-sent` (it keeps its request id), and the next
// call is answered. Outside testers': over stdio, then over any other transport, it was recorded
// and thrown as "never sent: the connection failed" (a ConnectionClosedError frameworks retry on).

const cycle: Record<string, unknown> = {};
cycle.self = cycle;
const VALUES: Array<[string, unknown]> = [
  ["a BigInt", 1n],
  ["a cycle", cycle],
  [
    "a toJSON that throws",
    {
      toJSON() {
        throw new Error("toJSON refused");
      },
    },
  ],
];

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

type CallTool = (params: { name: string; arguments: Record<string, unknown> }) => Promise<unknown>;

async function expectSerialiserErrors(
  callTool: CallTool,
  records: () => readonly RunRecord[],
  next = { name: "echo", arguments: {} },
): Promise<void> {
  for (const [, value] of VALUES) {
    const error = await callTool({ name: "echo", arguments: { value } }).then(
      () => undefined,
      (failure: unknown) => failure as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error!.name).not.toBe("ConnectionClosedError");
    expect(error!.message).not.toMatch(/connection/i);
  }
  await expect(callTool(next)).resolves.toMatchObject({ content: [{ type: "text" }] });
  const calls = records().filter((r) => r.method === "tools/call");
  expect(calls.map((r) => [r.status, r.outcome, r.requestId === null])).toEqual([
    ["failed", "not-sent", false],
    ["failed", "not-sent", false],
    ["failed", "not-sent", false],
    ["succeeded", "completed", false],
  ]);
}

/** A plain transport of one's own that serialises what it sends, as real transports do (an in-memory pair under it). */
function jsonTransport(): Transport {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = new McpServer({ name: "echo", version: "1.0.0" });
  server.registerTool("echo", {}, async () => ({ content: [{ type: "text", text: "echo" }] }));
  void server.connect(serverSide);
  cleanup.push(() => server.close());
  const transport: Transport = {
    start: () => clientSide.start(),
    close: () => clientSide.close(),
    send: async (message, options) => clientSide.send(JSON.parse(JSON.stringify(message)), options as never),
  };
  clientSide.onmessage = (message, extra) => transport.onmessage?.(message, extra);
  clientSide.onclose = () => transport.onclose?.();
  clientSide.onerror = (error) => transport.onerror?.(error);
  return transport;
}

describe("tool arguments that cannot be serialised: the serialiser's error, never sent, the connection fine", () => {
  it("a plain transport of one's own, through withCancellation", async () => {
    const client = new Client({ name: "t", version: "1.0.0" });
    const mcp = withCancellation(client, jsonTransport());
    await client.connect(mcp.transport);
    cleanup.push(() => client.close());
    await expectSerialiserErrors(
      (params) => mcp.callTool(params),
      () => mcp.records(),
    );
  });

  it("a plain transport of one's own, through attachCancellation", async () => {
    const client = new Client({ name: "t", version: "1.0.0" });
    await client.connect(jsonTransport());
    cleanup.push(() => client.close());
    const handle = attachCancellation(client);
    await expectSerialiserErrors(
      (params) => client.callTool(params),
      () => handle.records(),
    );
  });

  it("Streamable HTTP, the v1 client with cancellableFetch (2025-era)", async () => {
    const server = await startV1({ stateful: true });
    cleanup.push(() => server.stop());
    const { mcp, close } = await connectV1(server.url);
    cleanup.push(close);
    await expectSerialiserErrors(
      (params) => mcp.callTool(params),
      () => mcp.records(),
    );
  });

  it("Streamable HTTP, the v2 client pinned to 2026-07-28", async () => {
    const server = await startV2();
    cleanup.push(() => server.stop());
    const { mcp, close } = await connectV2(server.url, { pin: true });
    cleanup.push(close);
    await expectSerialiserErrors(
      (params) => mcp.callTool(params),
      () => mcp.records(),
      { name: "slow", arguments: { ms: 1 } },
    );
  });
});
