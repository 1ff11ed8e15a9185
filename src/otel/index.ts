// `mcp-cancellable/otel`: OpenTelemetry spans and the `mcp.client.operation.duration` metric for
// every call, by the MCP semantic conventions, plus what the conventions leave open: how a
// cancel, a timeout, a discarded late message and a verification show up. Depends only on
// `@opentelemetry/api` (an optional peer); the root entry never imports this file.
import { SpanKind, SpanStatusCode, context, metrics, propagation, trace } from "@opentelemetry/api";
import type { Attributes, Context, Histogram, Meter, Span, SpanContext, Tracer } from "@opentelemetry/api";
import { z } from "zod";
import { ANSWERED_FIRST } from "../core/record.js";
import type { RunRecord } from "../core/record.js";
import { booleanOption, parseOptions } from "../options/schemas.js";
import type { CallObservation, CallObserver, ObservedCall } from "../types/options.js";
import { isStdioTransport, isStreamableHttpTransport, streamableHttpUrl } from "../sdk/private.js";
import {
  ATTR_CALL_OUTCOME,
  ATTR_CALL_STATUS,
  ATTR_CANCEL_MECHANISM,
  ATTR_CANCEL_REASON,
  ATTR_CANCEL_TRIGGER,
  ATTR_CANCEL_UNDELIVERED,
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROMPT_NAME,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_LATE_ERRORS,
  ATTR_LATE_KIND,
  ATTR_LATE_PROGRESS,
  ATTR_LATE_RESULTS,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_RESOURCE_URI,
  ATTR_MCP_SESSION_ID,
  ATTR_NETWORK_PROTOCOL_NAME,
  ATTR_NETWORK_TRANSPORT,
  ATTR_PROGRESS_COUNT,
  ATTR_RECORD_REVISION,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_TASK_ID,
  ATTR_TASK_STATUS,
  CANCEL_ERROR_TYPE,
  ERROR_TYPE_OTHER,
  ERROR_TYPE_TOOL_ERROR,
  ERROR_TYPE_VERIFY_FAILED,
  EVENT_CANCEL,
  EVENT_CANCEL_DELIVERY,
  EVENT_LATE_MESSAGE,
  EVENT_TASK,
  EVENT_VERIFICATION,
  GEN_AI_OPERATION_EXECUTE_TOOL,
  MCP_DURATION_BUCKETS_S,
  METRIC_MCP_CLIENT_OPERATION_DURATION,
} from "./attributes.js";

/** Options of `otelRecorder`. Everything that could leave the process is off unless turned on. */
export interface OtelRecorderOptions {
  /** The tracer spans come from. @default trace.getTracer("mcp-cancellable") (the global provider) */
  tracer?: Tracer;
  /** The meter the duration histogram comes from. @default metrics.getMeter("mcp-cancellable") (the global provider) */
  meter?: Meter;
  /**
   * Inject the call span's trace context into the request's `params._meta` (`traceparent`,
   * `tracestate`, `baggage`, through the globally configured propagator), so the server's span
   * can be its child. Off by default: nothing goes to the server that the bot did not choose.
   * @default false
   */
  propagateContext?: boolean;
  /** Put the tool's arguments on the span as `gen_ai.tool.call.arguments` (JSON). Opt-in, as the conventions say. @default false */
  captureArguments?: boolean;
  /** Put the tool's result on the span as `gen_ai.tool.call.result` (JSON). Opt-in, as the conventions say. @default false */
  captureResults?: boolean;
  /**
   * The server's URL, for `server.address` and `server.port`. Default: the Streamable HTTP
   * transport's own URL; none for stdio.
   */
  serverUrl?: string | URL;
  /**
   * When the active span is a GenAI `execute_tool` span for the same tool (an agent framework
   * already traces the tool call), put the MCP attributes and events on it instead of starting a
   * new span; that span's owner ends it. The conventions' SHOULD.
   * @default true
   */
  useOuterToolSpan?: boolean;
  /**
   * Extra attributes for each call's span, read once, synchronously, when the call starts (before
   * its request is sent); `undefined` for none. `mcp-cancellable proxy --listen` names the
   * replica and the client's own request id and session there. Nothing from `params` is copied
   * unless this function copies it.
   */
  attributes?: (call: ObservedCall) => Attributes | undefined;
}

