// The entry-point contract over Streamable HTTP (issue 19), in both eras: 2026-07-28 (the v2
// server's stateless createMcpHandler, a pinned v2 client: the cancel is the close of the
// request's stream) and the 2025 era (the v1 server with sessions: the notification POSTed,
// then the stream closed). Each behaviour runs on every entry point that can speak the era; the
// server records what it saw, so "the server saw the stream close" is its own evidence. Late
// results, late errors and late progress need a server that misbehaves on purpose: they are in
// the stdio table (entry-points.test.ts), which every entry point runs too.
import { afterEach, describe, expect, it } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { createMCPClient } from "@ai-sdk/mcp";
import { attachCancellation, withCancellation } from "../../src/index.js";
import type { CancellationOptions, RunRecord } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";
import { closedUnfinished, eventually, seen, startV1, startV2, started, type TestServer } from "../http/servers.js";
import { SLACK_MS } from "../helpers/timing.js";

type Era = "2026-07-28" | "2025";

interface Ask {
  ms: number;
  timeoutMs?: number;
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

const v2Client = (era: Era) =>
  new ClientV2({ name: "contract", version: "1.0.0" }, era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : undefined);

const drivers: Driver[] = [
  {
    name: "withCancellation (v1 client, cancellableFetch)",
    eras: ["2025"],
    async connect(url, _era, options) {
      const client = new ClientV1({ name: "contract", version: "1.0.0" });
      const mcp = withCancellation(client, streamableHttpCancellation(new TransportV1(url, { fetch: cancellableFetch() })), options);
      await client.connect(mcp.transport);
      return {
        call: (ask) => settle(mcp.callTool({ name: "slow", arguments: { ms: ask.ms } }, { ...ask, ms: undefined } as never)),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "withCancellation (v2 client)",
    eras: ["2026-07-28", "2025"],
    async connect(url, era, options) {
      const client = v2Client(era);
      const mcp = withCancellation(client, streamableHttpCancellation(new TransportV2(url)), options);
      await client.connect(mcp.transport as never);
      return {
        call: ({ ms, ...rest }) => settle(mcp.callTool({ name: "slow", arguments: { ms } }, rest)),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "attachCancellation (v2 client, the SDK's own callTool)",
    eras: ["2026-07-28", "2025"],
    async connect(url, era, options) {
      const client = v2Client(era);
      await client.connect(new TransportV2(url));
      const mcp = attachCancellation(client, options);
      return {
        call: ({ ms, timeoutMs, signal }) =>
          settle(
            client.callTool(
              { name: "slow", arguments: { ms } },
              { ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }), ...(signal === undefined ? {} : { signal }) },
            ),
          ),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    name: "sdkClient (v1 argument order, cancellableFetch)",
    eras: ["2025"],
    async connect(url, _era, options) {
      const client = new ClientV1({ name: "contract", version: "1.0.0" });
      const mcp = withCancellation(client, streamableHttpCancellation(new TransportV1(url, { fetch: cancellableFetch() })), options);
      await client.connect(mcp.transport);
      return {
        call: ({ ms, timeoutMs, signal }) =>
          settle(
            mcp.sdkClient.callTool({ name: "slow", arguments: { ms } }, undefined, {
              ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }),
              ...(signal === undefined ? {} : { signal }),
            }),
          ),
        records: () => mcp.records(),
        close: () => client.close(),
      };
    },
  },
  {
    // The AI SDK negotiates a 2025 revision itself: it cannot be pinned to 2026-07-28.
    name: "the Vercel AI SDK transport (createMCPClient)",
    eras: ["2025"],
    async connect(url, _era, options) {
      let timeoutMs: number | undefined;
      const transport = cancellableTransport(streamableHttpCancellation(new TransportV2(url)), {
        ...options,
        callOptions: (method) => (method === "tools/call" && timeoutMs !== undefined ? { timeoutMs } : undefined),
      });
      const client = await createMCPClient({ transport });
      const tools = await client.tools();
      return {
        call: (ask) => {
          timeoutMs = ask.timeoutMs;
          const execute = tools.slow!.execute as (args: unknown, options: unknown) => Promise<unknown>;
          return execute({ ms: ask.ms }, { toolCallId: "call_1", messages: [], ...(ask.signal === undefined ? {} : { abortSignal: ask.signal }) }).then(
            () => ({ ok: true }) as const,
            (error: unknown) => {
              const data = (error as { data?: { code?: unknown } }).data;
              if (typeof data?.code === "string") return { ok: false, code: data.code, error } as const;
              if (ask.signal?.aborted === true && /abort/i.test(String((error as Error).message))) return { ok: false, code: "CANCELLED", error } as const;
              return { ok: false, code: "server", error } as const;
            },
          );
        },
        records: () => transport.records().filter((record) => record.method === "tools/call"),
        close: () => client.close(),
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

  it("idle timeout: REQUEST_TIMEOUT at once; the server sees the request's stream close unfinished; the cancel by the era's mechanism", async () => {
    const { server, session } = await setup();
    const begun = performance.now();
    const outcome = await session.call({ ms: 5_000, timeoutMs: 300 });
    expect(performance.now() - begun).toBeLessThan(300 + SLACK_MS);
    expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[0]), 3_000)).toBe(true);
    expect(seen(server, "tools/call")).toHaveLength(1); // nothing re-sent
    expect(session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "timeout", mechanism } });
    const notified = await eventually(() => seen(server, "notifications/cancelled").length > 0, era === "2025" ? 3_000 : 300);
    expect(notified).toBe(era === "2025");
  });

  it("abort: CANCELLED at once; the server sees the stream close", async () => {
    const { server, session } = await setup();
    const controller = new AbortController();
    const calling = session.call({ ms: 5_000, signal: controller.signal });
    expect(await eventually(() => seen(server, "tools/call")[0] !== undefined && started(server, seen(server, "tools/call")[0]!.http.id), 5_000)).toBe(true);
    const abortedAt = performance.now();
    controller.abort(new Error("private: the user's own words"));
    const outcome = await calling;
    expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
    expect(outcome).toMatchObject({ ok: false, code: "CANCELLED" });
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[0]), 3_000)).toBe(true);
    expect(session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "aborted", mechanism } });
  });

  it("the connection lost mid-call (every socket reset): CONNECTION_CLOSED at once, with its record; nothing re-sent", async () => {
    const { server, session } = await setup();
    const calling = session.call({ ms: 5_000, timeoutMs: 10_000 });
    expect(await eventually(() => seen(server, "tools/call")[0] !== undefined && started(server, seen(server, "tools/call")[0]!.http.id), 5_000)).toBe(true);
    const droppedAt = performance.now();
    server.drop();
    const outcome = await calling;
    expect(performance.now() - droppedAt).toBeLessThan(SLACK_MS * 2);
    expect(outcome).toMatchObject({ ok: false, code: "CONNECTION_CLOSED" });
    expect(session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed" } });
    expect(seen(server, "tools/call")).toHaveLength(1);
  });

  it("a refused send (the server is gone): CONNECTION_CLOSED, never sent, at once", async () => {
    const { server, session } = await setup();
    await server.stop();
    const begun = performance.now();
    const outcome = await session.call({ ms: 100, timeoutMs: 10_000 });
    expect(performance.now() - begun).toBeLessThan(SLACK_MS * 2);
    expect(outcome).toMatchObject({ ok: false, code: "CONNECTION_CLOSED" });
    const [record] = session.records();
    expect(record).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed" } });
  });
});
