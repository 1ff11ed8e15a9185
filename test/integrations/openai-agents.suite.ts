// The OpenAI Agents JS integration against the real framework: its Runner drives the tool call
// (a scripted Model, no language model), the MCP servers are real (the v2 SDK server over stdio,
// the v1 and v2 SDK servers over Streamable HTTP) or the raw scripted stdio peer where only it
// can misbehave (a result after the cancel). The suite takes the framework module as an argument,
// so the same tests run on Node 20 (@openai/agents 0.14.x) and Node 22 (0.20.x, test/node22/).
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import {
  CancellableMCPServer,
  CancellableMCPServerStdio,
  CancellableMCPServerStreamableHttp,
} from "../../src/integrations/openai-agents/index.js";
import type { AwaitVerification, CancellableMCPServerOptions } from "../../src/integrations/openai-agents/index.js";
import type { RunRecord } from "../../src/index.js";
import { isCallTimeoutError } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { eventually, seen, sleep, startV1, type TestServer } from "../http/servers.js";
import { fixture } from "../helpers/stdio.js";
import { SLACK_MS } from "../helpers/timing.js";
import { notOptions } from "../helpers/hook-values.js";

/** The parts of `@openai/agents` the suite uses (0.14 and 0.20 alike). */
export interface AgentsModule {
  Agent: new (config: any) => unknown;
  Runner: new (config?: any) => { run(agent: any, input: string, options?: any): Promise<{ finalOutput?: unknown }> };
  Usage: new () => unknown;
  RunContext: new () => unknown;
  getAllMcpTools(
    servers: unknown[],
  ): Promise<Array<{ name: string; invoke(context: unknown, input: string, details?: unknown): Promise<unknown> }>>;
}

/** A Model that asks for one tool call, then answers "done" with whatever the tool returned in view. */
class ScriptedModel {
  readonly requests: Array<{ input: unknown }> = [];
  /** Called at each model turn, before it answers (what the library knew when the model was asked). */
  onTurn: (() => void) | undefined;
  #turn = 0;
  constructor(
    readonly usage: () => unknown,
    readonly tool: string,
    readonly args: Record<string, unknown>,
  ) {}
  async getResponse(request: { input: unknown }) {
    this.requests.push({ input: request.input });
    this.onTurn?.();
    if (this.#turn++ === 0) {
      return {
        usage: this.usage(),
        output: [{ type: "function_call", callId: "call_1", name: this.tool, arguments: JSON.stringify(this.args), status: "completed" }],
      };
    }
    return {
      usage: this.usage(),
      output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }],
    };
  }
  getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not used");
  }
  /** What the runtime handed back to the model as the tool's output. */
  toolOutput(): string {
    return JSON.stringify(this.requests.at(-1)?.input ?? "");
  }
  /** The text of the tool's result item only (`function_call_result`), as the model reads it. */
  toolResultText(): string {
    const input = this.requests.at(-1)?.input;
    const item = Array.isArray(input) ? input.find((i: { type?: string }) => i.type === "function_call_result") : undefined;
    const output = (item as { output?: unknown } | undefined)?.output;
    return typeof output === "string" ? output : String((output as { text?: unknown } | undefined)?.text);
  }
}

/** What the Agents runtime's own default tool error function tells the model (0.20; 0.14 appended the error). */
const AGENTS_DEFAULT_TEXT = "An error occurred while running the tool. Please try again.";

/**
 * A stdio MCP server whose one tool, `lookup`, answers a JSON-RPC error whose message carries what
 * a model must never read (an internal connection string with its password).
 */
const LEAKY_SERVER = `
const write = (m) => process.stdout.write(JSON.stringify(m) + "\\n");
require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === "initialize") write({ jsonrpc: "2.0", id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "leaky", version: "1.0.0" } } });
  else if (method === "tools/list") write({ jsonrpc: "2.0", id, result: { tools: [{ name: "lookup", inputSchema: { type: "object" } }] } });
  else if (method === "tools/call") write({ jsonrpc: "2.0", id, error: { code: -32603, message: "db connect failed: postgres://admin:hunter2@10.0.0.5/prod" } });
  else write({ jsonrpc: "2.0", id, result: {} });
});`;

