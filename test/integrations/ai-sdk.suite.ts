// The Vercel AI SDK integration against the real framework: `createMCPClient({ transport })` from
// @ai-sdk/mcp with the library's transport, its tools' own `execute(args, { abortSignal })` (no
// language model), against real servers (the v2 SDK server over stdio; the v1 and v2 SDK servers
// over Streamable HTTP) and the raw scripted stdio peer where only it can misbehave (a result
// after the cancel). The suite takes the framework module as an argument, so the same tests run
// on Node 20 (@ai-sdk/mcp 1.x) and Node 22 (2.x, test/node22/frameworks/).
import { afterEach, describe, expect, it } from "vitest";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";
import type { CancellableTransportOptions } from "../../src/integrations/ai-sdk/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { closedUnfinished, eventually, seen, sleep, startV1, type TestServer } from "../http/servers.js";
import { fixture } from "../helpers/stdio.js";
import { SLACK_MS } from "../helpers/timing.js";
import { notOptions } from "../helpers/hook-values.js";
import { withWarnings } from "../helpers/reliability.js";

type Execute = (
  args: Record<string, unknown>,
  options: { abortSignal?: AbortSignal; toolCallId: string; messages: unknown[] },
) => Promise<unknown>;

/** The part of `@ai-sdk/mcp` the suite uses (1.x and 2.x alike). */
export interface AiSdkMcpModule {
  createMCPClient(config: { transport: unknown; onUncaughtError?: (error: unknown) => void; maxRetries?: number }): Promise<{
    tools(): Promise<Record<string, { execute?: unknown }>>;
    close(): Promise<void>;
  }>;
}

const opts = (abortSignal?: AbortSignal) => ({ toolCallId: "call_1", messages: [], ...(abortSignal ? { abortSignal } : {}) });

