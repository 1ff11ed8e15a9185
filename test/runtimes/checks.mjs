// Portable checks of the built package (dist/) in a non-Node runtime: Deno, Bun and a real
// browser page run these same functions. No test framework: each check is a named async
// function; `runChecks` runs them in order and returns one result per check, with the run
// records the calls produced.
//
// - inMemory (Deno, Bun): the root entry alone (core, wire, the notification mechanism) over the
//   v2 SDK's in-memory transport, client and server in the same runtime.
// - otel (Deno, Bun): mcp-cancellable/otel with the OpenTelemetry SDK, on the in-memory path.
// - http (Deno, Bun, Chromium): the v2 client over Streamable HTTP through
//   streamableHttpCancellation, against the Node server of test/fixtures/runtime/server.mjs:
//   a call answered, a slow call timed out, another aborted, and the server saw each of their
//   response streams close before it finished.
// - stdio (Bun, and Node when run.mjs runs there; not Deno, whose leg may not spawn, nor a
//   browser): the v2 client over its StdioClientTransport through mcp-cancellable/stdio, against
//   test/stdio/fixtures/stall-server.mjs run by the same runtime: a cancel line behind a full pipe.
import { CallCancelledError, CallTimeoutError, ConnectionClosedError, withCancellation } from "../../dist/index.js";
// (mcp-cancellable/otel is passed in by run.mjs: the browser page does not load it.)
import { streamableHttpCancellation } from "../../dist/streamable-http.js";
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function eventually(predicate, withinMs = 3_000) {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (await predicate()) return true;
    await sleep(20);
  }
  return predicate();
}

/** The root entry over the in-memory transport: a v2 McpServer in the same runtime. */
async function inMemoryChecks(McpServer, z, options = {}) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const aborted = [];
  const server = new McpServer({ name: "in-memory", version: "1.0.0" });
  server.registerTool("echo", { inputSchema: z.object({}) }, () => ({ content: [{ type: "text", text: "echo" }] }));
  server.registerTool(
    "slow",
    { inputSchema: z.object({}) },
    (_args, ctx) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ content: [{ type: "text", text: "late" }] }), 5_000);
        ctx.mcpReq.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          aborted.push(ctx.mcpReq.id);
          resolve({ content: [{ type: "text", text: "aborted" }] });
        });
      }),
  );
  await server.connect(serverSide);
  const client = new Client({ name: "runtime-bot", version: "1.0.0" });
  const mcp = withCancellation(client, clientSide, { timeoutMs: 5_000, ...options });
  await client.connect(mcp.transport);
  return {
    mcp,
    aborted,
    async close() {
      await client.close();
      await server.close();
    },
  };
}

/**
 * A module loaded at run time only (the specifier is not a literal): the browser bundle never
 * takes in the stdio modules, nor what they import.
 */
const load = (specifier) => import(specifier);

