import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { eventually, fixture, received, server } from "../helpers.js";
import { runProxyCommand } from "../../../src/cli/proxy/command.js";
import { post2026, startFront, stopFronts } from "./helpers.js";

// The attacks the HTTP front must refuse, each tried for real against a running front on
// 127.0.0.1: no token, a wrong token (never echoed), a foreign Origin or Host (DNS rebinding), a
// body too large, headers sent too slowly, idle connections held open, and an upstream whose
// error text carries the --header secret. Each request that is refused must reach no server
// (the scripted server echoes every line it reads as "RECV <json>").
const SCRIPTED = fixture("scripted-server.mjs");
const TOKEN = "front-token-0123456789abcdef";
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await stopFronts();
});

const initialize = (id: number | string = 1) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "guard-test", version: "1" } },
  });
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function rawRequest(
  url: URL,
  headers: Record<string, string>,
  body = initialize(),
): Promise<{ status: number; text: string; headers: Headers }> {
  const response = await fetch(url, { method: "POST", headers: { ...HEADERS, ...headers }, body });
  return { status: response.status, text: await response.text(), headers: response.headers };
}

/** The HTTP status of an initialize POSTed to the front with this `Host` header (the socket goes to the address bound). */
function initializeWithHost(url: URL, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { ...HEADERS, host } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on("error", reject);
    request.end(initialize());
  });
}