const optionsSchema = z
  .strictObject({
    tracer: z.custom<Tracer>((value) => typeof (value as Tracer)?.startSpan === "function", { error: "must be an OpenTelemetry Tracer" }),
    meter: z.custom<Meter>((value) => typeof (value as Meter)?.createHistogram === "function", { error: "must be an OpenTelemetry Meter" }),
    propagateContext: booleanOption(),
    captureArguments: booleanOption(),
    captureResults: booleanOption(),
    serverUrl: z
      .union([z.string(), z.instanceof(URL)], { error: "must be a URL or a string" })
      .refine((value) => URL.canParse(String(value)), { error: "must be an absolute URL" }),
    useOuterToolSpan: booleanOption(),
    attributes: z.custom<(call: ObservedCall) => Attributes | undefined>((value) => typeof value === "function", {
      error: "must be a function",
    }),
  })
  .partial();

const SCOPE = "mcp-cancellable";

/**
 * An observer for `withCancellation(client, transport, { observer: otelRecorder() })` (the
 * `observer` option of the shared client-wide options) that emits, per call, a CLIENT span named `{mcp.method.name} {target}`
 * and a point of the `mcp.client.operation.duration` histogram (seconds), by the MCP semantic
 * conventions; and on top of them:
 *
 * - status ERROR and `error.type` for each cancel trigger (`timeout`, `max_total_timeout`,
 *   `cancelled`, `connection_closed`), `tool_error` for a result with `isError`, the JSON-RPC
 *   code for a server error;
 * - a `mcp_cancellable.cancel` event with the trigger, the mechanism and the reason;
 * - the record's status and outcome as `mcp_cancellable.call.status` / `.outcome`;
 * - what lands after the call span ended (a discarded late message, a verification's answer,
 *   what became of a cancelled call's task, how its cancel was delivered): one short follow-up
 *   span each, a child of the call span (same trace), carrying the new outcome and an event
 *   (`mcp_cancellable.late_message`, `.verification`, `.task`, `.cancel_delivery`).
 *
 * Arguments and results stay out of spans unless `captureArguments` / `captureResults` are set;
 * trace context goes into `params._meta` only with `propagateContext`.
 *
 * @throws {InvalidOptionError} an option is invalid, naming it.
 */
export function otelRecorder(options: OtelRecorderOptions = {}): CallObserver {
  parseOptions(optionsSchema, options, "otelRecorder options");
  const tracer = options.tracer ?? trace.getTracer(SCOPE);
  const meter = options.meter ?? metrics.getMeter(SCOPE);
  const duration = meter.createHistogram(METRIC_MCP_CLIENT_OPERATION_DURATION, {
    unit: "s",
    description:
      "The duration of the MCP request as observed on the sender from the time it was sent until the response is received (or the call was cancelled).",
    advice: { explicitBucketBoundaries: MCP_DURATION_BUCKETS_S },
  });
  const settings: Settings = {
    tracer,
    duration,
    propagateContext: options.propagateContext ?? false,
    captureArguments: options.captureArguments ?? false,
    captureResults: options.captureResults ?? false,
    serverUrl: options.serverUrl === undefined ? undefined : new URL(String(options.serverUrl)),
    useOuterToolSpan: options.useOuterToolSpan ?? true,
    attributes: options.attributes,
  };
  return { start: (call) => new CallTrace(settings, call) };
}

interface Settings {
  tracer: Tracer;
  duration: Histogram;
  propagateContext: boolean;
  captureArguments: boolean;
  captureResults: boolean;
  serverUrl: URL | undefined;
  useOuterToolSpan: boolean;
  attributes: ((call: ObservedCall) => Attributes | undefined) | undefined;
}

/** One call's span, then (once it ended) what follow-up spans need: its context, name and common attributes. */
class CallTrace implements CallObservation {
  readonly meta: Readonly<Record<string, string>> | undefined;
  readonly #settings: Settings;
  readonly #name: string;
  /** The attributes the metric and the follow-up spans share with the call span. */
  readonly #common: Attributes;
  #span: Span | undefined;
  /**
   * Set when the span is an outer `execute_tool` span (its owner ends it): the attributes a span
   * of ours would have started with, for the span the outcome goes on if the owner ended it first.
   */
  #borrowed: Attributes | undefined;
  #spanContext: SpanContext;
  #toolError = false;
  #previous: RunRecord | undefined;

