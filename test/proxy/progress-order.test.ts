import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it } from "vitest";
import { proxyCommand, server } from "./helpers.js";
import { startRestartable } from "./restartable-server.js";

// Progress written just before its result (issue 29, item 5). The v1 SDK client handles a
// notification a microtask after a response read in the same chunk, and drops the request's
// progress handler at the response (typescript-sdk #2580): progress read in one chunk with its
// result is lost. The proxy lets the result wait until the progress before it left for the client.
const LINE = new URL("./fixtures/line-server.mjs", import.meta.url).pathname;
const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
});

async function v1(args: string[]) {
  const client = new Client({ name: "progress-order", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  await client.connect(new StdioClientTransport({ ...proxyCommand(args), stderr: "ignore" }));
  open.push(() => client.close());
  return { client, errors };
}

async function burst(client: Client, count: number): Promise<number[]> {
  const progress: number[] = [];
  await client.callTool({ name: "burst", arguments: { count } }, undefined, { onprogress: (p) => progress.push(p.progress) });
  return progress;
}

describe("mcp-cancellable proxy: a result is written after the progress before it", () => {
  it("stdio: a server that writes 20 progress notifications and its result in one write; the v1 SDK client gets 20 of 20, every time", async () => {
    const { client, errors } = await v1(server(LINE));
    for (let round = 0; round < 5; round++) {
      expect(await burst(client, 20)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    }
    expect(errors).toEqual([]);
  });

  it("--url: the v1 SDK's HTTP server sends 100 progress notifications then the result; the v1 SDK stdio client gets 100 of 100, every time", async () => {
    const http = await startRestartable();
    open.push(() => http.stop());
    const { client, errors } = await v1(["--url", http.url.href]);
    for (let round = 0; round < 5; round++) {
      expect((await burst(client, 100)).length).toBe(100);
    }
    expect(errors).toEqual([]);
  });
});
