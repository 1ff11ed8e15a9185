// The entry-point contract (issues 19 and 28) on Mastra (@mastra/mcp 2.0.0, Node 22.13+): the
// same table every Node 20 entry point runs (test/contract/contract.suite.ts), through Mastra's own
// tools (`listTools()`, each tool's `execute(input, { abortSignal })`, what a Mastra Agent calls)
// after `attachMastra`, against the scripted stdio server. Mastra's tools take their timeout from
// the MCPClient (`timeout`, read at each call): the driver sets it per call, as a bot sets it per
// client or server.
import { MCPClient } from "@mastra/mcp";
import { attachMastra } from "../../../src/integrations/mastra/index.js";
import { NO_PER_CALL_VERIFY, SERVER_ARGS, entryPointContract, settle } from "../../contract/contract.suite.js";
import type { Driver, SdkShaped } from "../../contract/contract.suite.js";

type MastraTool = { execute(input: Record<string, unknown>, context?: { abortSignal?: AbortSignal }): Promise<unknown> };

/** Mastra's per-server client (the one read of its internals a test needs beyond attachMastra's: its `timeout`, and the SDK client). */
type Internal = { timeout: number; client: SdkShaped };

let ids = 0;

const mastra: Driver = {
  name: "attachMastra (Mastra's MCPClient and its tools)",
  lacks: {
    "max-total-timeout":
      "Mastra's tools pass only its timeout and the tool's abortSignal: there is no per-call maximum total timeout to give (attachMastra's maxTotalTimeoutMs caps every call: its option row)",
    "sdk-options": "Mastra's tools pass { timeout, signal } only: there are no other SDK request options to pass",
    "per-call-verify": NO_PER_CALL_VERIFY,
    "refused-send":
      'Mastra answers a refused send ("not connected") by reconnecting and sending the call once on the new connection: ' +
      'the refused one is recorded not sent and the call succeeds (mastra.test.ts, "Mastra\'s reconnect after a server crash")',
    person:
      "Mastra 2.0's MCPClient takes a person's answers only through its `inputRequests` handler (input_required results); it gives this driver no handler for the server's own elicitation/create (the scripted server's question) to answer late. The pause is the runner's, the same on every entry point (the SDK drivers' rows)",
  },
  async connect(options, stderr, serverArgs) {
    const mcp = new MCPClient({
      id: `mastra-contract-${++ids}`,
      servers: {
        reports: {
          command: process.execPath,
          args: [...SERVER_ARGS, ...serverArgs],
          stderr: "pipe",
          protocolVersion: "legacy", // the scripted server answers initialize, not server/discover
        },
      },
    });
    const attached = await attachMastra(mcp, options).catch(async (error: unknown) => {
      await mcp.disconnect(); // a refusal after the connect: the child process goes too
      throw error;
    });
    const handle = attached.servers.get("reports")!;
    (handle.transport as unknown as { stderr?: NodeJS.ReadableStream }).stderr?.on("data", (chunk: Buffer) =>
      chunk.toString("utf8").split("\n").forEach(stderr),
    );
    const internal = (mcp as unknown as { mcpClientsById: Map<string, Internal> }).mcpClientsById.get("reports")!;
    const tools = (await mcp.listTools()) as unknown as Record<string, MastraTool>;
    return {
      call: (ask) => {
        internal.timeout = ask.timeoutMs ?? 60_000; // Mastra's default
        const tool = tools[`reports_${ask.tool}`]!;
        return settle(tool.execute(ask.args ?? {}, ask.signal === undefined ? undefined : { abortSignal: ask.signal }));
      },
      records: () => handle.records().filter((record) => record.method === "tools/call"),
      allRecords: () => handle.records(),
      sdk: () => internal.client,
      v2: true,
      close: () => mcp.disconnect(),
    };
  },
};

entryPointContract([mastra]);
