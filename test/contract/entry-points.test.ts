// The entry-point contract (issue 19): one table of behaviours, run against every entry point of
// the library over a real child process on stdio (the scripted server, which can answer late,
// keep sending progress after a cancel, or crash). Each entry point is a driver that translates
// the behaviour's call into its own caller's shape and its outcome back into one common shape,
// so a behaviour that one entry point lacks shows up here as a failing row, not as a bug report.
// An entry point that cannot have a behaviour says so in its driver (`lacks`), with why; the
// same is in docs/frameworks.md. See docs/architecture.md for the one call path they share.
import { afterEach, describe, expect, it } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { createMCPClient } from "@ai-sdk/mcp";
import { attachCancellation, withCancellation } from "../../src/index.js";
import type { CallObserver, CancellationOptions, RunRecord } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";
import { CancellableMCPServerStdio } from "../../src/integrations/openai-agents/index.js";
import { otelRecorder } from "../../src/otel/index.js";
import { eventually, fixture } from "../helpers/stdio.js";
import { otelHarness } from "../otel/harness.js";
import { SLACK_MS } from "../helpers/timing.js";

/** What a behaviour asks of one call, in the library's terms (durations in ms). */
interface Ask {
  tool: string;
  args?: Record<string, unknown>;
  timeoutMs?: number;
  maxTotalTimeoutMs?: number;
  resetTimeoutOnProgress?: boolean;
  signal?: AbortSignal;
  /** SDK request options to pass on as they are (`relatedRequestId`, ...), for the entry points that take the SDK's options. */
  sdk?: Record<string, unknown>;
}

/** A call's outcome in one shape: the result, or the error's stable code ("server" for the server's own). */
type Outcome = { ok: true; value: unknown } | { ok: false; code: string; error: unknown };

interface Session {
  call(ask: Ask): Promise<Outcome>;
  records(): RunRecord[];
  close(): Promise<void>;
}

interface Driver {
  readonly name: string;
  connect(options: CancellationOptions, stderr: (line: string) => void): Promise<Session>;
  /** Behaviours this entry point cannot have, with why (the same is in docs/frameworks.md). */
  readonly lacks?: Readonly<Partial<Record<Behaviour, string>>>;
}

type Behaviour =
  | "idle-timeout"
  | "max-total-timeout"
  | "abort"
  | "late-result"
  | "late-error"
  | "connection-lost"
  | "refused-send"
  | "sdk-options";

/** What went down the SDK transport's `send`, with the options the SDK handed it (the spawned transports of the v1 and v2 drivers). */
let sends: Array<{ method: string | undefined; options: Record<string, unknown> | undefined }> = [];

function spy<T extends { send(message: never, options?: never): Promise<void> }>(transport: T): T {
  const send = transport.send.bind(transport) as (message: unknown, options?: unknown) => Promise<void>;
  (transport as { send: unknown }).send = (message: { method?: string }, options?: Record<string, unknown>) => {
    sends.push({ method: message.method, options });
    return send(message, options);
  };
  return transport;
}

/** Why the library-shaped and framework-shaped entry points take no SDK request options. */
const NO_SDK_OPTIONS = {
  library: "its per-call options are the library's own (CallOptions); the SDK's request options are sdkClient's and attachCancellation's",
  aiSdk: "the AI SDK's tool execute takes an abortSignal only: there are no SDK request options to pass",
  agents: "the Agents runtime hands callTool a signal only (MCPCallToolOptions): there are no SDK request options to pass",
} as const;

const SERVER_ARGS = [fixture("scripted-server.mjs"), "--list-all"];

/** The library's own errors by their stable code; anything else is the server's (or the framework's) error. */
function libraryOutcome(error: unknown): Outcome {
  const code = (error as { code?: unknown } | null)?.code;
  return { ok: false, code: typeof code === "string" ? code : "server", error };
}

function spawnV1(stderr: (line: string) => void) {
  const transport = new StdioV1({ command: process.execPath, args: SERVER_ARGS, stderr: "pipe" });
  transport.stderr?.on("data", (chunk: Buffer) => chunk.toString("utf8").split("\n").forEach(stderr));
  return spy(transport);
}

