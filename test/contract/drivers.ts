// The drivers of the entry-point contract (issues 19 and 28): every entry point that runs on
// Node 20, each translating the table's calls into its caller's shape (test/contract/contract.suite.ts
// holds the table; entry-points.test.ts runs its behaviour rows and entry-points-options.test.ts its
// option rows, two files so that they run side by side; Mastra's driver runs the same table in
// test/node22/mastra/contract.test.ts). An entry point that cannot have a behaviour says so in its
// driver (`lacks`), with why; the same is in docs/frameworks.md. See docs/architecture.md for the
// one call path they share.
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { createMCPClient } from "@ai-sdk/mcp";
import { attachCancellation, withCancellation } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";
import { asked } from "./asked.js";
import { CancellableMCPServerStdio } from "../../src/integrations/openai-agents/index.js";
import {
  NO_PER_CALL_VERIFY,
  NO_SDK_CLIENT,
  NO_SDK_OPTIONS,
  NO_SIGNAL_TIMEOUT_VERIFIED,
  SERVER_ARGS,
  libraryOptions,
  sdkOptions,
  settle,
  spy,
  withoutSignal,
} from "./contract.suite.js";
import type { Ask, Driver, SdkShaped } from "./contract.suite.js";

function spawnV1(stderr: (line: string) => void, serverArgs: readonly string[]) {
  const transport = new StdioV1({ command: process.execPath, args: [...SERVER_ARGS, ...serverArgs], stderr: "pipe" });
  transport.stderr?.on("data", (chunk: Buffer) => chunk.toString("utf8").split("\n").forEach(stderr));
  return spy(transport);
}

function spawnV2(stderr: (line: string) => void, serverArgs: readonly string[]) {
  const transport = new StdioV2({ command: process.execPath, args: [...SERVER_ARGS, ...serverArgs], stderr: "pipe" });
  transport.stderr?.on("data", (chunk: Buffer) => chunk.toString("utf8").split("\n").forEach(stderr));
  return spy(transport);
}

/** `attach()` on a connected client; a refusal closes the client (its child process) before it is rethrown. */
function closeOnThrow<T>(client: { close(): Promise<void> }, attach: () => T): T {
  try {
    return attach();
  } catch (error) {
    void client.close();
    throw error;
  }
}

/** How long the person behind an SDK driver's client takes to answer the server's question (elicitation/create), ms. */
export const PERSON_MS = 600;

const person = async () => {
  asked.at = performance.now();
  await new Promise((resolve) => setTimeout(resolve, PERSON_MS));
  return { action: "accept" as const, content: { reply: "yes" } };
};

