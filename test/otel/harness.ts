// The real OpenTelemetry SDK with in-memory exporters: spans from sdk-trace-base's
// InMemorySpanExporter, metric points from sdk-metrics through a reader collected on demand.
import { ROOT_CONTEXT, SpanKind } from "@opentelemetry/api";
import type { Context, ContextManager, SpanStatus } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import type { HistogramMetricData } from "@opentelemetry/sdk-metrics";

class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** A span as the tests compare it: plain data, ids as hex strings. */
export interface SpanView {
  name: string;
  kind: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  attributes: Record<string, unknown>;
  status: SpanStatus;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  startMs: number;
  endMs: number;
}

const hrMs = ([s, ns]: [number, number]): number => s * 1000 + ns / 1e6;

function view(span: ReadableSpan): SpanView {
  return {
    name: span.name,
    kind: SpanKind[span.kind],
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    attributes: { ...span.attributes },
    status: { ...span.status },
    events: span.events.map((event) => ({ name: event.name, attributes: { ...event.attributes } })),
    startMs: hrMs(span.startTime),
    endMs: hrMs(span.endTime),
  };
}

export function otelHarness() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    tracerProvider,
    tracer: tracerProvider.getTracer("test"),
    meter: meterProvider.getMeter("test"),
    /** Finished spans, in the order they ended. */
    spans: (): SpanView[] => exporter.getFinishedSpans().map(view),
    /** The time of each event of the finished span named `span` (epoch ms), by event name. */
    eventTimes: (span: string): Array<{ name: string; atMs: number }> =>
      (exporter.getFinishedSpans().find((s) => s.name === span)?.events ?? []).map((e) => ({ name: e.name, atMs: hrMs(e.time) })),
    /** The points of `mcp.client.operation.duration` (and its descriptor). */
    async duration() {
      const { resourceMetrics } = await reader.collect();
      const metric = resourceMetrics.scopeMetrics
        .flatMap((scope) => scope.metrics)
        .find((m) => m.descriptor.name === "mcp.client.operation.duration") as HistogramMetricData | undefined;
      return {
        descriptor: metric?.descriptor,
        points: (metric?.dataPoints ?? []).map((p) => ({
          attributes: { ...p.attributes },
          count: p.value.count,
          sum: p.value.sum,
          boundaries: p.value.buckets.boundaries,
        })),
      };
    },
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** A synchronous context manager (enough for `context.with` around a call start). */
export class StackContextManager implements ContextManager {
  #current: Context = ROOT_CONTEXT;
  active(): Context {
    return this.#current;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const previous = this.#current;
    this.#current = context;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.#current = previous;
    }
  }
  bind<T>(_context: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#current = ROOT_CONTEXT;
    return this;
  }
}
