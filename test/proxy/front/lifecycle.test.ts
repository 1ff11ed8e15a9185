import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { seen, startV1, startV2 } from "../../http/servers.js";
import type { TestServer } from "../../http/servers.js";
import { alive, eventually, fixture, server, tempDir } from "../helpers.js";
import { messagesOf, post2026, startFront, stopFronts } from "./helpers.js";

// The HTTP front's life: readiness and the drain on SIGTERM, idle sessions ended (their stdio
// server's process group stopped), the limits on sessions and requests, the records naming the
// replica, and a Streamable HTTP upstream (--url) in both eras.
const V2_STDIO = fixture("http/v2-stdio-server.mjs");
const open: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
  await stopFronts();
});
const lines = (text: string, prefix: string): string[] => text.split("\n").filter((line) => line.startsWith(prefix));
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "life", version: "1" } },
};
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

describe("proxy --listen: life of the front", () => {
  it("SIGTERM drains: readiness 503, new sessions and requests refused (503, not sent), a call in flight finishes, one past --drain-ms is answered -32000 and cancelled upstream; exit 0", async () => {
    const front = await startFront(["--drain-ms", "1500", ...server(V2_STDIO)]);
    expect((await fetch(new URL("/readyz", front.url))).status).toBe(200);
    const client = new Client({ name: "drain", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(front.url));
    const short = client.callTool({ name: "sleep", arguments: { ms: 600 } });
    const long = client.callTool({ name: "sleep", arguments: { ms: 20_000 } }).catch((e: unknown) => e);
    const modern = post2026(front.url, { id: "m", method: "tools/call", params: { name: "sleep", arguments: { ms: 20_000 } } });
    expect(await eventually(() => lines(front.stderr(), "STARTED").length === 3)).toBe(true);
    front.child.kill("SIGTERM");
    expect(await eventually(() => front.stderr().includes("draining"))).toBe(true);
    expect((await fetch(new URL("/readyz", front.url))).status).toBe(503);
    const refused = await fetch(front.url, { method: "POST", headers: HEADERS, body: JSON.stringify(INIT) });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    await expect(short).resolves.toMatchObject({ content: [{ text: "slept 600" }] });
    const error = (await long) as { code?: number; message?: string; data?: unknown };
    expect(error.code).toBe(-32000);
    // 2025-era too: the record of the cancel upstream, as a lost connection's (an outside tester's: it had none).
    expect(error.data).toMatchObject({
      code: "CONNECTION_CLOSED",
      trigger: "connection-closed",
      summary: expect.stringMatching(/^cancelled/),
      record: { status: "cancelled", clientRequestId: expect.anything(), cancel: { mechanism: "notification" } },
    });
    const answered = await messagesOf(await modern);
    expect(answered.at(-1)).toMatchObject({ id: "m", error: { code: -32000 } });
    expect(answered.at(-1)!.error!.message).toContain("--drain-ms");
    // Its data says what a lost connection's does (an outside tester's: it had no trigger and `record: null`).
    expect(answered.at(-1)!.error).toMatchObject({
      data: {
        code: "CONNECTION_CLOSED",
        trigger: "connection-closed",
        summary: expect.stringMatching(/^cancelled \(aborted\)/),
        record: { status: "cancelled", clientRequestId: "m", cancel: { mechanism: "notification" } },
      },
    });
    const exit = await front.exited;
    expect(exit.code).toBe(0);
    // Both long calls were cancelled upstream (their handlers' signals fired).
    expect(lines(front.stderr(), "ABORTED")).toHaveLength(2);
  });

  it("an idle session is ended after --session-idle-ms and its stdio server's process group is stopped; --max-sessions refuses the next initialize with 503 (not sent)", async () => {
    const front = await startFront(["--session-idle-ms", "1500", "--max-sessions", "1", ...server(V2_STDIO)]);
    const children = (): number =>
      spawnSync("pgrep", ["-P", String(front.child.pid)], { encoding: "utf8" })
        .stdout.trim()
        .split("\n")
        .filter(Boolean).length;
    const first = await fetch(front.url, { method: "POST", headers: HEADERS, body: JSON.stringify(INIT) });
    await first.text();
    expect(children()).toBe(2); // the 2026-07-28 server and the session's
    const session = first.headers.get("mcp-session-id")!;
    const second = await fetch(front.url, { method: "POST", headers: HEADERS, body: JSON.stringify(INIT) });
    expect(second.status).toBe(503);
    expect(await second.text()).toContain("--max-sessions");
    // Left idle: the session ends and its server is stopped; then a request on it gets 404 (the
    // client initializes again), and a new session is possible.
    expect(await eventually(() => children() === 1, 10_000)).toBe(true);
    const headers = { ...HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" };
    const late = await fetch(front.url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }) });
    await late.text();
    expect(late.status).toBe(404);
    expect(front.stderr()).toContain("--session-idle-ms");
    const third = await fetch(front.url, { method: "POST", headers: HEADERS, body: JSON.stringify(INIT) });
    expect(third.status).toBe(200);
    await third.text();
  });

  it("--session-idle-ms counts from the session's last message: a call longer than the limit, then a request soon after its answer, keeps the session", async () => {
    const front = await startFront(["--session-idle-ms", "1000", ...server(V2_STDIO)]);
    const client = new Client({ name: "front-idle", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(front.url);
    await client.connect(transport);
    open.push(() => client.close());
    await expect(client.callTool({ name: "sleep", arguments: { ms: 1_600 } })).resolves.toMatchObject({
      content: [{ text: "slept 1600" }],
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await expect(client.listTools()).resolves.toMatchObject({ tools: expect.any(Array) });
    expect(front.stderr()).not.toContain("--session-idle-ms");
  });

  it("--max-session-requests: a request over the limit is answered -32000 (not sent) and reaches no server", async () => {
    const front = await startFront(["--max-session-requests", "1", ...server(V2_STDIO)]);
    const client = new Client({ name: "limits", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(front.url));
    open.push(() => client.close());
    const first = client.callTool({ name: "sleep", arguments: { ms: 800 } });
    expect(await eventually(() => lines(front.stderr(), "STARTED").length === 1)).toBe(true);
    const second = await client.callTool({ name: "sleep", arguments: { ms: 10 } }).catch((e: unknown) => e);
    expect((second as { code?: number }).code).toBe(-32000);
    expect((second as Error).message).toContain("--max-session-requests");
    await expect(first).resolves.toMatchObject({ content: [{ text: "slept 800" }] });
    expect(lines(front.stderr(), "STARTED")).toHaveLength(1);
  });

  it("--records: one JSON line per request naming the replica, the process (proxyPid), the client's id and session, and the upstream id", async () => {
    const dir = tempDir();
    open.push(async () => dir.cleanup());
    const file = join(dir.dir, "records.jsonl");
    const front = await startFront(["--replica", "rep-a", "--records", file, ...server(V2_STDIO)]);
    const client = new Client({ name: "records", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(front.url);
    await client.connect(transport);
    await client.callTool({ name: "sleep", arguments: { ms: 5 } });
    await client.close();
    const modern = await messagesOf(
      await post2026(front.url, { id: "z", method: "tools/call", params: { name: "sleep", arguments: { ms: 5 } } }),
    );
    expect(modern.at(-1)).toMatchObject({ id: "z", result: {} });
    await front.stop("SIGTERM");
    const records = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const calls = records.filter((r) => r.method === "tools/call");
    expect(calls).toHaveLength(2);
    for (const record of calls) {
      // Both eras: a request is proxyPid and callId together (docs/proxy.md, Records).
      expect(record).toMatchObject({ replica: "rep-a", proxyPid: front.child.pid, status: "succeeded", requestId: expect.anything() });
    }
    expect(calls.find((r) => r.clientRequestId === "z")).toMatchObject({ clientSessionId: null });
    expect(calls.find((r) => r.clientRequestId !== "z")).toMatchObject({ clientSessionId: transport.sessionId });
  });

  it("--url upstream, both eras: a 2025-era session per client (the v1 stateful server), 2026-07-28 requests over one connection (--era 2026-07-28, the v2 server); each cancel reaches the server", async () => {
    let upstream: TestServer = await startV1({ stateful: true });
    open.push(() => upstream.stop());
    let front = await startFront(["--url", upstream.url.href]);
    const c1 = new Client({ name: "u1", version: "1.0.0" });
    await c1.connect(new StreamableHTTPClientTransport(front.url));
    open.push(() => c1.close());
    const controller = new AbortController();
    const call = c1.callTool({ name: "slow", arguments: { ms: 5_000 } }, undefined, { signal: controller.signal });
    expect(await eventually(() => seen(upstream, "tools/call").length === 1)).toBe(true);
    controller.abort("stop");
    await expect(call).rejects.toThrow();
    expect(await eventually(() => seen(upstream, "notifications/cancelled").length === 1)).toBe(true);
    expect(seen(upstream, "notifications/cancelled")[0]!.http).toMatchObject({ cancelOf: seen(upstream, "tools/call")[0]!.http.id });
    await front.stop();

    upstream = await startV2();
    open.push(() => upstream.stop());
    front = await startFront(["--url", upstream.url.href, "--era", "2026-07-28"]);
    const c2 = new ClientV2({ name: "u2", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await c2.connect(new TransportV2(front.url));
    open.push(() => c2.close());
    await expect(c2.callTool({ name: "slow", arguments: { ms: 20 } })).resolves.toMatchObject({ content: [{ text: "done after 20 ms" }] });
    const c2abort = new AbortController();
    const call2 = c2.callTool({ name: "slow", arguments: { ms: 5_000 } }, { signal: c2abort.signal });
    expect(await eventually(() => upstream.events.filter((e) => e.kind === "handler-start").length === 2)).toBe(true);
    c2abort.abort();
    await expect(call2).rejects.toThrow();
    expect(await eventually(() => upstream.events.some((e) => e.kind === "handler-aborted"))).toBe(true);
    expect(seen(upstream, "notifications/cancelled")).toHaveLength(0);
    expect(alive(front.child.pid!)).toBe(true);
  });

  it("a server that cannot be started: each initialize and 2026-07-28 request is answered 502 / -32000 with why, no session is kept (--max-sessions 1 refuses none), the front stays ready and drains to exit 0", async () => {
    const front = await startFront(["--replica", "r1", "--max-sessions", "1", "--", "/nonexistent/mcp-cancellable-no-such-server"]);
    const why = "mcp-cancellable proxy: the server could not be started (spawn /nonexistent/mcp-cancellable-no-such-server ENOENT)";
    for (const id of [1, 2]) {
      const response = await fetch(front.url, { method: "POST", headers: HEADERS, body: JSON.stringify({ ...INIT, id }) });
      expect(response.status).toBe(502);
      expect(response.headers.get("mcp-session-id")).toBeNull();
      expect(await response.json()).toEqual({ jsonrpc: "2.0", id, error: { code: -32000, message: why } });
    }
    const modern = await post2026(front.url, { id: "m", method: "tools/call", params: { name: "sleep", arguments: { ms: 1 } } });
    expect(modern.status).toBe(502);
    expect(await messagesOf(modern)).toEqual([{ jsonrpc: "2.0", id: "m", error: { code: -32000, message: why } }]);
    expect((await fetch(new URL("/readyz", front.url))).status).toBe(200);
    expect((await front.stop("SIGTERM")).code).toBe(0);
    // Told as never started, not as a server that ran and exited (its spawn's errno as an exit code).
    expect(front.stderr()).not.toMatch(/exited with code|upstream ended/);
    expect(lines(front.stderr(), "[r1 new session] mcp-cancellable proxy: cannot start the upstream: spawn")).toHaveLength(2);
  });
});

describe("proxy --listen --otel", () => {
  it("each call's span names the replica, the client's request id and session (2025-era) or era, beside the upstream's id; exported at the drain", async () => {
    const front = await startFront(["--otel", "--replica", "rep-o", ...server(V2_STDIO)], {
      env: { OTEL_TRACES_EXPORTER: "console", OTEL_BSP_SCHEDULE_DELAY: "100" },
    });
    const client = new Client({ name: "otel", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(front.url);
    await client.connect(transport);
    await client.callTool({ name: "sleep", arguments: { ms: 5 } });
    const session = transport.sessionId!;
    await client.close();
    await messagesOf(await post2026(front.url, { id: "otel-2026", method: "tools/call", params: { name: "sleep", arguments: { ms: 5 } } }));
    const exit = await front.stop("SIGTERM");
    expect(exit.code).toBe(0);
    const spans = front
      .stderr()
      .split("\n")
      .filter((line) => line.includes("mcp-cancellable proxy: span "))
      .map((line) => JSON.parse(line.slice(line.indexOf("span ") + 5)) as { name: string; attributes: Record<string, unknown> });
    const calls = spans.filter((span) => span.name === "tools/call sleep");
    expect(calls).toHaveLength(2);
    const legacy = calls.find((span) => span.attributes["mcp_cancellable.proxy.client_era"] === "2025")!;
    const modern = calls.find((span) => span.attributes["mcp_cancellable.proxy.client_era"] === "2026-07-28")!;
    expect(legacy.attributes).toMatchObject({
      "mcp_cancellable.proxy.replica": "rep-o",
      "mcp_cancellable.proxy.client_session_id": session,
      "jsonrpc.request.id": expect.any(String),
    });
    expect(modern.attributes).toMatchObject({
      "mcp_cancellable.proxy.replica": "rep-o",
      "mcp_cancellable.proxy.client_request_id": "otel-2026",
      "jsonrpc.request.id": expect.any(String),
    });
    expect(modern.attributes["mcp_cancellable.proxy.client_session_id"]).toBeUndefined();
  });
});
