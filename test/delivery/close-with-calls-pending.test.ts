import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ConnectionClosedError, attachCancellation } from "../../src/index.js";
import { SLACK_MS } from "../helpers/timing.js";
import { fixture, spawnServer } from "../helpers/stdio.js";
import { connectV1, connectV2 } from "../http/clients.js";
import { eventually, seen, sleep, startV1, startV2 } from "../http/servers.js";

// client.close() while calls are pending: the client gives those calls up, so each one is
// cancelled by the transport's own mechanism before the transport ends (rules 6, 31; rule 40: a
// closed 2025-era stream is not a cancel, and the session may run the tool to its end). Each call
// rejects ConnectionClosedError as before; its record names the mechanism. Calls already
// answered, and initialize, get nothing.

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

const REASON = "The client closed the connection";

describe("client.close() with calls pending", () => {
  it("stdio: one notifications/cancelled per pending call, under its id, read by the server before its stdin ends; nothing for the answered call or initialize", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    await server.mcp.callTool({ name: "echo" }); // id 1, answered
    const pending = [
      server.mcp.callTool({ name: "silent" }, { timeoutMs: 20_000 }),
      server.mcp.callTool({ name: "silent" }, { timeoutMs: 20_000 }),
    ];
    for (const call of pending) call.catch(() => {});
    expect(await eventually(() => server.received().filter((m) => m.method === "tools/call").length === 3)).toBe(true);
    await server.client.close();
    for (const call of pending) await expect(call).rejects.toBeInstanceOf(ConnectionClosedError);
    // The server read them before its end of input (it logs each line as it reads it).
    expect(await eventually(() => server.cancelsReceived().length === 2)).toBe(true);
    expect(server.cancelsReceived().map((m) => m.params)).toEqual([
      { requestId: 2, reason: REASON },
      { requestId: 3, reason: REASON },
    ]);
    const records = server.mcp.records().filter((r) => r.status === "cancelled");
    expect(records).toHaveLength(2);
    for (const record of records) {
      expect(record.cancel).toMatchObject({ trigger: "connection-closed", reason: REASON, mechanism: "notification", undelivered: null });
      expect(record.cancel!.sentAt).not.toBeNull();
      expect(record.outcome).toBe("unverified");
    }
    expect(server.errors).toEqual([]);
  });

  it("stdio: a call cancelled before the close is not cancelled again by it", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    const controller = new AbortController();
    const call = server.mcp.callTool({ name: "silent" }, { signal: controller.signal, timeoutMs: 20_000 });
    call.catch(() => {});
    expect(await eventually(() => server.received().some((m) => m.method === "tools/call"))).toBe(true);
    controller.abort();
    await server.client.close();
    expect(await eventually(() => server.cancelsReceived().length === 1)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.cancelsReceived().map((m) => m.params!.reason)).toEqual(["Cancelled by the client"]);
  });

  it("attachCancellation on a transport whose close cannot be replaced: the close is the transport's own, so no cancel goes (mechanism none, as docs/delivery.md says); a shared signal aborted first does cancel", async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [fixture("scripted-server.mjs")], stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const ownClose = transport.close.bind(transport);
    Object.defineProperty(transport, "close", { value: ownClose, writable: false, configurable: false });
    const client = new Client({ name: "frozen-close", version: "1.0.0" });
    await client.connect(transport);
    cleanup.push(() => client.close());
    const mcp = attachCancellation(client);
    const controller = new AbortController();
    const calls = [
      mcp.callTool({ name: "silent" }, { timeoutMs: 20_000 }),
      client.callTool({ name: "silent" }, undefined, { signal: controller.signal }),
    ];
    for (const call of calls) call.catch(() => {});
    const cancels = () => stderr.split("\n").filter((l) => l.startsWith("RECV ") && l.includes("notifications/cancelled"));
    const calledTwice = () => stderr.split("\n").filter((l) => l.startsWith("RECV ") && l.includes('"tools/call"')).length === 2;
    expect(await eventually(calledTwice)).toBe(true);
    expect(transport.close).toBe(ownClose); // not replaced
    controller.abort(); // the way the docs give: abort first
    expect(await eventually(() => cancels().length === 1)).toBe(true);
    await client.close();
    await expect(calls[0]).rejects.toBeInstanceOf(ConnectionClosedError);
    await expect(calls[1]).rejects.toThrow();
    await sleep(100);
    expect(cancels()).toHaveLength(1); // the close sent none for the first call
    expect(mcp.records().map((r) => [r.requestId, r.cancel?.trigger, r.cancel?.mechanism])).toEqual([
      [2, "aborted", "notification"], // records in settle order
      [1, "connection-closed", "none"],
    ]);
  });

  for (const [sdk, connect] of [
    ["v1", (url: URL) => connectV1(url)],
    ["v2 (2025 era)", (url: URL) => connectV2(url)],
  ] as const) {
    it(`${sdk}, 2025-11-25 server with sessions: the pending call's notification is POSTed with the session before the close ends; the tool stops`, async () => {
      const server = await startV1({ stateful: true });
      cleanup.push(() => server.stop());
      const client = await connect(server.url);
      cleanup.push(() => client.close());
      const call = client.mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 20_000 });
      call.catch(() => {});
      expect(await eventually(() => server.events.some((e) => e.kind === "handler-start"))).toBe(true);
      const closingAt = performance.now();
      await client.client.close();
      expect(performance.now() - closingAt).toBeLessThan(250 + SLACK_MS); // flushTimeoutMs (250) at most
      await expect(call).rejects.toBeInstanceOf(ConnectionClosedError);
      expect(await eventually(() => seen(server, "notifications/cancelled").length === 1)).toBe(true);
      const [cancel] = seen(server, "notifications/cancelled");
      expect(cancel!.http).toMatchObject({ session: true, cancelOf: 1 });
      expect(await eventually(() => seen(server, "tools/call")[0]?.aborted !== undefined)).toBe(true); // the handler stopped
      expect(client.mcp.records()[0]!.cancel).toMatchObject({
        trigger: "connection-closed",
        reason: REASON,
        mechanism: "notification+stream-close",
        undelivered: null,
      });
      expect(client.errors.map((e) => e.message)).toEqual([]);
    });
  }

  for (const [sdk, connect] of [
    ["v1", (url: URL) => connectV1(url)],
    ["v2 (2025 era)", (url: URL) => connectV2(url)],
  ] as const) {
    it(`${sdk}, 2025-era: a call made while the close flushes its cancels is never sent (no session would cancel it)`, async () => {
      const server = await startV1({ stateful: true, holdCancelMs: 200 });
      cleanup.push(() => server.stop());
      const client = await connect(server.url);
      cleanup.push(() => client.close());
      const first = client.mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 20_000 });
      first.catch(() => {});
      expect(await eventually(() => server.events.some((e) => e.kind === "handler-start"))).toBe(true);
      const closing = client.client.close(); // waits for the first call's notification (held 200 ms)
      const during = client.mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 20_000 });
      await expect(during).rejects.toBeInstanceOf(ConnectionClosedError);
      await closing;
      await expect(first).rejects.toBeInstanceOf(ConnectionClosedError);
      await sleep(100);
      expect(seen(server, "tools/call")).toHaveLength(1); // only the first reached the server
      const records = client.mcp.records();
      expect(records).toHaveLength(2);
      expect(records[1]).toMatchObject({
        outcome: "not-sent",
        requestId: null,
        cancel: { trigger: "connection-closed", mechanism: "none" },
      });
    });

    it(`${sdk}, 2025-era: many calls pending at the close, their notifications written but not answered within flushTimeoutMs: each record says the notification went out, with no answer`, async () => {
      const server = await startV1({ stateful: true, holdCancelMs: 1_000 });
      cleanup.push(() => server.stop());
      const client = await connect(server.url);
      cleanup.push(() => client.close());
      const CALLS = 20;
      const calls = Array.from({ length: CALLS }, () =>
        client.mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 20_000 }),
      );
      for (const call of calls) call.catch(() => {});
      expect(await eventually(() => server.events.filter((e) => e.kind === "handler-start").length === CALLS)).toBe(true);
      await client.client.close(); // 250 ms for the notifications, each answered 1 s later
      for (const call of calls) await expect(call).rejects.toBeInstanceOf(ConnectionClosedError);
      expect(await eventually(() => seen(server, "notifications/cancelled").length === CALLS)).toBe(true);
      expect(await eventually(() => client.mcp.records().every((r) => r.revision > 0), 2_000)).toBe(true);
      for (const record of client.mcp.records()) {
        expect(record.cancel).toMatchObject({
          trigger: "connection-closed",
          mechanism: "notification+stream-close",
          undelivered: { mechanism: "notification", error: expect.stringMatching(/^sent \(its body written\), but no answer came: /) },
        });
      }
      expect(new Set(seen(server, "notifications/cancelled").map((c) => c.http.cancelOf)).size).toBe(CALLS); // one each
    });
  }

  it("v2 pinned to 2026-07-28: the pending call's stream is closed (the cancel), no notification", async () => {
    const server = await startV2({ responseMode: "sse" });
    cleanup.push(() => server.stop());
    const client = await connectV2(server.url, { pin: true });
    cleanup.push(() => client.close());
    const call = client.mcp.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeoutMs: 20_000 });
    call.catch(() => {});
    expect(await eventually(() => server.events.some((e) => e.kind === "handler-start"))).toBe(true);
    await client.client.close();
    await expect(call).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(await eventually(() => seen(server, "tools/call")[0]?.aborted !== undefined)).toBe(true);
    expect(seen(server, "notifications/cancelled")).toEqual([]);
    expect(client.mcp.records()[0]!.cancel).toMatchObject({ trigger: "connection-closed", reason: REASON, mechanism: "stream-close" });
    expect(client.errors.map((e) => e.message)).toEqual([]);
  });
});
