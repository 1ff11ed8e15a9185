import { afterEach, describe, expect, it } from "vitest";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
// @ts-expect-error: a plain .mjs fixture without types
import { startHttpServer } from "../fixtures/probe/http-server.mjs";
import { check, cli, FAST, why, probeJson, statuses } from "./helpers.js";

interface HttpFixture {
  url: string;
  events: string[];
  close(): Promise<void>;
}

const start = startHttpServer as (options: {
  kind: "stateful" | "stateless" | "v2";
  rejectCancel?: boolean;
  broadcast?: boolean;
}) => Promise<HttpFixture>;
let server: HttpFixture | undefined;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  await server?.close();
  server = undefined;
});

/**
 * A TCP proxy on 127.0.0.1 in front of `url` that delays every chunk from the server to the
 * client by `delayMs` (a slow link: what the server sends arrives late, what the client sends
 * does not). Closed after the test.
 */
async function slowLink(url: string, delayMs: number): Promise<string> {
  const upstream = new URL(url);
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    const up = net.connect(Number(upstream.port), upstream.hostname);
    for (const socket of [client, up]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => sockets.delete(socket));
    }
    client.pipe(up);
    up.on("data", (chunk) => setTimeout(() => client.writable && client.write(chunk), delayMs));
    up.on("end", () => setTimeout(() => client.end(), delayMs + 1));
    client.on("close", () => up.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  closers.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => proxy.close(resolve));
  });
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${upstream.pathname}`;
}

describe("probe over Streamable HTTP (servers on 127.0.0.1, port 0)", () => {
  it("2025-era sessions: every session the probe opens is ended (DELETE) before it exits, its own first one too", async () => {
    // An outside tester's: the two extra sessions were ended, the probe's own was only closed, and
    // stayed in the server's table (server-everything's tools still running in it).
    server = await start({ kind: "stateful" });
    const { code } = await probeJson(["--url", server.url, ...FAST]);
    expect(code).toBe(0);
    const opened = server.events.filter((event) => event === "session opened").length;
    expect(opened).toBe(3);
    expect(server.events.filter((event) => event === "session ended")).toHaveLength(opened);
  });

  it("2025-era, v1 SDK stateful server: the POSTed cancel gets 202, the handler stops, every check passes", async () => {
    server = await start({ kind: "stateful" });
    const { code, json } = await probeJson(["--url", server.url, ...FAST]);
    expect(statuses(json), why(json)).toEqual({
      "silent-after-cancel": "PASS",
      "work-stops": "PASS",
      "connection-survives": "PASS",
      "cancel-completed-ignored": "PASS",
      "cancel-unknown-ignored": "PASS",
      "no-server-cancel": "PASS",
      "progress-increases": "PASS",
      "http-cancel-mechanism": "PASS",
      "concurrent-calls": "PASS",
      "sessions-isolated": "PASS",
    });
    expect(code).toBe(0);
    expect(check(json, "http-cancel-mechanism").summary).toMatch(/got 202 Accepted/);
    expect(check(json, "sessions-isolated").summary).toMatch(/both called with request id 2 and got only their own messages/);
    expect(server.events).toContain("handler aborted");
  });

  it("2025-era, a server that answers the POSTed cancel with 400: http-cancel-mechanism FAILs (rule 40), and so do the stray cancels", async () => {
    server = await start({ kind: "stateful", rejectCancel: true });
    const { code, json } = await probeJson(["--url", server.url, ...FAST]);
    expect(code).toBe(1);
    const s = statuses(json);
    expect(s["http-cancel-mechanism"]).toBe("FAIL");
    expect(check(json, "http-cancel-mechanism").summary).toMatch(/got 400/);
    expect(s["cancel-unknown-ignored"]).toBe("FAIL");
    expect(s["cancel-completed-ignored"]).toBe("FAIL");
    expect(check(json, "cancel-unknown-ignored").summary).toMatch(/was refused with HTTP 400: /);
    // The work was never told to stop.
    expect(s["work-stops"]).toBe("FAIL");
    expect(s["connection-survives"]).toBe("PASS");
    expect(server.events).toContain("rejected a cancel");
  });

  it("2025-era, v1 SDK stateless server: the notification reaches a fresh instance, so the work goes on (what the probe is for)", async () => {
    server = await start({ kind: "stateless" });
    const { code, json } = await probeJson(["--url", server.url, ...FAST]);
    expect(code).toBe(1);
    const s = statuses(json);
    expect(s["http-cancel-mechanism"]).toBe("PASS"); // 202: accepted, and ignored
    expect(s["work-stops"]).toBe("FAIL");
    expect(s["silent-after-cancel"]).toBe("FAIL");
    expect(server.events).not.toContain("handler aborted");
  });

  it("2026-07-28, v2 SDK server: the cancel is the stream close, no notification; the server sees the disconnect", async () => {
    server = await start({ kind: "v2" });
    const { code, json } = await probeJson(["--url", server.url, "--era", "2026-07-28", ...FAST]);
    expect(statuses(json), why(json)).toEqual({
      "silent-after-cancel": "PASS",
      "work-stops": "PASS",
      "connection-survives": "PASS",
      "cancel-completed-ignored": "SKIP",
      "cancel-unknown-ignored": "SKIP",
      "no-server-cancel": "PASS",
      "progress-increases": "PASS",
      "http-cancel-mechanism": "PASS",
      "concurrent-calls": "PASS",
      "sessions-isolated": "SKIP",
    });
    expect(code).toBe(0);
    expect((json.call!.record as unknown as { cancel: { mechanism: string } }).cancel.mechanism).toBe("stream-close");
    const notifications = json.timeline.filter((e) => e.from === "client" && e.message?.method === "notifications/cancelled");
    expect(notifications).toHaveLength(0);
    expect(json.timeline.some((e) => e.kind === "http" && /closed the response stream of POST tools\/call/.test(e.text))).toBe(true);
    // Bounded wait (10 s, for a loaded machine): the server notices the closed stream on its next write.
    for (let i = 0; i < 200 && !server.events.includes("handler aborted"); i++) await new Promise((r) => setTimeout(r, 50));
    expect(server.events).toContain("response closed early: POST");
    expect(server.events).toContain("handler aborted");
  });

  // Issue 15 item 4: mcp-framework 0.2.22 over HTTP sends every message to every session.
  it("2025-era, a server that sends every message to every session: sessions-isolated FAILs (rules 1, 40)", async () => {
    server = await start({ kind: "stateful", broadcast: true });
    const { code, json } = await probeJson(["--url", server.url, ...FAST]);
    expect(code).toBe(1);
    const sessions = check(json, "sessions-isolated");
    expect(sessions.status).toBe("FAIL");
    expect(sessions.summary).toMatch(/message\(s\) of one session reached the other \(both used request id 2; session A's was cancelled\)/);
    expect(sessions.evidence.join("\n")).toMatch(
      /session [AB] received notifications\/progress token "mcp-cancellable-probe-session-[AB]"/,
    );
  });

  // Issue 15 item 6: the server answered, so never "could not reach".
  it("--era 2026-07-28 against a 2025-only server says what it answered and names --era legacy", async () => {
    server = await start({ kind: "stateful" });
    const { code, stderr } = await cli(["probe", "--url", server.url, "--era", "2026-07-28", "--timeout", "3000"]);
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^mcp-cancellable probe: http:\/\/127\.0\.0\.1:\d+\/mcp answered server\/discover \(2026-07-28\) with HTTP 400: it does not speak 2026-07-28 \(a 2025-era server\? try --era legacy\)/,
    );
    expect(stderr).not.toMatch(/could not reach/);
  });

  it("an endpoint that answers 200 with a web page: it was reached, and the message says what it answered (never 'could not reach')", async () => {
    const page = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>a login page</body></html>");
    });
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}/mcp`;
      for (const era of ["legacy", "2026-07-28"]) {
        const { code, stderr } = await cli(["probe", "--url", url, "--era", era, "--timeout", "3000"]);
        expect(code).toBe(1);
        expect(stderr).toMatch(
          /^mcp-cancellable probe: http:\/\/127\.0\.0\.1:\d+\/mcp answered (initialize|server\/discover \(2026-07-28\)) with HTTP 200, but not as an MCP server/,
        );
        expect(stderr).not.toMatch(/could not reach/);
      }
    } finally {
      page.closeAllConnections();
      await new Promise((resolve) => page.close(resolve));
    }
  });

  it("an endpoint nobody listens on: a clear message, exit 1, no stack trace", async () => {
    server = await start({ kind: "stateful" });
    const url = server.url;
    await server.close();
    server = undefined;
    const { code, stderr } = await cli(["probe", "--url", url, "--timeout", "2000"]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^mcp-cancellable probe: could not reach http:\/\/127\.0\.0\.1:\d+\/mcp/);
    // Why, not only undici's "fetch failed" (an outside tester's).
    expect(stderr).toMatch(/fetch failed \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)/);
    expect(stderr).not.toMatch(/^\s+at /m);
  });

  // Tester I item 1: the v2 SDK's createMcpHandler holds its response head until the first event.
  it("2026-07-28, a server that holds its response head and a tool silent before the cancel: the request closed before its headers is the cancel, http-cancel-mechanism PASSes", async () => {
    server = await start({ kind: "v2" });
    const { code, json } = await probeJson([
      "--url",
      server.url,
      "--era",
      "2026-07-28",
      "--args",
      '{"steps":2,"intervalMs":3000}',
      ...FAST,
    ]);
    const mechanism = check(json, "http-cancel-mechanism");
    expect(mechanism.status, why(json)).toBe("PASS");
    expect(mechanism.summary).toMatch(
      /^the client closed the request of #\d+ before its response headers came \(closing the request closes its stream too\) and sent no notification, and the server answered the next request$/,
    );
    expect(code, why(json)).toBe(0);
    const closedEarly = json.timeline.filter(
      (e) =>
        e.from === "client" &&
        e.kind === "http" &&
        /closed the request of POST tools\/call #\d+ before its response headers came/.test(e.text),
    );
    expect(closedEarly.length).toBeGreaterThan(0);
    // The abort is on the timeline once, as the client's, at the cancel; not again as a failed fetch.
    expect(json.timeline.some((e) => /aborted by the client before the response headers/.test(e.text))).toBe(false);
    expect(closedEarly[0]!.atMs - json.call!.cancelAtMs!).toBeLessThan(50);
    expect(server.events).toContain("response closed early: POST");
    // Tester I item 5: on 2026-07-28 the fence cannot show that the server read the cancel.
    const silent = check(json, "silent-after-cancel");
    expect(silent.status).toBe("PASS");
    expect(silent.summary).not.toMatch(/after the server had read the cancel/);
    expect(silent.summary).toMatch(
      /on 2026-07-28 the cancel closed the response stream of #\d+, so nothing for it could come on that stream/,
    );
  });

  // Tester I item 2.
  it("2025-era, two sessions that received nothing of their own calls within the window: sessions-isolated SKIPs saying why, never a PASS without evidence", async () => {
    server = await start({ kind: "stateful" });
    const { json } = await probeJson(["--url", server.url, "--args", '{"steps":2,"intervalMs":3000}', ...FAST]);
    const sessions = check(json, "sessions-isolated");
    expect(sessions.status, why(json)).toBe("SKIP");
    expect(sessions.summary).toMatch(
      /^no evidence either way: sessions A and B both called with request id 2, and neither received progress on its token or an answer for its id in the \d+ ms watched after session A's cancel \(session A: 0 message\(s\), session B: 0 message\(s\)\)\. A PASS needs a message of one session's call that the other did not get/,
    );
  });

  // Tester I item 3: progress sent before the cancel, delivered after it by a slow link.
  it("2025-era over a slow link (300 ms): progress the server sent before it had the cancel arrives after it, and work-stops PASSes (a crossing, not work after the cancel)", async () => {
    server = await start({ kind: "stateful" });
    const url = await slowLink(server.url, 300);
    const { json } = await probeJson(["--url", url, "--args", '{"steps":100,"intervalMs":120}', "--window", "1000", "--timeout", "5000"]);
    const cancelAt = json.call!.cancelAtMs!;
    const callMessage = json.timeline.find((e) => e.from === "client" && e.message?.method === "tools/call")?.message;
    const token = (callMessage?.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta?.progressToken;
    expect(token).toBeDefined();
    const crossed = json.timeline.filter(
      (e) =>
        e.atMs > cancelAt &&
        e.message?.method === "notifications/progress" &&
        (e.message.params as { progressToken?: unknown }).progressToken === token,
    );
    // The case under test: progress for the cancelled call came after the cancel, later than --grace.
    expect(crossed.length, why(json)).toBeGreaterThan(0);
    expect(crossed.at(-1)!.atMs - cancelAt).toBeGreaterThan(100);
    const stops = check(json, "work-stops");
    expect(stops.status, why(json)).toBe("PASS");
    expect(stops.summary).toMatch(
      /after it that crossed it on the wire \(within a round trip of \d+ ms, .*, plus the 100 ms --grace, before the server showed it had read it\)/,
    );
    expect(stops.summary).not.toMatch(/reads a cancel only once|went on/);
    expect(server.events).toContain("handler aborted");
  }, 40_000);

  // Tester I item 4.
  it("an endpoint that takes the request and does not answer within --timeout: it says so, naming --timeout, never 'could not reach' (exit 1)", async () => {
    const held = new Set<http.ServerResponse>();
    const silent = http.createServer((_req, res) => void held.add(res));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp`;
      for (const [era, handshake] of [
        ["legacy", "initialize"],
        ["2026-07-28", "server/discover \\(2026-07-28\\)"],
      ] as const) {
        const { code, stderr, stdout } = await cli(["probe", "--url", url, "--era", era, "--timeout", "800", "--json"]);
        expect(code).toBe(1);
        expect(stderr).toMatch(
          new RegExp(
            `^mcp-cancellable probe: http://127\\.0\\.0\\.1:\\d+/mcp did not answer ${handshake} within --timeout \\(800 ms\\) \\(no response headers came\\)`,
          ),
        );
        expect(stderr).not.toMatch(/could not reach/);
        expect((JSON.parse(stdout) as { error: { kind: string } }).error.kind).toBe("timeout");
      }
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
