import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/index.js";
import { connectV1, connectV2 } from "./clients.js";
import { eventually } from "../helpers/timing.js";
import { startRaw } from "./servers.js";
import { otelRecorder } from "../../src/otel/index.js";
import { otelHarness } from "../otel/harness.js";

// A response read after the cancel closed its stream (rules 24, 27: a response travels on its
// request's own stream) had reached the client before the close: the server answered first, and
// the close stopped nothing. The record names only what reached the server (an outside tester's:
// a 2026-07-28 record said `stream-close` while the server saw its response end normally). The
// server here writes a progress notification and the result in one write; the caller aborts at
// the progress, so the result is read after the abort's close, from the same chunk. A raw server
// on 127.0.0.1, logging how each response ended.

interface Ended {
  method: string;
  finished: boolean;
}

async function rawServer() {
  const ended: Ended[] = [];
  const cancels: unknown[] = [];
  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const message = JSON.parse(body) as { id?: number | string; method: string; params?: Record<string, unknown> };
    res.on("close", () => ended.push({ method: message.method, finished: res.writableFinished }));
    const modern = message.method === "server/discover" || req.headers["mcp-protocol-version"] === "2026-07-28";
    const complete = modern ? { resultType: "complete" } : {};
    const json = (result: unknown): void => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
    };
    if (message.id === undefined) {
      if (message.method === "notifications/cancelled") cancels.push(message.params);
      res.writeHead(202).end();
      return;
    }
    const info = { capabilities: { tools: {} }, serverInfo: { name: "raw", version: "1" } };
    if (message.method === "initialize") {
      res.setHeader("mcp-session-id", "s1");
      json({ protocolVersion: (message.params as { protocolVersion: string }).protocolVersion, ...info });
      return;
    }
    if (message.method === "server/discover") {
      json({ ...complete, supportedVersions: ["2026-07-28"], ...info });
      return;
    }
    if (message.method === "tools/list") {
      json({ ...complete, tools: [{ name: "same-chunk", inputSchema: { type: "object" } }] });
      return;
    }
    if (message.method !== "tools/call") {
      json(complete);
      return;
    }
    const token = (message.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    const event = (m: unknown): string => `event: message\ndata: ${JSON.stringify(m)}\n\n`;
    setTimeout(() => {
      const progress = { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: 1 } };
      const result = { jsonrpc: "2.0", id: message.id, result: { ...complete, content: [{ type: "text", text: "done" }] } };
      res.end(event(progress) + event(result)); // one write, then the response ends
    }, 50);
  };
  const { url, stop } = await startRaw(handle);
  return { url, ended, cancels, stop };
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

describe("a response read after its stream's close: the close stopped nothing, and the record says so", () => {
  const cases = [
    ["v2 client pinned to 2026-07-28: stream-close becomes none, the response first", true],
    ["v1 client (2025-era): notification+stream-close becomes notification", false],
  ] as const;
  for (const [name, modern] of cases) {
    it(name, async () => {
      const server = await rawServer();
      cleanup.push(server.stop);
      const records: RunRecord[] = [];
      const onRecord = (record: RunRecord): void => void (record.method === "tools/call" && records.push(record));
      const otel = otelHarness();
      cleanup.push(() => otel.shutdown());
      const observer = otelRecorder({ tracer: otel.tracer, meter: otel.meter });
      const { mcp, close } = modern
        ? await connectV2(server.url, { pin: true, onRecord, observer })
        : await connectV1(server.url, { onRecord, observer });
      cleanup.push(close);
      const controller = new AbortController();
      const outcome = await mcp
        .callTool({ name: "same-chunk", arguments: {} }, { signal: controller.signal, onprogress: () => controller.abort() })
        .then(
          () => "resolved",
          (error: unknown) => (error as Error).name,
        );
      expect(outcome).toBe("CallCancelledError");
      expect(await eventually(() => records.at(-1)?.late.results === 1, 3_000)).toBe(true);
      // The server wrote its whole response: nothing it saw was a close of an answered request.
      expect(await eventually(() => server.ended.some((e) => e.method === "tools/call"), 3_000)).toBe(true);
      expect(server.ended.find((e) => e.method === "tools/call")?.finished).toBe(true);
      const last = records.at(-1)!;
      expect(last).toMatchObject({ status: "cancelled", outcome: "late-result-discarded" });
      if (modern) {
        expect(records[0]!.cancel?.mechanism).toBe("stream-close"); // what was done at the abort
        expect(last.cancel).toMatchObject({
          trigger: "aborted",
          mechanism: "none",
          sentAt: null,
          // The stream close, 2026-07-28's cancel, stopped nothing; no notification exists there.
          undelivered: { mechanism: "stream-close", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
        });
        expect(server.cancels).toHaveLength(0);
        // The trace says it too, in the same revision as the late result: a `cancel` follow-up
        // span beside the `late` one, its status unset (a response first is no failed delivery).
        const cancelSpan = otel.spans().find((span) => span.name === "cancel tools/call same-chunk");
        expect(cancelSpan?.attributes).toMatchObject({
          "mcp_cancellable.cancel.mechanism": "none",
          "mcp_cancellable.cancel.undelivered": "stream-close: not sent: the response arrived first (rule 7 in docs/spec-rules.md)",
        });
        expect(cancelSpan?.status.code).toBe(0);
        expect(otel.spans().some((span) => span.name === "late tools/call same-chunk")).toBe(true);
      } else {
        expect(last.cancel?.mechanism).toBe("notification");
      }
      expect(last.summary).toBe("cancelled (aborted), late result discarded");
      // One revision says it, with the late count (not one for each).
      expect(records.filter((r) => r.late.results === 1)).toHaveLength(1);
    });
  }
});
