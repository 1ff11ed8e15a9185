import { afterEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import { fixture, INITIALIZE, RawClient, server, tempDir } from "./helpers.js";
import type { ConsoleSpan } from "./helpers.js";

// `--otel`: the library's OpenTelemetry recorder on every request the proxy runs, the exporter
// chosen by OTEL_TRACES_EXPORTER. With `console`, each span is one JSON line on stderr (stdout
// carries only protocol messages), so the test reads the spans the proxy really exported.
const open: RawClient[] = [];
const dirs: Array<() => void> = [];
afterEach(async () => {
  for (const client of open.splice(0)) await client.end().catch(() => {});
  for (const cleanup of dirs.splice(0)) cleanup();
});

function start(proxyArgs: string[], env: Record<string, string> = {}): RawClient {
  const client = new RawClient(proxyArgs, env);
  open.push(client);
  return client;
}

const spans = (stderr: string): ConsoleSpan[] =>
  stderr
    .split("\n")
    .filter((line) => line.startsWith("mcp-cancellable proxy: span "))
    .map((line) => JSON.parse(line.slice("mcp-cancellable proxy: span ".length)) as ConsoleSpan);

describe("proxy --otel", () => {
  it("console exporter: one CLIENT span per request (initialize excepted), error.type timeout for the timed-out call, none for the answered one; stdout stays protocol only", async () => {
    const client = start(["--otel", "--timeout-ms", "300", ...server(fixture("sdk-stdio-server.mjs"))], {
      OTEL_TRACES_EXPORTER: "console",
      OTEL_SERVICE_NAME: "proxy-under-test",
    });
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "sleep", arguments: { ms: 10 } } });
    client.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "sleep", arguments: { ms: 5_000 } } });
    client.send({ jsonrpc: "2.0", id: 3, method: "tools/list" });
    expect((await client.answer(1)).result).toBeDefined();
    expect((await client.answer(3)).result).toBeDefined();
    expect((await client.answer(2)).error).toMatchObject({ code: -32001 });
    const exit = await client.end();
    expect(exit.code).toBe(0);
    expect(client.notJson).toEqual([]);
    expect(client.stderr).toMatch(/--otel: a span per request, to console/);

    const exported = spans(client.stderr);
    // The batch processor exports at the proxy's end at the latest: every span is there once.
    expect(exported.map((s) => s.name).sort()).toEqual(["tools/call sleep", "tools/call sleep", "tools/list"]);
    const byId = new Map(exported.map((s) => [s.attributes["jsonrpc.request.id"], s]));
    expect(byId.size).toBe(3);
    // The upstream ids (the proxy's counter, from 1: initialize took 1).
    const answered = byId.get("2")!;
    const timedOut = byId.get("3")!;
    expect(answered.kind).toBe(2); // SpanKind.CLIENT
    expect(answered.attributes["error.type"]).toBeUndefined();
    expect(answered.status.code).not.toBe(2); // not ERROR
    expect(answered.attributes["mcp.method.name"]).toBe("tools/call");
    expect(answered.attributes["gen_ai.tool.name"]).toBe("sleep");
    // A stdio upstream is a pipe, as the recorder says of the SDK's own stdio transport (an outside tester's: it was absent).
    expect(answered.attributes["network.transport"]).toBe("pipe");
    expect(timedOut.attributes["error.type"]).toBe("timeout");
    expect(timedOut.status.code).toBe(2); // ERROR
    expect(timedOut.attributes["mcp_cancellable.cancel.trigger"]).toBe("timeout");
    expect(timedOut.attributes["mcp_cancellable.cancel.mechanism"]).toBe("notification");
    expect(timedOut.events.map((e: { name: string }) => e.name)).toContain("mcp_cancellable.cancel");
    expect(timedOut.duration).toBeGreaterThanOrEqual(300_000); // µs: the idle timeout elapsed first
    expect(byId.get("4")!.attributes["error.type"]).toBeUndefined();
    expect(answered.resource.attributes["service.name"]).toBe("proxy-under-test");
  });

  it("OTEL_TRACES_EXPORTER=none: the proxy runs and exports nothing", async () => {
    const client = start(["--otel", ...server(fixture("sdk-stdio-server.mjs"))], { OTEL_TRACES_EXPORTER: "none" });
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect((await client.answer(1)).result).toBeDefined();
    expect((await client.end()).code).toBe(0);
    expect(client.stderr).toMatch(/OTEL_TRACES_EXPORTER=none/);
    expect(spans(client.stderr)).toEqual([]);
  });

  it("the default exporter (otlp) without its package installed: exit 2 naming the npm install line; the server is never started", async () => {
    const client = start(["--otel", ...server(fixture("sdk-stdio-server.mjs"))], { OTEL_TRACES_EXPORTER: "" });
    client.send(INITIALIZE());
    const exit = await client.exited;
    expect(exit.code).toBe(2);
    expect(client.stderr).toMatch(/npm install @opentelemetry\/exporter-trace-otlp-proto/);
    expect(client.stderr).toMatch(/OTEL_TRACES_EXPORTER=console/);
    expect(client.messages).toEqual([]);
  });

  it("an unknown exporter or protocol: exit 2 naming the variable", async () => {
    const a = start(["--otel", ...server(fixture("sdk-stdio-server.mjs"))], { OTEL_TRACES_EXPORTER: "zipkin" });
    expect((await a.exited).code).toBe(2);
    expect(a.stderr).toMatch(/OTEL_TRACES_EXPORTER: .*"zipkin"/);
    const b = start(["--otel", ...server(fixture("sdk-stdio-server.mjs"))], {
      OTEL_TRACES_EXPORTER: "otlp",
      OTEL_EXPORTER_OTLP_PROTOCOL: "carrier-pigeon",
    });
    expect((await b.exited).code).toBe(2);
    expect(b.stderr).toMatch(/OTEL_EXPORTER_OTLP_PROTOCOL: .*"carrier-pigeon"/);
  });

  it("@opentelemetry/sdk-trace-base not installed: exit 2 with the npm install line (a copy of the CLI whose node_modules lacks it)", async () => {
    // The proxy run from a tree where the SDK cannot be resolved: the repo's src and the
    // packages it needs linked in, @opentelemetry/api too, the SDK left out.
    const { dir, cleanup } = tempDir();
    dirs.push(cleanup);
    cpSync(resolve("src"), join(dir, "src"), { recursive: true });
    cpSync(resolve("package.json"), join(dir, "package.json"));
    mkdirSync(join(dir, "node_modules", "@modelcontextprotocol"), { recursive: true });
    for (const name of ["zod", "undici", "tsx", "p-timeout", "leven"])
      symlinkSync(resolve("node_modules", name), join(dir, "node_modules", name));
    symlinkSync(resolve("node_modules/@modelcontextprotocol/sdk"), join(dir, "node_modules/@modelcontextprotocol/sdk"));
    mkdirSync(join(dir, "node_modules", "@opentelemetry"));
    symlinkSync(resolve("node_modules/@opentelemetry/api"), join(dir, "node_modules/@opentelemetry/api"));
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(dir, "src/cli/index.ts"), "proxy", "--otel", ...server(fixture("sdk-stdio-server.mjs"))],
      {
        cwd: dir,
        env: { ...process.env, OTEL_TRACES_EXPORTER: "console" },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const code = await new Promise<number | null>((done) => child.once("close", done));
    expect(stderr).toMatch(
      /--otel needs @opentelemetry\/sdk-trace-base, which is not installed: npm install @opentelemetry\/api @opentelemetry\/sdk-trace-base/,
    );
    expect(code).toBe(2);
  });
});
