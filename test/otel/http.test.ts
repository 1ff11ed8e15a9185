// mcp-cancellable/otel over Streamable HTTP, with the real OpenTelemetry SDK and a real server
// (the v2 SDK's createMcpHandler on 127.0.0.1): the v2 client on 2026-07-28 (the cancel closes
// the stream) and on the 2025-era (the notification, then the stream close).
import { afterEach, beforeAll, afterAll, describe, expect, it } from "vitest";
import { SpanStatusCode } from "@opentelemetry/api";
import { otelRecorder } from "../../src/otel/index.js";
import { connectV1, connectV2 } from "../http/clients.js";
import { startV1 } from "../http/servers.js";
import { eventually } from "../helpers/stdio.js";
// @ts-expect-error: a plain .mjs fixture without types
import { startServer } from "../fixtures/runtime/server.mjs";
import { otelHarness } from "./harness.js";

interface RuntimeServer {
  url: URL;
  events: Array<{ kind: string; rpc?: string; id?: unknown; writableFinished?: boolean }>;
  stop(): Promise<void>;
}

let server: RuntimeServer;
beforeAll(async () => {
  server = (await startServer()) as RuntimeServer;
});
afterAll(() => server.stop());

/** How many tool handlers the shared server has started (its events accumulate over the tests). */
const handlerStarts = () => server.events.filter((e) => e.kind === "handler-start").length;

const toClose: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of toClose.splice(0)) await close();
});

async function setUp(pin: boolean) {
  const otel = otelHarness();
  const connection = await connectV2(server.url, { pin, observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter }) });
  toClose.push(async () => {
    await connection.close();
    await otel.shutdown();
  });
  return { ...connection, otel };
}

const http = () => ({
  "network.transport": "tcp",
  "network.protocol.name": "http",
  "server.address": "127.0.0.1",
  "server.port": Number(server.url.port),
});