export function defineAiSdkSuite(ai: AiSdkMcpModule, label: string): void {
  const open: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close().catch(() => {});
  });

  async function connect(inner: Parameters<typeof cancellableTransport>[0], options: CancellableTransportOptions = {}) {
    const transport = cancellableTransport(inner, options);
    const uncaught: unknown[] = [];
    const client = await ai.createMCPClient({ transport, onUncaughtError: (error) => uncaught.push(error), maxRetries: 2 });
    open.push(() => client.close());
    const tools = await client.tools();
    const tool = (name: string) => tools[name]!.execute as Execute;
    return { transport, client, tool, uncaught };
  }

  function stdio(script: string, env: Record<string, string> = {}) {
    const inner = new StdioClientTransport({
      command: process.execPath,
      args: [fixture(script)],
      env: { ...(process.env as Record<string, string>), ...env },
      stderr: "pipe",
    });
    const lines: string[] = [];
    inner.stderr?.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n")));
    const received = () =>
      lines
        .filter((l) => l.startsWith("RECV "))
        .map((l) => JSON.parse(l.slice(5)) as { method?: string; id?: number; params?: { requestId?: number } });
    return { adapter: stdioCancellation(inner), stderr: () => lines.join("\n"), received };
  }

  describe(`Vercel AI SDK (${label}): cancellableTransport under createMCPClient`, () => {
    it("stdio: the tool's abortSignal reaches the server as one notifications/cancelled and its handler's signal fires; the AI SDK rejects as aborted; no unknown-id error", async () => {
      const server = stdio("http/v2-stdio-server.mjs");
      const { transport, tool, uncaught } = await connect(server.adapter);
      const controller = new AbortController();
      const reason = new Error("user pressed stop");
      const running = tool("sleep")({ ms: 5_000 }, opts(controller.signal));
      expect(await eventually(() => transport.pendingCount === 1 && /STARTED /.test(server.stderr()), 5_000)).toBe(true);
      const abortedAt = performance.now();
      controller.abort(reason);
      const error = (await running.then(
        () => undefined,
        (e: unknown) => e,
      )) as Error & { cause?: unknown };
      expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
      expect(error.name).toMatch(/MCPClientError$/);
      expect(error.message).toMatch(/aborted/i);
      expect(error.cause).toBe(reason);
      expect(await eventually(() => /ABORTED /.test(server.stderr()), 5_000)).toBe(true);
      const calls = transport.records().filter((r) => r.method === "tools/call");
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "aborted", mechanism: "notification" } });
      expect(transport.records().map((r) => r.method)).toEqual(["tools/list", "tools/call"]); // a record for every request but initialize
      await sleep(200);
      expect(uncaught).toEqual([]);
      expect(transport.pendingCount).toBe(0);
    });

    it("stdio: our idle timeout fires at its bound though the AI SDK sets none; the late result is discarded and recorded, never an unknown message ID; sent once despite maxRetries", async () => {
      const server = stdio("scripted-server.mjs", { SCRIPTED_LIST_ALL: "1" });
      const { transport, tool, uncaught } = await connect(server.adapter, { timeoutMs: 300 });
      const started = performance.now();
      const error = (await tool("late")({ ms: 900 }, opts()).then(
        () => undefined,
        (e: unknown) => e,
      )) as Error & {
        code?: number;
        data?: { code: string; record: { summary: string } };
      };
      const elapsed = performance.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(290);
      expect(elapsed).toBeLessThan(300 + SLACK_MS);
      expect(error.name).toMatch(/MCPClientError$/);
      expect(error.code).toBe(-32001);
      expect(error.data).toMatchObject({ code: "REQUEST_TIMEOUT", record: { summary: "cancelled (timeout), outcome unverified" } });
      expect(
        await eventually(() => transport.records().find((r) => r.method === "tools/call")?.outcome === "late-result-discarded", 3_000),
      ).toBe(true);
      const toolCalls = server.received().filter((m) => m.method === "tools/call");
      expect(toolCalls).toHaveLength(1);
      expect(
        server
          .received()
          .filter((m) => m.method === "notifications/cancelled")
          .map((m) => m.params?.requestId),
      ).toEqual([toolCalls[0]!.id]);
      expect(uncaught).toEqual([]);
      expect(transport.pendingCount).toBe(0);
    });

    it("a usage mistake in callOptions reaches the developer: the tool's execute rejects with the InvalidOptionError naming the hook, one McpCancellableWarning for two calls, a record each; nothing sent", () =>
      withWarnings(async (warnings) => {
        const server = stdio("scripted-server.mjs", { SCRIPTED_LIST_ALL: "1" });
        const { transport, tool, uncaught } = await connect(server.adapter, {
          callOptions: (method) => (method === "tools/call" ? ({ timeoutMs: 2.5, reason: label } as never) : undefined),
        });
        for (let call = 0; call < 2; call++) {
          const error = (await tool("echo")({ text: "hi" }, opts()).then(
            () => undefined,
            (e: unknown) => e,
          )) as Error & { code?: string; option?: string };
          expect(error).toMatchObject({ name: "InvalidOptionError", code: "INVALID_OPTION", option: "timeoutMs" });
          expect(error.message).toMatch(
            /^cancellableTransport callOptions\("tools\/call", params\) returned an invalid option, so tools\/call "echo" was not sent: call options: "timeoutMs" must be an integer/,
          );
        }
        await sleep(50);
        const ours = warnings.filter(
          (w) => (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION" && w.message.includes("received 2.5"),
        );
        expect(ours).toHaveLength(1);
        const calls = transport.records().filter((r) => r.method === "tools/call");
        expect(calls.map((r) => [r.status, r.outcome, r.error?.code])).toEqual([
          ["failed", "not-sent", "INVALID_OPTION"],
          ["failed", "not-sent", "INVALID_OPTION"],
        ]);
        expect(server.received().filter((m) => m.method === "tools/call")).toHaveLength(0);
        expect(uncaught).toEqual([]);
        expect(transport.pendingCount).toBe(0);
      }));

    it("callOptions returning null or undefined means no options of the request's own: tools() and the tool's execute work, each recorded", async () => {
      for (const none of [null, undefined]) {
        const server = stdio("scripted-server.mjs", { SCRIPTED_LIST_ALL: "1" });
        const { transport, tool, uncaught } = await connect(server.adapter, { timeoutMs: 5_000, callOptions: () => none as never });
        await expect(tool("echo")({ text: "hi" }, opts())).resolves.toMatchObject({
          content: [{ type: "text", text: expect.stringMatching(/^echo \d+$/) }],
        });
        expect(transport.records().map((r) => [r.method, r.status])).toEqual([
          ["tools/list", "succeeded"],
          ["tools/call", "succeeded"],
        ]);
        // the server's stderr (what it read) may come after its answer
        expect(await eventually(() => server.received().filter((m) => m.method === "tools/call").length === 1, 3_000)).toBe(true);
        expect(uncaught).toEqual([]);
      }
    });

    it("callOptions returning no object (a string, a number, true, an array, a Promise, a Map) rejects the tool's execute with an InvalidOptionError naming callOptions and what it returned, warned once each and recorded; nothing sent", async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on("warning", onWarning);
      let returned: unknown;
      try {
        const server = stdio("scripted-server.mjs", { SCRIPTED_LIST_ALL: "1" });
        const { transport, tool, uncaught } = await connect(server.adapter, {
          callOptions: (method) => (method === "tools/call" ? (returned as never) : undefined),
        });
        const table = notOptions();
        for (const [value, what] of table) {
          returned = value;
          for (let call = 0; call < 2; call++) {
            const error = await tool("echo")({ text: "hi" }, opts()).then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(error).toMatchObject({ name: "InvalidOptionError", code: "INVALID_OPTION", option: "callOptions" });
            expect((error as Error).message).toBe(
              `cancellableTransport callOptions("tools/call", params) returned ${what}, so tools/call "echo" was not sent: callOptions must return an object of call options, or null/undefined`,
            );
          }
        }
        await sleep(50); // warnings are emitted on the next tick
        const ours = warnings.filter(
          (w) =>
            (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION" &&
            w.message.includes("must return an object of call options"),
        );
        expect(ours.map((w) => w.message)).toEqual(table.map(([, what]) => expect.stringContaining(`returned ${what}, so`)));
        expect(server.received().filter((m) => m.method === "tools/call")).toHaveLength(0);
        // Each refused call is recorded, as an invalid option from the hook is: failed, not sent.
        const refused = (what: string) =>
          expect.objectContaining({
            status: "failed",
            outcome: "not-sent",
            requestId: null,
            error: expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining(`returned ${what}, so`) }),
          });
        expect(transport.records().filter((r) => r.method === "tools/call")).toEqual(
          table.flatMap(([, what]) => [refused(what), refused(what)]),
        );
        expect(uncaught).toEqual([]);
        expect(transport.pendingCount).toBe(0);
      } finally {
        process.off("warning", onWarning);
      }
    });

    it("callOptions that throws (a bug in the hook) rejects the tool's execute with an InvalidOptionError naming callOptions and what it threw, warned once and recorded; nothing sent", () =>
      withWarnings(async (warnings) => {
        const server = stdio("scripted-server.mjs", { SCRIPTED_LIST_ALL: "1" });
        const { transport, tool, uncaught } = await connect(server.adapter, {
          callOptions: (method, params) =>
            method === "tools/call" ? { timeoutMs: (params as { budget?: { ms: number } }).budget!.ms } : undefined,
        });
        const message =
          `cancellableTransport callOptions("tools/call", params) threw TypeError: Cannot read properties of undefined (reading 'ms'), ` +
          `so tools/call "echo" was not sent: fix the hook (the error is yours, not the server's)`;
        for (let call = 0; call < 2; call++) {
          const error = await tool("echo")({ text: "hi" }, opts()).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error).toMatchObject({ name: "InvalidOptionError", code: "INVALID_OPTION", option: "callOptions", message });
        }
        await sleep(50); // warnings are emitted on the next tick
        expect(
          warnings.filter((w) => (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION" && w.message === message),
        ).toHaveLength(1);
        expect(server.received().filter((m) => m.method === "tools/call")).toHaveLength(0);
        const refused = expect.objectContaining({
          status: "failed",
          outcome: "not-sent",
          error: expect.objectContaining({ code: "INVALID_OPTION", message }),
        });
        expect(transport.records().filter((r) => r.method === "tools/call")).toEqual([refused, refused]); // both calls
        expect(uncaught).toEqual([]);
      }));

    it("callOptions returning an invalid awaitVerification refuses the call as any invalid option: named, warned once, recorded failed/not-sent; nothing sent", async () =>
      withWarnings(async (warnings) => {
        // An outside tester's: it was refused with no warning and no record, in words of its own.
        const server = stdio("scripted-server.mjs", { SCRIPTED_LIST_ALL: "1" });
        const { transport, tool, uncaught } = await connect(server.adapter, {
          callOptions: (method) => (method === "tools/call" ? ({ timeoutMs: 5_000, awaitVerification: "yes" } as never) : undefined),
        });
        const error = (await tool("echo")({ text: "hi" }, opts()).then(
          () => undefined,
          (e: unknown) => e,
        )) as Error & { option?: string };
        expect(error).toMatchObject({ name: "InvalidOptionError", option: "awaitVerification" });
        expect(error.message).toMatch(
          /^cancellableTransport callOptions\("tools\/call", params\) returned an invalid option, so tools\/call "echo" was not sent: "awaitVerification" must be true, false or a function \(record\) => string; received "yes"$/,
        );
        await sleep(50);
        expect(
          warnings.filter(
            (w) => (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION" && w.message.includes('"awaitVerification"'),
          ),
        ).toHaveLength(1);
        expect(transport.records().filter((r) => r.method === "tools/call")).toMatchObject([
          { status: "failed", outcome: "not-sent", error: { code: "INVALID_OPTION" } },
        ]);
        expect(server.received().filter((m) => m.method === "tools/call")).toHaveLength(0);
        expect(uncaught).toEqual([]);
      }));

    it("stdio, awaitVerification: a call its server's crash cancelled answers with the verified outcome, not the AI SDK's own 'Connection closed'", async () => {
      // An outside tester's: the AI SDK's close handler rejected the call first, so the model read
      // less with awaitVerification than without it (the library's -32000 text).
      const server = stdio("scripted-server.mjs", { SCRIPTED_LIST_ALL: "1" });
      const { transport, tool, uncaught } = await connect(server.adapter, {
        awaitVerification: true,
        verifiers: { crash: async () => "applied" as const },
      });
      const result = await tool("crash")({ ms: 100 }, opts());
      expect(result).toMatchObject({
        isError: true,
        content: [
          {
            type: "text",
            text: expect.stringMatching(
              /^The tool call "crash" was cancelled after \d+\.\d s \(lost its connection\); a check afterwards found that its effect was applied/,
            ),
          },
        ],
      });
      expect(transport.records().find((r) => r.method === "tools/call")).toMatchObject({
        status: "cancelled",
        cancel: { trigger: "connection-closed" },
        outcome: "verified-applied",
      });
      expect(uncaught).toEqual([]);
    });

    it("stdio, awaitVerification: the AI SDK client's own close() with calls pending (one timed out, its read under way) hands each the verified outcome, not 'Connection closed'", async () => {
      // An outside tester's: the AI SDK's close() is `await transport.close(); onClose()`, and its
      // onClose rejected both calls with a bare "Connection closed" while their reads ran on.
      const server = stdio("scripted-server.mjs", { SCRIPTED_LIST_ALL: "1" });
      const { client, transport, tool, uncaught } = await connect(server.adapter, {
        timeoutMs: 300,
        awaitVerification: true,
        verifyDelayMs: 400,
        verifiers: { late: async () => "applied" as const, silent: async () => "not-applied" as const },
      });
      const outcome = (promise: Promise<unknown>) =>
        promise.then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        );
      const timedOut = outcome(tool("late")({ ms: 5_000 }, opts()));
      await sleep(350); // past its idle timeout: its verification waits verifyDelayMs
      const pending = outcome(tool("silent")({ ms: 5_000 }, opts()));
      await sleep(50);
      await client.close();
      const [first, second] = await Promise.all([timedOut, pending]);
      expect(first).toMatchObject({
        value: {
          isError: true,
          content: [
            {
              text: expect.stringMatching(
                /^The tool call "late" was cancelled after \d+\.\d s \(timed out\); a check afterwards found that its effect was applied/,
              ),
            },
          ],
        },
      });
      expect(second).toMatchObject({
        value: {
          isError: true,
          content: [
            {
              text: expect.stringMatching(
                /^The tool call "silent" was cancelled after \d+\.\d s \(its connection was closed by the client\); a check afterwards found that its effect was not applied/,
              ),
            },
          ],
        },
      });
      expect(transport.records().filter((r) => r.method === "tools/call")).toMatchObject([
        { name: "late", cancel: { trigger: "timeout" }, outcome: "verified-applied" },
        { name: "silent", cancel: { trigger: "connection-closed" }, outcome: "verified-not-applied" },
      ]);
      expect(uncaught).toEqual([]);
    });

    it("callOptions returning a signal (not one of its options) rejects the tool's execute with an InvalidOptionError naming signal; nothing sent", async () => {
      // An outside tester's: the hook's signal was taken where the AI SDK gave none, and its abort
      // left the AI SDK's request unanswered (the AI SDK's client has no timeout of its own).
      const server = stdio("scripted-server.mjs", { SCRIPTED_LIST_ALL: "1" });
      const { transport, tool, uncaught } = await connect(server.adapter, {
        callOptions: (method) => (method === "tools/call" ? ({ signal: AbortSignal.timeout(50) } as never) : undefined),
      });
      const error = await tool("echo")({ text: "hi" }, opts()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ name: "InvalidOptionError", option: "signal" });
      expect((error as Error).message).toMatch(
        /callOptions\("tools\/call", params\) returned an invalid option, so tools\/call "echo" was not sent: "signal" is not one of callOptions' options/,
      );
      expect(server.received().filter((m) => m.method === "tools/call")).toHaveLength(0);
      expect(transport.records().filter((r) => r.method === "tools/call")).toMatchObject([{ status: "failed", outcome: "not-sent" }]);
      expect(uncaught).toEqual([]);
    });

    // The per-tool maximum total timeout, the idle timeout over HTTP, the abort with the v2 transport
    // and the lost connections are rows of the entry-point contract (test/contract/); here the
    // v1 transport under the AI SDK, and close() must leave no stream open.
    {
      const [era, start, make, mechanism] = [
        "2025-era, v1 stateful server, v1 transport",
        () => startV1({ stateful: true }),
        (url: URL) => streamableHttpCancellation(new TransportV1(url, { fetch: cancellableFetch() })),
        "notification+stream-close",
      ] as const;
      it(`Streamable HTTP (${era}): the abortSignal closes that request's stream, the handler aborts, the tools/call went out once`, async () => {
        const http: TestServer = await start();
        open.push(() => http.stop());
        const { transport, tool, uncaught, client } = await connect(make(http.url));
        const controller = new AbortController();
        const running = tool("slow")({ ms: 5_000 }, opts(controller.signal));
        expect(await eventually(() => seen(http, "tools/call")[0]?.start !== undefined, 5_000)).toBe(true);
        controller.abort();
        await expect(running).rejects.toMatchObject({ name: expect.stringMatching(/MCPClientError$/) });
        expect(await eventually(() => seen(http, "tools/call")[0]?.aborted !== undefined, 3_000)).toBe(true);
        expect(await eventually(() => closedUnfinished(seen(http, "tools/call")[0]), 3_000)).toBe(true);
        const [call] = transport.records().filter((r) => r.method === "tools/call");
        expect(call).toMatchObject({ status: "cancelled", cancel: { trigger: "aborted", mechanism } });
        await sleep(300);
        expect(seen(http, "tools/call")).toHaveLength(1);
        expect(uncaught).toEqual([]);
        expect(transport.pendingCount).toBe(0);
        await client.close();
        expect(await eventually(() => http.openResponses().length === 0, 3_000)).toBe(true); // no stream left open on the server
      });
    }
  });
}
