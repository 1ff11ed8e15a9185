// The Vercel AI SDK's own loop: `generateText` from `ai` 6 (Node 20, with @ai-sdk/mcp 1.x) with a
// scripted model (`MockLanguageModelV3`: a tool call, then text), the tools from `createMCPClient`
// over the library's transport, and the raw scripted stdio peer. What the model is handed as the
// tool's outcome on its next turn is what these tests read.
import { afterEach, describe, expect, it } from "vitest";
import { createMCPClient } from "@ai-sdk/mcp";
import { generateText, stepCountIs } from "ai";
import type { ToolSet } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";
import type { CancellableTransportOptions } from "../../src/integrations/ai-sdk/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { fixture } from "../helpers/stdio.js";
import { eventually, sleep } from "../http/servers.js";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model that calls `tool` once, then answers "done"; `onTurn` runs as each turn is asked for. */
function scriptedModel(tool: string, args: Record<string, unknown>, onTurn: () => void) {
  let turn = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      onTurn();
      if (turn++ === 0) {
        return {
          content: [{ type: "tool-call", toolCallId: "call_1", toolName: tool, input: JSON.stringify(args) }],
          finishReason: { unified: "tool-calls", raw: undefined },
          usage,
          warnings: [],
        };
      }
      return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
    },
  });
}

/** What the model's second turn was handed as the tool's outcome (the tool message of its prompt). */
function toolMessage(model: MockLanguageModelV3): string {
  const prompt = model.doGenerateCalls[1]?.prompt ?? [];
  return JSON.stringify(prompt.filter((message) => message.role === "tool"));
}