describe("proxy --listen: safe to expose", () => {
  it("a bind on a non-loopback address without a token is refused at start (exit 2), naming the fix", async () => {
    let stderr = "";
    const code = await runProxyCommand(["--listen", "0.0.0.0:0", "--", process.execPath, SCRIPTED], {
      stdout: () => {},
      stderr: (text) => void (stderr += text),
    });
    expect(code).toBe(2);
    expect(stderr).toContain("--auth-token-file");
    expect(stderr).toContain("MCP_CANCELLABLE_PROXY_TOKEN");
  });

  it("bearer token: none or a wrong one gets 401, the wrong token is never echoed, and nothing reaches the server; the right one is served", async () => {
    const front = await startFront(server(SCRIPTED), { env: { MCP_CANCELLABLE_PROXY_TOKEN: TOKEN } });
    const guesses = [
      "",
      "Bearer wrong-guess-abcdef0123456789",
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(0, -1)}`,
      `Basic ${TOKEN}`,
      TOKEN,
    ];
    for (const authorization of guesses) {
      const answer = await rawRequest(front.url, authorization === "" ? {} : { authorization });
      expect(answer.status, authorization).toBe(401);
      expect(answer.headers.get("www-authenticate")).toMatch(/^Bearer /);
      const everything = answer.text + JSON.stringify(Object.fromEntries(answer.headers as unknown as Iterable<[string, string]>));
      expect(everything).not.toContain("wrong-guess");
      expect(everything).not.toContain(TOKEN.slice(0, 12));
    }
    expect(received(front.stderr())).toEqual([]);
    expect(front.stderr()).not.toContain("wrong-guess");
    const ok = await rawRequest(front.url, { authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('"protocolVersion"');
  });

  it("Origin (DNS rebinding): a foreign or opaque origin gets 403 and reaches nothing; a localhost origin and an --allow-origin one are served", async () => {
    const front = await startFront(["--allow-origin", "https://app.example.com", ...server(SCRIPTED)]);
    for (const origin of ["https://evil.example", "null", "https://app.example.com.evil.example", "http://app.example.com", "not a url"]) {
      const answer = await rawRequest(front.url, { origin });
      expect(answer.status, origin).toBe(403);
    }
    expect(received(front.stderr())).toEqual([]);
    expect((await rawRequest(front.url, { origin: "http://localhost:5173" })).status).toBe(200);
    expect((await rawRequest(front.url, { origin: "https://app.example.com" })).status).toBe(200);
  });

  it("CORS: an admitted Origin's preflight gets 204 without a token and its answers name it (a browser page can read the session id and a 401); a refused Origin gets no CORS header", async () => {
    const front = await startFront(["--allow-origin", "https://app.example.com", ...server(SCRIPTED)], {
      env: { MCP_CANCELLABLE_PROXY_TOKEN: TOKEN },
    });
    const preflight = (origin: string) =>
      fetch(front.url, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type, authorization" },
      });
    for (const origin of ["https://app.example.com", "http://localhost:5173"]) {
      const answer = await preflight(origin);
      expect(answer.status, origin).toBe(204);
      expect(answer.headers.get("access-control-allow-origin")).toBe(origin);
      expect(answer.headers.get("access-control-allow-methods")).toBe("GET, POST, DELETE");
      expect(answer.headers.get("access-control-allow-headers")).toContain("authorization");
      expect(answer.headers.get("access-control-allow-headers")).toContain("mcp-session-id");
    }
    const foreign = await preflight("https://evil.example");
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
    const noToken = await rawRequest(front.url, { origin: "https://app.example.com" });
    expect(noToken.status).toBe(401); // the preflight let no request through without its token
    expect(noToken.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    const served = await rawRequest(front.url, { origin: "https://app.example.com", authorization: `Bearer ${TOKEN}` });
    expect(served.status).toBe(200);
    expect(served.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(served.headers.get("access-control-expose-headers")).toContain("mcp-session-id");
    expect(served.headers.get("mcp-session-id")).toMatch(/\S/);
    expect((await rawRequest(front.url, { authorization: `Bearer ${TOKEN}` })).headers.get("access-control-allow-origin")).toBeNull();
    expect(received(front.stderr()).filter((m) => m.method === "initialize")).toHaveLength(2); // the two served, not the refused
  });

  it("Host (DNS rebinding) on a loopback bind: a page's own host name gets 403; localhost names are served", async () => {
    const front = await startFront(server(SCRIPTED));
    const status = (host: string) => initializeWithHost(front.url, host);
    expect(await status(`rebind.evil.example:${front.url.port}`)).toBe(403);
    expect(received(front.stderr())).toEqual([]);
    expect(await status(`localhost:${front.url.port}`)).toBe(200);
  });

  it("a loopback bind on another address (127.0.0.5) serves the URL it prints, and still refuses other loopback addresses and names", async () => {
    // An outside tester's: the printed URL was refused 403 (only localhost, 127.0.0.1 and [::1] passed).
    const front = await startFront(server(SCRIPTED), { listen: "127.0.0.5:0" });
    expect(front.url.hostname).toBe("127.0.0.5");
    const status = (host: string) => initializeWithHost(front.url, host);
    expect(await status(`127.0.0.6:${front.url.port}`)).toBe(403);
    expect(await status(`rebind.evil.example:${front.url.port}`)).toBe(403);
    expect(received(front.stderr())).toEqual([]);
    expect(await status(front.url.host)).toBe(200);
  });

  it("a body over --max-body-bytes gets 413 before anything is parsed or sent upstream", async () => {
    const front = await startFront(["--max-body-bytes", "2048", ...server(SCRIPTED)]);
    const big = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x".repeat(4_000), version: "1" } },
    });
    expect((await rawRequest(front.url, {}, big)).status).toBe(413);
    expect(received(front.stderr())).toEqual([]);
  });

  it("headers sent too slowly: the connection is closed after --headers-timeout-ms (slowloris); an idle keep-alive connection after --keep-alive-ms", async () => {
    const front = await startFront(["--headers-timeout-ms", "300", "--keep-alive-ms", "300", ...server(SCRIPTED)]);
    const slow = net.connect(Number(front.url.port), "127.0.0.1");
    let slowClosed = 0;
    let slowAnswer = "";
    slow.on("data", (chunk) => (slowAnswer += chunk.toString("utf8")));
    slow.on("close", () => (slowClosed = performance.now()));
    const t0 = performance.now();
    slow.write(`POST ${front.url.pathname} HTTP/1.1\r\nHost: localhost\r\n`);
    const drip = setInterval(() => slow.writable && slow.write("X-Drip: 1\r\n"), 100);
    cleanups.push(() => clearInterval(drip));
    expect(await eventually(() => slowClosed > 0, 5_000)).toBe(true);
    expect(slowClosed - t0).toBeLessThan(3_000);
    expect(slowAnswer === "" || /^HTTP\/1\.1 408/.test(slowAnswer)).toBe(true);

    const idle = net.connect(Number(front.url.port), "127.0.0.1");
    let idleClosed = false;
    idle.on("data", () => {});
    idle.on("close", () => (idleClosed = true));
    idle.write(`GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n`);
    expect(await eventually(() => idleClosed, 5_000)).toBe(true);
  });

  it("a refused connection is closed whole, also when its client never closes its side: such clients cannot hold --max-connections (slow headers, silent)", async () => {
    const front = await startFront(["--headers-timeout-ms", "300", "--max-connections", "3", ...server(SCRIPTED)]);
    const port = Number(front.url.port);
    const statuses: string[] = [];
    // allowHalfOpen: each reads the front's answer and its FIN but never ends its own side.
    const stubborn = (first: string | undefined) => {
      const socket = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true });
      socket.on("error", () => {});
      socket.on("data", (chunk) => statuses.push(chunk.toString("utf8").split("\r\n")[0]!));
      if (first !== undefined) socket.write(first);
      cleanups.push(() => void socket.destroy());
      return socket;
    };
    const slowHeaders = `POST ${front.url.pathname} HTTP/1.1\r\nHost: localhost\r\n`; // never finished
    stubborn(slowHeaders);
    stubborn(undefined); // sends nothing at all
    stubborn(slowHeaders);
    expect(await eventually(() => statuses.length === 3, 5_000)).toBe(true);
    expect(statuses).toEqual(Array(3).fill("HTTP/1.1 408 Request Timeout"));
    // All three slots are free again: a legitimate client gets its answer.
    const health = await fetch(new URL("/healthz", front.url), { signal: AbortSignal.timeout(3_000) });
    expect(health.status).toBe(200);
  });

  it("the upstream's --header secret never reaches a client or the log, even when the upstream echoes it in an error", async () => {
    const secret = "upstream-secret-4f9a7c21e0b3";
    const echo = http.createServer((req, res) => {
      req.resume();
      res.writeHead(500, { "content-type": "text/plain" });
      res.end(`refused: you sent authorization=${String(req.headers.authorization)}`);
    });
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => echo.close(() => resolve())));
    const port = (echo.address() as net.AddressInfo).port;
    const front = await startFront(["--url", `http://127.0.0.1:${port}/mcp`, "--header", `Authorization: Bearer ${secret}`]);
    const answer = await rawRequest(front.url, {});
    expect(answer.text).toContain("error");
    expect(answer.text).not.toContain(secret);
    const call = await post2026(front.url, { id: 1, method: "tools/list" });
    expect(await call.text()).not.toContain(secret);
    expect(await eventually(() => front.stderr().includes("[redacted]") || front.stderr().includes("500"), 3_000)).toBe(true);
    expect(front.stderr()).not.toContain(secret);
  });

  it("a session is its client's: a cancel POSTed in another session for the same request id reaches nothing; an unknown session gets 404", async () => {
    const front = await startFront(server(SCRIPTED));
    const open = async (): Promise<string> => {
      const response = await fetch(front.url, { method: "POST", headers: HEADERS, body: initialize() });
      await response.text();
      const session = response.headers.get("mcp-session-id")!;
      const headers = { ...HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" };
      await fetch(front.url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
      return session;
    };
    const a = await open();
    const b = await open();
    const call = (session: string, body: unknown) =>
      fetch(front.url, {
        method: "POST",
        headers: { ...HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify(body),
      });
    const pending = call(a, { jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "late", arguments: { ms: 600 } } });
    expect(await eventually(() => received(front.stderr()).some((m) => m.params?.name === "late"))).toBe(true);
    const stray = await call(b, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 5, reason: "not yours" } });
    expect(stray.status).toBe(202);
    const answer = await (await pending).text();
    expect(answer).toContain('"id":5');
    expect(answer).toContain('"result"');
    expect(received(front.stderr()).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
    const unknown = await call("nope.00000000-0000-0000-0000-000000000000", { jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(unknown.status).toBe(404);
  });
});