function spawnV2(stderr: (line: string) => void) {
  const transport = new StdioV2({ command: process.execPath, args: SERVER_ARGS, stderr: "pipe" });
  transport.stderr?.on("data", (chunk: Buffer) => chunk.toString("utf8").split("\n").forEach(stderr));
  return spy(transport);
}

const libraryOptions = (ask: Ask) => ({
  ...(ask.timeoutMs === undefined ? {} : { timeoutMs: ask.timeoutMs }),
  ...(ask.maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeoutMs: ask.maxTotalTimeoutMs }),
  ...(ask.resetTimeoutOnProgress === undefined ? {} : { resetTimeoutOnProgress: ask.resetTimeoutOnProgress }),
  ...(ask.signal === undefined ? {} : { signal: ask.signal }),
});

/** The same, in the SDK's request-option names (what frameworks pass to the client's own methods). */
const sdkOptions = (ask: Ask) => ({
  ...(ask.timeoutMs === undefined ? {} : { timeout: ask.timeoutMs }),
  ...(ask.maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeout: ask.maxTotalTimeoutMs }),
  ...(ask.resetTimeoutOnProgress === undefined ? {} : { resetTimeoutOnProgress: ask.resetTimeoutOnProgress }),
  ...(ask.signal === undefined ? {} : { signal: ask.signal }),
  ...ask.sdk,
});

/** The per-call options a framework's option hook gives: everything but the signal, which the framework passes itself. */
const withoutSignal = ({ signal: _signal, sdk: _sdk, ...rest }: Ask): Ask => rest;

const settle = (promise: Promise<unknown>): Promise<Outcome> =>
  promise.then(
    (value) => ({ ok: true, value }) as const,
    (error: unknown) => libraryOutcome(error),
  );

