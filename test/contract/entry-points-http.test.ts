// The entry-point contract over Streamable HTTP (issue 19), in both eras: 2026-07-28 (a pinned v2
// client: the cancel is the close of the request's stream) and the 2025-era (a session: the
// notification POSTed, then the stream closed). Two tables, each run on every entry point that can
// speak the era:
// - against the real SDK servers (the v2 server's stateless createMcpHandler for 2026-07-28, the
//   v1 server with sessions for the 2025-era), which record what they saw, so "the server saw the stream
//   close" is their own evidence: idle timeout, maximum total timeout, abort, every socket reset,
//   a refused send, the observer, records;
// - against the raw server (test/fixtures/reliability/raw-http-server.ts), for the three ways a
//   request's stream is lost that a real server cannot be made to produce: dropped after the SSE
//   headers, ended with no response, reset before any header.
// Late results, late errors and late progress need a server that misbehaves on purpose after a
// cancel: they are in the stdio table (entry-points.test.ts), which every entry point runs too.
import { afterEach, describe, expect, it } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { createMCPClient } from "@ai-sdk/mcp";
import { attachCancellation, withCancellation } from "../../src/index.js";
import type { CancellationOptions, RunRecord } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";
import { CancellableMCPServerStreamableHttp } from "../../src/integrations/openai-agents/index.js";
import { otelRecorder } from "../../src/otel/index.js";
import { closedUnfinished, eventually, seen, startV1, startV2, started, type TestServer } from "../http/servers.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import { otelHarness } from "../otel/harness.js";
import { SLACK_MS } from "../helpers/timing.js";

type Era = "2026-07-28" | "2025-era";

/** What a behaviour asks of one call, in the library's terms (durations in ms). */
interface Ask {
  tool: string;
  args?: Record<string, unknown>;
  timeoutMs?: number;
  maxTotalTimeoutMs?: number;
  resetTimeoutOnProgress?: boolean;
  signal?: AbortSignal;
}

type Outcome = { ok: true } | { ok: false; code: string; error: unknown };

interface Session {
  call(ask: Ask): Promise<Outcome>;
  records(): RunRecord[];
  close(): Promise<void>;
}

interface Driver {
  readonly name: string;
  readonly eras: readonly Era[];
  connect(url: URL, era: Era, options: CancellationOptions): Promise<Session>;
}

const settle = (promise: Promise<unknown>): Promise<Outcome> =>
  promise.then(
    () => ({ ok: true }) as const,
    (error: unknown) => {
      const code = (error as { code?: unknown } | null)?.code;
      return { ok: false, code: typeof code === "string" ? code : "server", error } as const;
    },
  );

const params = (ask: Ask) => ({ name: ask.tool, arguments: ask.args ?? {} });

const libraryOptions = ({ tool: _tool, args: _args, ...options }: Ask) => options;

/** The same, in the SDK's request-option names (what frameworks pass to the client's own methods). */
const sdkOptions = (ask: Ask) => ({
  ...(ask.timeoutMs === undefined ? {} : { timeout: ask.timeoutMs }),
  ...(ask.maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeout: ask.maxTotalTimeoutMs }),
  ...(ask.resetTimeoutOnProgress === undefined ? {} : { resetTimeoutOnProgress: ask.resetTimeoutOnProgress }),
  ...(ask.signal === undefined ? {} : { signal: ask.signal }),
});

/** The per-call options a framework's option hook gives: everything but the signal, which the framework passes itself. */
const hookOptions = ({ signal: _signal, ...ask }: Ask) => libraryOptions(ask);

const v2Client = (era: Era) =>
  new ClientV2(
    { name: "contract", version: "1.0.0" },
    era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : undefined,
  );

