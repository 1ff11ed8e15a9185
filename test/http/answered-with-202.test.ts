import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/index.js";
import { connectV1, connectV2 } from "./clients.js";
import { eventually } from "../helpers/timing.js";
import { startRaw } from "./servers.js";

// C01 on 2025-era Streamable HTTP: a server that ignores the cancel answers the POSTed
// notification 202 and, in the same tick, writes the result on the request's stream and ends it.
// Both arrive together; the result is read from the stream before the stream is closed, so the
// record says what the wire showed: the server answered, the result was discarded (rules 8, 40).
// An outside tester's: the stream was closed in the 202's own microtasks, the result left unread
// in its socket, and the record said `notification+stream-close`, outcome unverified, while the
// server had finished the work and seen its response end normally. A raw server on 127.0.0.1.

async function rawServer() {
  const ended: Array<{ method: string; finished: boolean }> = [];
  const cancels: unknown[] = [];
  const held = new Map<number | string, ServerResponse>();
  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const message = JSON.parse(body) as { id?: number | string; method: string; params?: Record<string, unknown> };
    res.on("close", () => ended.push({ method: message.method, finished: res.writableFinished }));
    if (message.method === "notifications/cancelled") {
      cancels.push(message.params);
      res.writeHead(202).end();
      const id = message.params?.requestId as number | string;
      const stream = held.get(id);
      held.delete(id);
      const result = { jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "done anyway" }] } };
      stream?.end(`event: message\ndata: ${JSON.stringify(result)}\n\n`); // the same tick as the 202
      return;
    }
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const json = (result: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(200, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
    };
    if (message.method === "initialize") {
      const info = { capabilities: { tools: {} }, serverInfo: { name: "raw", version: "1" } };
      json({ protocolVersion: (message.params as { protocolVersion: string }).protocolVersion, ...info }, { "mcp-session-id": "s1" });
      return;
    }
    if (message.method !== "tools/call") {
      json({});
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    held.set(message.id, res);
  };
  const { url, stop } = await startRaw(handle);
  return { url, ended, cancels, held, stop };
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

describe("C01 2025-era HTTP: the result written in the same tick as the 202 is read, and discarded, before the stream closes", () => {
  for (const [line, door] of [
    ["v1", "abort"],
    ["v2 (2025-era)", "abort"],
    ["v1", "close"],
    ["v2 (2025-era)", "close"],
  ] as const) {
    // The client's close() cancels its pending calls the same way; it closes the transport a turn
    // after their notifications' answers too (an outside tester's: the close cut the result off).
    it(`${line}, ${door === "abort" ? "the caller's abort" : "the client's close()"}`, async () => {
      const server = await rawServer();
      cleanup.push(server.stop);
      const records: RunRecord[] = [];
      const onRecord = (record: RunRecord): void => void (record.method === "tools/call" && records.push(record));
      const { mcp, errors, close } = line === "v1" ? await connectV1(server.url, { onRecord }) : await connectV2(server.url, { onRecord });
      cleanup.push(close);
      const controller = new AbortController();
      let settled = 0;
      const outcome = mcp.callTool({ name: "slow", arguments: {} }, { signal: controller.signal }).then(
        () => {
          settled++;
          return "resolved";
        },
        (error: unknown) => {
          settled++;
          return (error as Error).name;
        },
      );
      expect(await eventually(() => server.held.size === 1, 3_000)).toBe(true);
      if (door === "abort") controller.abort();
      else await close();
      expect(await outcome).toBe(door === "abort" ? "CallCancelledError" : "ConnectionClosedError");
      expect(await eventually(() => records.at(-1)?.late.results === 1, 3_000)).toBe(true);
      expect(await eventually(() => server.ended.some((e) => e.method === "tools/call"), 3_000)).toBe(true);
      expect(server.ended.find((e) => e.method === "tools/call")?.finished).toBe(true);
      expect(server.cancels).toHaveLength(1);
      const last = records.at(-1)!;
      expect(last).toMatchObject({ status: "cancelled", outcome: "late-result-discarded" });
      const trigger = door === "abort" ? "aborted" : "connection-closed";
      expect(last.cancel).toMatchObject({ trigger, mechanism: "notification", undelivered: null });
      expect(last.summary).toBe(`cancelled (${trigger}), late result discarded`);
      expect(settled).toBe(1);
      expect(errors).toEqual([]);
      expect(mcp.pendingCount).toBe(0);
    });
  }
});