  constructor(settings: Settings, call: ObservedCall) {
    this.#settings = settings;
    const { method, params } = call;
    // As the record shows them: cut at 1,000 characters (a name that long made spans as long).
    const tool = method === "tools/call" && typeof params.name === "string" ? (call.name ?? params.name) : undefined;
    const prompt = method === "prompts/get" && typeof params.name === "string" ? (call.name ?? params.name) : undefined;
    // The conventions: `{mcp.method.name} {target}`, target the tool or prompt name; a resource
    // URI is high-cardinality and stays out of the name.
    this.#name = tool !== undefined ? `${method} ${tool}` : prompt !== undefined ? `${method} ${prompt}` : method;
    const common: Attributes = { [ATTR_MCP_METHOD_NAME]: method };
    if (tool !== undefined) {
      common[ATTR_GEN_AI_TOOL_NAME] = tool;
      common[ATTR_GEN_AI_OPERATION_NAME] = GEN_AI_OPERATION_EXECUTE_TOOL;
    }
    if (prompt !== undefined) common[ATTR_GEN_AI_PROMPT_NAME] = prompt;
    Object.assign(common, connectionAttributes(call, settings.serverUrl));
    this.#common = common;

    const spanAttributes: Attributes = { ...common };
    if (/^resources\/(read|subscribe|unsubscribe)$/.test(method) && typeof params.uri === "string") {
      // As the record shows it: no credentials, query or fragment (a token travels there), at most 1,000 characters.
      spanAttributes[ATTR_MCP_RESOURCE_URI] = call.name ?? params.uri;
    }
    const session = (call.transport as { sessionId?: unknown } | null)?.sessionId;
    if (typeof session === "string" && session.length > 0) spanAttributes[ATTR_MCP_SESSION_ID] = session;
    if (settings.captureArguments && tool !== undefined && params.arguments !== undefined) {
      spanAttributes[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS] = json(params.arguments);
    }

    const extra = settings.attributes?.(call);
    if (extra !== undefined) Object.assign(spanAttributes, extra);
    const parent = context.active();
    const outer = settings.useOuterToolSpan && tool !== undefined ? outerToolSpan(parent, tool) : undefined;
    this.#borrowed = outer === undefined ? undefined : spanAttributes;
    const span = outer ?? settings.tracer.startSpan(this.#name, { kind: SpanKind.CLIENT, attributes: spanAttributes }, parent);
    if (outer !== undefined) outer.setAttributes(spanAttributes);
    this.#span = span;
    this.#spanContext = span.spanContext();
    this.meta = settings.propagateContext ? inject(trace.setSpan(parent, span)) : undefined;
  }

  result(value: unknown): void {
    const result = value as { isError?: unknown } | null;
    if (this.#common[ATTR_GEN_AI_TOOL_NAME] === undefined || typeof result !== "object" || result === null) return;
    this.#toolError = result.isError === true;
    if (this.#settings.captureResults) this.#span?.setAttribute(ATTR_GEN_AI_TOOL_CALL_RESULT, json(value));
  }

  record(record: RunRecord): void {
    const previous = this.#previous;
    this.#previous = record;
    if (previous === undefined) this.#settle(record);
    else this.#followUp(previous, record);
  }

  /** Revision 0: the call settled. The span gets its outcome and ends; the metric gets its point. */
  #settle(record: RunRecord): void {
    let span = this.#span;
    if (span === undefined) return;
    this.#span = undefined; // nothing but the span context is kept for the follow-ups
    const borrowed = this.#borrowed;
    if (borrowed !== undefined && !span.isRecording()) {
      // The outer span's owner ended it before the call settled (a framework that gave up on the
      // tool at its own deadline, or ended its span from its own abort listener): what was
      // written on it now would be dropped, and no span would say the call was cancelled. The
      // outcome goes on a span of ours, a child of it, over the call's whole time, as it would
      // have without the outer span.
      span = this.#settings.tracer.startSpan(
        this.#name,
        { kind: SpanKind.CLIENT, attributes: borrowed, startTime: new Date(record.startedAt) },
        trace.setSpanContext(context.active(), this.#spanContext),
      );
      this.#spanContext = span.spanContext();
      this.#borrowed = undefined;
    }
    const errorType = this.#errorType(record);
    const outcome: Attributes = {
      [ATTR_CALL_STATUS]: record.status,
      [ATTR_CALL_OUTCOME]: record.outcome,
      [ATTR_PROGRESS_COUNT]: record.progress.count,
    };
    if (record.requestId !== null) outcome[ATTR_JSONRPC_REQUEST_ID] = String(record.requestId);
    if (errorType !== undefined) outcome[ATTR_ERROR_TYPE] = errorType;
    // A JSON-RPC error code is a response's only when the request went out: a call the SDK refused before sending (outcome `not-sent`) has none.
    const code =
      record.status === "failed" && record.outcome !== "not-sent" && typeof record.error?.code === "number"
        ? String(record.error.code)
        : undefined;
    if (code !== undefined) outcome[ATTR_RPC_RESPONSE_STATUS_CODE] = code;
    span.setAttributes(outcome);
    const cancel = record.cancel;
    if (cancel !== null) {
      // What did not get through, when the settle knows it already (a response read in the same
      // turn as the timeout: the cancel was not sent, rule 7): on the call span, as a follow-up
      // span carries it when learned later (an outside tester's: no span said the request had
      // been answered, and mechanism `none` read as "never sent").
      const undelivered =
        cancel.undelivered === null ? {} : { [ATTR_CANCEL_UNDELIVERED]: `${cancel.undelivered.mechanism}: ${cancel.undelivered.error}` };
      span.setAttributes({ [ATTR_CANCEL_TRIGGER]: cancel.trigger, [ATTR_CANCEL_MECHANISM]: cancel.mechanism, ...undelivered });
      span.addEvent(
        EVENT_CANCEL,
        {
          [ATTR_CANCEL_TRIGGER]: cancel.trigger,
          [ATTR_CANCEL_MECHANISM]: cancel.mechanism,
          [ATTR_CANCEL_REASON]: cancel.reason,
          ...undelivered,
        },
        cancel.sentAt === null ? undefined : new Date(cancel.sentAt),
      );
    }
    // Late messages between the response and the settle (rare): already on the record.
    for (const kind of lateKinds({ results: 0, errors: 0, progress: 0 }, record.late)) {
      span.addEvent(EVENT_LATE_MESSAGE, { [ATTR_LATE_KIND]: kind });
    }
    if (errorType !== undefined) {
      const message =
        record.status === "failed"
          ? record.error?.message
          : record.status === "cancelled"
            ? record.cancel?.reason
            : "tool returned isError";
      span.setStatus(message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message });
    }
    if (this.#borrowed === undefined) span.end();

    const point: Attributes = { ...this.#common };
    if (errorType !== undefined) point[ATTR_ERROR_TYPE] = errorType;
    if (code !== undefined) point[ATTR_RPC_RESPONSE_STATUS_CODE] = code;
    this.#settings.duration.record(record.elapsedMs / 1000, point);
  }

  /**
   * A revision after the settle: a discarded late message, a verification's answer, what became
   * of the task, or how the cancel was delivered. The call
   * span has ended (its duration is what the caller waited), so each lands on a short follow-up
   * span, a child of the call span: it shows under the call in any trace view, without relying
   * on a backend's support for links, and carries the call's new outcome as an attribute.
   */
  #followUp(previous: RunRecord, record: RunRecord): void {
    const parent = trace.setSpanContext(context.active(), this.#spanContext);
    const attributes: Attributes = {
      ...this.#common,
      [ATTR_CALL_STATUS]: record.status,
      [ATTR_CALL_OUTCOME]: record.outcome,
      [ATTR_RECORD_REVISION]: record.revision,
      [ATTR_LATE_RESULTS]: record.late.results,
      [ATTR_LATE_ERRORS]: record.late.errors,
      [ATTR_LATE_PROGRESS]: record.late.progress,
    };
    if (record.requestId !== null) attributes[ATTR_JSONRPC_REQUEST_ID] = String(record.requestId);
    const cancel = record.cancel;
    if (cancel !== null) attributes[ATTR_CANCEL_MECHANISM] = cancel.mechanism;
    const verification = record.verification;
    if (verification?.settledAt != null && previous.verification?.settledAt !== verification.settledAt) {
      const failed = record.outcome === "verify-failed";
      const span = this.#settings.tracer.startSpan(
        `verify ${this.#name}`,
        {
          kind: SpanKind.INTERNAL,
          attributes: failed ? { ...attributes, [ATTR_ERROR_TYPE]: ERROR_TYPE_VERIFY_FAILED } : attributes,
          startTime: new Date(verification.startedAt),
        },
        parent,
      );
      span.addEvent(EVENT_VERIFICATION, { [ATTR_CALL_OUTCOME]: record.outcome }, new Date(verification.settledAt));
      if (failed) {
        span.setStatus(
          verification.error === null ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message: verification.error },
        );
      }
      span.end(new Date(verification.settledAt));
      this.#undeliveredToo(previous, record, attributes, parent);
      return;
    }
    const kinds = lateKinds(previous.late, record.late);
    if (kinds.length > 0) {
      const span = this.#settings.tracer.startSpan(`late ${this.#name}`, { kind: SpanKind.INTERNAL, attributes }, parent);
      for (const kind of kinds) span.addEvent(EVENT_LATE_MESSAGE, { [ATTR_LATE_KIND]: kind });
      span.end();
      // The same revision may say what became of the cancel (a response read after its stream's
      // close: the close stopped nothing); it gets its span too (an outside tester's: it had none).
      this.#cancelDelivery(previous, record, attributes, parent);
      return;
    }
    // What became of a task-augmented call's task (its `tasks/cancel` answered, a late
    // `CreateTaskResult` cancelled, the task seen completed anyway or failed).
    const task = record.task;
    if (
      task !== undefined &&
      (task.status !== previous.task?.status || record.outcome !== previous.outcome || cancel?.mechanism !== previous.cancel?.mechanism)
    ) {
      const span = this.#settings.tracer.startSpan(
        `task ${this.#name}`,
        { kind: SpanKind.INTERNAL, attributes: { ...attributes, [ATTR_TASK_ID]: task.taskId, [ATTR_TASK_STATUS]: task.status } },
        parent,
      );
      span.addEvent(EVENT_TASK, { [ATTR_CALL_OUTCOME]: record.outcome, [ATTR_TASK_STATUS]: task.status });
      span.end();
      // The same revision may say what became of the cancel: its `tasks/cancel` left (a late
      // `CreateTaskResult`'s task; the event at that time), or did not get through (an outside
      // tester's: the `tasks/cancel` that left after the settle had no span of its own).
      this.#cancelDelivery(previous, record, attributes, parent);
      return;
    }
    this.#cancelDelivery(previous, record, attributes, parent);
  }