export function defineAgentsSuite(agents: AgentsModule, label: string): void {
  const open: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close().catch(() => {});
  });

  const model = (tool: string, args: Record<string, unknown>) => new ScriptedModel(() => new agents.Usage(), tool, args);
  const runner = () => new agents.Runner({ tracingDisabled: true });
  const agentWith = (server: unknown, m: ScriptedModel) =>
    new agents.Agent({ name: "bot", instructions: "use the tool", model: m, mcpServers: [server] });

  /** The v2 SDK stdio server (real): its `sleep` tool logs ABORTED on stderr when its signal fires. */
  async function v2Stdio(options: { timeoutMs?: number } = {}) {
    const stderr: string[] = [];
    let transport: StdioClientTransport | undefined;
    const server = new CancellableMCPServer({
      name: "v2-stdio",
      ...options,
      create: () => {
        transport = new StdioClientTransport({ command: process.execPath, args: [fixture("http/v2-stdio-server.mjs")], stderr: "pipe" });
        transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString("utf8")));
        return { client: new Client({ name: "agents-test", version: "1.0.0" }), transport: stdioCancellation(transport) };
      },
    });
    await server.connect();
    open.push(() => server.close());
    return { server, stderr: () => stderr.join(""), transport: () => transport! };
  }

  /** The raw scripted stdio peer: logs every line it reads (RECV ...) on stderr; `late` answers after a cancel. */
  async function scripted(
    options: {
      timeoutMs?: number;
      errorFunction?: null;
      name?: string;
      callOptions?: NonNullable<CancellableMCPServerOptions["callOptions"]>;
      awaitVerification?: AwaitVerification;
    } = {},
  ) {
    const { errorFunction, ...rest } = options;
    const server = new CancellableMCPServerStdio({
      command: process.execPath,
      args: [fixture("scripted-server.mjs")],
      env: { ...(process.env as Record<string, string>), SCRIPTED_LIST_ALL: "1" },
      stderr: "pipe",
      ...rest,
      ...(errorFunction === null ? { agents: { errorFunction: null } } : {}),
    });
    await server.connect();
    open.push(() => server.close());
    const lines: string[] = [];
    const transport = (server.client as unknown as { transport: { stderr: NodeJS.ReadableStream | null } }).transport;
    transport.stderr?.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n")));
    const received = () =>
      lines
        .filter((l) => l.startsWith("RECV "))
        .map((l) => JSON.parse(l.slice(5)) as { method?: string; id?: number; params?: { requestId?: number } });
    return { server, received };
  }

  describe(`OpenAI Agents JS (${label}): CancellableMCPServer driven by the Runner`, () => {
    it("stdio: the run's abort reaches the server as one notifications/cancelled, its handler's signal fires, the run rejects with the signal's reason, nothing is retried", async () => {
      const { server, stderr } = await v2Stdio();
      const m = model("sleep", { ms: 5_000 });
      const controller = new AbortController();
      const reason = new Error("user pressed stop");
      const running = runner().run(agentWith(server, m), "go", { signal: controller.signal });
      // tools/list answered, then the tools/call is in the server's handler (a cancel sent before the
      // request is written is recorded as never sent, and one that beats the dispatch is ignored: rule 10)
      expect(await eventually(() => server.pendingCount === 1 && /STARTED /.test(stderr()), 5_000)).toBe(true);
      const abortedAt = performance.now();
      controller.abort(reason);
      const error = await running.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
      expect(error).toBe(reason); // the Agents runtime's abort, not a tool error handed to the model
      expect(await eventually(() => /ABORTED /.test(stderr()), 5_000)).toBe(true);
      const calls = server.records().filter((r) => r.method === "tools/call");
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "aborted", mechanism: "notification" } });
      expect(m.requests).toHaveLength(1); // the model never saw a tool output
      await sleep(200);
      expect(server.records().filter((r) => r.method === "tools/call")).toHaveLength(1);
      expect(server.pendingCount).toBe(0);
    });

    it("the tool object's invoke: an abort rejects with exactly the signal's reason (the Agents test for an abort), never a tool error string", async () => {
      const { server, stderr } = await v2Stdio();
      const [tool] = (await agents.getAllMcpTools([server])).filter((t) => t.name === "sleep");
      const controller = new AbortController();
      const reason = new Error("run aborted");
      const invoking = tool!.invoke(new agents.RunContext(), JSON.stringify({ ms: 5_000 }), { signal: controller.signal });
      expect(await eventually(() => server.pendingCount === 1 && /STARTED /.test(stderr()), 5_000)).toBe(true);
      controller.abort(reason);
      await expect(invoking).rejects.toBe(reason);
      expect(await eventually(() => /ABORTED /.test(stderr()), 5_000)).toBe(true);
      expect(server.records().filter((r) => r.method === "tools/call")).toMatchObject([
        { status: "cancelled", cancel: { trigger: "aborted", mechanism: "notification" } },
      ]);
    });

    it("stdio: our idle timeout fires at its bound where Agents sets none; the late result is discarded and recorded; the model is told plainly what happened, not 'Please try again'", async () => {
      const { server, received } = await scripted({ timeoutMs: 300 });
      const m = model("late", { ms: 900 });
      const result = await runner().run(agentWith(server, m), "go");
      expect(result.finalOutput).toBe("done");
      const [call] = server.records().filter((r) => r.method === "tools/call");
      expect(call).toMatchObject({ status: "cancelled", cancel: { trigger: "timeout", mechanism: "notification" }, outcome: "unverified" });
      expect(call!.elapsedMs).toBeGreaterThanOrEqual(290);
      expect(call!.elapsedMs).toBeLessThan(300 + SLACK_MS);
      // The server's default error function (issue 28, item 2): the error's own words, not the
      // Agents runtime's "Please try again" (0.14) nor its redacted "An error occurred" (0.20).
      expect(m.toolOutput()).toMatch(
        /The tool call did not complete: tools\/call timed out after 300 ms \(the idle timeout, timeoutMs; request id \d+\) and was cancelled; whether it ran is unknown \(outcome unverified\): check before calling it again/,
      );
      expect(m.toolOutput()).not.toMatch(/try again/i);
      // The late result arrives after ~900 ms: dropped before the SDK, counted on the record.
      expect(
        await eventually(() => server.records().find((r) => r.method === "tools/call")?.outcome === "late-result-discarded", 3_000),
      ).toBe(true);
      const toolCalls = received().filter((m) => m.method === "tools/call");
      expect(toolCalls).toHaveLength(1);
      const cancels = received().filter((m) => m.method === "notifications/cancelled");
      expect(cancels.map((c) => c.params?.requestId)).toEqual([toolCalls[0]!.id]);
      expect(server.pendingCount).toBe(0);
    });

    it("stdio: with errorFunction null the timeout surfaces as the run's error (a CallTimeoutError), sent once", async () => {
      const { server, received } = await scripted({ timeoutMs: 200, errorFunction: null });
      const m = model("silent", {});
      const error = await runner()
        .run(agentWith(server, m), "go")
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      const chain: unknown[] = [];
      // Agents wraps it in its ToolCallError (`.error`); older lines may use `cause`.
      for (
        let e: unknown = error;
        e != null && chain.length < 5;
        e = (e as { error?: unknown; cause?: unknown }).error ?? (e as { cause?: unknown }).cause
      ) {
        chain.push(e);
      }
      expect((error as Error).name).toBe("ToolCallError");
      expect(chain.some(isCallTimeoutError)).toBe(true);
      await sleep(200);
      expect(received().filter((m) => m.method === "tools/call")).toHaveLength(1);
    });

    it("a usage mistake in callOptions reaches the developer: one McpCancellableWarning naming the hook (not one per call), a record (failed, never sent, INVALID_OPTION); nothing sent", async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on("warning", onWarning);
      try {
        // seconds meant, and the SDK's option name: `timeout` is no option of the library
        const { server, received } = await scripted({ name: `agents-mistake-${label}`, callOptions: () => ({ timeout: 2 }) as never });
        for (let run = 0; run < 2; run++) {
          const m = model("echo", { text: "hi" });
          // The Agents runtime turns the tool's error into the model's text; the run goes on.
          const result = await runner().run(agentWith(server, m), "go");
          expect(result.finalOutput).toBe("done");
          expect(m.requests).toHaveLength(2);
        }
        await sleep(50); // warnings are emitted on the next tick
        const ours = warnings.filter((w) => (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION");
        expect(ours).toHaveLength(1);
        expect(ours[0]!.name).toBe("McpCancellableWarning");
        expect(ours[0]!.message).toContain(
          `CancellableMCPServer "agents-mistake-${label}" callOptions("echo", args) returned an invalid option`,
        );
        expect(ours[0]!.message).toContain('unknown option "timeout"; use "timeoutMs" instead of the SDK\'s "timeout"');
        const calls = server.records().filter((r) => r.method === "tools/call");
        expect(calls).toHaveLength(2);
        for (const call of calls) {
          expect(call).toMatchObject({
            status: "failed",
            outcome: "not-sent",
            requestId: null,
            name: "echo",
            error: { code: "INVALID_OPTION" },
          });
          expect(call.summary).toMatch(/^failed \(INVALID_OPTION CancellableMCPServer /);
        }
        expect(received().filter((r) => r.method === "tools/call")).toHaveLength(0);
      } finally {
        process.off("warning", onWarning);
      }
    });

    it("callOptions returning an invalid awaitVerification refuses the call before it is sent: warned once naming the hook, recorded failed/not-sent", async () => {
      // An outside tester's: the call went out (and its cancel, on a timeout), the value was
      // checked only once the call had failed, and nothing was warned or recorded.
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on("warning", onWarning);
      try {
        const { server, received } = await scripted({
          name: `agents-await-${label}`,
          callOptions: () => ({ timeoutMs: 5_000, awaitVerification: 5 }) as never,
        });
        const m = model("echo", { text: "hi" });
        const result = await runner().run(agentWith(server, m), "go");
        expect(result.finalOutput).toBe("done");
        expect(m.toolResultText()).toBe(AGENTS_DEFAULT_TEXT);
        await sleep(50);
        const ours = warnings.filter((w) => (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION");
        expect(ours).toHaveLength(1);
        expect(ours[0]!.message).toBe(
          `CancellableMCPServer "agents-await-${label}" callOptions("echo", args) returned an invalid option, so tools/call "echo" was not sent: "awaitVerification" must be true, false or a function (record) => string; received 5`,
        );
        expect(server.records().filter((r) => r.method === "tools/call")).toMatchObject([
          { status: "failed", outcome: "not-sent", requestId: null, error: { code: "INVALID_OPTION" } },
        ]);
        expect(received().filter((r) => r.method === "tools/call")).toHaveLength(0);
      } finally {
        process.off("warning", onWarning);
      }
    });

    it("a server's JSON-RPC error reaches the model as Agents' own default text only: none of its message (a connection string with its password), no 'Error: ...' appended", async () => {
      const server = new CancellableMCPServerStdio({ name: `leaky-${label}`, command: process.execPath, args: ["-e", LEAKY_SERVER] });
      await server.connect();
      open.push(() => server.close());
      const m = model("lookup", {});
      const result = await runner().run(agentWith(server, m), "go");
      expect(result.finalOutput).toBe("done");
      expect(m.toolResultText()).toBe(AGENTS_DEFAULT_TEXT);
      expect(m.toolOutput()).not.toMatch(/hunter2|postgres|db connect failed|-32603|Error:/);
      // The developer still has the server's error, on the record.
      expect(server.records().find((r) => r.method === "tools/call")).toMatchObject({
        status: "failed",
        error: { message: expect.stringContaining("db connect failed") },
      });
    });

    it("an invalid option from callOptions: the model reads Agents' own default text, none of the option's details; the developer gets the warning and the record", async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on("warning", onWarning);
      try {
        const { server, received } = await scripted({
          name: `agents-mistake-text-${label}`,
          callOptions: () => ({ maxTotalTimeout: 2 }) as never,
        });
        const m = model("echo", { text: "hi" });
        const result = await runner().run(agentWith(server, m), "go");
        expect(result.finalOutput).toBe("done");
        expect(m.toolResultText()).toBe(AGENTS_DEFAULT_TEXT);
        expect(m.toolOutput()).not.toMatch(/maxTotalTimeout|InvalidOptionError|callOptions|unknown option/);
        await sleep(50); // warnings are emitted on the next tick
        expect(
          warnings.filter(
            (w) => (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION" && w.message.includes("maxTotalTimeout"),
          ),
        ).toHaveLength(1);
        expect(server.records().filter((r) => r.method === "tools/call")).toMatchObject([
          { status: "failed", outcome: "not-sent", error: { code: "INVALID_OPTION" } },
        ]);
        expect(received().filter((r) => r.method === "tools/call")).toHaveLength(0);
      } finally {
        process.off("warning", onWarning);
      }
    });

    it("callOptions returning null or undefined means no options of the call's own: the call goes out with the server's", async () => {
      for (const none of [null, undefined]) {
        const { server, received } = await scripted({ timeoutMs: 5_000, callOptions: () => none as never });
        const content = await server.callTool("echo", { text: "hi" });
        expect(content).toMatchObject([{ type: "text", text: expect.stringMatching(/^echo \d+$/) }]);
        expect(server.records().filter((r) => r.method === "tools/call")).toMatchObject([{ status: "succeeded" }]);
        // the server's stderr (what it read) may come after its answer
        expect(await eventually(() => received().filter((r) => r.method === "tools/call").length === 1, 3_000)).toBe(true);
      }
    });

    it("callOptions that throws (a bug in the hook) is refused naming callOptions and what it threw, warned once and recorded; nothing sent; the model reads Agents' own text", async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on("warning", onWarning);
      try {
        const name = `agents-hook-throws-${label}`;
        const { server, received } = await scripted({
          name,
          callOptions: (_tool, args) => ({ timeoutMs: (args as { budget?: { ms: number } }).budget!.ms }),
        });
        const message =
          `CancellableMCPServer "${name}" callOptions("echo", args) threw TypeError: Cannot read properties of undefined (reading 'ms'), ` +
          `so tools/call "echo" was not sent: fix the hook (the error is yours, not the server's)`;
        const error = await server.callTool("echo", { text: "hi" }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toMatchObject({ name: "InvalidOptionError", code: "INVALID_OPTION", option: "callOptions", message });
        const m = model("echo", { text: "hi" });
        expect((await runner().run(agentWith(server, m), "go")).finalOutput).toBe("done");
        expect(m.toolResultText()).toBe(AGENTS_DEFAULT_TEXT);
        await sleep(50); // warnings are emitted on the next tick
        expect(
          warnings.filter((w) => (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION" && w.message === message),
        ).toHaveLength(1);
        expect(received().filter((r) => r.method === "tools/call")).toHaveLength(0);
        const refused = expect.objectContaining({
          status: "failed",
          outcome: "not-sent",
          error: expect.objectContaining({ code: "INVALID_OPTION", message }),
        });
        expect(server.records().filter((r) => r.method === "tools/call")).toEqual([refused, refused]); // both calls
      } finally {
        process.off("warning", onWarning);
      }
    });

    it("callOptions returning no object (a string, a number, true, an array, a Promise, a Map) is refused naming callOptions and what it returned, warned once each and recorded; nothing sent; the model reads Agents' own text", async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on("warning", onWarning);
      let returned: unknown;
      try {
        const name = `agents-hook-return-${label}`;
        const { server, received } = await scripted({ name, callOptions: () => returned as never });
        const table = notOptions();
        for (const [value, what] of table) {
          returned = value;
          for (let call = 0; call < 2; call++) {
            const error = await server.callTool("echo", { text: "hi" }).then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(error).toMatchObject({ name: "InvalidOptionError", code: "INVALID_OPTION", option: "callOptions" });
            expect((error as Error).message).toBe(
              `CancellableMCPServer "${name}" callOptions("echo", args) returned ${what}, so tools/call "echo" was not sent: callOptions must return an object of call options, or null/undefined`,
            );
          }
        }
        returned = 5;
        const m = model("echo", { text: "hi" });
        expect((await runner().run(agentWith(server, m), "go")).finalOutput).toBe("done");
        expect(m.toolResultText()).toBe(AGENTS_DEFAULT_TEXT);
        await sleep(50); // warnings are emitted on the next tick
        const ours = warnings.filter((w) => (w as { code?: string }).code === "MCP_CANCELLABLE_INVALID_OPTION" && w.message.includes(name));
        expect(ours.map((w) => w.message)).toEqual(table.map(([, what]) => expect.stringContaining(`returned ${what}, so`)));
        expect(received().filter((r) => r.method === "tools/call")).toHaveLength(0);
        // Each refused call is recorded (the model's run too), as an invalid option from the hook is.
        const refused = (what: string) =>
          expect.objectContaining({
            status: "failed",
            outcome: "not-sent",
            error: expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining(`returned ${what}, so`) }),
          });
        expect(server.records().filter((r) => r.method === "tools/call")).toEqual([
          ...table.flatMap(([, what]) => [refused(what), refused(what)]),
          refused("a number (5)"),
        ]);
      } finally {
        process.off("warning", onWarning);
      }
    });

    for (const [found, text] of [
      [
        "applied",
        /The tool call \\"silent\\" was cancelled after 0\.\d s \(timed out\); a check afterwards found that its effect was applied \(applied at 0\.\d s\)\. Do not call it again/,
      ],
      ["not-applied", /cancelled after 0\.\d s; the report was not created/],
    ] as const) {
      it(`awaitVerification: a timed-out side effect is verified (${found}) before the model's next turn, whose input states it; the tool went out once`, async () => {
        let reads = 0;
        const { server, received } = await scripted({
          timeoutMs: 300,
          // server-wide: the developer's own text (the not-applied case); per call: the library's (applied)
          ...(found === "not-applied"
            ? {
                awaitVerification: (record: RunRecord) =>
                  `cancelled after ${(record.elapsedMs / 1000).toFixed(1)} s; the report was ${record.outcome === "verified-applied" ? "" : "not "}created`,
              }
            : {}),
          callOptions: (tool) =>
            tool === "silent"
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
        const m = model("silent", {});
        const atTurns: Array<string | undefined> = [];
        m.onTurn = () => atTurns.push(server.records().find((r) => r.method === "tools/call")?.outcome);
        const started = performance.now();
        const result = await runner().run(agentWith(server, m), "go");
        expect(result.finalOutput).toBe("done");
        expect(performance.now() - started).toBeGreaterThanOrEqual(490); // the 300 ms timeout, then the 200 ms delay before the read
        expect(m.requests).toHaveLength(2);
        expect(atTurns).toEqual([undefined, `verified-${found}`]); // verified before the model was asked again
        expect(m.toolOutput()).toMatch(text);
        expect(m.toolOutput()).not.toMatch(/try again/i);
        expect(reads).toBe(1);
        expect(received().filter((r) => r.method === "tools/call")).toHaveLength(1);
        expect(received().filter((r) => r.method === "notifications/cancelled")).toHaveLength(1);
      });
    }

    it("without awaitVerification the model gets the error at once and the read comes after its turn (the default, unchanged)", async () => {
      const { server } = await scripted({
        timeoutMs: 300,
        callOptions: (tool) => (tool === "silent" ? { verify: () => "applied", verifyDelayMs: 200 } : undefined),
      });
      const m = model("silent", {});
      const atTurns: Array<string | undefined> = [];
      m.onTurn = () => atTurns.push(server.records().find((r) => r.method === "tools/call")?.outcome);
      await runner().run(agentWith(server, m), "go");
      expect(atTurns).toEqual([undefined, "unverified"]);
      expect(await eventually(() => server.records().find((r) => r.method === "tools/call")?.outcome === "verified-applied", 3_000)).toBe(
        true,
      );
    });

    // The server's own abort, idle and maximum total timeouts and lost connections over Streamable
    // HTTP, in both eras, are rows of the entry-point contract (test/contract/entry-points-http.test.ts);
    // here the Runner drives the call, and close() must leave no stream open.
    {
      const [era, start, clientOptions, mechanism] = [
        "2025-era, v1 stateful server",
        () => startV1({ stateful: true }),
        undefined,
        "notification+stream-close",
      ] as const;
      it(`Streamable HTTP (${era}): the run's abort closes that request's stream, the handler aborts, the tools/call went out once`, async () => {
        const http: TestServer = await start();
        open.push(() => http.stop());
        const server = new CancellableMCPServerStreamableHttp({ url: http.url, name: "http", ...(clientOptions ? { clientOptions } : {}) });
        await server.connect();
        open.push(() => server.close());
        const m = model("slow", { ms: 5_000 });
        const controller = new AbortController();
        const running = runner().run(agentWith(server, m), "go", { signal: controller.signal });
        expect(await eventually(() => seen(http, "tools/call")[0]?.start !== undefined, 5_000)).toBe(true);
        controller.abort();
        const error = await running.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBe(controller.signal.reason);
        expect(await eventually(() => seen(http, "tools/call")[0]?.aborted !== undefined, 3_000)).toBe(true);
        expect(await eventually(() => seen(http, "tools/call")[0]?.close !== undefined, 3_000)).toBe(true);
        expect(seen(http, "tools/call")[0]!.close!.writableFinished).toBe(false);
        const [call] = server.records().filter((r) => r.method === "tools/call");
        expect(call).toMatchObject({ status: "cancelled", cancel: { trigger: "aborted", mechanism } });
        await sleep(300);
        expect(seen(http, "tools/call")).toHaveLength(1);
        expect(server.pendingCount).toBe(0);
        await server.close();
        expect(await eventually(() => http.openResponses().length === 0, 3_000)).toBe(true); // no stream left open on the server
      });
    }

    it("close() and connect() again: a fresh client, records kept across both; the transport identity is the client's own", async () => {
      const { server, transport } = await v2Stdio();
      const first = server.client as unknown as { transport: unknown };
      expect(first.transport).toBeDefined();
      await server.listTools();
      await server.close();
      await expect(server.callTool("sleep", { ms: 1 })).rejects.toThrow(/not connected/);
      await server.connect();
      expect(server.client).not.toBe(first);
      const content = await server.callTool("sleep", { ms: 1 });
      expect(content).toMatchObject([{ type: "text", text: "slept 1" }]);
      expect(server.records().map((r) => r.method)).toEqual(["tools/list", "tools/call"]);
      expect(transport()).toBeDefined();
    });
  });
}
