// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} in a --header value is the option's own syntax, not a template.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// The MCP Inspector's CLI mode (a client nobody here wrote) through `mcp-cancellable proxy` to
// the v1 SDK stdio server (test/fixtures/sdk-stdio-server.mjs). The Inspector is pointed at the
// proxy by a config file, the way desktop clients are: its command-line target form drops the
// "--" the proxy needs before the server's command (commander ends option parsing there).
const repo = fileURLToPath(new URL("../../../", import.meta.url));
const inspector = fileURLToPath(new URL("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js", import.meta.url));
const serverScript = join(repo, "test/fixtures/sdk-stdio-server.mjs");
/** The proxy tests' scripted stdio server (a large line, no answer to initialize, a pidfile). */
const lineServer = join(repo, "test/proxy/fixtures/line-server.mjs");

async function until(test: () => boolean, ms = 15_000): Promise<boolean> {
  for (const end = performance.now() + ms; performance.now() < end; ) {
    if (test()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return test();
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A config file, in a temporary folder, naming the proxy (run from src with tsx) as the server "proxied"; `{dir}` in an argument is that folder. */
function config(
  proxyArgs: string[],
  options: { server?: string[] | null; env?: Record<string, string>; pidfile?: boolean } = {},
): { file: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), "mcp-inspector-"));
  dirs.push(dir);
  const file = join(dir, "mcp.json");
  const own = proxyArgs.map((arg) => arg.replace("{dir}", dir));
  const upstream = options.server === null ? [] : ["--", process.execPath, ...(options.server ?? [serverScript])];
  const proxy = [process.execPath, "--import", "tsx", join(repo, "src/cli/index.ts"), "proxy", ...own, ...upstream];
  // With pidfile: through a shell that writes the proxy's pid and then becomes the proxy (exec), as a host's wrapper script would.
  const [command, ...args] = options.pidfile ? ["/bin/sh", "-c", `echo $$ > ${join(dir, "proxy.pid")}; exec "$@"`, "sh", ...proxy] : proxy;
  const entry = { command, args, cwd: repo, ...(options.env === undefined ? {} : { env: options.env }) };
  writeFileSync(file, JSON.stringify({ mcpServers: { proxied: entry } }));
  return { file, dir };
}