  /**
   * A revision that brought a verification or a task's news may also say that part of the cancel
   * did not get through (a `tasks/cancel` the transport refused): its `cancel` span too, with
   * `undelivered` and status `ERROR` (an outside tester's: no span carried it).
   */
  #undeliveredToo(previous: RunRecord, record: RunRecord, attributes: Attributes, parent: Context): void {
    const undelivered = record.cancel?.undelivered ?? null;
    const before = previous.cancel?.undelivered ?? null;
    if (undelivered !== null && (undelivered.mechanism !== before?.mechanism || undelivered.error !== before.error)) {
      this.#cancelDelivery(previous, record, attributes, parent);
    }
  }

  /**
   * The adapter learned after the settle how the cancel was delivered: what did not get through,
   * what went instead (a `tasks/cancel`), or when a cancel that had not gone out at the settle
   * left (its event stamped then). A `sentAt` moved a millisecond or more alone adds no span. A
   * cancel not sent because the response came first (rule 7) is no failure: its span's status stays unset.
   */
  #cancelDelivery(previous: RunRecord, record: RunRecord, attributes: Attributes, parent: Context): void {
    const cancel = record.cancel;
    const before = previous.cancel;
    if (
      cancel !== null &&
      ((before?.sentAt === null && cancel.sentAt !== null) ||
        cancel.mechanism !== before?.mechanism ||
        cancel.undelivered?.mechanism !== before?.undelivered?.mechanism ||
        cancel.undelivered?.error !== before?.undelivered?.error)
    ) {
      const undelivered = cancel.undelivered;
      if (undelivered !== null) attributes[ATTR_CANCEL_UNDELIVERED] = `${undelivered.mechanism}: ${undelivered.error}`;
      // The span starts no later than its event (the time the cancel left, which the revision
      // reports afterwards): a trace view draws an event outside its span oddly, or clips it.
      const sentAt = cancel.sentAt === null ? undefined : new Date(cancel.sentAt);
      const span = this.#settings.tracer.startSpan(
        `cancel ${this.#name}`,
        { kind: SpanKind.INTERNAL, attributes, ...(sentAt === undefined ? {} : { startTime: sentAt }) },
        parent,
      );
      span.addEvent(
        EVENT_CANCEL_DELIVERY,
        { [ATTR_CANCEL_MECHANISM]: cancel.mechanism, ...(undelivered === null ? {} : { [ATTR_CANCEL_UNDELIVERED]: undelivered.error }) },
        sentAt,
      );
      if (undelivered !== null && undelivered.error !== ANSWERED_FIRST) {
        const what = undelivered.written === true ? "cancel sent, unanswered" : "cancel not delivered";
        span.setStatus({ code: SpanStatusCode.ERROR, message: `${what}: ${undelivered.error}` });
      }
      // Never ended before it started (a clock that stepped back).
      span.end(sentAt !== undefined && sentAt.getTime() > Date.now() ? sentAt : undefined);
    }
  }

  #errorType(record: RunRecord): string | undefined {
    switch (record.status) {
      case "succeeded":
        return this.#toolError ? ERROR_TYPE_TOOL_ERROR : undefined;
      case "task-created": // a task was created for a call that does not follow it: nothing failed (yet)
        return undefined;
      case "cancelled":
        return CANCEL_ERROR_TYPE[record.cancel?.trigger ?? "aborted"];
      case "failed": {
        const code = record.error?.code;
        return typeof code === "number" || (typeof code === "string" && code.length > 0) ? String(code) : ERROR_TYPE_OTHER;
      }
    }
  }
}

