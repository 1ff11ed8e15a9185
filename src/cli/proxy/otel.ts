// `mcp-cancellable proxy --otel`: the library's OpenTelemetry recorder (`otelRecorder`, the
// `observer` option) on every request the proxy runs, exported by a tracer provider made from
// the standard `OTEL_*` environment variables. Everything here is loaded only with `--otel`:
// `@opentelemetry/api` is an optional peer and the SDK pieces are not dependencies of the
// package, so they are imported by a specifier the bundler leaves alone (dist/cli.js must not
// carry them, and must start without them).
import type { Attributes } from "@opentelemetry/api";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { Redact } from "./listen/guard.js";
import type { OtelRecorderOptions } from "../../otel/index.js";
import type { CallObserver } from "../../types/options.js";

/** A package `--otel` needs is not installed (exit status 2, like a missing SDK). */
export class MissingOtelError extends Error {
  override name = "MissingOtelError" as const;
  readonly kind = "missing-sdk" as const;
}

/** `OTEL_*` asks for something the proxy cannot do (exit status 2). */
export class OtelConfigError extends Error {
  override name = "OtelConfigError" as const;
  readonly kind = "missing-sdk" as const;
}

/** The longest the proxy waits at its end for the last spans to be exported, in ms. */
export const OTEL_FLUSH_BOUND_MS = 5_000;

/** What `--otel` turned on: the observer for the proxy's calls, and the flush at the end. */
export interface ProxyOtel {
  readonly observer: CallObserver | undefined;
  /** A line for stderr saying where spans go. */
  readonly description: string;
  /**
   * Exports what is left and stops the provider, at most `budgetMs` (default
   * `OTEL_FLUSH_BOUND_MS`; the proxy's shutdown gives what is left of its own bound); a second
   * call only waits for the first, at most its own budget. Never throws.
   */
  shutdown(budgetMs?: number): Promise<void>;
}

/** The OTLP trace exporter package for each `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`. */
const OTLP_PACKAGES: Record<string, string> = {
  "http/protobuf": "@opentelemetry/exporter-trace-otlp-proto",
  "http/json": "@opentelemetry/exporter-trace-otlp-http",
  grpc: "@opentelemetry/exporter-trace-otlp-grpc",
};

const BASE_PACKAGES = "@opentelemetry/api @opentelemetry/sdk-trace-base";

/** `import(name)` with a name the bundler cannot see, so the package stays outside dist/cli.js. */
const load = (name: string): Promise<unknown> => import(/* @vite-ignore */ name);

async function required<T>(name: string, install: string): Promise<T> {
  try {
    return (await load(name)) as T;
  } catch (error) {
    if (isNotFound(error)) throw new MissingOtelError(`--otel needs ${name}, which is not installed: npm install ${install}`);
    throw error;
  }
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
}

/**
 * Builds the tracer provider from the environment and the recorder on it:
 * - `OTEL_SDK_DISABLED=true`: nothing is recorded;
 * - `OTEL_TRACES_EXPORTER` (comma-separated; default `otlp`, as the specification says):
 *   `console` (one JSON line per span on stderr, since stdout carries only protocol messages),
 *   `otlp` (the exporter package for `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or
 *   `OTEL_EXPORTER_OTLP_PROTOCOL`, default `http/protobuf`; it reads its own endpoint, headers and
 *   timeout variables), `none`;
 * - `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (the resource), `OTEL_TRACES_SAMPLER*`,
 *   `OTEL_BSP_*` and the span limits, read by the SDK itself.
 * @throws {MissingOtelError} a package it needs is not installed, with the npm install line.
 * @throws {OtelConfigError} an exporter or protocol it does not know.
 */
