import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { fixture, received, server } from "../helpers.js";
import { startFront, stopFronts } from "./helpers.js";

// A real browser page using the HTTP front: headless Chromium loads a page from a localhost origin
// (another port than the front's), and the page POSTs initialize to the front with a bearer token.
// The browser sends the CORS preflight first and reads the answer only if the front's CORS headers
// allow it. Skipped where Chromium is not installed (.ci/run installs it for its browser leg).
const CHROMIUM = "/usr/bin/chromium";
const SCRIPTED = fixture("scripted-server.mjs");
const TOKEN = "browser-token-0123456789abcdef";
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await stopFronts();
});

/** A page server on 127.0.0.1 answering `/` with what `html()` gives at the time. */
async function pageServer(html: () => string): Promise<number> {
  const pages = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(html());
  });
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => pages.close(() => resolve())));
  return (pages.address() as AddressInfo).port;
}

/** Chromium's DOM after the page ran (bounded: 30 s, then killed). */
function dumpDom(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // app.test and evil.test are names for 127.0.0.1 in this browser only.
    const rules = "--host-resolver-rules=MAP app.test 127.0.0.1, MAP evil.test 127.0.0.1";
    const child = spawn(CHROMIUM, ["--headless", "--no-sandbox", "--disable-gpu", rules, "--virtual-time-budget=5000", "--dump-dom", url], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => (out += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("error", reject);
    child.once("close", () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

describe.skipIf(!existsSync(CHROMIUM))("proxy --listen from a browser page (headless Chromium)", () => {
  it("pages on admitted origins (localhost, --allow-origin) initialize through the front with its token and read the session id; a page on another origin cannot", async () => {
    let frontUrl = "";
    const port = await pageServer(
      () => `<html><body><pre id="out">pending</pre><script>
      fetch(${JSON.stringify(frontUrl)}, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer ${TOKEN}" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "browser", version: "1" } } }),
      })
        .then(async (r) => { document.getElementById("out").textContent = "status " + r.status + " session " + (r.headers.get("mcp-session-id") ? "yes" : "no") + " " + (await r.text()).includes("protocolVersion"); })
        .catch((e) => { document.getElementById("out").textContent = "failed " + e; });
    </script></body></html>`,
    );
    const front = await startFront(["--allow-origin", `http://app.test:${port}`, ...server(SCRIPTED)], {
      env: { MCP_CANCELLABLE_PROXY_TOKEN: TOKEN },
    });
    frontUrl = front.url.href;
    for (const origin of [`http://localhost:${port}`, `http://app.test:${port}`]) {
      expect(await dumpDom(`${origin}/`), origin).toContain("status 200 session yes true");
    }
    // The same page from an origin the front does not admit: 403 and no CORS header, so the page
    // cannot even read the refusal, and nothing reaches the server.
    expect(await dumpDom(`http://evil.test:${port}/`)).toMatch(/failed TypeError/);
    expect(received(front.stderr()).filter((m) => m.method === "initialize")).toHaveLength(2);
  }, 120_000);
});