/** The late message kinds that one revision added, one entry per message. */
function lateKinds(before: RunRecord["late"], after: RunRecord["late"]): Array<"result" | "error" | "progress"> {
  const kinds: Array<"result" | "error" | "progress"> = [];
  for (let i = before.results; i < after.results; i++) kinds.push("result");
  for (let i = before.errors; i < after.errors; i++) kinds.push("error");
  for (let i = before.progress; i < after.progress; i++) kinds.push("progress");
  return kinds;
}

/**
 * What the connection says: `mcp.protocol.version` (v2 `getNegotiatedProtocolVersion()`, the
 * HTTP transport's `protocolVersion`, or the `initialize` answer the wire saw: v1 over stdio),
 * `network.transport` (`tcp` for Streamable HTTP, `pipe` for stdio), `network.protocol.name`,
 * `server.address` and `server.port`.
 */
function connectionAttributes(call: ObservedCall, serverUrl: URL | undefined): Attributes {
  const attributes: Attributes = {};
  const client = call.client as { getNegotiatedProtocolVersion?: () => unknown } | null;
  const transport = (call.transport ?? {}) as { protocolVersion?: unknown };
  let version: unknown;
  try {
    version = client?.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? call.protocolVersion;
  } catch {
    version = undefined;
  }
  if (typeof version === "string") attributes[ATTR_MCP_PROTOCOL_VERSION] = version;
  const http = isStreamableHttpTransport(transport);
  if (http) {
    attributes[ATTR_NETWORK_TRANSPORT] = "tcp";
    attributes[ATTR_NETWORK_PROTOCOL_NAME] = "http";
  } else if (isStdioTransport(transport)) {
    attributes[ATTR_NETWORK_TRANSPORT] = "pipe";
  }
  // Both SDK lines keep the Streamable HTTP URL in a private field (src/sdk/private.ts).
  const url = serverUrl ?? (http ? streamableHttpUrl(transport) : undefined);
  if (url !== undefined && url.hostname !== "") {
    attributes[ATTR_SERVER_ADDRESS] = url.hostname.replace(/^\[(.*)\]$/, "$1");
    attributes[ATTR_SERVER_PORT] = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  }
  return attributes;
}

/**
 * The active span, when it is a GenAI `execute_tool` span for this tool that is still open and
 * is not itself an MCP span. The API has no attribute getter: the SDK's spans expose
 * `attributes` and `ended`, and only such a span is trusted.
 */
function outerToolSpan(parent: Context, tool: string): Span | undefined {
  const span = trace.getSpan(parent);
  if (span === undefined || !span.isRecording()) return undefined;
  const own = span as unknown as { attributes?: Attributes; ended?: unknown };
  const attributes = own.attributes;
  if (typeof attributes !== "object" || attributes === null || own.ended === true) return undefined;
  if (attributes[ATTR_GEN_AI_OPERATION_NAME] !== GEN_AI_OPERATION_EXECUTE_TOOL) return undefined;
  if (attributes[ATTR_MCP_METHOD_NAME] !== undefined) return undefined;
  const name = attributes[ATTR_GEN_AI_TOOL_NAME];
  return name === undefined || name === tool ? span : undefined;
}

/** The trace context (and baggage) of `ctx`, by the configured propagator, as `_meta` entries. */
function inject(ctx: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    return "[unserializable]";
  }
}