const drivers: Driver[] = [
  {
    name: "withCancellation (v1 client)",
    lacks: { "sdk-options": NO_SDK_OPTIONS.library },
    async connect(options, stderr) {
      const client = new ClientV1({ name: "contract", version: "1.0.0" });
      const mcp = withCancellation(client, stdioCancellation(spawnV1(stderr)), options);
      await client.connect(mcp.transport);
      return {
        call: (ask) => settle(mcp.callTool({ name: ask.tool, arguments: ask.args ?? {} }, libraryOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "withCancellation (v2 client)",
    lacks: { "sdk-options": NO_SDK_OPTIONS.library },
    async connect(options, stderr) {
      const client = new ClientV2({ name: "contract", version: "1.0.0" });
      const mcp = withCancellation(client, stdioCancellation(spawnV2(stderr)), options);
      await client.connect(mcp.transport as never);
      return {
        call: (ask) => settle(mcp.callTool({ name: ask.tool, arguments: ask.args ?? {} }, libraryOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "attachCancellation (v1 client, the SDK's own callTool)",
    async connect(options, stderr) {
      const client = new ClientV1({ name: "contract", version: "1.0.0" });
      await client.connect(spawnV1(stderr));
      const mcp = attachCancellation(client, options);
      return {
        call: (ask) => settle(client.callTool({ name: ask.tool, arguments: ask.args ?? {} }, undefined, sdkOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "attachCancellation (v2 client, the SDK's own callTool)",
    async connect(options, stderr) {
      const client = new ClientV2({ name: "contract", version: "1.0.0" });
      await client.connect(spawnV2(stderr));
      const mcp = attachCancellation(client, options);
      return {
        call: (ask) => settle(client.callTool({ name: ask.tool, arguments: ask.args ?? {} }, sdkOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "sdkClient (v1 argument order)",
    async connect(options, stderr) {
      const client = new ClientV1({ name: "contract", version: "1.0.0" });
      const mcp = withCancellation(client, stdioCancellation(spawnV1(stderr)), options);
      await client.connect(mcp.transport);
      return {
        call: (ask) => settle(mcp.sdkClient.callTool({ name: ask.tool, arguments: ask.args ?? {} }, undefined, sdkOptions(ask))),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "the Vercel AI SDK transport (createMCPClient)",
    lacks: {
      "sdk-options": NO_SDK_OPTIONS.aiSdk,
      "refused-send":
        "on stdio the AI SDK closes its client when the transport closes and refuses the next request itself " +
        '("Attempted to send a request from a closed client"): it never reaches the transport, so there is no call to settle ' +
        "or record (over HTTP the refused send does reach it: entry-points-http.test.ts)",
    },
    async connect(options, stderr) {
      let current: Ask = { tool: "" };
      const transport = cancellableTransport(stdioCancellation(spawnV1(stderr)), {
        ...options,
        callOptions: (method) => (method === "tools/call" ? libraryOptions(withoutSignal(current)) : undefined),
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
            (value) => ({ ok: true, value }) as const,
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
    name: "the OpenAI Agents server (CancellableMCPServerStdio)",
    lacks: { "sdk-options": NO_SDK_OPTIONS.agents },
    async connect(options, stderr) {
      let current: Ask = { tool: "" };
      const records: RunRecord[] = [];
      const server = new CancellableMCPServerStdio({
        ...options,
        command: process.execPath,
        args: SERVER_ARGS,
        stderr: "pipe",
        onRecord: (record) => {
          options.onRecord?.(record);
          records.push(record);
        },
        callOptions: () => libraryOptions(withoutSignal(current)),
      });
      await server.connect();
      const child = (server.client as unknown as { transport?: { stderr?: NodeJS.ReadableStream | null } }).transport;
      child?.stderr?.on("data", (chunk: Buffer) => chunk.toString("utf8").split("\n").forEach(stderr));
      return {
        call: (ask) => {
          current = ask;
          return settle(
            server.callTool(ask.tool, ask.args ?? {}, null, ask.signal === undefined ? undefined : ({ signal: ask.signal } as never)),
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

interface Harness {
  session: Session;
  lines: string[];
  /** The `notifications/cancelled` the server read. */
  cancels(): Array<{ requestId: unknown; reason?: string }>;
  /** The ids of the `tools/call` requests the server read. */
  toolCalls(): unknown[];
  observed: { started: number; records: RunRecord[] };
  /** What the SDK handed the transport's `send` (the v1 and v2 drivers' own transports). */
  sends(): typeof sends;
}

describe.each(drivers)("entry-point contract: $name", (driver) => {
  const open: Session[] = [];
  afterEach(async () => {
    for (const session of open.splice(0)) await session.close().catch(() => {});
  });

  async function connect(options: CancellationOptions = {}): Promise<Harness> {
    const lines: string[] = [];
    const observed = { started: 0, records: [] as RunRecord[] };
    const observer: CallObserver = {
      start: (call) => {
        if (call.method !== "tools/call") return undefined;
        observed.started++;
        return { record: (record) => void observed.records.push(record) };
      },
    };
    sends = [];
    const session = await driver.connect({ observer, ...options }, (line) => lines.push(line));
    open.push(session);
    const read = () =>
      lines
        .filter((l) => l.startsWith("RECV "))
        .map((l) => JSON.parse(l.slice(5)) as { method?: string; id?: unknown; params?: Record<string, unknown> });
    return {
      session,
      lines,
      observed,
      cancels: () =>
        read()
          .filter((m) => m.method === "notifications/cancelled")
          .map((m) => m.params as { requestId: unknown; reason?: string }),
      toolCalls: () =>
        read()
          .filter((m) => m.method === "tools/call")
          .map((m) => m.id),
      sends: () => sends,
    };
  }

  const skipIfLacking = (behaviour: Behaviour) => driver.lacks?.[behaviour] !== undefined;

  it("a result is delivered as the result; one record, succeeded; the observer saw one call", async () => {
    const h = await connect();
    const outcome = await h.session.call({ tool: "echo" });
    expect(outcome.ok).toBe(true);
    expect(h.session.records()).toHaveLength(1);
    expect(h.session.records()[0]).toMatchObject({ status: "succeeded", method: "tools/call", name: "echo" });
    expect(h.observed.started).toBe(1);
    expect(h.observed.records.at(-1)?.status).toBe("succeeded");
  });

  it.skipIf(skipIfLacking("idle-timeout"))(
    "idle timeout: REQUEST_TIMEOUT, settled at once, one notifications/cancelled naming the request, nothing re-sent",
    async () => {
      const h = await connect();
      const started = performance.now();
      const outcome = await h.session.call({ tool: "silent", timeoutMs: 200 });
      const elapsed = performance.now() - started;
      expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
      expect(elapsed).toBeGreaterThanOrEqual(190);
      expect(elapsed).toBeLessThan(200 + SLACK_MS);
      expect(await eventually(() => h.cancels().length === 1)).toBe(true);
      const [id] = h.toolCalls();
      expect(h.cancels()[0]!.requestId).toBe(id);
      expect(h.toolCalls()).toHaveLength(1);
      const [record] = h.session.records();
      expect(record).toMatchObject({ status: "cancelled", cancel: { trigger: "timeout", mechanism: "notification" }, requestId: id });
      expect(h.observed.records.at(-1)?.cancel?.trigger).toBe("timeout");
    },
  );

  it.skipIf(skipIfLacking("max-total-timeout"))(
    "maximum total timeout: progress resets the idle timeout but never the maximum",
    async () => {
      const h = await connect();
      const started = performance.now();
      const outcome = await h.session.call({
        tool: "progress",
        args: { every: 50 },
        timeoutMs: 300,
        maxTotalTimeoutMs: 700,
        resetTimeoutOnProgress: true,
      });
      const elapsed = performance.now() - started;
      expect(outcome).toMatchObject({ ok: false, code: "MAX_TOTAL_TIMEOUT" });
      expect(elapsed).toBeGreaterThanOrEqual(690);
      expect(elapsed).toBeLessThan(700 + SLACK_MS);
      const [record] = h.session.records();
      expect(record?.cancel?.trigger).toBe("max-total-timeout");
      expect(record?.progress?.count).toBeGreaterThan(3);
      // The server keeps sending progress after the cancel: dropped, counted on the record.
      expect(await eventually(() => (h.session.records()[0]?.late.progress ?? 0) > 0)).toBe(true);
    },
  );

  it.skipIf(skipIfLacking("abort"))("abort: CANCELLED at once, the reason kept local, one notifications/cancelled", async () => {
    const h = await connect();
    const controller = new AbortController();
    const calling = h.session.call({ tool: "silent", signal: controller.signal });
    expect(await eventually(() => h.toolCalls().length === 1)).toBe(true);
    const abortedAt = performance.now();
    controller.abort(new Error("private: the user's own words"));
    const outcome = await calling;
    expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
    expect(outcome).toMatchObject({ ok: false, code: "CANCELLED" });
    expect(await eventually(() => h.cancels().length === 1)).toBe(true);
    expect(h.cancels()[0]!.reason ?? "").not.toMatch(/private/);
    expect(h.session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "aborted" } });
  });

  it.skipIf(skipIfLacking("late-result"))(
    "a late result is dropped and counted: the caller keeps the timeout, the record says late result discarded",
    async () => {
      const h = await connect();
      const outcome = await h.session.call({ tool: "late", args: { ms: 400 }, timeoutMs: 150 });
      expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
      expect(await eventually(() => h.session.records()[0]?.late.results === 1, 3_000)).toBe(true);
      expect(h.session.records()[0]).toMatchObject({ status: "cancelled", outcome: "late-result-discarded" });
      // The connection is still good.
      expect((await h.session.call({ tool: "echo" })).ok).toBe(true);
    },
  );

  it.skipIf(skipIfLacking("late-error"))("a late error is dropped and counted", async () => {
    const h = await connect();
    const outcome = await h.session.call({ tool: "late-error", args: { ms: 400 }, timeoutMs: 150 });
    expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
    expect(await eventually(() => h.session.records()[0]?.late.errors === 1, 3_000)).toBe(true);
    expect((await h.session.call({ tool: "echo" })).ok).toBe(true);
  });

  it.skipIf(skipIfLacking("connection-lost"))(
    "the connection lost mid-call: CONNECTION_CLOSED at once, with its record, nothing re-sent",
    async () => {
      const h = await connect();
      const started = performance.now();
      const outcome = await h.session.call({ tool: "crash", args: { ms: 100 }, timeoutMs: 10_000 });
      expect(performance.now() - started).toBeLessThan(100 + SLACK_MS * 4);
      expect(outcome).toMatchObject({ ok: false, code: "CONNECTION_CLOSED" });
      expect(h.session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed" } });
      expect(h.toolCalls()).toHaveLength(1);
    },
  );

  it.skipIf(skipIfLacking("refused-send"))(
    "a refused send (the server is gone): CONNECTION_CLOSED at once, with its record, never sent",
    async () => {
      const h = await connect();
      expect(await h.session.call({ tool: "crash", args: { ms: 50 }, timeoutMs: 10_000 })).toMatchObject({
        ok: false,
        code: "CONNECTION_CLOSED",
      });
      const started = performance.now();
      const outcome = await h.session.call({ tool: "echo", timeoutMs: 10_000 });
      expect(performance.now() - started).toBeLessThan(SLACK_MS);
      expect(outcome).toMatchObject({ ok: false, code: "CONNECTION_CLOSED" });
      const records = h.session.records();
      expect(records).toHaveLength(2);
      expect(records[1]).toMatchObject({
        status: "cancelled",
        name: "echo",
        requestId: null,
        cancel: { trigger: "connection-closed", mechanism: "none" },
      });
      expect(h.toolCalls()).toHaveLength(1);
    },
  );

  it.skipIf(skipIfLacking("sdk-options"))(
    "the SDK's request options: timeout mapped to the idle timeout, the rest (relatedRequestId) handed to the SDK",
    async () => {
      const h = await connect();
      const outcome = await h.session.call({ tool: "silent", timeoutMs: 150, sdk: { relatedRequestId: "parent-7" } });
      expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
      const [sent] = h.sends().filter((m) => m.method === "tools/call");
      expect(sent?.options?.relatedRequestId).toBe("parent-7");
      expect(h.session.records()[0]?.cancel?.trigger).toBe("timeout");
    },
  );

  it("the observer (OpenTelemetry): one span per call, its error.type by how the call ended", async () => {
    const otel = otelHarness();
    const h = await connect({ observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter }) });
    expect((await h.session.call({ tool: "echo" })).ok).toBe(true);
    expect(await h.session.call({ tool: "silent", timeoutMs: 150 })).toMatchObject({ code: "REQUEST_TIMEOUT" });
    const controller = new AbortController();
    const calling = h.session.call({ tool: "silent", signal: controller.signal });
    expect(await eventually(() => h.toolCalls().length === 3)).toBe(true);
    controller.abort(new Error("private"));
    expect(await calling).toMatchObject({ code: "CANCELLED" });
    const spans = otel.spans().filter((span) => span.attributes["mcp.method.name"] === "tools/call" && span.parentSpanId === undefined);
    expect(spans.map((span) => span.attributes["error.type"])).toEqual([undefined, "timeout", "cancelled"]);
    expect(spans.map((span) => span.attributes["jsonrpc.request.id"])).toEqual(h.toolCalls().map(String));
    await otel.shutdown();
  });

  it("records: one per call, each with its own call id; the observer saw every call once", async () => {
    const h = await connect();
    await Promise.all([
      h.session.call({ tool: "echo" }),
      h.session.call({ tool: "echo" }),
      h.session.call({ tool: "silent", timeoutMs: 150 }),
    ]);
    const records = h.session.records();
    expect(records).toHaveLength(3);
    expect(new Set(records.map((r) => r.callId)).size).toBe(3);
    expect(new Set(records.map((r) => r.requestId)).size).toBe(3);
    expect(h.observed.started).toBe(3);
  });
});

describe("entry-point contract: ids across entry points", () => {
  const open: Session[] = [];
  afterEach(async () => {
    for (const session of open.splice(0)) await session.close().catch(() => {});
  });

  it("every entry point's calls get call ids no other entry point's calls have, and each its own connection id", async () => {
    const sessions = await Promise.all(drivers.map((driver) => driver.connect({}, () => {})));
    open.push(...sessions);
    await Promise.all(sessions.flatMap((session) => [session.call({ tool: "echo" }), session.call({ tool: "echo" })]));
    const records = sessions.map((session) => session.records());
    expect(records.map((r) => r.length)).toEqual(drivers.map(() => 2));
    const callIds = records.flat().map((r) => r.callId);
    expect(new Set(callIds).size).toBe(callIds.length);
    // One connection id per entry point's connection, the same for both of its calls.
    expect(records.map((r) => new Set(r.map((record) => record.connectionId)).size)).toEqual(drivers.map(() => 1));
    expect(new Set(records.map((r) => r[0]!.connectionId)).size).toBe(drivers.length);
  });
});
