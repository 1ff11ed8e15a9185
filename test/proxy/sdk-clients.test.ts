import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema, ListRootsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2, ProtocolError, SdkError } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioClientTransportV2 } from "@modelcontextprotocol/client/stdio";
import { EVERYTHING, eventually, fixture, proxyCommand, server, sleep } from "./helpers.js";

// Clients nobody here wrote, pointed at `mcp-cancellable proxy` as if it were the server: the v1
// SDK client (which sends notifications/cancelled on an abort and has its own timeout) and the
// v2 client (pinned to 2026-07-28 over stdio: no initialize), to the SDK's own servers and to
// server-everything (whose long-running tool keeps sending progress after a cancel).
const SLACK_MS = 1_500;
const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0)) await close().catch(() => {});
});

async function v1(proxyArgs: string[]) {
  const transport = new StdioClientTransport({ ...proxyCommand(proxyArgs), stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name: "proxy-test-v1", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  await client.connect(transport);
  open.push(() => client.close());
  return { client, errors, stderr: () => stderr };
}

describe("the v1 SDK client through the proxy", () => {
  it("to the v1 SDK stdio server: answered; an abort reaches the handler under the upstream id; no error after; the next call works", async () => {
    const { client, errors, stderr } = await v1(server(fixture("sdk-stdio-server.mjs")));
    await expect(client.callTool({ name: "sleep", arguments: { ms: 10 } })).resolves.toMatchObject({ content: [{ text: "slept 10" }] });
    const controller = new AbortController();
    const call = client.callTool({ name: "sleep", arguments: { ms: 3_000 } }, undefined, { signal: controller.signal });
    expect(await eventually(() => (stderr().match(/STARTED/g) ?? []).length === 2)).toBe(true);
    const upstreamId = [...stderr().matchAll(/STARTED (\S+)/g)].at(-1)![1];
    controller.abort("user gave up");
    await expect(call).rejects.toThrow();
    expect(await eventually(() => new RegExp(`ABORTED ${upstreamId} after \\d+ms reason="user gave up"`).test(stderr()))).toBe(true);
    await sleep(300); // the SDK server answers a cancelled call's handler anyway: it must not reach the client
    await expect(client.listTools()).resolves.toMatchObject({
      tools: expect.arrayContaining([expect.objectContaining({ name: "sleep" })]),
    });
    expect(errors).toEqual([]);
  });

  it("the proxy's idle timeout: the client's request rejects with McpError -32001 and data naming the trigger; the handler is aborted", async () => {
    const { client, errors, stderr } = await v1(["--timeout-ms", "300", ...server(fixture("sdk-stdio-server.mjs"))]);
    const started = performance.now();
    const error = await client
      .callTool({ name: "sleep", arguments: { ms: 5_000 } }, undefined, { timeout: 20_000 })
      .catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(300 + SLACK_MS);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32001);
    expect((error as McpError).message).toMatch(/timed out after 300 ms/);
    expect((error as McpError).data).toMatchObject({
      trigger: "timeout",
      limitMs: 300,
      summary: "cancelled (timeout), outcome unverified",
    });
    expect(await eventually(() => /ABORTED \S+ after \d+ms reason="Request timed out after 300 ms"/.test(stderr()))).toBe(true);
    expect(errors).toEqual([]);
  });

  it("to server-everything: progress is relayed until the abort, none after though the server keeps sending; no 'unknown token' error", async () => {
    const { client, errors, stderr } = await v1(server(EVERYTHING, "stdio"));
    const progress: number[] = [];
    const controller = new AbortController();
    const call = client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 4, steps: 40 } }, undefined, {
      signal: controller.signal,
      onprogress: (p) => {
        progress.push(p.progress);
        if (progress.length === 2) controller.abort("enough");
      },
    });
    await expect(call).rejects.toThrow();
    const atAbort = progress.length;
    await sleep(800); // 8 more steps of the server's progress
    expect(progress.length).toBe(atAbort);
    expect(progress.slice(0, 2)).toEqual([1, 2]);
    expect(errors).toEqual([]);
    expect(stderr()).not.toMatch(/malformed|anomaly/);
  });

  it("to server-everything: the server's own requests (sampling/createMessage, roots/list) reach the client and its answers go back", async () => {
    const transport = new StdioClientTransport({ ...proxyCommand(server(EVERYTHING, "stdio")), stderr: "pipe" });
    const client = new Client({ name: "proxy-test-v1", version: "1.0.0" }, { capabilities: { sampling: {}, roots: {} } });
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    const asked: string[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      asked.push(request.method);
      return { model: "test-model", role: "assistant", content: { type: "text", text: "sampled through the proxy" } };
    });
    client.setRequestHandler(ListRootsRequestSchema, async (request) => {
      asked.push(request.method);
      return { roots: [{ uri: "file:///proxy-root", name: "proxy root" }] };
    });
    await client.connect(transport);
    open.push(() => client.close());
    // The server registers these tools once it knows the client's capabilities: listed until they
    // are there, 10 s at most (a fixed 300 ms could end first on a loaded machine).
    const wanted = ["trigger-sampling-request", "get-roots-list"];
    let names: string[] = [];
    for (const end = performance.now() + 10_000; performance.now() < end; await sleep(100)) {
      names = (await client.listTools()).tools.map((t) => t.name);
      if (wanted.every((name) => names.includes(name))) break;
    }
    expect(names).toEqual(expect.arrayContaining(wanted));
    const sampled = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hi" } });
    expect(JSON.stringify(sampled)).toContain("sampled through the proxy");
    const roots = await client.callTool({ name: "get-roots-list", arguments: {} });
    expect(JSON.stringify(roots)).toContain("file:///proxy-root");
    expect(asked).toContain("sampling/createMessage");
    expect(asked).toContain("roots/list");
    expect(errors).toEqual([]);
  });

  it("the client's own timeout (SDK timeout option): it sends its cancel, the proxy cancels upstream; the late answer never reaches the client", async () => {
    const { client, errors, stderr } = await v1(server(fixture("sdk-stdio-server.mjs")));
    await expect(client.callTool({ name: "sleep", arguments: { ms: 2_000 } }, undefined, { timeout: 300 })).rejects.toMatchObject({
      code: -32001,
    });
    expect(await eventually(() => /ABORTED \S+ after \d+ms/.test(stderr()))).toBe(true);
    await sleep(200);
    await expect(client.callTool({ name: "sleep", arguments: { ms: 10 } })).resolves.toMatchObject({ content: [{ text: "slept 10" }] });
    expect(errors).toEqual([]);
  });
});

