// mcp-cancellable/otel over stdio, with the real OpenTelemetry SDK (in-memory exporters) and a
// real child process (the scripted server, for results after a cancel and error shapes a real
// SDK server does not produce on demand): exact span names, kinds, attributes, status, events
// and metric points for each outcome.
import { afterEach, describe, expect, it } from "vitest";
import { SpanStatusCode, context, propagation, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { otelRecorder } from "../../src/otel/index.js";
import { InvalidOptionError } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import type { OtelRecorderOptions } from "../../src/otel/index.js";
import { eventually, spawnServer } from "../helpers/stdio.js";
import { StackContextManager, otelHarness } from "./harness.js";

const toClose: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of toClose.splice(0)) await close();
  propagation.disable();
  context.disable();
});

async function setUp(recorder: OtelRecorderOptions = {}) {
  const otel = otelHarness();
  const server = await spawnServer("scripted-server.mjs", {
    observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter, ...recorder }),
  });
  toClose.push(async () => {
    await server.client.close();
    await otel.shutdown();
  });
  return { ...server, otel };
}

/** The attributes every stdio tools/call span and point carry. */
const tool = (name: string) => ({
  "mcp.method.name": "tools/call",
  "gen_ai.tool.name": name,
  "gen_ai.operation.name": "execute_tool",
  "network.transport": "pipe",
  // The v1 client keeps the negotiated version nowhere on stdio: the library read it from the
  // initialize answer as it passed (the scripted server echoes the client's latest version).
  "mcp.protocol.version": "2025-11-25",
});

/**
 * The record's changes before the one a span is for: 1 when its timer-fired stdio line left 1 ms
 * or more after the settle (its check phase came late on a busy loop: `sentAt` was revised to when
 * it left), else 0 (it left as the settle recorded it).
 */
function revisionsBefore(record: RunRecord): number {
  return Date.parse(record.cancel!.sentAt!) > Date.parse(record.settledAt) ? 1 : 0;
}