export async function runChecks({ url, inMemory, otel, browser = false } = {}) {
  const results = [];
  const check = async (name, fn) => {
    const records = [];
    try {
      await fn(records);
      results.push({ name, ok: true, records });
    } catch (error) {
      results.push({ name, ok: false, error: String(error?.stack ?? error), records });
    }
  };

  if (inMemory !== undefined) {
    const { McpServer, z } = inMemory;
    await check("in-memory: a call answered", async (records) => {
      const s = await inMemoryChecks(McpServer, z);
      try {
        const result = await s.mcp.callTool({ name: "echo" });
        assert(result.content[0].text === "echo", "wrong result");
        records.push(...s.mcp.records());
        assert(records[0].status === "succeeded" && records[0].outcome === "completed", `record: ${records[0]?.summary}`);
      } finally {
        await s.close();
      }
    });
    await check("in-memory: an idle timeout cancels with notifications/cancelled and the handler stops", async (records) => {
      const s = await inMemoryChecks(McpServer, z);
      try {
        const error = await s.mcp.callTool({ name: "slow" }, { timeoutMs: 100 }).catch((e) => e);
        assert(error instanceof CallTimeoutError && error.code === "REQUEST_TIMEOUT", `got ${error}`);
        records.push(error.record);
        assert(error.record.cancel.mechanism === "notification", `mechanism ${error.record.cancel.mechanism}`);
        assert(await eventually(() => s.aborted.length === 1), "the server's handler was not aborted");
        assert(s.mcp.pendingCount === 0, "a call is still pending");
      } finally {
        await s.close();
      }
    });
    await check("in-memory: an abort is a CallCancelledError, not a timeout", async (records) => {
      const s = await inMemoryChecks(McpServer, z);
      try {
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 50);
        const error = await s.mcp.callTool({ name: "slow" }, { signal: controller.signal }).catch((e) => e);
        assert(error instanceof CallCancelledError && error.code === "CANCELLED", `got ${error}`);
        records.push(error.record);
        assert(await eventually(() => s.aborted.length === 1), "the server's handler was not aborted");
      } finally {
        await s.close();
      }
    });
  }

  if (inMemory !== undefined && otel !== undefined) {
    const { McpServer, z } = inMemory;
    await check("otel: a timed-out call is a CLIENT span with error.type timeout and the cancel event", async (records) => {
      const { otelRecorder, BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = otel;
      const exporter = new InMemorySpanExporter();
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      const s = await inMemoryChecks(McpServer, z, { observer: otelRecorder({ tracer: provider.getTracer("runtime") }) });
      try {
        const error = await s.mcp.callTool({ name: "slow" }, { timeoutMs: 100 }).catch((e) => e);
        records.push(error.record);
        const [span] = exporter.getFinishedSpans();
        assert(span?.name === "tools/call slow", `span ${span?.name}`);
        assert(span.attributes["error.type"] === "timeout", `error.type ${span.attributes["error.type"]}`);
        assert(span.attributes["mcp_cancellable.cancel.mechanism"] === "notification", "mechanism");
        assert(
          span.events.some((e) => e.name === "mcp_cancellable.cancel"),
          "no cancel event",
        );
      } finally {
        await s.close();
        await provider.shutdown();
      }
    });
  }

  if (url !== undefined) {
    const events = async () => (await fetch(new URL("/_events", url))).json();
    const closedEarly = async (id) =>
      (await events()).some((e) => e.kind === "close" && e.rpc === "tools/call" && e.id === id && e.writableFinished === false);
    for (const pin of [true, false]) {
      const era = pin ? "2026-07-28" : "2025-era";
      const connect = async () => {
        const transport = new StreamableHTTPClientTransport(new URL(url));
        const client = new Client(
          { name: "runtime-bot", version: "1.0.0" },
          pin ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : undefined,
        );
        const mcp = withCancellation(client, streamableHttpCancellation(transport), { timeoutMs: 10_000 });
        await client.connect(mcp.transport);
        return { mcp, close: () => client.close() };
      };
      await check(`http ${era}: a call answered`, async (records) => {
        const { mcp, close } = await connect();
        try {
          const result = await mcp.callTool({ name: "echo", arguments: { text: "x" } });
          assert(result.content[0].text === "echo x", "wrong result");
          records.push(...mcp.records());
        } finally {
          await close();
        }
      });
      await check(`http ${era}: a timed-out call closes its stream and the server sees it`, async (records) => {
        const { mcp, close } = await connect();
        try {
          const error = await mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 300 }).catch((e) => e);
          assert(error instanceof CallTimeoutError, `got ${error}`);
          records.push(error.record);
          const expected = pin ? "stream-close" : "notification+stream-close";
          assert(error.record.cancel.mechanism === expected, `mechanism ${error.record.cancel.mechanism}`);
          assert(await eventually(() => closedEarly(error.record.requestId)), "the server did not see the stream close");
          // The server had the request: no revision may call it never sent (Bun's undici reported
          // no body written, and every such call was revised to not-sent).
          const last = mcp.records().find((r) => r.callId === error.record.callId);
          assert(last.outcome !== "not-sent", `the latest record says ${last.summary}`);
        } finally {
          await close();
        }
      });
      await check(
        `http ${era}: a server gone mid-call (its connection destroyed) settles the call connection-closed at once, not at its timeout`,
        async (records) => {
          const { mcp, close } = await connect();
          try {
            const started = performance.now();
            const error = await mcp.callTool({ name: "drop" }, { timeoutMs: 8_000 }).catch((e) => e);
            const took = performance.now() - started;
            assert(error instanceof ConnectionClosedError, `got ${error}`);
            records.push(error.record);
            assert(error.record.cancel.trigger === "connection-closed", `record: ${error.record.summary}`);
            // Deno with npm's undici never saw the drop: the call waited for its idle timeout (an outside tester's).
            assert(took < 4_000, `settled ${Math.round(took)} ms after the call, not when the connection went`);
          } finally {
            await close();
          }
        },
      );
      await check(`http ${era}: an aborted call closes its stream and the server sees it`, async (records) => {
        const { mcp, close } = await connect();
        try {
          const controller = new AbortController();
          setTimeout(() => controller.abort(), 200);
          const error = await mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal }).catch((e) => e);
          assert(error instanceof CallCancelledError, `got ${error}`);
          records.push(error.record);
          assert(await eventually(() => closedEarly(error.record.requestId)), "the server did not see the stream close");
        } finally {
          await close();
        }
      });
    }
    if (browser) {
      // A browser sends at most six requests per origin at a time over HTTP/1.1 and queues the
      // rest out of the library's sight: a call aborted while its POST waits there must never
      // reach the server once a connection frees (an outside tester's finding: it did, and ran).
      await check(
        "http 2025-era: a call aborted while its POST waits in the browser's connection queue never reaches the server",
        async (records) => {
          const transport = new StreamableHTTPClientTransport(new URL(url));
          const client = new Client({ name: "runtime-bot", version: "1.0.0" });
          const mcp = withCancellation(client, streamableHttpCancellation(transport), { timeoutMs: 10_000 });
          await client.connect(mcp.transport);
          try {
            const before = (await events()).filter((e) => e.kind === "handler-start").length;
            // Six calls hold the origin's six connections for 600 ms (the server sends their heads with the answer).
            const holding = Array.from({ length: 6 }, () => mcp.callTool({ name: "slow", arguments: { ms: 600 } }));
            await sleep(150);
            const controller = new AbortController();
            const queued = mcp.callTool({ name: "slow", arguments: { ms: 10 } }, { signal: controller.signal }).catch((e) => e);
            await sleep(100);
            controller.abort();
            const error = await queued;
            assert(error instanceof CallCancelledError, `got ${error}`);
            records.push(error.record);
            await Promise.all(holding);
            await sleep(400);
            const started = (await events()).filter((e) => e.kind === "handler-start").length - before;
            assert(started === 6, `the server ran ${started} calls; the aborted one went out after its abort`);
            const last = mcp.records().find((r) => r.callId === error.record.callId);
            assert(
              last.outcome !== "not-sent" && last.cancel.mechanism === "notification+stream-close",
              `the latest record says ${last.summary}`,
            );
          } finally {
            await client.close();
          }
        },
      );
    }
  }
  if (!browser && globalThis.Deno === undefined && typeof globalThis.process?.versions?.node === "string") {
    // Bun's child stdin does not count what it holds (writableLength 0, writableNeedDrain false
    // while 2 MB wait; a zero-length write calls back at once): the record must follow the line's
    // own write (an outside tester's finding: the line was recorded delivered at the settle, and a
    // server that never read it again left it so).
    await check(
      "stdio: a cancel line behind a full pipe is not out until the pipe took it (sentAt null, then when it left)",
      async (records) => {
        const { stdioCancellation } = await load(new URL("../../dist/stdio.js", import.meta.url).href);
        const { StdioClientTransport } = await load("@modelcontextprotocol/client/stdio");
        const script = decodeURIComponent(new URL("../stdio/fixtures/stall-server.mjs", import.meta.url).pathname);
        const transport = new StdioClientTransport({ command: process.execPath, args: [script, "--stall-ms", "1000"], stderr: "pipe" });
        let log = "";
        transport.stderr.on("data", (chunk) => {
          log += chunk;
        });
        const client = new Client({ name: "runtime-bot", version: "1.0.0" });
        const mcp = withCancellation(client, stdioCancellation(transport), { timeoutMs: 10_000 });
        await client.connect(mcp.transport);
        try {
          assert(await eventually(() => log.includes(" notifications/initialized ")), "the server did not read notifications/initialized");
          const error = await mcp.callTool({ name: "big", arguments: { blob: "x".repeat(2_000_000) } }, { timeoutMs: 300 }).catch((e) => e);
          assert(error instanceof CallTimeoutError, `got ${error}`);
          records.push(error.record);
          assert(
            error.record.cancel.sentAt === null,
            `the first record says the line left at ${error.record.cancel.sentAt}, behind 2 MB the server had not read`,
          );
          assert(await eventually(() => / notifications\/cancelled /.test(log), 5_000), "the server never read the cancel line");
          const resumedAt = Number(/RESUME (\d+)/.exec(log)?.[1]);
          const last = mcp.records().find((r) => r.callId === error.record.callId);
          records.push(last);
          const sentAt = last.cancel.sentAt === null ? Number.NaN : Date.parse(last.cancel.sentAt);
          assert(
            sentAt >= resumedAt - 1,
            `the last record says the line left at ${last.cancel.sentAt}, the server read again at ${new Date(resumedAt).toISOString()}`,
          );
        } finally {
          await client.close();
        }
      },
    );
  }
  return results;
}

/** One line per check, then the plain count line CI reads. */
export function report(results, write, runtime) {
  for (const r of results) {
    write(
      `${r.ok ? "ok  " : "FAIL"} [${runtime}] ${r.name}${r.records.length > 0 ? ` (${r.records.map((x) => x.summary).join("; ")})` : ""}`,
    );
    if (!r.ok) write(`     ${r.error}`);
  }
  const passed = results.filter((r) => r.ok).length;
  write(`${passed} passed, ${results.length - passed} failed`);
  return results.length > 0 && passed === results.length;
}