describe("the v2 SDK client through the proxy", () => {
  it("pinned to 2026-07-28 over stdio, to the v2 server: answered; an abort reaches the handler", async () => {
    const transport = new StdioClientTransportV2({ ...proxyCommand(server(fixture("http/v2-stdio-server.mjs"))), stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new ClientV2({ name: "proxy-test-v2", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    await client.connect(transport);
    open.push(() => client.close());
    expect(client.getProtocolEra()).toBe("modern");
    await expect(client.callTool({ name: "sleep", arguments: { ms: 10 } })).resolves.toMatchObject({ content: [{ text: "slept 10" }] });
    const controller = new AbortController();
    const call = client.callTool({ name: "sleep", arguments: { ms: 3_000 } }, { signal: controller.signal });
    expect(await eventually(() => (stderr.match(/STARTED/g) ?? []).length === 2)).toBe(true);
    controller.abort("user gave up");
    await expect(call).rejects.toThrow();
    expect(await eventually(() => /ABORTED \S+ reason="user gave up"/.test(stderr))).toBe(true);
    expect(errors).toEqual([]);
  });

  it("the proxy's idle timeout as the v2 client sees it (docs/proxy.md states it): a ProtocolError with code -32001 and the proxy's data, not its own SdkError REQUEST_TIMEOUT", async () => {
    const transport = new StdioClientTransportV2({
      ...proxyCommand(["--timeout-ms", "300", ...server(fixture("sdk-stdio-server.mjs"))]),
      stderr: "pipe",
    });
    const client = new ClientV2({ name: "proxy-test-v2", version: "1.0.0" });
    await client.connect(transport);
    open.push(() => client.close());
    const error = (await client
      .callTool({ name: "sleep", arguments: { ms: 5_000 } }, { timeout: 20_000 })
      .catch((e: unknown) => e)) as Error & {
      code?: unknown;
      data?: { code?: string; trigger?: string };
    };
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).not.toBeInstanceOf(SdkError);
    expect(error.code).toBe(-32001);
    expect(error.data).toMatchObject({ code: "REQUEST_TIMEOUT", trigger: "timeout" });
  });
});
