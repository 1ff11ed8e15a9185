// Entry for Deno and Bun (and Node, for comparison): runs test/runtimes/checks.mjs against the
// built package. The URL of a running test/fixtures/runtime/server.mjs comes in MCP_TEST_URL.
// Exit code 0 only when every check passed.
import * as z from "zod";
import { McpServer } from "@modelcontextprotocol/server";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { otelRecorder } from "../../dist/otel.js";
import { report, runChecks } from "./checks.mjs";

const env = globalThis.Deno?.env.get("MCP_TEST_URL") ?? globalThis.process?.env.MCP_TEST_URL;
const runtime = globalThis.Deno ? `deno ${Deno.version.deno}` : globalThis.Bun ? `bun ${Bun.version}` : `node ${process.version}`;
const results = await runChecks({
  url: env,
  inMemory: { McpServer, z },
  otel: { otelRecorder, BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor },
});
const ok = report(results, (line) => console.log(line), runtime);
if (globalThis.Deno) Deno.exit(ok ? 0 : 1);
else process.exit(ok ? 0 : 1);
