import { afterEach, describe, expect, it } from "vitest";
import http from "node:http";
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
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("probe over Streamable HTTP (servers on 127.0.0.1, port 0)", () => {
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
    // Bounded wait: the server notices the closed stream on its next write.
    for (let i = 0; i < 20 && !server.events.includes("handler aborted"); i++) await new Promise((r) => setTimeout(r, 50));
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
    expect(stderr).not.toMatch(/^\s+at /m);
  });
});
