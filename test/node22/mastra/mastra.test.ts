// Mastra's MCPClient (@mastra/mcp 2.0.0, Node 22.13+) with mcp-cancellable/mastra: attachMastra
// reaches each server's SDK client and attaches the library; the tools Mastra made then call
// through it. Driven through Mastra's own tools (`listTools()`, each tool's `execute(input,
// { abortSignal })`, what a Mastra Agent calls), against the v1 SDK server over stdio and the
// v1 (2025-era) and v2 (2026-07-28) SDK servers over Streamable HTTP.
import { afterEach, describe, expect, it } from "vitest";
import { MCPClient } from "@mastra/mcp";
import { Agent } from "@mastra/core/agent";
import { MastraLanguageModelV2Mock, simulateReadableStream } from "@mastra/core/test-utils/llm-mock";
import { attachMastra } from "../../../src/integrations/mastra/index.js";
import { isConnectionClosedError, isInvalidOptionError } from "../../../src/index.js";
import { closedUnfinished, eventually, seen, sleep, startV1, startV2, type TestServer } from "../../http/servers.js";
import { fixture } from "../../helpers/stdio.js";
import { SLACK_MS } from "../../helpers/timing.js";

type MastraTool = { execute(input: Record<string, unknown>, context?: { abortSignal?: AbortSignal }): Promise<unknown> };

let ids = 0;
const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
});

function stdioClient(timeout?: number) {
  const stderr: string[] = [];
  const mcp = new MCPClient({
    id: `mastra-stdio-${++ids}`,
    servers: { reports: { command: process.execPath, args: [fixture("sdk-stdio-server.mjs")], stderr: "pipe" } },
    ...(timeout === undefined ? {} : { timeout }),
  });
  open.push(() => mcp.disconnect());
  return { mcp, stderr };
}

const tool = async (mcp: MCPClient, name: string) => (await mcp.listTools())[name] as unknown as MastraTool;