export async function startOtel(
  env: NodeJS.ProcessEnv,
  write: (text: string) => void,
  attributes?: OtelRecorderOptions["attributes"],
  redact?: Redact,
): Promise<ProxyOtel> {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") {
    return { observer: undefined, description: "OTEL_SDK_DISABLED=true: no spans are recorded", shutdown: async () => {} };
  }
  // An empty value is the default (the specification's rule for every OTEL_* variable).
  const names = (env.OTEL_TRACES_EXPORTER?.trim() || "otlp")
    .split(",")
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== "");
  for (const name of names) {
    if (name !== "otlp" && name !== "console" && name !== "none") {
      throw new OtelConfigError(`OTEL_TRACES_EXPORTER: the proxy exports to otlp, console or none, got ${JSON.stringify(name)}`);
    }
  }
  // The recorder (src/otel) imports the API itself: loaded first here for the install line.
  await required<typeof import("@opentelemetry/api")>("@opentelemetry/api", BASE_PACKAGES);
  const sdk = await required<typeof import("@opentelemetry/sdk-trace-base")>("@opentelemetry/sdk-trace-base", BASE_PACKAGES);
  const exporters: SpanExporter[] = [];
  const where: string[] = [];
  if (names.includes("console")) {
    exporters.push(stderrExporter(write));
    where.push("console (one JSON line per span on stderr)");
  }
  if (names.includes("otlp")) {
    const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || "http/protobuf";
    const pkg = OTLP_PACKAGES[protocol];
    if (pkg === undefined) {
      throw new OtelConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL: expected http/protobuf, http/json or grpc, got ${JSON.stringify(protocol)}`);
    }
    let otlp: { OTLPTraceExporter: new () => SpanExporter };
    try {
      otlp = (await load(pkg)) as typeof otlp;
    } catch (error) {
      if (!isNotFound(error)) throw error;
      throw new MissingOtelError(
        `--otel exports over OTLP (${protocol}) by default, and its exporter is not installed: npm install ${pkg}` +
          " (or set OTEL_TRACES_EXPORTER=console for spans on stderr)",
      );
    }
    exporters.push(new otlp.OTLPTraceExporter());
    const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || undefined;
    where.push(`OTLP ${protocol}${endpoint === undefined ? " (the exporter's default endpoint)" : ` to ${endpoint}`}`);
  }
  if (exporters.length === 0) {
    return { observer: undefined, description: "OTEL_TRACES_EXPORTER=none: no spans are exported", shutdown: async () => {} };
  }
  const resource = await envResource();
  const provider = new sdk.BasicTracerProvider({
    ...(resource === undefined ? {} : { resource }),
    spanProcessors: exporters.map(
      (exporter) => new sdk.BatchSpanProcessor(redact?.active === true ? redactingExporter(exporter, redact) : exporter),
    ),
  });
  const { otelRecorder } = await import("../../otel/index.js");
  // Spans only: the recorder's duration metric goes to the global meter, which no provider backs here.
  const observer = otelRecorder({ tracer: provider.getTracer("mcp-cancellable"), ...(attributes === undefined ? {} : { attributes }) });
  let done: Promise<void> | undefined;
  return {
    observer,
    description: `a span per request, to ${where.join(" and ")}`,
    async shutdown(budgetMs = OTEL_FLUSH_BOUND_MS) {
      const first = done === undefined;
      done ??= provider
        .shutdown()
        .catch((error: unknown) => write(`mcp-cancellable proxy: --otel: exporting the last spans failed: ${(error as Error).message}\n`));
      let finished = false;
      void done.then(() => (finished = true));
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, budgetMs))));
      await Promise.race([done, bound]);
      clearTimeout(timer);
      if (first && !finished)
        write(
          `mcp-cancellable proxy: --otel: the last spans were not exported within ${Math.max(0, Math.round(budgetMs))} ms; giving up\n`,
        );
    },
  };
}

/**
 * `exporter`, seeing each span with the secrets taken out of its name, status message, attributes
 * and events' attributes (an upstream may echo its `--header` token in an error, and the error's
 * text is the span's status). The span itself is left as it is.
 */
function redactingExporter(exporter: SpanExporter, redact: Redact): SpanExporter {
  const clean = (value: unknown): unknown => (typeof value === "string" ? redact(value) : Array.isArray(value) ? value.map(clean) : value);
  const attributes = (of: Attributes): Attributes =>
    Object.fromEntries(Object.entries(of).map(([key, value]) => [key, clean(value)])) as Attributes;
  const view = (span: ReadableSpan): ReadableSpan =>
    Object.create(span, {
      name: { value: redact(span.name) },
      status: { value: span.status.message === undefined ? span.status : { ...span.status, message: redact(span.status.message) } },
      attributes: { value: attributes(span.attributes) },
      events: {
        value: span.events.map((event) =>
          event.attributes === undefined ? event : { ...event, attributes: attributes(event.attributes) },
        ),
      },
    }) as ReadableSpan;
  return {
    export: (spans, done) => exporter.export(spans.map(view), done),
    shutdown: () => exporter.shutdown(),
    ...(exporter.forceFlush === undefined ? {} : { forceFlush: () => exporter.forceFlush!() }),
  };
}

/**
 * The default resource with `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` on it.
 * `@opentelemetry/resources` is a dependency of the SDK; where it cannot be resolved from here
 * (a strict layout), the provider's own default resource is used.
 */
async function envResource(): Promise<import("@opentelemetry/resources").Resource | undefined> {
  let resources: typeof import("@opentelemetry/resources");
  try {
    resources = (await load("@opentelemetry/resources")) as typeof resources;
  } catch {
    return undefined;
  }
  return resources.defaultResource().merge(resources.detectResources({ detectors: [resources.envDetector] }));
}

/**
 * `OTEL_TRACES_EXPORTER=console`: the SDK's console exporter writes to stdout, which carries the
 * protocol here; this one writes the same fields as one JSON line per span on stderr, prefixed
 * `mcp-cancellable proxy: span `.
 */
function stderrExporter(write: (text: string) => void): SpanExporter {
  return {
    export(spans, done) {
      for (const span of spans) {
        const line = {
          resource: { attributes: span.resource.attributes },
          instrumentationScope: span.instrumentationScope,
          traceId: span.spanContext().traceId,
          parentSpanId: span.parentSpanContext?.spanId,
          name: span.name,
          id: span.spanContext().spanId,
          kind: span.kind,
          timestamp: hrMicros(span.startTime),
          duration: hrMicros(span.duration),
          attributes: span.attributes,
          status: span.status,
          events: span.events.map((event) => ({ name: event.name, attributes: event.attributes, time: hrMicros(event.time) })),
        };
        write(`mcp-cancellable proxy: span ${JSON.stringify(line)}\n`);
      }
      done({ code: 0 });
    },
    shutdown: async () => {},
  };
}

/** An HrTime ([seconds, nanoseconds]) in microseconds, as the SDK's console exporter prints it. */
function hrMicros([seconds, nanos]: [number, number]): number {
  return Math.round(seconds * 1e6 + nanos / 1e3);
}
