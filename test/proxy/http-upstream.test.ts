import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioClientTransportV2 } from "@modelcontextprotocol/client/stdio";
import { closedUnfinished, sawDisconnect, seen, startV1, startV2, started } from "../http/servers.js";
import type { TestServer } from "../http/servers.js";
import { eventually, proxyCommand, sleep } from "./helpers.js";

// A stdio client to a Streamable HTTP server through `mcp-cancellable proxy --url`: the SDK's own
// HTTP servers on 127.0.0.1 (port 0), both eras. 2025 era (v1 server, stateful): the cancel is
// notifications/cancelled POSTed with the session header, then the request's stream closed.
// 2026-07-28 (v2 server): the cancel is the stream close alone, no notification.
const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
});

async function serve(make: () => Promise<TestServer>): Promise<TestServer> {
  const server = await make();
  open.push(() => server.stop());
  return server;
}

async function v1Client(proxyArgs: string[]) {
  const transport = new StdioClientTransport({ ...proxyCommand(proxyArgs), stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name: "proxy-http-v1", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  await client.connect(transport);
  open.push(() => client.close());
  return { client, errors, stderr: () => stderr };
}

describe("proxy --url: Streamable HTTP upstream", () => {
  it("2025 era (v1 stateful server): answered; an abort POSTs one notifications/cancelled with the session and the upstream id, then closes the stream", async () => {
    const server = await serve(() => startV1({ stateful: true }));
    const { client, errors } = await v1Client(["--url", server.url.href, "--header", "X-Test: 1"]);
    await expect(client.callTool({ name: "slow", arguments: { ms: 50 } })).resolves.toMatchObject({
      content: [{ text: "done after 50 ms" }],
    });
    const controller = new AbortController();
    const call = client.callTool({ name: "slow", arguments: { ms: 5_000 } }, undefined, { signal: controller.signal });
    expect(await eventually(() => seen(server, "tools/call").length === 2 && started(server, seen(server, "tools/call")[1]!.http.id))).toBe(
      true,
    );
    const upstreamId = seen(server, "tools/call")[1]!.http.id;
    controller.abort("user gave up");
    await expect(call).rejects.toThrow();
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[1]))).toBe(true);
    expect(await eventually(() => seen(server, "notifications/cancelled").length > 0)).toBe(true); // its POST may land after the close
    const cancels = seen(server, "notifications/cancelled");
    expect(cancels).toHaveLength(1);
    expect(cancels[0]!.http).toMatchObject({ cancelOf: upstreamId, session: true });
    expect(cancels[0]!.http.pv).toMatch(/^2025-/);
    expect(seen(server, "tools/call")).toHaveLength(2); // nothing re-sent
    await expect(client.listTools()).resolves.toMatchObject({ tools: expect.arrayContaining([expect.objectContaining({ name: "slow" })]) });
    expect(errors).toEqual([]);
  });

  it("2025 era: the proxy's idle timeout answers -32001 and cancels upstream the same way", async () => {
    const server = await serve(() => startV1({ stateful: true }));
    const { client, errors } = await v1Client(["--url", server.url.href, "--timeout-ms", "300"]);
    const error = await client
      .callTool({ name: "slow", arguments: { ms: 5_000 } }, undefined, { timeout: 20_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32001);
    expect((error as McpError).data).toMatchObject({ trigger: "timeout", limitMs: 300 });
    expect((error as McpError).data).toMatchObject({ record: { cancel: { mechanism: "notification+stream-close" } } });
    expect(await eventually(() => seen(server, "notifications/cancelled").length === 1)).toBe(true);
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[0]))).toBe(true);
    expect(errors).toEqual([]);
  });

  it("2025 era: the v2 SDK client (its own negotiation, no --era) to the v1 stateful server: initialize negotiates a 2025 version; an abort POSTs one notifications/cancelled with the session and the upstream id, then closes the stream", async () => {
    const server = await serve(() => startV1({ stateful: true }));
    const transport = new StdioClientTransportV2({ ...proxyCommand(["--url", server.url.href]), stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new ClientV2({ name: "proxy-http-v2-legacy", version: "1.0.0" });
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    await client.connect(transport);
    open.push(() => client.close());
    expect(client.getNegotiatedProtocolVersion()).toMatch(/^2025-/);
    expect(seen(server, "initialize")).toHaveLength(1);
    await expect(client.callTool({ name: "slow", arguments: { ms: 50 } })).resolves.toMatchObject({
      content: [{ text: "done after 50 ms" }],
    });
    const controller = new AbortController();
    const call = client.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal });
    expect(await eventually(() => seen(server, "tools/call").length === 2 && started(server, seen(server, "tools/call")[1]!.http.id))).toBe(
      true,
    );
    const upstreamId = seen(server, "tools/call")[1]!.http.id;
    controller.abort("user gave up");
    await expect(call).rejects.toThrow();
    expect(await eventually(() => closedUnfinished(seen(server, "tools/call")[1]))).toBe(true);
    expect(await eventually(() => seen(server, "notifications/cancelled").length > 0)).toBe(true); // its POST may land after the close
    const cancels = seen(server, "notifications/cancelled");
    expect(cancels).toHaveLength(1);
    expect(cancels[0]!.http).toMatchObject({ cancelOf: upstreamId, session: true });
    expect(cancels[0]!.http.pv).toMatch(/^2025-/);
    expect(seen(server, "tools/call")).toHaveLength(2); // nothing re-sent
    await expect(client.listTools()).resolves.toMatchObject({ tools: expect.arrayContaining([expect.objectContaining({ name: "slow" })]) });
    expect(errors, stderr).toEqual([]);
  });

  it("2026-07-28 (v2 server, v2 client pinned over stdio): answered; an abort closes that request's stream and POSTs no notification", async () => {
    const server = await serve(() => startV2());
    const transport = new StdioClientTransportV2({ ...proxyCommand(["--url", server.url.href, "--era", "2026-07-28"]), stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new ClientV2({ name: "proxy-http-v2", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    await client.connect(transport);
    open.push(() => client.close());
    await expect(client.callTool({ name: "slow", arguments: { ms: 50 } })).resolves.toMatchObject({
      content: [{ text: "done after 50 ms" }],
    });
    const controller = new AbortController();
    const call = client.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: controller.signal });
    expect(await eventually(() => seen(server, "tools/call").length === 2 && started(server, seen(server, "tools/call")[1]!.http.id))).toBe(
      true,
    );
    controller.abort("user gave up");
    await expect(call).rejects.toThrow();
    expect(await eventually(() => sawDisconnect(seen(server, "tools/call")[1]))).toBe(true);
    expect(seen(server, "tools/call")[1]!.http.pv).toBe("2026-07-28");
    await sleep(200);
    expect(seen(server, "notifications/cancelled")).toEqual([]);
    expect(seen(server, "tools/call")).toHaveLength(2);
    expect(errors, stderr).toEqual([]);
  });
});