describe.each([
  // 2026-07-28: the server answers an unsupported method with an HTTP error the v2 SDK raises as
  // its own SdkError (a string code, no JSON-RPC code); 2025: a JSON-RPC error.
  { era: "2026-07-28", pin: true, mechanism: "stream-close", serverError: "CLIENT_HTTP_NOT_IMPLEMENTED", rpcCode: false },
  { era: "2025-11-25", pin: false, mechanism: "notification+stream-close", serverError: "-32601", rpcCode: true },
])("otel over Streamable HTTP, $era", ({ era, pin, mechanism, serverError, rpcCode }) => {
  const tool = (name: string) => ({
    "mcp.method.name": "tools/call",
    "gen_ai.tool.name": name,
    "gen_ai.operation.name": "execute_tool",
    "mcp.protocol.version": era,
    ...http(),
  });

  it("a succeeded call: exact span and point", async () => {
    const { mcp, otel } = await setUp(pin);
    await mcp.callTool({ name: "echo", arguments: { text: "x" } });
    const [span] = otel.spans();
    expect(span).toMatchObject({ name: "tools/call echo", kind: "CLIENT", events: [], status: { code: SpanStatusCode.UNSET } });
    const [record] = mcp.records();
    expect(span!.attributes).toEqual({
      ...tool("echo"),
      "jsonrpc.request.id": String(record!.requestId),
      "mcp_cancellable.call.status": "succeeded",
      "mcp_cancellable.call.outcome": "completed",
      "mcp_cancellable.progress.count": 0,
    });
    const { points } = await otel.duration();
    expect(points.map((p) => [p.attributes, p.count])).toEqual([[tool("echo"), 1]]);
  });

  it("a tool error: error.type tool_error", async () => {
    const { mcp, otel } = await setUp(pin);
    await mcp.callTool({ name: "tool-error" });
    const [span] = otel.spans();
    expect(span!.attributes["error.type"]).toBe("tool_error");
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("a server error (a method the server does not offer): error.type is its code", async () => {
    const { mcp, otel } = await setUp(pin);
    await expect(mcp.request({ method: "prompts/get", params: { name: "nope" } })).rejects.toThrow();
    const [span] = otel.spans();
    expect(span!.name).toBe("prompts/get nope");
    expect(span!.attributes).toMatchObject({
      "mcp.method.name": "prompts/get",
      "gen_ai.prompt.name": "nope",
      "mcp_cancellable.call.status": "failed",
    });
    expect(span!.attributes["error.type"]).toBe(serverError);
    expect(span!.attributes["rpc.response.status_code"]).toBe(rpcCode ? serverError : undefined);
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it(`a timeout: error.type timeout, the cancel event says ${mechanism}, the server sees the stream close`, async () => {
    const { mcp, otel } = await setUp(pin);
    await expect(mcp.callTool({ name: "slow", arguments: { ms: 3_000 } }, { timeoutMs: 150 })).rejects.toMatchObject({
      code: "REQUEST_TIMEOUT",
    });
    const [span] = otel.spans();
    const [record] = mcp.records();
    expect(span!.attributes).toEqual({
      ...tool("slow"),
      "jsonrpc.request.id": String(record!.requestId),
      "error.type": "timeout",
      "mcp_cancellable.call.status": "cancelled",
      "mcp_cancellable.call.outcome": "unverified",
      "mcp_cancellable.cancel.trigger": "timeout",
      "mcp_cancellable.cancel.mechanism": mechanism,
      "mcp_cancellable.progress.count": 0,
    });
    expect(span!.events).toEqual([
      {
        name: "mcp_cancellable.cancel",
        attributes: {
          "mcp_cancellable.cancel.trigger": "timeout",
          "mcp_cancellable.cancel.mechanism": mechanism,
          "mcp_cancellable.cancel.reason": "Request timed out after 150 ms",
        },
      },
    ]);
    const closed = () =>
      server.events.some((e) => e.kind === "close" && e.rpc === "tools/call" && e.id === record!.requestId && e.writableFinished === false);
    expect(await eventually(closed, 3_000)).toBe(true);
    expect((await otel.duration()).points.map((p) => p.attributes)).toEqual([{ ...tool("slow"), "error.type": "timeout" }]);
  });

  it("the maximum total timeout, then a verification: max_total_timeout on the call span, a verify follow-up span", async () => {
    const { mcp, otel } = await setUp(pin);
    const error = (await mcp
      .callTool({ name: "slow", arguments: { ms: 3_000 } }, { timeoutMs: 5_000, maxTotalTimeoutMs: 150, verify: () => "applied" })
      .catch((e: unknown) => e)) as { code: string; verification: Promise<unknown> };
    expect(error.code).toBe("MAX_TOTAL_TIMEOUT");
    await error.verification;
    const [span, verify] = otel.spans();
    expect(span!.attributes).toMatchObject({ "error.type": "max_total_timeout", "mcp_cancellable.cancel.mechanism": mechanism });
    expect(verify).toMatchObject({ name: "verify tools/call slow", kind: "INTERNAL", traceId: span!.traceId, parentSpanId: span!.spanId });
    expect(verify!.attributes).toMatchObject({ ...tool("slow"), "mcp_cancellable.call.outcome": "verified-applied" });
  });

  it("client.close() under a call: connection_closed, the call cancelled by the era's mechanism first", async () => {
    const { mcp, otel, client } = await setUp(pin);
    const starts = handlerStarts();
    const call = mcp.callTool({ name: "slow", arguments: { ms: 3_000 } });
    call.catch(() => {}); // it rejects during the close, before it is awaited below
    // The call in flight: the server's handler started (a fixed 100 ms could pass before the
    // request was out on a loaded machine, and the record would say never sent).
    expect(await eventually(() => handlerStarts() > starts, 10_000)).toBe(true);
    await client.close();
    await expect(call).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });
    const [span] = otel.spans();
    expect(span!.attributes).toMatchObject({
      "error.type": "connection_closed",
      "mcp_cancellable.cancel.trigger": "connection-closed",
      "mcp_cancellable.cancel.mechanism": mechanism,
    });
    expect((await otel.duration()).points.map((p) => p.attributes["error.type"])).toEqual(["connection_closed"]);
  });

  it("an abort: error.type cancelled", async () => {
    const { mcp, otel } = await setUp(pin);
    const controller = new AbortController();
    const starts = handlerStarts();
    const call = mcp.callTool({ name: "slow", arguments: { ms: 3_000 } }, { signal: controller.signal });
    call.catch(() => {});
    // Aborted in flight: once the server's handler started, not after a fixed 100 ms.
    expect(await eventually(() => handlerStarts() > starts, 10_000)).toBe(true);
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: "CANCELLED" });
    const [span] = otel.spans();
    expect(span!.attributes).toMatchObject({ "error.type": "cancelled", "mcp_cancellable.cancel.mechanism": mechanism });
  });
});

