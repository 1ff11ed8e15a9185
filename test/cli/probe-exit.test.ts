import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PROBE_HELP } from "../../src/cli/args.js";
import { PROXY_HELP } from "../../src/cli/proxy/args.js";
import { cli, nodeCommand, probeFixture, probeJson, why } from "./helpers.js";
import { alive } from "../helpers/stdio.js";

// The probe's exit status where the checks alone do not decide it: a server that goes away
// mid-run, one that never answers the 2026-07-28 handshake, and a signal to the probe itself.

const dir = mkdtempSync(join(tmpdir(), "probe-exit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Answers initialize, then exits with code 5 on the next request (an outside tester's server). */
const crashAfterInit = join(dir, "crash-after-init.mjs");
writeFileSync(
  crashAfterInit,
  `import readline from "node:readline";
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") {
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "crash-after-init", version: "0" } } }) + "\\n");
  } else if (m.id !== undefined) { process.stderr.write("crashing on " + m.method + "\\n"); process.exit(5); }
});
`,
);

/** Answers initialize, then exits with code 5 at once (before the client's notifications/initialized is read). */
const exitAtInit = join(dir, "exit-at-init.mjs");
writeFileSync(
  exitAtInit,
  `import readline from "node:readline";
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") {
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "exit-at-init", version: "0" } } }) + "\\n");
    process.exit(5);
  }
});
`,
);

/**
 * Closes its stdin as it answers initialize, then exits with code 5 300 ms later: the client's
 * notifications/initialized fails with EPIPE before the exit is seen.
 */
const exitDuringInit = join(dir, "exit-during-init.mjs");
writeFileSync(
  exitDuringInit,
  `import { closeSync } from "node:fs";
import readline from "node:readline";
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") {
    process.stdin.destroy();
    closeSync(0);
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "exit-during-init", version: "0" } } }) + "\\n");
    // Well before the probe's own stop of a server whose pipe broke (stdin closed, then SIGTERM
    // 300 ms later): at 300 ms, on a busy machine, the SIGTERM came first now and then.
    setTimeout(() => process.exit(5), 50);
  }
});
`,
);

/**
 * A compliant server with one slow read-only tool, except that it closes its stdout (fd 1) when
 * the 2nd tools/call arrives and keeps running (an outside tester's server); writes its pid to
 * PROBE_PIDFILE.
 */
const closesStdout = join(dir, "closes-stdout.mjs");
writeFileSync(
  closesStdout,
  `import { closeSync, writeFileSync } from "node:fs";
import readline from "node:readline";
if (process.env.PROBE_PIDFILE) writeFileSync(process.env.PROBE_PIDFILE, String(process.pid));
let calls = 0;
let open = true;
const write = (m) => open && process.stdout.write(JSON.stringify(m) + "\\n");
const tool = { name: "count", inputSchema: { type: "object" }, annotations: { readOnlyHint: true, idempotentHint: true } };
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") write({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "closes-stdout", version: "0" } } });
  else if (m.method === "tools/list") write({ jsonrpc: "2.0", id: m.id, result: { tools: [tool] } });
  else if (m.method === "tools/call" && ++calls === 2) { open = false; closeSync(1); }
  // other calls run until cancelled: they never answer
});
setInterval(() => {}, 1000);
`,
);

/** Reads everything, writes nothing. */
const silent = join(dir, "silent.mjs");
writeFileSync(silent, "process.stdin.resume();\n");

describe("probe: a server that exits during the probe", () => {
  it("crashes right after initialize, with --tool: exit 1 and a line saying so, though no check FAILed", async () => {
    const text = await cli(["probe", "--stdio", nodeCommand(crashAfterInit), "--tool", "anything", "--window", "300", "--timeout", "3000"]);
    expect(text.code, text.stdout).toBe(1);
    expect(text.stdout).toMatch(/The probe could not finish: the server exited with code 5 during the probe/);
    expect(text.stdout).toMatch(/Summary: .* 0 FAIL, .*: incomplete, the server exited with code 5 during the probe\n$/);
    expect(text.stdout).not.toMatch(/no failures/);

    const { code, json, stderr } = await probeJson(["--stdio", nodeCommand(crashAfterInit), "--tool", "anything", "--window", "300"]);
    expect(code).toBe(1);
    expect(json.ok).toBe(false);
    expect(json.exitCode).toBe(1);
    expect((json as unknown as { serverLost: string | null }).serverLost).toBe("the server exited with code 5 during the probe");
    expect(stderr).toMatch(/the server exited with code 5 during the probe/);
  });

  it("closes its stdout mid-probe and keeps running: exit 1, serverLost says so, and the probe stops it", async () => {
    const pidfile = join(dir, "closes-stdout.pid");
    const args = ["--stdio", nodeCommand(closesStdout), "--env", `PROBE_PIDFILE=${pidfile}`, "--window", "300", "--timeout", "3000"];
    const lost = "the server closed its stdout during the probe (its process was still running; the probe stops it)";
    const { code, json, stderr } = await probeJson(args);
    expect(code, why(json)).toBe(1);
    expect(json.exitCode).toBe(1);
    expect((json as unknown as { serverLost: string | null }).serverLost).toBe(lost);
    expect(stderr).toContain(lost);
    const serverPid = Number(readFileSync(pidfile, "utf8"));
    expect(serverPid).toBeGreaterThan(0);
    expect(alive(serverPid)).toBe(false);

    const text = await cli(["probe", ...args]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`The probe could not finish: ${lost}`);
    expect(text.stdout).not.toMatch(/no failures/);
  }, 30_000);

  it("exits with code 5 on tools/list (no --tool): kind exited, serverLost, and no advice to name a tool", async () => {
    const { code, json, stderr } = await probeJson(["--stdio", nodeCommand(crashAfterInit), "--timeout", "3000"]);
    const lost = "the server exited with code 5 before tools/list was answered";
    expect(code).toBe(1);
    expect(json.exitCode).toBe(1);
    expect(json.error?.kind).toBe("exited");
    expect(json.error?.message).toBe(lost);
    expect((json as unknown as { serverLost: string | null }).serverLost).toBe(lost);
    expect(stderr).toBe(`mcp-cancellable probe: ${lost}\n${json.error?.details.map((line) => `  ${line}\n`).join("")}`);
    expect(stderr).not.toMatch(/--tool|EPIPE/);
  });

  it("exits with code 5 during initialize (notifications/initialized fails with EPIPE): the exit, not 'refused initialize: write EPIPE'", async () => {
    const { code, json, stderr } = await probeJson(["--stdio", nodeCommand(exitDuringInit), "--timeout", "3000"]);
    const lost = "the server exited with code 5 during initialize";
    expect(code).toBe(1);
    expect(json.exitCode).toBe(1);
    expect(json.error?.kind).toBe("exited");
    expect(json.error?.message).toBe(lost);
    expect((json as unknown as { serverLost: string | null }).serverLost).toBe(lost);
    expect(stderr).toMatch(/^mcp-cancellable probe: the server exited with code 5 during initialize\n {2}the process exited with code 5\n/);
    expect(stderr).not.toMatch(/EPIPE|refused/);
  });

  it("exits with code 5 right after answering initialize: the exit is reported (never EPIPE or --tool), serverLost set", async () => {
    for (let i = 0; i < 3; i++) {
      const { code, json, stderr } = await probeJson(["--stdio", nodeCommand(exitAtInit), "--timeout", "3000"]);
      expect(code).toBe(1);
      expect(json.error?.kind, json.error?.message).toBe("exited");
      // Which step the exit hits depends on timing: the client's notifications/initialized, or tools/list.
      expect(json.error?.message).toMatch(/^the server exited with code 5 (during initialize|before tools\/list was answered)$/);
      expect((json as unknown as { serverLost: string | null }).serverLost).toBe(json.error?.message);
      expect(stderr).not.toMatch(/--tool|EPIPE|refused/);
    }
  });

  it("a compliant server that stays up: serverLost is null and the exit status is the checks' (0)", async () => {
    const { code, json } = await probeJson([
      "--stdio",
      nodeCommand(probeFixture("raw-server.mjs")),
      "--window",
      "300",
      "--timeout",
      "3000",
    ]);
    expect(code).toBe(0);
    expect((json as unknown as { serverLost: string | null }).serverLost).toBeNull();
  });
});

describe("probe --era 2026-07-28: a server that never answers", () => {
  it("is reported as not answering server/discover within --timeout (kind timeout), never as refusing it", async () => {
    const { code, json, stderr } = await probeJson(["--stdio", nodeCommand(silent), "--era", "2026-07-28", "--timeout", "800"]);
    expect(code).toBe(1);
    expect(json.error?.kind).toBe("timeout");
    expect(json.error?.message).toBe("the server did not answer server/discover (2026-07-28) within --timeout (800 ms)");
    expect(stderr).not.toMatch(/refused/);
  });
});

describe("probe: stopped by a signal", () => {
  const entry = join(process.cwd(), "src/cli/index.ts");

  /** Runs the executable on a server that ignores stdin EOF and SIGTERM, and sends `signal` once the tool call runs. */
  function interrupted(signal: NodeJS.Signals) {
    const pidfile = join(dir, `pid-${signal}`);
    const args = ["probe", "--stdio", nodeCommand(probeFixture("raw-server.mjs"), "--stubborn"), "--env", `PROBE_PIDFILE=${pidfile}`];
    return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; serverPid: number }>((resolve) => {
      const child = spawn(process.execPath, ["--import", "tsx", entry, ...args, "--cancel-after", "20000"], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      let serverPid = 0;
      child.stdout.resume();
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.on("close", (code, got) => resolve({ code, signal: got, stderr, serverPid }));
      const poll = setInterval(() => {
        if (!existsSync(pidfile)) return;
        serverPid = Number(readFileSync(pidfile, "utf8")); // 0 while the file is being written
        if (!(serverPid > 0)) return;
        clearInterval(poll);
        setTimeout(() => child.kill(signal), 300); // the tool call is running by then
      }, 50);
      setTimeout(() => clearInterval(poll), 15_000).unref();
    });
  }

  for (const [signal, status] of [
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ] as const) {
    it(`${signal}: exit ${status}, one stderr line saying so, and the server it started is ended`, async () => {
      const result = await interrupted(signal);
      expect(result.signal).toBeNull();
      expect(result.code).toBe(status);
      expect(result.stderr).toBe(
        `mcp-cancellable probe: interrupted by ${signal}; the server it started is stopped; no report (exit status ${status})\n`,
      );
      expect(result.serverPid).toBeGreaterThan(0);
      // Gone within 10 s (a loaded machine may take a while to reap it).
      for (let i = 0; i < 200 && alive(result.serverPid); i++) await new Promise((r) => setTimeout(r, 50));
      expect(alive(result.serverPid)).toBe(false);
    }, 30_000);
  }
});

describe("help texts", () => {
  it("probe --help: environment variables in --header values, and the exit statuses of a signal", () => {
    expect(PROBE_HELP).toMatch(/--header "Name: value"[\s\S]*\$\{NAME\} in the value is the environment variable NAME/);
    expect(PROBE_HELP).toMatch(
      /Exit status:[\s\S]*crashed or exited during the probe[\s\S]*129, 130, 143 stopped by SIGHUP,\s+SIGINT, SIGTERM/,
    );
  });

  it("proxy --help: initialize has only the maximum total timeout; --listen's packages give exit 2", () => {
    expect(PROXY_HELP).not.toMatch(/initialize has the same limits/);
    expect(PROXY_HELP).toMatch(/initialize and server\/discover \(the handshakes\) have only --max-total-timeout-ms, not\s+--timeout-ms/);
    expect(PROXY_HELP).toMatch(/a package that\s+--era 2026-07-28, --otel or --listen needs is not installed/);
  });
});
