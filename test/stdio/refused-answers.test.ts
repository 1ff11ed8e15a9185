// An answer the SDK's schema refuses (cases.md C02 word for word: `{"id":1,"error":{"code":0}}`,
// no "jsonrpc", an error with no message), over real stdio with the v1 and v2 SDK clients. The
// SDK's stdio transport threw on such a line and handed its schema's error to `onerror`: the late
// answer never reached the library (the record said "outcome unverified", no late error counted)
// and the user got a validation error (an outside tester's, on both lines). Now the line comes up,
// marked with the SDK's error: a settled call's late answer (dropped, counted: rule 8), and for
// any other the SDK's error in onerror as before (a pending call waits on for an answer the SDK
// can take). The fixture is test/fixtures/scripted-server.mjs.
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it } from "vitest";
import { CallTimeoutError, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { fixture } from "../helpers/stdio.js";
import { eventually } from "../helpers/timing.js";

const closes: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closes.splice(0)) await close();
});

const lines = {
  v1: () => ({
    client: new ClientV1({ name: "c02", version: "1.0.0" }),
    transport: new StdioV1({ command: process.execPath, args: [fixture("scripted-server.mjs")] }),
  }),
  v2: () => ({
    client: new ClientV2({ name: "c02", version: "1.0.0" }),
    transport: new StdioV2({ command: process.execPath, args: [fixture("scripted-server.mjs")] }),
  }),
};

async function connect(line: keyof typeof lines) {
  const { client, transport } = lines[line]();
  const errors: unknown[] = [];
  client.onerror = (error: unknown) => errors.push(error);
  const mcp = withCancellation(client as ClientV1, stdioCancellation(transport));
  await client.connect(mcp.transport as never);
  closes.push(() => client.close());
  return { mcp, errors };
}

describe.each(["v1", "v2"] as const)("an answer the SDK's schema refuses, %s SDK over stdio", (line) => {
  it("C02 as the case writes it ({id, error: {code: 0}}, after the cancel): dropped as a late error, the record says so, nothing reaches onerror, the next call works", async () => {
    const { mcp, errors } = await connect(line);
    await expect(mcp.callTool({ name: "late-bare-error", arguments: { ms: 150 } }, { timeoutMs: 50 })).rejects.toBeInstanceOf(
      CallTimeoutError,
    );
    expect(await eventually(() => mcp.records()[0]?.late.errors === 1, 5_000)).toBe(true);
    expect(mcp.records()[0]).toMatchObject({ summary: "cancelled (timeout), late result discarded", late: { results: 0, errors: 1 } });
    expect(errors).toEqual([]);
    await expect(mcp.callTool({ name: "echo", arguments: { text: "next" } }, { timeoutMs: 5_000 })).resolves.toBeDefined();
  });

  it("a pending call's answer the SDK refuses goes to onerror as without the library, and the call waits for an answer it can take (here: its timeout)", async () => {
    const { mcp, errors } = await connect(line);
    await expect(mcp.callTool({ name: "bare-error" }, { timeoutMs: 300 })).rejects.toBeInstanceOf(CallTimeoutError);
    expect(errors).toHaveLength(1); // the SDK's own schema error
    expect(mcp.records()[0]).toMatchObject({ summary: "cancelled (timeout), outcome unverified", late: { results: 0, errors: 0 } });
  });
});
