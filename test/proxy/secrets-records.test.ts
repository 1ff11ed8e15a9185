import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { eventually, RawClient, tempDir } from "./helpers.js";
import { post2026, startFront, stopFronts } from "./front/helpers.js";

// The upstream's --header secrets stay out of everything the proxy writes (docs/proxy.md, "Safe
// to expose"): the client's answers and the log were redacted already; the `--records` file and
// the `--otel` spans carry the same error texts, so they are redacted too. The upstream here
// echoes the Authorization header it was sent in every error (HTTP 500), as a careless server
// would; both fronts are tried, each with its records file and spans (console exporter).
const SECRET = "upstream-secret-9d3b6a1f27c4";
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await stopFronts();
});

async function echoingUpstream(): Promise<string> {
  const echo = http.createServer((req, res) => {
    req.resume();
    res.writeHead(500, { "content-type": "text/plain" });
    res.end(`refused: you sent authorization=${String(req.headers.authorization)}`);
  });
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => echo.close(() => resolve())));
  return `http://127.0.0.1:${(echo.address() as AddressInfo).port}/mcp`;
}

function records(): string {
  const { dir, cleanup } = tempDir();
  cleanups.push(cleanup);
  return join(dir, "records.jsonl");
}

const SPANS = { OTEL_TRACES_EXPORTER: "console" };

describe("proxy: the upstream's --header secret in records and spans", () => {
  it("stdio front (proxy --url): the --records line and the span of a request the upstream refused name [redacted], never the token", async () => {
    const file = records();
    const args = ["--url", await echoingUpstream(), "--era", "2026-07-28", "--header", `Authorization: Bearer ${SECRET}`];
    const client = new RawClient([...args, "--records", file, "--otel"], SPANS);
    cleanups.push(() => client.end().then(() => undefined));
    client.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: {} } });
    const answer = await client.answer(1);
    expect(answer.error).toBeDefined();
    expect(JSON.stringify(answer)).not.toContain(SECRET);
    await client.end();
    const written = readFileSync(file, "utf8");
    expect(written).toContain("[redacted]");
    expect(written).not.toContain(SECRET);
    expect(client.stderr).toMatch(/mcp-cancellable proxy: span .*\[redacted\]/);
    expect(client.stderr).not.toContain(SECRET);
  });

  it("HTTP front (proxy --listen): the --records line and the span name [redacted], never the token", async () => {
    const file = records();
    const front = await startFront(
      ["--url", await echoingUpstream(), "--era", "2026-07-28", "--header", `Authorization: Bearer ${SECRET}`, "--records", file, "--otel"],
      { env: SPANS },
    );
    const call = await post2026(front.url, { id: 1, method: "tools/list" });
    expect(await call.text()).not.toContain(SECRET);
    await front.stop();
    expect(await eventually(() => readFileSync(file, "utf8").includes("[redacted]"), 3_000)).toBe(true);
    expect(readFileSync(file, "utf8")).not.toContain(SECRET);
    expect(front.stderr()).toMatch(/mcp-cancellable proxy: span .*\[redacted\]/);
    expect(front.stderr()).not.toContain(SECRET);
  });
});