const drivers: Driver[] = [
  {
    name: "withCancellation (v1 client, cancellableFetch)",
    eras: ["2025-era"],
    async connect(url, _era, options) {
      const client = new ClientV1({ name: "contract", version: "1.0.0" });
      const mcp = withCancellation(client, streamableHttpCancellation(new TransportV1(url, { fetch: cancellableFetch() })), options);
      await client.connect(mcp.transport);
      return {
        call: (ask) => settle(mcp.callTool(params(ask), libraryOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "withCancellation (v2 client)",
    eras: ["2026-07-28", "2025-era"],
    async connect(url, era, options) {
      const client = v2Client(era);
      const mcp = withCancellation(client, streamableHttpCancellation(new TransportV2(url)), options);
      await client.connect(mcp.transport as never);
      return {
        call: (ask) => settle(mcp.callTool(params(ask), libraryOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "attachCancellation (v1 client with cancellableFetch, the SDK's own callTool)",
    eras: ["2025-era"],
    async connect(url, _era, options) {
      const client = new ClientV1({ name: "contract", version: "1.0.0" });
      await client.connect(new TransportV1(url, { fetch: cancellableFetch() }));
      const mcp = attachCancellation(client, options);
      return {
        call: (ask) => settle(client.callTool(params(ask), undefined, sdkOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "attachCancellation (v2 client, the SDK's own callTool)",
    eras: ["2026-07-28", "2025-era"],
    async connect(url, era, options) {
      const client = v2Client(era);
      await client.connect(new TransportV2(url));
      const mcp = attachCancellation(client, options);
      return {
        call: (ask) => settle(client.callTool(params(ask), sdkOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "sdkClient (v1 argument order, cancellableFetch)",
    eras: ["2025-era"],
    async connect(url, _era, options) {
      const client = new ClientV1({ name: "contract", version: "1.0.0" });
      const mcp = withCancellation(client, streamableHttpCancellation(new TransportV1(url, { fetch: cancellableFetch() })), options);
      await client.connect(mcp.transport);
      return {
        call: (ask) => settle(mcp.sdkClient.callTool(params(ask), undefined, sdkOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    // The AI SDK negotiates a 2025-era revision itself: it cannot be pinned to 2026-07-28.
    name: "the Vercel AI SDK transport (createMCPClient)",
    eras: ["2025-era"],
    async connect(url, _era, options) {
      let current: Ask = { tool: "" };
      const transport = cancellableTransport(streamableHttpCancellation(new TransportV2(url)), {
        ...options,
        callOptions: (method) => (method === "tools/call" ? hookOptions(current) : undefined),
      });
      const client = await createMCPClient({ transport });
      const tools = await client.tools();
      return {
        call: (ask) => {
          current = ask;
          const execute = tools[ask.tool]!.execute as (args: unknown, options: unknown) => Promise<unknown>;
          return execute(ask.args ?? {}, {
            toolCallId: "call_1",
            messages: [],
            ...(ask.signal === undefined ? {} : { abortSignal: ask.signal }),
          }).then(
            () => ({ ok: true }) as const,
            (error: unknown) => {
              // The documented JSON-RPC error objects: `data.code` is the library's stable code; the
              // AI SDK's own abort is its "Request was aborted".
              const data = (error as { data?: { code?: unknown } }).data;
              if (typeof data?.code === "string") return { ok: false, code: data.code, error } as const;
              if (ask.signal?.aborted === true && /abort/i.test(String((error as Error).message)))
                return { ok: false, code: "CANCELLED", error } as const;
              return { ok: false, code: "server", error } as const;
            },
          );
        },
        records: () => transport.records().filter((record) => record.method === "tools/call"),
        close: () => client.close(),
      };
    },
  },
  {
    name: "the OpenAI Agents server (CancellableMCPServerStreamableHttp)",
    eras: ["2026-07-28", "2025-era"],
    async connect(url, era, options) {
      let current: Ask = { tool: "" };
      const server = new CancellableMCPServerStreamableHttp({
        ...options,
        url,
        ...(era === "2026-07-28" ? { clientOptions: { versionNegotiation: { mode: { pin: "2026-07-28" } } } } : {}),
        callOptions: () => hookOptions(current),
      });
      await server.connect();
      return {
        call: (ask) => {
          current = ask;
          return settle(
            server.callTool(ask.tool, ask.args ?? {}, null, ask.signal === undefined ? undefined : { signal: ask.signal }),
          ).then((outcome) =>
            // The Agents runtime wants the signal's reason itself for an abort.
            !outcome.ok && ask.signal?.aborted === true && outcome.error === ask.signal.reason
              ? { ok: false, code: "CANCELLED", error: outcome.error }
              : outcome,
          );
        },
        records: () => server.records().filter((record) => record.method === "tools/call"),
        close: () => server.close(),
      };
    },
  },
];

const rows = drivers.flatMap((driver) => driver.eras.map((era) => ({ driver, era, label: `${driver.name} over Streamable HTTP ${era}` })));

describe.each(rows)("entry-point contract: $label", ({ driver, era }) => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  async function setup(options: CancellationOptions = {}): Promise<{ server: TestServer; session: Session }> {
    const server = era === "2026-07-28" ? await startV2() : await startV1({ stateful: true });
    cleanup.push(() => server.stop());
    const session = await driver.connect(server.url, era, options);
    cleanup.push(() => session.close());
    return { server, session };
  }

  const mechanism = era === "2026-07-28" ? "stream-close" : "notification+stream-close";
  const slow = (ms: number, rest: Omit<Ask, "tool" | "args"> = {}): Ask => ({ tool: "slow", args: { ms }, ...rest });

  it("idle timeout: REQUEST_TIMEOUT at once; the server sees the request's stream close unfinished; the cancel by the era's mechanism", async () => {
    const { server, session } = await setup();
    const begun = performance.now();
    const outcome = await session.call(slow(5_000, { timeoutMs: 300 }));
    expect(performance.now() - begun).toBeLessThan(300 + SLACK_MS);
    expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[0]), 3_000)).toBe(true);
    expect(seen(server, "tools/call")).toHaveLength(1); // nothing re-sent
    expect(session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "timeout", mechanism } });
    const notified = await eventually(() => seen(server, "notifications/cancelled").length > 0, era === "2025-era" ? 3_000 : 300);
    expect(notified).toBe(era === "2025-era");
  });

  it("maximum total timeout: progress resets the idle timeout but never the maximum; the stream closed, nothing re-sent", async () => {
    const { server, session } = await setup();
    const begun = performance.now();
    // The server's progress comes every 200 ms: the 400 ms idle timeout alone would never fire.
    const outcome = await session.call(slow(2_000, { timeoutMs: 400, maxTotalTimeoutMs: 700, resetTimeoutOnProgress: true }));
    const elapsed = performance.now() - begun;
    expect(outcome).toMatchObject({ ok: false, code: "MAX_TOTAL_TIMEOUT" });
    expect(elapsed).toBeGreaterThanOrEqual(690);
    expect(elapsed).toBeLessThan(700 + SLACK_MS);
    const [record] = session.records();
    expect(record).toMatchObject({ status: "cancelled", cancel: { trigger: "max-total-timeout", mechanism } });
    expect(record!.progress.count).toBeGreaterThanOrEqual(2);
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[0]), 3_000)).toBe(true);
    expect(seen(server, "tools/call")).toHaveLength(1);
  });

  it("abort: CANCELLED at once, the reason kept local; the server sees the stream close", async () => {
    const { server, session } = await setup();
    const controller = new AbortController();
    const calling = session.call(slow(5_000, { signal: controller.signal }));
    expect(
      await eventually(() => seen(server, "tools/call")[0] !== undefined && started(server, seen(server, "tools/call")[0]!.http.id), 5_000),
    ).toBe(true);
    const abortedAt = performance.now();
    controller.abort(new Error("private: the user's own words"));
    const outcome = await calling;
    expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
    expect(outcome).toMatchObject({ ok: false, code: "CANCELLED" });
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[0]), 3_000)).toBe(true);
    expect(session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "aborted", mechanism } });
    // The handler's signal fired with the reason the server was given (2025-era: the POSTed notification's): never the caller's.
    expect(await eventually(() => seen(server, "tools/call")[0]?.aborted !== undefined, 3_000)).toBe(true);
    expect(seen(server, "tools/call")[0]!.aborted!.reason).not.toMatch(/private/);
  });

  it("the connection lost mid-call (every socket reset): CONNECTION_CLOSED at once, with its record; nothing re-sent", async () => {
    const { server, session } = await setup();
    const calling = session.call(slow(5_000, { timeoutMs: 10_000 }));
    expect(
      await eventually(() => seen(server, "tools/call")[0] !== undefined && started(server, seen(server, "tools/call")[0]!.http.id), 5_000),
    ).toBe(true);
    const droppedAt = performance.now();
    server.drop();
    const outcome = await calling;
    expect(performance.now() - droppedAt).toBeLessThan(SLACK_MS * 2);
    expect(outcome).toMatchObject({ ok: false, code: "CONNECTION_CLOSED" });
    expect(session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed" } });
    expect(seen(server, "tools/call")).toHaveLength(1);
  });

  it("a refused send (the server is gone): CONNECTION_CLOSED, never sent (the connection was refused), at once", async () => {
    const { server, session } = await setup();
    await server.stop();
    // Let the client's pool see its idle connections closed: a new connection is then refused.
    // (A request written on a pooled socket the server closed a moment ago may have reached it:
    // that is "outcome unverified", the other row's case, not this one.)
    await new Promise((resolve) => setTimeout(resolve, 100));
    const begun = performance.now();
    const outcome = await session.call(slow(100, { timeoutMs: 10_000 }));
    expect(performance.now() - begun).toBeLessThan(SLACK_MS * 2);
    expect(outcome).toMatchObject({ ok: false, code: "CONNECTION_CLOSED" });
    const [record] = session.records();
    expect(record).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed" }, outcome: "not-sent" });
    expect((outcome as { error: Error }).error.message).toMatch(/never sent/);
  });

  it("the observer (OpenTelemetry) and the records: one span and one record per call, error.type and call ids their own", async () => {
    const otel = otelHarness();
    const { session } = await setup({ observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter }) });
    expect(await session.call(slow(10))).toMatchObject({ ok: true });
    expect(await session.call(slow(5_000, { timeoutMs: 200 }))).toMatchObject({ code: "REQUEST_TIMEOUT" });
    const spans = otel.spans().filter((span) => span.attributes["mcp.method.name"] === "tools/call" && span.parentSpanId === undefined);
    expect(spans.map((span) => span.attributes["error.type"])).toEqual([undefined, "timeout"]);
    const records = session.records();
    expect(records.map((r) => r.status)).toEqual(["succeeded", "cancelled"]);
    expect(new Set(records.map((r) => r.callId)).size).toBe(2);
    expect(spans.map((span) => span.attributes["jsonrpc.request.id"])).toEqual(records.map((r) => String(r.requestId)));
    await otel.shutdown();
  });
});

describe.each(rows)("entry-point contract, what the wire saw: $label", ({ driver, era }) => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  // The request's POST answered with an HTTP error status: the server received it. The call fails
  // (never cancelled, never "never sent"), and its record names the status (issue 27, item 2).
  for (const [tool, status] of [
    ["http-500", 500],
    ["http-503", 503],
    ["not-found", 404],
  ] as const) {
    it(`a request answered HTTP ${status}: failed, received (the status in the record and its message), not re-sent; the next call works`, async () => {
      const server = await startRawHttp({ era: era === "2026-07-28" ? "2026-07-28" : "2025-11-25" });
      cleanup.push(() => server.stop());
      const session = await driver.connect(server.url, era, {});
      cleanup.push(() => session.close());
      const outcome = await session.call({ tool, timeoutMs: 10_000 });
      expect(outcome.ok).toBe(false);
      expect((outcome as { code: string }).code).not.toBe("CONNECTION_CLOSED");
      const [record] = session.records();
      expect(record).toMatchObject({ status: "failed", cancel: null, outcome: "error", error: { httpStatus: status } });
      expect(record!.error!.message).toContain(String(status));
      const posts = () => server.events.filter((e) => e.kind === "request" && e.rpc === "tools/call" && e.tool === tool);
      expect(posts()).toHaveLength(1);
      expect(await session.call({ tool: "echo", timeoutMs: 5_000 })).toMatchObject({ ok: true });
      expect(posts()).toHaveLength(1);
    });
  }

  // The raw server's tools: `reset` writes the SSE headers and one progress event, then destroys
  // the socket; `end` the same, then ends the body with no response; `drop` destroys the socket
  // before any status line.
  for (const [tool, how] of [
    ["reset", "the server drops the connection after the SSE headers"],
    ["end", "the server ends the stream with no response"],
    ["drop", "the server resets the connection before any header"],
  ] as const) {
    it(`${how}: CONNECTION_CLOSED at once, with its record; nothing re-sent; the next call works`, async () => {
      const server = await startRawHttp({ era: era === "2026-07-28" ? "2026-07-28" : "2025-11-25" });
      cleanup.push(() => server.stop());
      const session = await driver.connect(server.url, era, {});
      cleanup.push(() => session.close());
      const begun = performance.now();
      const outcome = await session.call({ tool, timeoutMs: 10_000 });
      expect(performance.now() - begun).toBeLessThan(50 + SLACK_MS * 2);
      expect(outcome).toMatchObject({ ok: false, code: "CONNECTION_CLOSED" });
      // The request's body was written before the stream was lost: it may have run, never "never sent".
      expect(session.records()[0]).toMatchObject({
        status: "cancelled",
        cancel: { trigger: "connection-closed" },
        outcome: "unverified",
      });
      expect((outcome as { error: Error }).error.message).not.toMatch(/never sent/);
      const posts = () => server.events.filter((e) => e.kind === "request" && e.rpc === "tools/call" && e.tool === tool);
      expect(posts()).toHaveLength(1);
      expect(await session.call({ tool: "echo", timeoutMs: 5_000 })).toMatchObject({ ok: true });
      expect(posts()).toHaveLength(1);
    });
  }
});