describe("Vercel AI SDK (ai 6 generateText, @ai-sdk/mcp 1.x): what the model is handed", () => {
  const open: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close().catch(() => {});
  });

  async function connect(options: CancellableTransportOptions) {
    const inner = new StdioClientTransport({
      command: process.execPath,
      args: [fixture("scripted-server.mjs")],
      env: { ...(process.env as Record<string, string>), SCRIPTED_LIST_ALL: "1" },
      stderr: "pipe",
    });
    const lines: string[] = [];
    inner.stderr?.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n")));
    const received = () => lines.filter((l) => l.startsWith("RECV ")).map((l) => JSON.parse(l.slice(5)) as { method?: string });
    const transport = cancellableTransport(stdioCancellation(inner), options);
    const client = await createMCPClient({ transport });
    open.push(() => client.close());
    return { transport, tools: await client.tools(), received };
  }

  for (const [found, expected] of [
    [
      "applied",
      /The tool call \\"silent\\" was cancelled after 0\.\d s \(timed out\); a check afterwards found that its effect was applied \(applied at 0\.\d s\)\. Do not call it again/,
    ],
    ["not-applied", /cancelled after 0\.\d s; the report was not created/],
  ] as const) {
    it(`awaitVerification: the timed-out side effect is verified (${found}) before the model's next turn, which gets it as the tool's result; sent once`, async () => {
      let reads = 0;
      const { transport, tools, received } = await connect({
        timeoutMs: 300,
        ...(found === "not-applied"
          ? {
              awaitVerification: (record) =>
                `cancelled after ${(record.elapsedMs / 1000).toFixed(1)} s; the report was ${record.outcome === "verified-applied" ? "" : "not "}created`,
            }
          : {}),
        callOptions: (method, params) =>
          method === "tools/call" && params.name === "silent"
            ? {
                verify: () => {
                  reads++;
                  return found;
                },
                verifyDelayMs: 200,
                ...(found === "applied" ? { awaitVerification: true } : {}),
              }
            : undefined,
      });
      const atTurns: Array<string | undefined> = [];
      const model = scriptedModel("silent", {}, () => atTurns.push(transport.records().find((r) => r.method === "tools/call")?.outcome));
      const started = performance.now();
      const result = await generateText({ model, tools: tools as unknown as ToolSet, prompt: "go", stopWhen: stepCountIs(3) });
      expect(result.text).toBe("done");
      expect(performance.now() - started).toBeGreaterThanOrEqual(490);
      expect(atTurns).toEqual([undefined, `verified-${found}`]);
      expect(toolMessage(model)).toMatch(expected);
      expect(toolMessage(model)).not.toMatch(/-32001|timed out after 300 ms/);
      expect(reads).toBe(1);
      expect(received().filter((m) => m.method === "tools/call")).toHaveLength(1);
      expect(received().filter((m) => m.method === "notifications/cancelled")).toHaveLength(1);
    });
  }

  for (const [how, verify, says] of [
    [
      "throws with a server's error text",
      () => {
        throw new Error("db connect failed: postgres://admin:hunter2@10.0.0.5/prod");
      },
      /could not tell whether its effect was applied \(read failed at 0\.\d s\)\. Check before calling it again\./,
    ],
    [
      "does not answer",
      () => new Promise<never>(() => {}),
      /could not tell whether its effect was applied \(verify did not answer within 200 ms\)\. Check before calling it again\./,
    ],
  ] as const) {
    it(`awaitVerification, a verify read that ${how}: the model reads the library's own words, never the read's error text; the record keeps it`, async () => {
      const { transport, tools } = await connect({
        timeoutMs: 300,
        awaitVerification: true,
        callOptions: (method) => (method === "tools/call" ? { verify, verifyTimeoutMs: 200 } : undefined),
      });
      const model = scriptedModel("silent", {}, () => {});
      await generateText({ model, tools: tools as unknown as ToolSet, prompt: "go", stopWhen: stepCountIs(3) });
      expect(toolMessage(model)).toMatch(says);
      expect(toolMessage(model)).not.toMatch(/hunter2|postgres|db connect/);
      const record = transport.records().find((r) => r.method === "tools/call")!;
      expect(record.outcome).toBe("verify-failed");
      expect(record.verification!.error).toBe(
        how === "does not answer"
          ? "verify did not answer within 200 ms (verifyTimeoutMs)"
          : "db connect failed: postgres://admin:hunter2@10.0.0.5/prod",
      );
    });
  }

  it("without awaitVerification the model's next turn gets the timeout as a tool error, before the read", async () => {
    const { transport, tools } = await connect({
      timeoutMs: 300,
      callOptions: (method) => (method === "tools/call" ? { verify: () => "applied", verifyDelayMs: 200 } : undefined),
    });
    const atTurns: Array<string | undefined> = [];
    const model = scriptedModel("silent", {}, () => atTurns.push(transport.records().find((r) => r.method === "tools/call")?.outcome));
    await generateText({ model, tools: tools as unknown as ToolSet, prompt: "go", stopWhen: stepCountIs(3) });
    expect(atTurns).toEqual([undefined, "unverified"]);
    // The error's own words (issue 28, item 2): whether the call ran, and to check before calling it again.
    expect(toolMessage(model)).toMatch(
      /"type":"error-text","value":"tools\/call timed out after 300 ms \(the idle timeout, timeoutMs; request id \d+\) and was cancelled; whether it ran is unknown \(outcome unverified\): check before calling it again"/,
    );
    expect(await eventually(() => transport.records().find((r) => r.method === "tools/call")?.outcome === "verified-applied", 3_000)).toBe(
      true,
    );
  });

  it("verifiers by tool name on the transport (no callOptions): generateText's own tool call is verified and the model gets the verified outcome; sent once", async () => {
    const reads: Array<{ name: string; arguments: unknown }> = [];
    const { transport, tools, received } = await connect({
      timeoutMs: 300,
      awaitVerification: true,
      verifiers: {
        silent: ({ name, arguments: args }) => {
          reads.push({ name, arguments: args });
          return "applied";
        },
      },
    });
    const model = scriptedModel("silent", { ms: 1 }, () => {});
    await generateText({ model, tools: tools as unknown as ToolSet, prompt: "go", stopWhen: stepCountIs(3) });
    expect(toolMessage(model)).toMatch(
      /The tool call \\"silent\\" was cancelled after 0\.\d s \(timed out\); a check afterwards found that its effect was applied/,
    );
    expect(reads).toEqual([{ name: "silent", arguments: { ms: 1 } }]);
    expect(transport.records().find((r) => r.method === "tools/call")).toMatchObject({ outcome: "verified-applied" });
    expect(received().filter((m) => m.method === "tools/call")).toHaveLength(1);
  });

  it("generateText's own abortSignal made with AbortSignal.timeout: recorded timeout, never a user abort; one cancel", async () => {
    const { transport, tools, received } = await connect({});
    const model = scriptedModel("silent", {}, () => {});
    const error = await generateText({
      model,
      tools: tools as unknown as ToolSet,
      prompt: "go",
      stopWhen: stepCountIs(3),
      abortSignal: AbortSignal.timeout(300),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(await eventually(() => transport.records().some((r) => r.method === "tools/call"))).toBe(true);
    expect(transport.records().find((r) => r.method === "tools/call")).toMatchObject({
      status: "cancelled",
      cancel: { trigger: "timeout", mechanism: "notification" },
    });
    expect(await eventually(() => received().filter((m) => m.method === "notifications/cancelled").length === 1)).toBe(true);
  });

  it("a usage mistake in callOptions: generateText hands it to the model as a tool error, and the developer gets the warning and the record too", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const { transport, tools, received } = await connect({
        callOptions: (method) => (method === "tools/call" ? ({ timeout: 30 } as never) : undefined),
      });
      const model = scriptedModel("echo", { text: "hi" }, () => {});
      const result = await generateText({ model, tools: tools as unknown as ToolSet, prompt: "go", stopWhen: stepCountIs(3) });
      expect(result.text).toBe("done");
      expect(toolMessage(model)).toContain(
        '"type":"error-text","value":"cancellableTransport callOptions(\\"tools/call\\", params) returned an invalid option',
      );
      await sleep(50);
      expect(warnings.filter((w) => (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION")).toHaveLength(1);
      expect(transport.records().filter((r) => r.method === "tools/call")).toMatchObject([
        { status: "failed", outcome: "not-sent", error: { code: "INVALID_OPTION" } },
      ]);
      expect(received().filter((m) => m.method === "tools/call")).toHaveLength(0);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
