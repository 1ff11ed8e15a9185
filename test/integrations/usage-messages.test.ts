import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as V1Stdio } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as V2Client } from "@modelcontextprotocol/client";
import { StdioClientTransport as V2Stdio } from "@modelcontextprotocol/client/stdio";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { alive, eventually } from "../helpers/stdio.js";
import { isInvalidOptionError } from "../../src/index.js";
import { streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import {
  CancellableMCPServer,
  CancellableMCPServerStdio,
  CancellableMCPServerStreamableHttp,
} from "../../src/integrations/openai-agents/index.js";

// Usage mistakes a bot author made in the field (issue 21, item 7): each message names the
// function that was called and says what to do instead.

function refusal(make: () => unknown): { option: string; message: string } {
  try {
    make();
  } catch (error) {
    expect(isInvalidOptionError(error)).toBe(true);
    return error as { option: string; message: string };
  }
  throw new Error("expected an InvalidOptionError");
}

describe("usage messages", () => {
  it("cancellableTransport(client) names cancellableTransport (not withCancellation) and says it got a client", () => {
    for (const client of [new V1Client({ name: "t", version: "1" }), new V2Client({ name: "t", version: "1" })]) {
      const { option, message } = refusal(() => cancellableTransport(client as never));
      expect(option).toBe("transport");
      expect(message).toMatch(/^cancellableTransport: transport must be/);
      expect(message).not.toMatch(/withCancellation/);
      expect(message).toContain("this is an MCP client, not its transport");
    }
  });

  it("a signal given client-wide to a framework's entry point says how that framework hands each tool call its signal (an outside tester's: it said callTool(params, { signal }), which these have no such call for)", () => {
    const inner = stdioCancellation(new V1Stdio({ command: "node" }));
    const signal = new AbortController().signal;
    const ai = refusal(() => cancellableTransport(inner, { signal } as never));
    expect(ai.option).toBe("signal");
    expect(ai.message).toContain("generateText({ abortSignal })");
    expect(ai.message).not.toContain("callTool");
    const agents = refusal(() => new CancellableMCPServer({ name: "x", create: () => ({}) as never, signal } as never));
    expect(agents.option).toBe("signal");
    expect(agents.message).toContain("run(agent, input, { signal })");
    // Another per-call option on those: returned per call from callOptions.
    const task = refusal(() => cancellableTransport(inner, { task: true } as never));
    expect(task.message).toMatch(
      /"task" is a per-call option \(return it per call from callOptions: callOptions: \(\.\.\.\) => \(\{ task \}\)\)$/,
    );
  });

  it("streamableHttpCancellation(a stdio transport) says it is not a Streamable HTTP transport and names stdioCancellation, not the v1 fetch advice", () => {
    for (const transport of [new V1Stdio({ command: "node" }), new V2Stdio({ command: "node" })]) {
      const { option, message } = refusal(() => streamableHttpCancellation(transport));
      expect(option).toBe("transport");
      expect(message).toMatch(/not a Streamable HTTP transport/);
      expect(message).toContain("use stdioCancellation(transport)");
      expect(message).not.toMatch(/cancellableFetch/);
    }
  });

  it("Agents: fullCommand is refused as not supported, with command and args to use instead (not 'command must be a non-empty string')", () => {
    const { option, message } = refusal(() => new CancellableMCPServerStdio({ fullCommand: "node report-server.js" } as never));
    expect(option).toBe("fullCommand");
    expect(message).toMatch(/^CancellableMCPServerStdio: "fullCommand" is not supported/);
    expect(message).toContain('command: "node", args: ["report-server.js"]');
  });

  it("Agents: clientSessionTimeoutSeconds says to use timeoutMs in ms (and maxTotalTimeoutMs), on every server class", () => {
    for (const make of [
      () => new CancellableMCPServerStdio({ command: "node", clientSessionTimeoutSeconds: 5 } as never),
      () => new CancellableMCPServerStreamableHttp({ url: "http://127.0.0.1:1/mcp", clientSessionTimeoutSeconds: 5 } as never),
      () => new CancellableMCPServer({ name: "x", create: () => ({}) as never, clientSessionTimeoutSeconds: 5 } as never),
    ]) {
      const { option, message } = refusal(make);
      expect(option).toBe("clientSessionTimeoutSeconds");
      expect(message).toContain('"clientSessionTimeoutSeconds" is the Agents runtime\'s MCPServer option (seconds');
      expect(message).toContain("clientSessionTimeoutSeconds: 5 is timeoutMs: 5_000");
      expect(message).toContain("connectTimeoutMs for connect()'s initialize");
    }
  });

  it("Agents: a top-level errorFunction (or toolFilter) says to pass it in agents: { ... }; inside agents it is accepted", () => {
    for (const key of ["errorFunction", "toolFilter"]) {
      const { option, message } = refusal(() => new CancellableMCPServerStdio({ command: "node", [key]: null } as never));
      expect(option).toBe(key);
      expect(message).toBe(
        `CancellableMCPServerStdio: "${key}" is an Agents-side setting: pass it in agents: { ${key} }, which is handed to the Agents runtime as it is`,
      );
    }
    const server = new CancellableMCPServerStdio({ command: "node", agents: { errorFunction: null } });
    expect((server as unknown as { errorFunction?: unknown }).errorFunction).toBeNull();
  });
});

describe("Agents servers: options of the wrong type are refused at once, naming the option", () => {
  const cases: Array<[string, () => unknown, RegExp]> = [
    [
      "args",
      () => new CancellableMCPServerStdio({ command: "node", args: "server.js --flag" as never }),
      /args must be an array of strings.*received the string "server.js --flag" \(one argument per element\)/,
    ],
    ["args", () => new CancellableMCPServerStdio({ command: "node", args: [1] as never }), /args must be an array of strings/],
    ["env", () => new CancellableMCPServerStdio({ command: "node", env: 5 as never }), /env must be an object of strings/],
    ["env", () => new CancellableMCPServerStdio({ command: "node", env: { A: 1 } as never }), /env must be an object of strings/],
    ["cwd", () => new CancellableMCPServerStdio({ command: "node", cwd: 5 as never }), /cwd must be a string \(a directory\); received 5/],
    [
      "stderr",
      () => new CancellableMCPServerStdio({ command: "node", stderr: "bogus" as never }),
      /stderr must be "inherit", "pipe" or "ignore"; received "bogus"/,
    ],
    [
      "cacheToolsList",
      () => new CancellableMCPServerStdio({ command: "node", cacheToolsList: "yes" as never }),
      /cacheToolsList must be true or false; received "yes"/,
    ],
    ["agents", () => new CancellableMCPServerStdio({ command: "node", agents: 5 as never }), /agents must be an object/],
    ["name", () => new CancellableMCPServerStdio({ command: "node", name: 5 as never }), /name must be a non-empty string/],
    [
      "url",
      () => new CancellableMCPServerStreamableHttp({ url: "not a url" }),
      /url must be an absolute URL such as "http:\/\/127.0.0.1:3000\/mcp"; received "not a url"/,
    ],
    ["url", () => new CancellableMCPServerStreamableHttp({ url: "file:///etc/passwd" }), /url must be http: or https:/],
    [
      "connectTimeoutMs",
      () => new CancellableMCPServerStdio({ command: "node", connectTimeoutMs: 0 }),
      /connectTimeoutMs must be an integer number of ms from 1 to 2147483647; received 0/,
    ],
    [
      "requestInit",
      () => new CancellableMCPServerStreamableHttp({ url: "http://127.0.0.1:1/mcp", requestInit: 5 as never }),
      /requestInit must be an object/,
    ],
  ];
  for (const [option, make, message] of cases) {
    it(`${option}: ${message.source.slice(0, 60)}`, () => {
      const refused = refusal(make);
      expect(refused.option).toBe(option);
      expect(refused.message).toMatch(message);
    });
  }
});

/**
 * An Agents stdio server whose process never answers `initialize`: it writes its pid to
 * `pidFile`, runs `more` (JavaScript), and stays up.
 */
function silentServer(more: string, options: { connectTimeoutMs: number; timeoutMs?: number }) {
  const dir = mkdtempSync(join(tmpdir(), "agents-connect-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const pidFile = join(dir, "pid");
  const server = new CancellableMCPServerStdio({
    command: process.execPath,
    args: [
      "-e",
      `require("node:fs").writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); ${more} setInterval(() => {}, 60_000)`,
    ],
    stderr: "ignore",
    ...options,
  });
  return { server, pidFile };
}

describe("Agents servers: connect() is bounded by connectTimeoutMs", () => {
  it("a stdio server that never answers initialize: connect() rejects after connectTimeoutMs naming it, and the child is gone", async () => {
    // A process that reads stdin and never writes: initialize goes unanswered. It exits when its
    // stdin ends (the transport's close).
    const { server, pidFile } = silentServer(
      `process.stdin.resume(); process.stdin.on("end", () => process.exit(0));`,
      { connectTimeoutMs: 400, timeoutMs: 100 }, // timeoutMs: the calls' idle timeout, not the connect's
    );
    const started = performance.now();
    const error = await server.connect().catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(
      /connect\(\) gave up after 400 ms: the server did not answer initialize within connectTimeoutMs/,
    );
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(elapsed).toBeLessThan(400 + 5_000); // far under the SDK's own 60 s default
    expect(await eventually(() => existsSync(pidFile))).toBe(true); // a slow start: written by now
    const pid = Number(readFileSync(pidFile, "utf8"));
    expect(await eventually(() => !alive(pid))).toBe(true);
    await server.close();
  });

  it("a server that answers initialize with its own -32001 error: connect() rejects with that error, never as connectTimeoutMs (an audit's: the code alone was read as the SDK's timeout)", async () => {
    const { server } = silentServer(
      `require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => { const m = JSON.parse(line); if (m.method === "initialize") process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, error: { code: -32001, message: "license server unreachable" } }) + "\\n"); }); process.stdin.on("end", () => process.exit(0));`,
      { connectTimeoutMs: 20_000 },
    );
    const started = performance.now();
    const error = await server.connect().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain("license server unreachable");
    expect((error as Error).message).not.toContain("connectTimeoutMs");
    expect(performance.now() - started).toBeLessThan(15_000); // at its answer, never the 20 s bound
    await server.close();
  });

  it("a stdio server that also ignores the end of its stdin: connect() rejects only once the SDK's close has stopped it (SIGTERM)", async () => {
    // An outside tester's: connect() rejected while such a server still ran (until the SDK's
    // SIGTERM, 2 s later); a bot that exits or retries at the rejection left it behind.
    const { server, pidFile } = silentServer("", { connectTimeoutMs: 300 });
    const error = await server.connect().catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/connect\(\) gave up after 300 ms/);
    expect(existsSync(pidFile)).toBe(true);
    expect(alive(Number(readFileSync(pidFile, "utf8")))).toBe(false); // gone by the rejection
    await server.close();
  }, 15_000);

  it("close() while connect() waits for initialize gives the connect up: it rejects saying so, the child is stopped, nothing is connected (an audit's: the close was lost and the server stayed connected)", async () => {
    const { server, pidFile } = silentServer(`process.stdin.resume(); process.stdin.on("end", () => process.exit(0));`, {
      connectTimeoutMs: 30_000,
    });
    const connecting = server.connect();
    connecting.catch(() => {});
    expect(await eventually(() => existsSync(pidFile))).toBe(true); // its initialize is out, unanswered
    const pid = Number(readFileSync(pidFile, "utf8"));
    const closedAt = performance.now();
    await server.close();
    const error = await connecting.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/: connect\(\) was given up: close\(\) was called while it connected$/);
    expect(performance.now() - closedAt).toBeLessThan(5_000); // not the 30 s connectTimeoutMs
    expect(await eventually(() => !alive(pid))).toBe(true);
    await expect(server.listTools()).rejects.toThrow(/connect/);
  }, 15_000);

  it("two connect()s at once: one after the other, the first's client closed by the second; one close() then leaves no child (an audit's: the overwritten client's child ran on)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agents-connect-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const pids = join(dir, "pids");
    // Answers initialize after 200 ms; appends its pid; exits when its stdin ends.
    const script = `
      const fs = require("node:fs"); fs.appendFileSync(${JSON.stringify(pids)}, process.pid + "\\n");
      let buffer = "";
      process.stdin.on("data", (chunk) => {
        buffer += chunk;
        for (let at = buffer.indexOf("\\n"); at >= 0; at = buffer.indexOf("\\n")) {
          const message = JSON.parse(buffer.slice(0, at)); buffer = buffer.slice(at + 1);
          if (message.method === "initialize") setTimeout(() => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: message.id,
            result: { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "slow", version: "1" } } }) + "\\n"), 200);
        }
      });
      process.stdin.on("end", () => process.exit(0));`;
    const server = new CancellableMCPServerStdio({ command: process.execPath, args: ["-e", script], stderr: "ignore" });
    await Promise.all([server.connect(), server.connect()]);
    const started = readFileSync(pids, "utf8").trim().split("\n").map(Number);
    expect(started).toHaveLength(2);
    await server.close();
    for (const pid of started) expect(await eventually(() => !alive(pid))).toBe(true);
  }, 15_000);
});