describe("otel over stdio: one CLIENT span and one duration point per call", () => {
  it("a tool name of 5,000 characters: the span's name and gen_ai.tool.name are cut as the record's name (1,000 characters, ending in …)", async () => {
    const { mcp, otel } = await setUp();
    const long = "t".repeat(5_000);
    await mcp.callTool({ name: long, arguments: {} }, { timeoutMs: 500 }).catch(() => {}); // the server answers no such tool
    const [span] = otel.spans();
    const shown = mcp.records().find((r) => r.method === "tools/call")!.name!;
    expect(shown).toHaveLength(1_000);
    expect(shown.endsWith("…")).toBe(true);
    expect(span!.name).toBe(`tools/call ${shown}`);
    expect(span!.attributes["gen_ai.tool.name"]).toBe(shown);
  });

  it("a succeeded call: name, kind, attributes, status UNSET, no events; the point has no error.type", async () => {
    const { mcp, otel } = await setUp();
    await mcp.callTool({ name: "echo", arguments: { secret: "s3cr3t" } });
    const [span, ...rest] = otel.spans();
    expect(rest).toEqual([]);
    expect(span).toMatchObject({ name: "tools/call echo", kind: "CLIENT", parentSpanId: undefined, events: [] });
    expect(span!.attributes).toEqual({
      ...tool("echo"),
      "jsonrpc.request.id": "1",
      "mcp_cancellable.call.status": "succeeded",
      "mcp_cancellable.call.outcome": "completed",
      "mcp_cancellable.progress.count": 0,
    });
    expect(span!.status).toEqual({ code: SpanStatusCode.UNSET });
    expect(JSON.stringify(span)).not.toContain("s3cr3t"); // arguments stay out unless opted in
    const { descriptor, points } = await otel.duration();
    expect(descriptor).toMatchObject({ name: "mcp.client.operation.duration", unit: "s" });
    expect(points).toHaveLength(1);
    expect(points[0]!.attributes).toEqual(tool("echo"));
    expect(points[0]!.count).toBe(1);
    expect(points[0]!.boundaries).toEqual([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]);
    // The point is the record's elapsed time, in seconds, within the span's own duration.
    const [record] = mcp.records();
    expect(points[0]!.sum!).toBeCloseTo(record!.elapsedMs / 1000, 6);
    expect(points[0]!.sum! * 1000).toBeLessThanOrEqual(span!.endMs - span!.startMs + 1);
  });

  it("a server error: error.type and rpc.response.status_code are the JSON-RPC code, status ERROR with the server's message", async () => {
    const { mcp, otel } = await setUp();
    await expect(mcp.callTool({ name: "fail" })).rejects.toThrow(/Invalid arguments/);
    const [span] = otel.spans();
    expect(span!.attributes).toEqual({
      ...tool("fail"),
      "jsonrpc.request.id": "1",
      "error.type": "-32602",
      "rpc.response.status_code": "-32602",
      "mcp_cancellable.call.status": "failed",
      "mcp_cancellable.call.outcome": "error",
      "mcp_cancellable.progress.count": 0,
    });
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: "Invalid arguments for tool fail" });
    const { points } = await otel.duration();
    expect(points.map((p) => p.attributes)).toEqual([{ ...tool("fail"), "error.type": "-32602", "rpc.response.status_code": "-32602" }]);
  });

  it("a tool error (isError): error.type tool_error, status ERROR, the record still says succeeded", async () => {
    const { mcp, otel } = await setUp();
    const result = await mcp.callTool({ name: "tool-error" });
    expect(result.isError).toBe(true);
    const [span] = otel.spans();
    expect(span!.attributes).toMatchObject({ "error.type": "tool_error", "mcp_cancellable.call.status": "succeeded" });
    expect(span!.attributes).not.toHaveProperty("rpc.response.status_code");
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    const { points } = await otel.duration();
    expect(points.map((p) => p.attributes)).toEqual([{ ...tool("tool-error"), "error.type": "tool_error" }]);
  });

  it("an idle timeout, then the late result: error.type timeout, the cancel event with its mechanism, and a follow-up span for the discarded result", async () => {
    const { mcp, otel, cancelsReceived } = await setUp();
    const error = await mcp.callTool({ name: "late", arguments: { ms: 250 } }, { timeoutMs: 40 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "REQUEST_TIMEOUT" });
    const [span] = otel.spans();
    expect(span).toMatchObject({ name: "tools/call late", kind: "CLIENT" });
    expect(span!.attributes).toEqual({
      ...tool("late"),
      "jsonrpc.request.id": "1",
      "error.type": "timeout",
      "mcp_cancellable.call.status": "cancelled",
      "mcp_cancellable.call.outcome": "unverified",
      "mcp_cancellable.cancel.trigger": "timeout",
      "mcp_cancellable.cancel.mechanism": "notification",
      "mcp_cancellable.progress.count": 0,
    });
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: "Request timed out after 40 ms" });
    expect(span!.events).toEqual([
      {
        name: "mcp_cancellable.cancel",
        attributes: {
          "mcp_cancellable.cancel.trigger": "timeout",
          "mcp_cancellable.cancel.mechanism": "notification",
          "mcp_cancellable.cancel.reason": "Request timed out after 40 ms",
        },
      },
    ]);
    expect(await eventually(() => cancelsReceived().length === 1)).toBe(true);
    // The late result: one follow-up span in the same trace, child of the call span.
    expect(await eventually(() => otel.spans().length === 2, 3_000)).toBe(true);
    const late = otel.spans()[1]!;
    expect(late).toMatchObject({ name: "late tools/call late", kind: "INTERNAL", traceId: span!.traceId, parentSpanId: span!.spanId });
    const record = mcp.records()[0]!;
    expect(record.revision).toBe(revisionsBefore(record) + 1);
    expect(late.attributes).toEqual({
      ...tool("late"),
      "jsonrpc.request.id": "1",
      "mcp_cancellable.call.status": "cancelled",
      "mcp_cancellable.call.outcome": "late-result-discarded",
      "mcp_cancellable.cancel.mechanism": "notification", // what went out, as the record says now
      "mcp_cancellable.record.revision": record.revision, // the record's own: the late result's change, after the line's
      "mcp_cancellable.late.results": 1,
      "mcp_cancellable.late.errors": 0,
      "mcp_cancellable.late.progress": 0,
    });
    expect(late.events).toEqual([{ name: "mcp_cancellable.late_message", attributes: { "mcp_cancellable.late.kind": "result" } }]);
    expect(late.startMs).toBeGreaterThanOrEqual(span!.endMs);
    // One point, for the call itself; the late result adds none.
    const { points } = await otel.duration();
    expect(points.map((p) => [p.attributes, p.count])).toEqual([[{ ...tool("late"), "error.type": "timeout" }, 1]]);
  });

  it("the maximum total timeout: error.type max_total_timeout", async () => {
    const { mcp, otel } = await setUp();
    await expect(mcp.callTool({ name: "silent" }, { timeoutMs: 5_000, maxTotalTimeoutMs: 40 })).rejects.toMatchObject({
      code: "MAX_TOTAL_TIMEOUT",
    });
    const [span] = otel.spans();
    expect(span!.attributes).toMatchObject({
      "error.type": "max_total_timeout",
      "mcp_cancellable.cancel.trigger": "max-total-timeout",
      "mcp_cancellable.cancel.mechanism": "notification",
    });
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: "Request exceeded its maximum total timeout of 40 ms" });
    expect((await otel.duration()).points[0]!.attributes["error.type"]).toBe("max_total_timeout");
  });

  it("the caller's abort: error.type cancelled, the reason on the event", async () => {
    const { mcp, otel } = await setUp();
    const controller = new AbortController();
    const call = mcp.callTool({ name: "silent" }, { signal: controller.signal, reason: "user pressed stop" });
    setTimeout(() => controller.abort(), 20);
    await expect(call).rejects.toMatchObject({ code: "CANCELLED" });
    const [span] = otel.spans();
    expect(span!.attributes).toMatchObject({ "error.type": "cancelled", "mcp_cancellable.cancel.trigger": "aborted" });
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: "user pressed stop" });
    expect(span!.events[0]!.attributes["mcp_cancellable.cancel.reason"]).toBe("user pressed stop");
  });

  it("a signal aborted before the call: the span still exists, outcome not-sent, mechanism none, no request id", async () => {
    const { mcp, otel } = await setUp();
    await expect(mcp.callTool({ name: "echo" }, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: "CANCELLED" });
    const [span] = otel.spans();
    expect(span!.attributes).toMatchObject({ "mcp_cancellable.call.outcome": "not-sent", "mcp_cancellable.cancel.mechanism": "none" });
    expect(span!.attributes).not.toHaveProperty("jsonrpc.request.id");
  });

  it("client.close() under a call: error.type connection_closed, the call cancelled with a notification first", async () => {
    const { mcp, otel, client } = await setUp();
    const call = mcp.callTool({ name: "silent" });
    call.catch(() => {}); // it rejects during the close, before it is awaited below
    await new Promise((resolve) => setTimeout(resolve, 20));
    await client.close();
    await expect(call).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });
    const [span] = otel.spans();
    expect(span!.attributes).toMatchObject({
      "error.type": "connection_closed",
      "mcp_cancellable.cancel.trigger": "connection-closed",
      "mcp_cancellable.cancel.mechanism": "notification",
    });
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("the server going away under a call: error.type connection_closed, mechanism none (nothing left to send on)", async () => {
    const { mcp, otel } = await setUp();
    const call = mcp.callTool({ name: "silent" });
    call.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 20));
    await mcp.callTool({ name: "crash" }).catch(() => {});
    await expect(call).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });
    const span = otel.spans().find((s) => s.attributes["gen_ai.tool.name"] === "silent");
    expect(span!.attributes).toMatchObject({
      "error.type": "connection_closed",
      "mcp_cancellable.cancel.trigger": "connection-closed",
      "mcp_cancellable.cancel.mechanism": "none",
    });
  });

  it("a verification that lands after the span ended: a `verify` follow-up span covering the read, with the new outcome", async () => {
    const { mcp, otel } = await setUp();
    const error = (await mcp
      .callTool({ name: "silent" }, { timeoutMs: 30, verify: () => new Promise((r) => setTimeout(() => r("not-applied"), 30)) })
      .catch((e: unknown) => e)) as { verification: Promise<unknown> };
    expect(otel.spans()).toHaveLength(1); // the call span ended when the caller was released
    await error.verification;
    const [span, verify] = otel.spans();
    const record = mcp.records()[0]!;
    expect(record.revision).toBe(revisionsBefore(record) + 1);
    expect(verify).toMatchObject({
      name: "verify tools/call silent",
      kind: "INTERNAL",
      traceId: span!.traceId,
      parentSpanId: span!.spanId,
    });
    expect(verify!.attributes).toMatchObject({
      "mcp_cancellable.call.outcome": "verified-not-applied",
      "mcp_cancellable.record.revision": record.revision, // the record's own: the verification's change, after the line's
    });
    expect(verify!.attributes).not.toHaveProperty("error.type");
    expect(verify!.status).toEqual({ code: SpanStatusCode.UNSET });
    expect(verify!.events).toEqual([
      { name: "mcp_cancellable.verification", attributes: { "mcp_cancellable.call.outcome": "verified-not-applied" } },
    ]);
    expect(verify!.endMs - verify!.startMs).toBeGreaterThanOrEqual(20); // the read itself, not an instant
    expect(verify!.startMs).toBeGreaterThanOrEqual(span!.endMs - 1);
  });

  it("a verification that fails: status ERROR, error.type verify_failed, the message", async () => {
    const { mcp, otel } = await setUp();
    const error = (await mcp
      .callTool({ name: "silent" }, { timeoutMs: 30, verify: () => Promise.reject(new Error("store unreachable")) })
      .catch((e: unknown) => e)) as { verification: Promise<unknown> };
    await error.verification;
    const verify = otel.spans()[1]!;
    expect(verify.attributes).toMatchObject({ "error.type": "verify_failed", "mcp_cancellable.call.outcome": "verify-failed" });
    expect(verify.status).toEqual({ code: SpanStatusCode.ERROR, message: "store unreachable" });
  });

  it("late progress after a cancel: one follow-up span per discarded message", async () => {
    const { mcp, otel } = await setUp();
    // Cancelled once the first progress is in (not at a limit it may beat on a loaded machine).
    const controller = new AbortController();
    await expect(
      mcp.callTool(
        { name: "progress", arguments: { every: 15 } },
        { timeoutMs: 5_000, signal: controller.signal, onprogress: () => queueMicrotask(() => controller.abort()) },
      ),
    ).rejects.toThrow();
    expect(await eventually(() => otel.spans().length >= 3, 3_000)).toBe(true);
    const [call, ...late] = otel.spans();
    expect(call!.attributes["mcp_cancellable.progress.count"]).toBeGreaterThan(0);
    for (const [i, span] of late.entries()) {
      expect(span.name).toBe("late tools/call progress");
      expect(span.events).toEqual([{ name: "mcp_cancellable.late_message", attributes: { "mcp_cancellable.late.kind": "progress" } }]);
      expect(span.attributes["mcp_cancellable.late.progress"]).toBe(i + 1);
      expect(span.attributes["mcp_cancellable.call.outcome"]).toBe("unverified"); // progress is no result
    }
  });
});