/** A v1 client whose person answers elicitation/create after PERSON_MS. */
function clientV1(): ClientV1 {
  const client = new ClientV1({ name: "contract", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, person);
  return client;
}

/** A v2 client whose person answers elicitation/create after PERSON_MS. */
function clientV2(): ClientV2 {
  const client = new ClientV2({ name: "contract", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler("elicitation/create", person);
  return client;
}

/** Why a framework driver has no person answering the server's questions (clientWait is the runner's: the SDK drivers cover it). */
const NO_PERSON =
  "the framework builds its own client, with no elicitation handler this driver can give a late answer to; the pause is the runner's, the same on every entry point (the SDK drivers' rows)";

/** Only the tools/call records (the SDK-shaped drivers' records hold every request). */
const toolCalls = (records: RunRecord[]) => records.filter((record) => record.method === "tools/call");

export const drivers: Driver[] = [
  {
    name: "withCancellation (v1 client)",
    lacks: { "sdk-options": NO_SDK_OPTIONS.library, "sdk-client": NO_SDK_CLIENT.library },
    async connect(options, stderr, serverArgs) {
      const client = clientV1();
      const mcp = withCancellation(client, stdioCancellation(spawnV1(stderr, serverArgs)), options);
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
    lacks: { "sdk-options": NO_SDK_OPTIONS.library, "sdk-client": NO_SDK_CLIENT.library },
    async connect(options, stderr, serverArgs) {
      const client = clientV2();
      const mcp = withCancellation(client, stdioCancellation(spawnV2(stderr, serverArgs)), options);
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
    lacks: { "per-call-verify": NO_PER_CALL_VERIFY },
    async connect(options, stderr, serverArgs) {
      const client = clientV1();
      await client.connect(spawnV1(stderr, serverArgs));
      const mcp = closeOnThrow(client, () => attachCancellation(client, options));
      return {
        call: (ask) => settle(client.callTool({ name: ask.tool, arguments: ask.args ?? {} }, undefined, sdkOptions(ask))),
        records: () => toolCalls(mcp.records()),
        allRecords: () => mcp.records(),
        sdk: () => client as unknown as SdkShaped,
        close: () => client.close(),
      };
    },
  },
  {
    name: "attachCancellation (v2 client, the SDK's own callTool)",
    lacks: { "per-call-verify": NO_PER_CALL_VERIFY },
    async connect(options, stderr, serverArgs) {
      const client = clientV2();
      await client.connect(spawnV2(stderr, serverArgs));
      const mcp = closeOnThrow(client, () => attachCancellation(client, options));
      return {
        call: (ask) => settle(client.callTool({ name: ask.tool, arguments: ask.args ?? {} }, sdkOptions(ask))),
        records: () => toolCalls(mcp.records()),
        allRecords: () => mcp.records(),
        sdk: () => client as unknown as SdkShaped,
        v2: true,
        close: () => client.close(),
      };
    },
  },
  {
    name: "sdkClient (v1 argument order)",
    lacks: { "per-call-verify": NO_PER_CALL_VERIFY },
    async connect(options, stderr, serverArgs) {
      const client = clientV1();
      const mcp = withCancellation(client, stdioCancellation(spawnV1(stderr, serverArgs)), options);
      await client.connect(mcp.transport);
      return {
        call: (ask) => settle(mcp.sdkClient.callTool({ name: ask.tool, arguments: ask.args ?? {} }, undefined, sdkOptions(ask))),
        records: () => toolCalls(mcp.records()),
        allRecords: () => mcp.records(),
        sdk: () => mcp.sdkClient as unknown as SdkShaped,
        close: () => client.close(),
      };
    },
  },
  {
    name: "sdkClient (v2 client)",
    lacks: { "per-call-verify": NO_PER_CALL_VERIFY },
    async connect(options, stderr, serverArgs) {
      const client = clientV2();
      const mcp = withCancellation(client, stdioCancellation(spawnV2(stderr, serverArgs)), options);
      await client.connect(mcp.transport as never);
      return {
        call: (ask) => settle(mcp.sdkClient.callTool({ name: ask.tool, arguments: ask.args ?? {} }, sdkOptions(ask))),
        records: () => toolCalls(mcp.records()),
        allRecords: () => mcp.records(),
        sdk: () => mcp.sdkClient as unknown as SdkShaped,
        v2: true,
        close: () => client.close(),
      };
    },
  },
  {
    name: "the Vercel AI SDK transport (createMCPClient)",
    lacks: {
      "sdk-options": NO_SDK_OPTIONS.aiSdk,
      "sdk-client": NO_SDK_CLIENT.aiSdk,
      person: NO_PERSON,
      "signal-timeout-verified": NO_SIGNAL_TIMEOUT_VERIFIED.aiSdk,
      "refused-send":
        "on stdio the AI SDK closes its client when the transport closes and refuses the next request itself " +
        '("Attempted to send a request from a closed client"): it never reaches the transport, so there is no call to settle ' +
        "or record (over HTTP the refused send does reach it: entry-points-http.test.ts)",
    },
    async connect(options, stderr, serverArgs) {
      let current: Ask = { tool: "" };
      const transport = cancellableTransport(stdioCancellation(spawnV1(stderr, serverArgs)), {
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
        records: () => toolCalls(transport.records()),
        close: () => client.close(),
      };
    },
  },
  {
    name: "the OpenAI Agents server (CancellableMCPServerStdio)",
    lacks: {
      "sdk-options": NO_SDK_OPTIONS.agents,
      "sdk-client": NO_SDK_CLIENT.agents,
      person: NO_PERSON,
      "signal-timeout-verified": NO_SIGNAL_TIMEOUT_VERIFIED.agents,
    },
    async connect(options, stderr, serverArgs) {
      let current: Ask = { tool: "" };
      const { onRecord } = options;
      const server = new CancellableMCPServerStdio({
        ...options,
        command: process.execPath,
        args: [...SERVER_ARGS, ...serverArgs],
        stderr: "pipe",
        ...(onRecord === undefined ? {} : { onRecord }),
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
        records: () => toolCalls(server.records()),
        close: () => server.close(),
      };
    },
  },
];