describe("otel over Streamable HTTP with the v1 client (a stateful 2025 server with session ids)", () => {
  it("mcp.session.id is the session, the address and version come from the v1 transport", async () => {
    const { startV1 } = await import("../http/servers.js");
    const { connectV1 } = await import("../http/clients.js");
    const v1 = await startV1({ stateful: true });
    const otel = otelHarness();
    const connection = await connectV1(v1.url, { observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter }) });
    try {
      await connection.mcp.callTool({ name: "slow", arguments: { ms: 1 } });
      const [span] = otel.spans();
      expect(connection.transport.sessionId).toEqual(expect.any(String));
      expect(span!.attributes).toMatchObject({
        "mcp.method.name": "tools/call",
        "mcp.session.id": connection.transport.sessionId,
        "mcp.protocol.version": connection.transport.protocolVersion,
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "server.address": "127.0.0.1",
        "server.port": Number(v1.url.port),
        "mcp_cancellable.call.outcome": "completed",
      });
      // The session id is a span attribute only: the metric stays low-cardinality.
      expect((await otel.duration()).points[0]!.attributes).not.toHaveProperty("mcp.session.id");
    } finally {
      await connection.close();
      await otel.shutdown();
      await v1.stop();
    }
  });
});

describe("otel over Streamable HTTP, 2025-era: what the adapter learns after the span ended", () => {
  it("a notification the server never answers: a `cancel` follow-up span, status ERROR, naming what did not get through", async () => {
    const v1 = await startV1({ stateful: false, holdCancelMs: 20_000 });
    const otel = otelHarness();
    const { mcp, close } = await connectV1(
      v1.url,
      { observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter }) },
      { notificationTimeoutMs: 300 },
    );
    toClose.push(async () => {
      await close();
      await otel.shutdown();
      await v1.stop();
    });
    const controller = new AbortController();
    const call = mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal });
    call.catch(() => {});
    expect(await eventually(() => v1.events.some((e) => e.kind === "handler-start"))).toBe(true);
    controller.abort();
    await call.catch(() => {});
    // notificationTimeoutMs (300 ms) after the notification went; 10 s for a loaded machine.
    expect(await eventually(() => mcp.records().at(-1)!.cancel!.undelivered !== null, 10_000)).toBe(true);
    const spans = otel.spans();
    const callSpan = spans.find((s) => s.name === "tools/call slow")!;
    expect(callSpan.attributes["mcp_cancellable.cancel.mechanism"]).toBe("notification+stream-close");
    const followUps = spans.filter((s) => s.name === "cancel tools/call slow");
    // One says what did not get through. On a loaded machine the request's response head may not
    // have been read at the abort: the notification then waits for it and leaves after the settle,
    // and that revision gets a follow-up of its own first (when it left: status unset, nothing
    // undelivered), as docs/observability.md says.
    const [span, ...more] = followUps.filter((s) => s.attributes["mcp_cancellable.cancel.undelivered"] !== undefined);
    expect(more).toEqual([]);
    const left = followUps.filter((s) => s !== span);
    expect(left.length).toBeLessThanOrEqual(1);
    for (const went of left) {
      expect(went.parentSpanId).toBe(callSpan.spanId);
      expect(went.status.code).toBe(SpanStatusCode.UNSET);
      expect(went.attributes["mcp_cancellable.record.revision"]).toBeLessThan(
        span!.attributes["mcp_cancellable.record.revision"] as number,
      );
    }
    const error = "sent (its body written), but no answer came within notificationTimeoutMs (300 ms)";
    expect(span!.parentSpanId).toBe(callSpan.spanId);
    expect(span!.attributes).toMatchObject({
      "mcp_cancellable.cancel.mechanism": "notification+stream-close",
      "mcp_cancellable.cancel.undelivered": `notification: ${error}`,
      "mcp_cancellable.record.revision": mcp.records().at(-1)!.revision,
    });
    expect(span!.events).toEqual([
      {
        name: "mcp_cancellable.cancel_delivery",
        attributes: { "mcp_cancellable.cancel.mechanism": "notification+stream-close", "mcp_cancellable.cancel.undelivered": error },
      },
    ]);
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: `cancel sent, unanswered: ${error}` });
  });
});
