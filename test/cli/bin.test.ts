import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nodeCommand, probeFixture } from "./helpers.js";

// The executable itself, as a real process: `node --import tsx src/cli/index.ts` (the built
// dist/cli.js is the same module bundled, with a shebang).
const entry = join(process.cwd(), "src/cli/index.ts");
const dir = mkdtempSync(join(tmpdir(), "probe-bin-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], onSpawn?: (child: ReturnType<typeof spawn>) => void) {
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", entry, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
    onSpawn?.(child);
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("the mcp-cancellable executable", () => {
  it("exit status: 2 for a usage error, 1 for a server that cannot start; never a stack trace", async () => {
    const usage = await run(["probe", "--stdio"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/argument missing/);
    const crash = await run(["probe", "--stdio", nodeCommand(probeFixture("raw-server.mjs"), "--crash")]);
    expect(crash.code).toBe(1);
    expect(crash.stderr).toMatch(/exited with code 3/);
    for (const out of [usage.stderr, crash.stderr]) expect(out).not.toMatch(/^\s+at /m);
  }, 60_000); // two CLI processes through tsx, one after the other

  it("Ctrl-C (SIGINT) mid-probe ends the server it started, even one that ignores stdin EOF and SIGTERM", async () => {
    const pidfile = join(dir, "pid");
    let serverPid = 0;
    const result = await run(
      [
        "probe",
        "--stdio",
        nodeCommand(probeFixture("raw-server.mjs"), "--stubborn"),
        "--env",
        `PROBE_PIDFILE=${pidfile}`,
        "--cancel-after",
        "20000",
      ],
      (child) => {
        const poll = setInterval(() => {
          if (!existsSync(pidfile)) return;
          serverPid = Number(readFileSync(pidfile, "utf8")); // 0 while the file is being written
          if (!(serverPid > 0)) return;
          clearInterval(poll);
          setTimeout(() => child.kill("SIGINT"), 300); // the tool call is running by then
        }, 50);
        setTimeout(() => clearInterval(poll), 15_000).unref();
      },
    );
    expect(result.code).toBe(130);
    expect(serverPid).toBeGreaterThan(0);
    // Gone within 10 s (a loaded machine may take a while to reap it).
    for (let i = 0; i < 200 && alive(serverPid); i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive(serverPid)).toBe(false);
  });
});