describe("Mastra MCPClient (@mastra/mcp 2.0.0) with attachMastra", () => {
  it("stdio: the tool's abortSignal reaches the server as one notifications/cancelled, its handler aborts; recorded; sent once", async () => {
    const { mcp } = stdioClient();
    const attached = await attachMastra(mcp, { onRecord: () => {} });
    expect([...attached.servers.keys()]).toEqual(["reports"]);
    const server = attached.servers.get("reports")!;
    const stderrOf = () => (server.transport as unknown as { stderr?: NodeJS.ReadableStream }).stderr;
    const lines: string[] = [];
    stderrOf()?.on("data", (chunk: Buffer) => lines.push(chunk.toString("utf8")));
    const sleepTool = await tool(mcp, "reports_sleep");
    const controller = new AbortController();
    const running = sleepTool.execute({ ms: 5_000 }, { abortSignal: controller.signal });
    expect(await eventually(() => server.pendingCount === 1 && /STARTED /.test(lines.join("")), 5_000)).toBe(true);
    const abortedAt = performance.now();
    controller.abort(new Error("user pressed stop"));
    await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
    expect(await eventually(() => /ABORTED /.test(lines.join("")), 5_000)).toBe(true);
    const calls = attached.records().filter((r) => r.method === "tools/call");
    expect(calls).toMatchObject([{ status: "cancelled", cancel: { trigger: "aborted", mechanism: "notification" } }]);
    await sleep(200);
    expect(attached.records().filter((r) => r.method === "tools/call")).toHaveLength(1);
    expect(server.pendingCount).toBe(0);
  });

  it("stdio: our maximum total timeout caps the call under Mastra's own 60 s timeout (which becomes the idle timeout); the cancel goes out at its bound", async () => {
    const { mcp } = stdioClient();
    const attached = await attachMastra(mcp, { maxTotalTimeoutMs: 300 });
    const server = attached.servers.get("reports")!;
    const lines: string[] = [];
    (server.transport as unknown as { stderr?: NodeJS.ReadableStream }).stderr?.on("data", (chunk: Buffer) =>
      lines.push(chunk.toString("utf8")),
    );
    const sleepTool = await tool(mcp, "reports_sleep");
    const started = performance.now();
    const outcome = await sleepTool.execute({ ms: 5_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const elapsed = performance.now() - started;
    expect(outcome).toBeDefined();
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(300 + SLACK_MS);
    const calls = attached.records().filter((r) => r.method === "tools/call");
    expect(calls).toMatchObject([
      { status: "cancelled", cancel: { trigger: "max-total-timeout", mechanism: "notification" }, outcome: "unverified" },
    ]);
    expect(await eventually(() => /ABORTED /.test(lines.join("")), 5_000)).toBe(true);
    await sleep(200);
    expect(attached.records().filter((r) => r.method === "tools/call")).toHaveLength(1); // Mastra did not reconnect and retry
  });

  for (const [era, start, mechanism] of [
    ["2025-era, v1 stateful server", () => startV1({ stateful: true }), "notification+stream-close"],
    ["2026-07-28, v2 server", () => startV2(), "stream-close"],
  ] as const) {
    it(`Streamable HTTP (${era}): the abortSignal closes that request's stream, the handler aborts, sent once`, async () => {
      const http: TestServer = await start();
      open.push(() => http.stop());
      const mcp = new MCPClient({ id: `mastra-http-${++ids}`, servers: { reports: { url: http.url } } });
      open.push(() => mcp.disconnect());
      const attached = await attachMastra(mcp);
      const controller = new AbortController();
      const running = (await tool(mcp, "reports_slow")).execute({ ms: 5_000 }, { abortSignal: controller.signal });
      expect(await eventually(() => seen(http, "tools/call")[0]?.start !== undefined, 5_000)).toBe(true);
      controller.abort();
      await running.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(await eventually(() => seen(http, "tools/call")[0]?.aborted !== undefined, 3_000)).toBe(true);
      expect(await eventually(() => closedUnfinished(seen(http, "tools/call")[0]), 3_000)).toBe(true);
      expect(attached.records().filter((r) => r.method === "tools/call")).toMatchObject([
        { status: "cancelled", cancel: { trigger: "aborted", mechanism } },
      ]);
      await sleep(300);
      expect(seen(http, "tools/call")).toHaveLength(1);
    });
  }

  it("a server whose connect failed is named in unattached and warned about once (its calls would bypass the library), also on a second attachMastra", async () => {
    const mcp = new MCPClient({
      id: `mastra-unattached-${++ids}`,
      servers: {
        reports: { command: process.execPath, args: [fixture("sdk-stdio-server.mjs")], stderr: "pipe" },
        broken: { command: process.execPath, args: ["-e", "process.exit(3)"], stderr: "pipe" },
      },
    });
    open.push(() => mcp.disconnect());
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const attached = await attachMastra(mcp);
      expect([...attached.servers.keys()]).toEqual(["reports"]);
      expect(attached.unattached).toEqual(["broken"]);
      await attachMastra(mcp); // the same server still down: the same warning, not twice
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    const ours = warnings.filter((w) => w.name === "McpCancellableWarning");
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({ code: "MCP_CANCELLABLE_UNPROTECTED" });
    expect(ours[0]!.message).toMatch(/server "broken" has no connected client.*attachMastra again/);
  });

  it("refuses what is not a Mastra MCPClient, and a shape it does not know, naming the version tested", async () => {
    await expect(attachMastra({} as never)).rejects.toSatisfy(isInvalidOptionError);
    const error = await attachMastra({ listTools: async () => ({}) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isInvalidOptionError(error)).toBe(true);
    expect((error as Error).message).toMatch(/keeps its server clients elsewhere .*@mastra\/mcp 2\.0\.0/);
  });
});

/** A Mastra MCPClient over the scripted stdio peer (its `crash` tool exits mid-call). */
function scriptedClient(): MCPClient {
  const mcp = new MCPClient({
    id: `mastra-scripted-${++ids}`,
    servers: {
      reports: {
        command: process.execPath,
        args: [fixture("scripted-server.mjs")],
        env: { ...(process.env as Record<string, string>), SCRIPTED_LIST_ALL: "1" },
        stderr: "pipe",
        protocolVersion: "legacy", // the scripted peer answers initialize, not server/discover
      },
    },
  });
  open.push(() => mcp.disconnect());
  return mcp;
}

describe("Mastra's reconnect-and-retry path", () => {
  it("a server that dies mid-call: Mastra gets our ConnectionClosedError and does not reconnect to send the tools/call again", async () => {
    const mcp = scriptedClient();
    const attached = await attachMastra(mcp);
    const outcome = await (await tool(mcp, "reports_crash")).execute({ ms: 10 }).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    // Mastra retries after a reconnect when the message says "connection closed": ours says the
    // connection was lost, so the error comes back as it is and nothing is sent twice.
    expect("error" in outcome && isConnectionClosedError(outcome.error)).toBe(true);
    await sleep(300);
    expect(attached.records().filter((r) => r.method === "tools/call")).toMatchObject([
      { status: "cancelled", cancel: { trigger: "connection-closed" } },
    ]);
  });
});

describe("Mastra's reconnect after a server crash", () => {
  it("the next call says 'not connected' (it was never sent): Mastra reconnects and sends it once, through the library on the new connection (an outside tester's: its tools stayed dead)", async () => {
    const mcp = scriptedClient();
    const attached = await attachMastra(mcp);
    // The tools as an agent holds them (listTools() again would reconnect on its own).
    const tools = (await mcp.listTools()) as unknown as Record<string, MastraTool>;
    await tools.reports_crash!.execute({ ms: 10 }).catch(() => undefined);
    await sleep(300);
    const after = await tools.reports_echo!.execute({ text: "again" }).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    expect(after).toMatchObject({ value: { content: [{ type: "text" }] } });
    const calls = attached.records().filter((r) => r.method === "tools/call");
    // The crash's call (not sent again), the echo refused on the dead connection (never sent), then the echo sent once on the new one.
    expect(calls.map((r) => [r.name, r.status, r.outcome])).toEqual([
      ["crash", "cancelled", "unverified"],
      ["echo", "cancelled", "not-sent"],
      ["echo", "succeeded", "completed"],
    ]);
  });
});

/** The text of what a Mastra tool's execute rejected with (an Error, or its own error object). */
function errorText(outcome: unknown): string {
  if (outcome instanceof Error) return outcome.message;
  return JSON.stringify(outcome);
}

describe("Mastra: every option through Mastra's own tools (issue 28)", () => {
  it("attachMastra(mcp, { timeoutMs: 1_000 }) bounds a 3 s call at 1 s under Mastra's own 60 s timeout (the tighter one wins)", async () => {
    const { mcp } = stdioClient();
    const attached = await attachMastra(mcp, { timeoutMs: 1_000 });
    const sleepTool = await tool(mcp, "reports_sleep"); // starts the server: not part of the bound
    const started = performance.now();
    const outcome = await sleepTool.execute({ ms: 3_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const elapsed = performance.now() - started;
    expect(outcome).toBeDefined();
    expect(elapsed).toBeGreaterThanOrEqual(990);
    expect(elapsed).toBeLessThan(1_000 + SLACK_MS);
    expect(attached.records().filter((r) => r.method === "tools/call")).toMatchObject([
      { status: "cancelled", cancel: { trigger: "timeout", reason: "Request timed out after 1000 ms" } },
    ]);
    expect(errorText(outcome)).toContain("timed out after 1000 ms (the idle timeout, timeoutMs;");
  });

  it("Mastra's own timeout, when tighter than ours, stays the bound", async () => {
    // Mastra's timeout also bounds the stdio connect (the server's start and initialize): 5 s, not
    // less, so a loaded machine still connects (300 ms did not, once).
    const { mcp } = stdioClient(5_000);
    const attached = await attachMastra(mcp, { timeoutMs: 30_000 });
    const outcome = await (await tool(mcp, "reports_sleep")).execute({ ms: 20_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(outcome).toBeDefined();
    expect(attached.records().filter((r) => r.method === "tools/call")).toMatchObject([
      { cancel: { trigger: "timeout", reason: "Request timed out after 5000 ms" } },
    ]);
    // The error names Mastra's timeout (the SDK request option it passes), not our timeoutMs (30 s).
    expect(errorText(outcome)).toContain(
      'timed out after 5000 ms (the idle timeout, the SDK request option "timeout", as the framework set it;',
    );
  }, 30_000);

  it("verifiers by tool name verify Mastra's own tool calls, no bypass; with awaitVerification its tool raises the verified outcome as its error", async () => {
    const { mcp } = stdioClient();
    const reads: Array<{ name: string; arguments: unknown }> = [];
    const attached = await attachMastra(mcp, {
      timeoutMs: 300,
      awaitVerification: true,
      verifiers: {
        sleep: ({ name, arguments: args }) => {
          reads.push({ name, arguments: args });
          return "applied";
        },
      },
    });
    const error = await (await tool(mcp, "reports_sleep")).execute({ ms: 5_000 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(
      /^The tool call "sleep" was cancelled after 0\.\d s \(timed out\); a check afterwards found that its effect was applied \(applied at 0\.\d s\)\. Do not call it again to repeat it\./,
    );
    expect(reads).toEqual([{ name: "sleep", arguments: { ms: 5_000 } }]);
    expect(attached.records().filter((r) => r.method === "tools/call")).toMatchObject([{ outcome: "verified-applied" }]);
  });

  it("a verifiers key that names no tool of the servers (Mastra's own name for one, reports_sleep) is warned once, naming the MCP name to use", async () => {
    const { mcp } = stdioClient();
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      await attachMastra(mcp, { timeoutMs: 300, verifiers: { reports_sleep: () => "applied", sleep: () => "applied" } });
      await sleep(10); // warnings are emitted on the next tick
    } finally {
      process.off("warning", onWarning);
    }
    const texts = warnings.map((warning) => warning.message).filter((text) => text.includes("verifiers."));
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(
      /^attachMastra options: verifiers\.reports_sleep names no tool of these servers, so it never runs \(their tools: .*"sleep".*\): "reports_sleep" is Mastra's name for the tool "sleep"; key verifiers by the MCP name/,
    );
  });

  it("refused at once, naming the option: verify options without verifiers (Mastra's tools pass no verify), and a second call with other options", async () => {
    const { mcp } = stdioClient();
    for (const option of ["verifyDelayMs", "verifyTimeoutMs", "verifyWindowMs", "verifyIntervalMs", "awaitVerification"] as const) {
      const error = await attachMastra(mcp, { [option]: option === "awaitVerification" ? true : 100 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isInvalidOptionError(error)).toBe(true);
      expect((error as { option: string }).option).toBe(option);
      expect((error as Error).message).toMatch(new RegExp(`"${option}" has no effect without verifiers`));
    }
    const options = { timeoutMs: 5_000 };
    const first = await attachMastra(mcp, options);
    const again = await attachMastra(mcp, options);
    expect(again.servers.get("reports")).toBe(first.servers.get("reports"));
    expect((await attachMastra(mcp)).servers.get("reports")).toBe(first.servers.get("reports"));
    const refused = await attachMastra(mcp, { timeoutMs: 1_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isInvalidOptionError(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/attached already, with other options \("timeoutMs" differs\)/);
  });
});

describe("Mastra: what its Agent's model is told of a cancelled tool call (a scripted model, no language model)", () => {
  /** A model that calls `toolName` once, then answers "done" (streamed or not, as Mastra asks). */
  function scriptedModel(toolName: string, input: Record<string, unknown>) {
    const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
    let turn = 0;
    const toolCall = { type: "tool-call", toolCallId: "call_1", toolName, input: JSON.stringify(input) };
    return new MastraLanguageModelV2Mock({
      doGenerate: async () =>
        (turn++ === 0
          ? { content: [toolCall], finishReason: "tool-calls", usage, warnings: [] }
          : { content: [{ type: "text", text: "done" }], finishReason: "stop", usage, warnings: [] }) as never,
      doStream: async () => {
        const parts =
          turn++ === 0
            ? [{ type: "stream-start", warnings: [] }, toolCall, { type: "finish", finishReason: "tool-calls", usage }]
            : [
                { type: "stream-start", warnings: [] },
                { type: "text-start", id: "t1" },
                { type: "text-delta", id: "t1", delta: "done" },
                { type: "text-end", id: "t1" },
                { type: "finish", finishReason: "stop", usage },
              ];
        return { stream: simulateReadableStream({ chunks: parts as never[] }) } as never;
      },
    });
  }

  /** The tool message the model's second turn was handed (streamed or not). */
  const prompts = (model: ReturnType<typeof scriptedModel>) => [...model.doStreamCalls, ...model.doGenerateCalls];
  /** The tool message the model's second turn was handed. */
  const toolMessage = (model: ReturnType<typeof scriptedModel>): string =>
    JSON.stringify(
      prompts(model).flatMap((call) =>
        ((call as { prompt?: Array<{ role: string }> }).prompt ?? []).filter((message) => message.role === "tool"),
      ),
    );

  for (const [label, options, expected] of [
    [
      "a timeout: the error's own words, whether it ran is unknown",
      { timeoutMs: 300 },
      /tools\/call timed out after 300 ms \(the idle timeout, timeoutMs; request id \d+\) and was cancelled; whether it ran is unknown \(outcome unverified\): check before calling it again/,
    ],
    [
      "a timeout verified with awaitVerification: the verified outcome",
      { timeoutMs: 300, awaitVerification: true, verifiers: { sleep: () => "not-applied" as const } },
      /The tool call \\"sleep\\" was cancelled after 0\.\d s \(timed out\); a check afterwards found that its effect was not applied/,
    ],
  ] as const) {
    it(label, async () => {
      const { mcp } = stdioClient();
      const attached = await attachMastra(mcp, options);
      const model = scriptedModel("reports_sleep", { ms: 5_000 });
      const agent = new Agent({
        id: `bot-${++ids}`,
        name: "report-bot",
        instructions: "Write the report.",
        model: model as never,
        tools: await mcp.listTools(),
      });
      const result = await agent.generate("go", { maxSteps: 3 });
      expect(result.text).toBe("done");
      expect(toolMessage(model)).toMatch(expected);
      expect(toolMessage(model)).not.toMatch(/try again/i);
      expect(attached.records().filter((r) => r.method === "tools/call")).toHaveLength(1); // not retried
    });
  }
});