describe("otel over stdio: what goes to the server, and opt-ins", () => {
  it("trace context goes into params._meta only when asked, and names the call span", async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const plain = await setUp();
    await plain.mcp.callTool({ name: "echo" });
    expect(await eventually(() => plain.received().some((m) => m.method === "tools/call"))).toBe(true);
    const sentPlain = plain.received().find((m) => m.method === "tools/call")!;
    expect(sentPlain.params?._meta ?? {}).not.toHaveProperty("traceparent");

    const asked = await setUp({ propagateContext: true });
    await asked.mcp.callTool({ name: "echo", _meta: { mine: "kept" } });
    expect(await eventually(() => asked.received().some((m) => m.method === "tools/call"))).toBe(true);
    const sent = asked.received().find((m) => m.method === "tools/call")!;
    const [span] = asked.otel.spans();
    expect(sent.params?._meta).toMatchObject({ mine: "kept", traceparent: `00-${span!.traceId}-${span!.spanId}-01` });
  });

  it("arguments and results go on the span only when opted in", async () => {
    const { mcp, otel } = await setUp({ captureArguments: true, captureResults: true });
    await mcp.callTool({ name: "echo", arguments: { q: 1 } });
    const [span] = otel.spans();
    expect(span!.attributes["gen_ai.tool.call.arguments"]).toBe('{"q":1}');
    expect(JSON.parse(span!.attributes["gen_ai.tool.call.result"] as string)).toEqual({ content: [{ type: "text", text: "echo 1" }] });
  });

  it("inside an outer execute_tool span for the same tool: the MCP attributes go on it, no span of ours, the outer owner ends it", async () => {
    context.setGlobalContextManager(new StackContextManager());
    const { mcp, otel } = await setUp();
    const outer = otel.tracer.startSpan("execute_tool echo", {
      attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "echo" },
    });
    await context.with(trace.setSpan(context.active(), outer), () => mcp.callTool({ name: "echo" }));
    expect(otel.spans()).toEqual([]);
    outer.end();
    const [span] = otel.spans();
    expect(span!.name).toBe("execute_tool echo");
    expect(span!.attributes).toMatchObject({ ...tool("echo"), "jsonrpc.request.id": "1", "mcp_cancellable.call.outcome": "completed" });
    // Another tool's span is not borrowed: ours is its child.
    const other = otel.tracer.startSpan("execute_tool other", {
      attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "other" },
    });
    await context.with(trace.setSpan(context.active(), other), () => mcp.callTool({ name: "echo" }));
    other.end();
    const ours = otel.spans().find((s) => s.name === "tools/call echo")!;
    expect(ours.parentSpanId).toBe(other.spanContext().spanId);
    expect((await otel.duration()).points[0]!.count).toBe(2);
  });

  it("an outer execute_tool span its owner ends before the call settles: the outcome goes on a span of ours under it, not on the ended one (an outside tester's: the trace lost the cancel)", async () => {
    context.setGlobalContextManager(new StackContextManager());
    const { mcp, otel, received } = await setUp();
    const outer = otel.tracer.startSpan("execute_tool late", {
      attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "late" },
    });
    const controller = new AbortController();
    const call = context.with(trace.setSpan(context.active(), outer), () =>
      mcp.callTool({ name: "late", arguments: { ms: 2_000 } }, { signal: controller.signal, timeoutMs: 5_000 }),
    );
    call.catch(() => {});
    expect(await eventually(() => received().some((m) => m.method === "tools/call"))).toBe(true);
    // The framework gives up on the tool: it ends its span, then aborts the call.
    outer.end();
    controller.abort();
    await expect(call).rejects.toThrow();
    const spans = otel.spans();
    expect(spans.map((s) => s.name).sort()).toEqual(["execute_tool late", "tools/call late"]);
    const borrowed = spans.find((s) => s.name === "execute_tool late")!;
    expect(borrowed.status.code).toBe(SpanStatusCode.UNSET); // ended by its owner, before the outcome
    const ours = spans.find((s) => s.name === "tools/call late")!;
    expect(ours.parentSpanId).toBe(outer.spanContext().spanId);
    expect(ours.status.code).toBe(SpanStatusCode.ERROR);
    expect(ours.attributes).toMatchObject({
      ...tool("late"),
      "error.type": "cancelled",
      "mcp_cancellable.cancel.trigger": "aborted",
      "mcp_cancellable.call.status": "cancelled",
    });
    expect(ours.events.map((e) => e.name)).toContain("mcp_cancellable.cancel");
    // Its time is the call's: it started when the call did, before the outer span ended.
    expect(ours.startMs).toBeLessThanOrEqual(borrowed.endMs);
    expect(ours.kind).toBe("CLIENT");
  });

  it("attributes: read once when the call starts, put on its span beside the recorder's own", async () => {
    const seen: string[] = [];
    const { mcp, otel } = await setUp({
      attributes: (call) => {
        seen.push(call.method);
        return { "example.replica": "r7" };
      },
    });
    await mcp.callTool({ name: "echo" });
    expect(seen).toEqual(["tools/call"]);
    expect(otel.spans()[0]!.attributes).toMatchObject({ ...tool("echo"), "example.replica": "r7", "jsonrpc.request.id": "1" });
  });

  it("bad options name the option", () => {
    expect(() => otelRecorder({ attributes: "r7" as never })).toThrow(/attributes/);
    expect(() => otelRecorder({ tracer: {} as never })).toThrow(InvalidOptionError);
    expect(() => otelRecorder({ serverUrl: "not a url" })).toThrow(/serverUrl/);
    expect(() => otelRecorder({ propagate: true } as never)).toThrow(/unknown option "propagate"/);
  });
});
