import { metrics, trace } from "@opentelemetry/api";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { withCancellation } from "mcp-cancellable";
import { stdioCancellation } from "mcp-cancellable/stdio";
import { otelRecorder } from "mcp-cancellable/otel";

// Your OpenTelemetry SDK setup (NodeSDK, or a TracerProvider and a MeterProvider with your
// exporters) registers the global providers before this runs.
const client = new Client({ name: "report-bot", version: "1.0.0" });
const mcp = withCancellation(client, stdioCancellation(new StdioClientTransport({ command: "node", args: ["report-server.js"] })), {
  timeoutMs: 30_000,
  observer: otelRecorder({
    tracer: trace.getTracer("report-bot"), // default: the global provider's
    meter: metrics.getMeter("report-bot"),
    propagateContext: true, // traceparent / tracestate / baggage into params._meta (off by default)
  }),
});
await client.connect(mcp.transport);
// Each call is now a CLIENT span "tools/call generate_quarterly_summary" and a point of
// mcp.client.operation.duration; a cancel, a late result or a verification shows up there too.
await mcp.callTool({ name: "generate_quarterly_summary", arguments: { quarter: "Q3" } }).catch(() => {});
await client.close();