/** Runs `mcp-inspector --cli --config <file> --server proxied <args>`; bounded (killed after 45 s). */
/** Runs the Inspector's CLI to its end; `soFar()` is its stderr up to now (the proxy's and the server's lines). */
function inspect(
  file: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> & { soFar: () => string } {
  const started = performance.now();
  const child = spawn(process.execPath, [inspector, "--cli", "--config", file, "--server", "proxied", ...args], {
    cwd: repo,
    // No OS keychain here: keep the Inspector's secrets in memory, and say so, so it does not warn.
    env: { ...process.env, MCP_INSPECTOR_SECRET_STORE: "memory" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const kill = setTimeout(() => child.kill("SIGKILL"), 45_000);
  const ended = new Promise<{ code: number | null; stdout: string; stderr: string; ms: number }>((done) =>
    child.once("close", (code) => {
      clearTimeout(kill);
      done({ code, stdout, stderr, ms: performance.now() - started });
    }),
  );
  return Object.assign(ended, { soFar: () => stderr });
}

describe("the MCP Inspector's CLI mode through mcp-cancellable proxy", () => {
  it("--method tools/list: the server's tools, exit 0", async () => {
    const { file } = config([]);
    const run = await inspect(file, ["--method", "tools/list"]);
    expect(run.code, run.stderr).toBe(0);
    const tools = (JSON.parse(run.stdout) as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
    expect(tools).toEqual(expect.arrayContaining(["sleep", "ticker"]));
    expect(run.stderr).toMatch(/mcp-cancellable proxy: done: \d+ requests?, 0 cancelled by the client/);
  });

  it("--method tools/call: the tool's result, exit 0; one record for the call", async () => {
    const { file, dir } = config(["--records", "{dir}/records.jsonl"]);
    const run = await inspect(file, ["--method", "tools/call", "--tool-name", "sleep", "--tool-arg", "ms=20"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ content: [{ type: "text", text: "slept 20" }] });
    const records = readFileSync(join(dir, "records.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { method: string; name: string | null; status: string });
    expect(records.filter((r) => r.method === "tools/call")).toEqual([expect.objectContaining({ name: "sleep", status: "succeeded" })]);
  });

  it("a tools/call longer than the proxy's --timeout-ms: the Inspector gets the -32001 message at the timeout, the handler is aborted under its id", async () => {
    const { file } = config(["--timeout-ms", "500"]);
    const run = await inspect(file, ["--method", "tools/call", "--tool-name", "sleep", "--tool-arg", "ms=60000"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /tools\/call \\"sleep\\" timed out after 500 ms with no answer \(the idle timeout, timeoutMs\); cancelled upstream/,
    );
    const started = /STARTED (\S+)/.exec(run.stderr)?.[1];
    expect(started).toBeDefined();
    expect(run.stderr).toMatch(new RegExp(`ABORTED ${started} after \\d+ms reason="Request timed out after 500 ms"`));
    expect(run.stdout).not.toMatch(/slept 60000/);
    expect(run.ms).toBeLessThan(30_000); // released by the proxy, not by the tool's end (60 s)
  });

  // Issue 29: the faults of the proxy, with the Inspector as the client.
  it("a result of 8 MB (one line; the Inspector's own client reads at most 10 MB a line): relayed whole, exit 0", async () => {
    const { file } = config([], { server: [lineServer] });
    const run = await inspect(file, ["--method", "tools/call", "--tool-name", "big", "--tool-arg", "bytes=8000000"]);
    expect(run.code, run.stderr.slice(-2_000)).toBe(0);
    const result = JSON.parse(run.stdout) as { content: Array<{ text: string }> };
    expect(result.content[0]!.text.length).toBe(8_000_000);
  });

  it("the proxy stopped by SIGTERM while the Inspector waits on a call: the call is answered -32000 at once, the server got the cancel and was stopped", async () => {
    const { file, dir } = config(["--env", "LINE_SERVER_PIDFILE={dir}/server.pid"], { server: [lineServer], pidfile: true });
    const running = inspect(file, ["--method", "tools/call", "--tool-name", "silent"]);
    expect(await until(() => existsSync(join(dir, "server.pid")) && existsSync(join(dir, "proxy.pid")))).toBe(true);
    const proxyPid = Number(readFileSync(join(dir, "proxy.pid"), "utf8"));
    const serverPid = Number(readFileSync(join(dir, "server.pid"), "utf8"));
    // The server read the call (its `RECV` line; a fixed 500 ms could pass before it on a loaded machine).
    expect(await until(() => /RECV \{[^\n]*"method":"tools\/call"/.test(running.soFar()), 20_000)).toBe(true);
    process.kill(proxyPid, "SIGTERM");
    const run = await running;
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/tools\/call was cancelled upstream before its answer came: the proxy was stopped \(SIGTERM\); not retried/);
    expect(run.stderr).toMatch(/RECV \{"jsonrpc":"2.0","method":"notifications\/cancelled"|RECV \{"method":"notifications\/cancelled"/);
    expect(run.ms).toBeLessThan(30_000);
    // The Inspector exits at the -32000, which the proxy writes first; the server is stopped by the
    // same shutdown, within its documented bound (1,800 ms), not necessarily before the Inspector exits.
    expect(await until(() => !alive(serverPid), 1_800 + 1_000)).toBe(true);
  });

  it("a server that never answers initialize: the Inspector gets the proxy's -32001 at its limit and exits, instead of waiting", async () => {
    const { file } = config(["--max-total-timeout-ms", "1000"], { server: [lineServer, "--no-initialize"] });
    const run = await inspect(file, ["--method", "tools/list"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/initialize got no answer within 1000 ms/);
    expect(run.ms).toBeLessThan(30_000);
  });

  it("--header with ${MCP_TOKEN}: the token comes from the entry's env, never from its args (the process list); an unset one is an error naming it", async () => {
    const seen: Array<string | undefined> = [];
    const http = createServer((req, res) => {
      seen.push(req.headers.authorization);
      if (req.method !== "POST") {
        res.writeHead(405).end();
        return;
      }
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      req.on("end", () => {
        const message = JSON.parse(body) as { id?: unknown; method?: string; params?: { protocolVersion?: string } };
        if (message.id === undefined) {
          res.writeHead(202).end();
          return;
        }
        const result =
          message.method === "initialize"
            ? {
                protocolVersion: message.params?.protocolVersion,
                capabilities: { tools: {} },
                serverInfo: { name: "token-check", version: "1" },
              }
            : message.method === "tools/list"
              ? { tools: [{ name: "whoami", inputSchema: { type: "object" } }] }
              : {};
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
      });
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
      const header = ["--url", url, "--header", "Authorization: Bearer ${MCP_TOKEN}"];
      const { file } = config(header, { server: null, env: { MCP_TOKEN: "s3cret-token" } });
      // The token is in the entry's env (as a host passes it: VS Code from an input), never in its args (the process list).
      const entry = (JSON.parse(readFileSync(file, "utf8")) as { mcpServers: { proxied: { args: string[] } } }).mcpServers.proxied;
      expect(entry.args.join(" ")).not.toContain("s3cret-token");
      expect(entry.args).toContain("Authorization: Bearer ${MCP_TOKEN}");
      const run = await inspect(file, ["--method", "tools/list"]);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ tools: [{ name: "whoami" }] });
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen.filter((value) => value !== undefined))).toEqual(new Set(["Bearer s3cret-token"]));

      const unset = config(header, { server: null, env: { OTHER: "x" } });
      const failed = await inspect(unset.file, ["--method", "tools/list"]);
      expect(failed.code).not.toBe(0);
      expect(failed.stderr).toMatch(/the environment variable MCP_TOKEN \(\$\{MCP_TOKEN\}\) is not set/);
    } finally {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  });
});

/** `mcp-cancellable proxy --listen 127.0.0.1:0 <args> -- node <server>` (from src, with tsx); resolves with its URL once it listens. */
async function startFront(args: string[], env: Record<string, string> = {}) {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(repo, "src/cli/index.ts"), "proxy", "--listen", "127.0.0.1:0", ...args, "--", process.execPath, serverScript],
    {
      cwd: repo,
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the front did not listen within 20 s:\n${stderr}`)), 20_000);
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      const match = /listening on (\S+)/.exec(stderr);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
  });
  fronts.push(
    () =>
      new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : (child.once("close", () => resolve()), child.kill("SIGTERM")))),
  );
  return { url, stderr: () => stderr };
}

const fronts: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of fronts.splice(0)) await stop();
});

/** Runs `mcp-inspector --cli <url> --transport http <args>`; bounded (killed after 45 s). */
function inspectUrl(url: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [inspector, "--cli", url, "--transport", "http", ...args], {
    cwd: repo,
    env: { ...process.env, MCP_INSPECTOR_SECRET_STORE: "memory" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const kill = setTimeout(() => child.kill("SIGKILL"), 45_000);
  return new Promise((done) =>
    child.once("close", (code) => {
      clearTimeout(kill);
      done({ code, stdout, stderr });
    }),
  );
}

describe("the MCP Inspector's CLI mode over Streamable HTTP to mcp-cancellable proxy --listen", () => {
  it("tools/list and tools/call through the HTTP front, with the bearer token; without it, refused", async () => {
    const token = "inspector-token-0123456789";
    const front = await startFront([], { MCP_CANCELLABLE_PROXY_TOKEN: token });
    const auth = ["--header", `Authorization: Bearer ${token}`];
    const list = await inspectUrl(front.url, ["--method", "tools/list", ...auth]);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { tools: Array<{ name: string }> }).tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(["sleep", "ticker"]),
    );
    const call = await inspectUrl(front.url, ["--method", "tools/call", "--tool-name", "sleep", "--tool-arg", "ms=20", ...auth]);
    expect(call.code, call.stderr).toBe(0);
    expect(JSON.parse(call.stdout)).toMatchObject({ content: [{ type: "text", text: "slept 20" }] });
    const refused = await inspectUrl(front.url, ["--method", "tools/list"]);
    expect(refused.code).not.toBe(0);
  });
});
