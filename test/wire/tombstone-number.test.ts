import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { describe, expect, it } from "vitest";
import { withCancellation } from "../../src/index.js";
import type { CancellationOptions } from "../../src/index.js";
import { flush } from "../helpers/peer.js";

// An answered call whose record no hook reads (no `onRecord`, no observer) leaves a tombstone
// holding its call number, not its record (src/wire/wire.ts `settled`): a late message for it is
// still dropped before the SDK (rule 8), and revises its record while the ledger (`records()`)
// holds it. With `onRecord`, the tombstone keeps the record and every revision is reported.

async function connect(options: CancellationOptions) {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const ids: number[] = [];
  serverTransport.onmessage = (raw) => {
    const message = raw as { id?: number; method?: string; params?: { protocolVersion?: string } };
    if (message.method === "initialize") {
      void serverTransport.send({
        jsonrpc: "2.0",
        id: message.id!,
        result: { protocolVersion: message.params!.protocolVersion!, capabilities: { tools: {} }, serverInfo: { name: "p", version: "1" } },
      });
      return;
    }
    if (message.method !== "tools/call") return;
    ids.push(message.id!);
    void serverTransport.send({ jsonrpc: "2.0", id: message.id!, result: { content: [] } });
  };
  await serverTransport.start();
  const client = new Client({ name: "t", version: "1" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  const mcp = withCancellation(client, clientTransport, options);
  await client.connect(mcp.transport);
  const late = async (id: number) => {
    await serverTransport.send({ jsonrpc: "2.0", id, result: { content: [] } });
    await flush();
  };
  return { mcp, ids, errors, late };
}

describe("the tombstone of an answered call whose record only the ledger reads", () => {
  it("a late result revises the record the ledger holds, and is dropped unseen for one it no longer holds; the SDK sees neither", async () => {
    const { mcp, ids, errors, late } = await connect({ maxRecords: 2 });
    for (let i = 0; i < 3; i++) await mcp.callTool({ name: "x" });
    expect(mcp.tombstoneCount).toBe(3);
    await late(ids[2]!); // the newest: in the ledger
    await late(ids[0]!); // the oldest: out of the ledger, still a tombstone
    const records = mcp.records();
    expect(records.map((record) => record.late)).toEqual([
      { results: 0, errors: 0, progress: 0 },
      { results: 1, errors: 0, progress: 0 },
    ]);
    expect(records[1]).toMatchObject({ status: "succeeded", revision: 1 });
    expect(errors).toEqual([]); // not an unknown id for the SDK
  });

  it("with onRecord: the record itself is kept, and a revision is reported for a call the ledger no longer holds", async () => {
    const seen: Array<{ callId: number; revision: number; results: number }> = [];
    const { mcp, ids, errors, late } = await connect({
      maxRecords: 1,
      onRecord: (record) => void seen.push({ callId: record.callId, revision: record.revision, results: record.late.results }),
    });
    for (let i = 0; i < 2; i++) await mcp.callTool({ name: "x" });
    await late(ids[0]!);
    expect(seen.map(({ revision, results }) => [revision, results])).toEqual([
      [0, 0],
      [0, 0],
      [1, 1],
    ]);
    expect(seen[2]!.callId).toBe(seen[0]!.callId);
    expect(errors).toEqual([]);
  });
});
