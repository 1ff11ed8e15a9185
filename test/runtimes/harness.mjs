// CI driver for the runtime legs (run with Node): starts the Streamable HTTP test server
// (test/fixtures/runtime/server.mjs) on 127.0.0.1, then runs the portable checks
// (test/runtimes/checks.mjs, against the built dist/) in one runtime and passes its output and
// exit code on. Every process and server it starts is stopped before it exits.
//
//   node test/runtimes/harness.mjs deno <deno binary>
//   node test/runtimes/harness.mjs bun <bun binary>
//   node test/runtimes/harness.mjs chromium <chromium binary>
//
// Each run ends with the checks' plain line "N passed, N failed". With MCP_RUNTIME_REPORT=<file>
// the counts are also written there in the shape of a vitest JSON report, for .ci/count.mjs (a
// leg that could not run at all counts as one failure).
import { spawn } from "node:child_process";
import http from "node:http";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../fixtures/runtime/server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const [runtime, binary] = process.argv.slice(2);
/** A hard stop for one leg, in ms: it never hangs CI. */
const LEG_DEADLINE_MS = 120_000;

/** The last "N passed, N failed" line printed, as counts. */
let counts = { passed: 0, failed: 1 };
const print = (line) => {
  console.log(line);
  const match = /^(\d+) passed, (\d+) failed$/.exec(line.trim());
  if (match) counts = { passed: Number(match[1]), failed: Number(match[2]) };
};
const writeReport = () =>
  process.env.MCP_RUNTIME_REPORT
    ? writeFile(process.env.MCP_RUNTIME_REPORT, JSON.stringify({ numPassedTests: counts.passed, numFailedTests: counts.failed, runtime }))
    : Promise.resolve();

const server = await startServer();
const watchdog = setTimeout(() => {
  console.error(`runtime leg ${runtime}: no result within ${LEG_DEADLINE_MS} ms`);
  counts = { passed: 0, failed: 1 };
  print("0 passed, 1 failed");
  void writeReport().then(() => process.exit(1));
}, LEG_DEADLINE_MS);
let code = 1;
try {
  if (runtime === "deno" || runtime === "bun") {
    code = await runScript(runtime, binary);
    if (runtime === "deno") code = (await exitCheck(binary)) && code === 0 ? 0 : 1;
  } else if (runtime === "chromium") code = await runBrowser(binary);
  else throw new Error(`unknown runtime ${runtime}`);
} catch (error) {
  console.error(error);
  counts = { passed: 0, failed: 1 };
  print("0 passed, 1 failed");
} finally {
  clearTimeout(watchdog);
  await server.stop();
}
if (code !== 0 && counts.failed === 0) counts = { passed: counts.passed, failed: 1 }; // exited badly after reporting
await writeReport();
process.exit(code);

/** Deno or Bun runs test/runtimes/run.mjs; its stdout is the report. */
function runScript(name, bin) {
  const script = join(here, "run.mjs");
  // Deno: only what the checks need: the test server on 127.0.0.1, the files, and the environment
  // (MCP_TEST_URL, and the OTEL_* variables the OpenTelemetry SDK reads).
  const args = name === "deno" ? ["run", "--allow-env", "--allow-net=127.0.0.1", `--allow-read=${root}`, script] : ["run", script];
  return new Promise((resolve) => {
    const child = spawn(bin, args, {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, MCP_TEST_URL: server.url.href },
    });
    let carry = "";
    child.stdout.on("data", (chunk) => {
      carry += chunk.toString("utf8");
      const lines = carry.split("\n");
      carry = lines.pop();
      for (const line of lines) print(line);
    });
    child.on("close", (exitCode) => {
      if (carry !== "") print(carry);
      resolve(exitCode ?? 1);
    });
  });
}

/**
 * Deno without env access (only MCP_TEST_URL): test/runtimes/exit.mjs closes a v1 client on a
 * session of a v1 server (its GET stream open) and must then exit on its own within
 * EXIT_WITHIN_MS. Counted as one more check of the leg. Resolves whether it passed.
 */
async function exitCheck(bin) {
  const EXIT_WITHIN_MS = 5_000;
  const { startV1SessionServer } = await import("../fixtures/runtime/v1-session-server.mjs");
  const v1 = await startV1SessionServer();
  const args = ["run", "--allow-env=MCP_TEST_URL", "--allow-net=127.0.0.1", `--allow-read=${root}`, join(here, "exit.mjs")];
  let passed = false;
  try {
    passed = await new Promise((resolve) => {
      const child = spawn(bin, args, {
        cwd: root,
        stdio: ["ignore", "pipe", "inherit"],
        env: { ...process.env, MCP_TEST_URL: v1.url.href },
      });
      let out = "";
      let timer;
      child.stdout.on("data", (chunk) => {
        out += chunk.toString("utf8");
        if (timer === undefined && out.includes("closed")) timer = setTimeout(() => child.kill("SIGKILL"), EXIT_WITHIN_MS);
      });
      // Bounded before the "closed" line too (a call that hangs).
      const hard = setTimeout(() => child.kill("SIGKILL"), 30_000);
      child.on("close", (exitCode, signal) => {
        clearTimeout(timer);
        clearTimeout(hard);
        resolve(out.includes("closed") && exitCode === 0 && signal === null);
      });
    });
  } finally {
    await v1.stop();
  }
  console.log(`${passed ? "ok" : "FAIL"} exit: without env access (no undici), the process exits on its own after client.close()`);
  counts = passed ? { passed: counts.passed + 1, failed: counts.failed } : { passed: counts.passed, failed: counts.failed + 1 };
  console.log(`${counts.passed} passed, ${counts.failed} failed`);
  return passed;
}

/**
 * A real headless Chromium (the system's, driven by playwright-core, which downloads nothing)
 * opens a page from another origin that bundles the library with the v2 client; the page runs
 * the HTTP checks against the test server (CORS) and hands back the results and records.
 */
async function runBrowser(executablePath) {
  const { build } = await import("esbuild");
  const bundle = await build({
    entryPoints: [join(here, "browser-entry.mjs")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "chrome120",
    // No `external`: cancellableFetch() names undici in a variable, so the bundler leaves its
    // dynamic import alone (the check below fails if a node: module got in all the same).
    write: false,
    logLevel: "error",
  });
  const code = bundle.outputFiles[0].text;
  if (/\bnode:/.test(code)) throw new Error("the browser bundle pulls in a node: module");
  const page = `<!doctype html><meta charset="utf-8"><title>mcp-cancellable</title><script type="module" src="/bundle.js"></script>`;
  const pages = http.createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    if (path === "/bundle.js") res.writeHead(200, { "content-type": "text/javascript" }).end(code);
    else if (path === "/") res.writeHead(200, { "content-type": "text/html" }).end(page);
    else res.writeHead(404).end();
  });
  await new Promise((resolve) => pages.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${pages.address().port}`;
  const profile = await mkdtemp(join(tmpdir(), "mcp-cancellable-chromium-"));
  const { chromium } = await import("playwright-core");
  // A persistent context on an empty profile directory (playwright's way to pass --user-data-dir).
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  try {
    const tab = await browser.newPage();
    const consoleLines = [];
    tab.on("console", (message) => consoleLines.push(message.text()));
    tab.on("pageerror", (error) => consoleLines.push(`pageerror: ${error.message}`));
    await tab.goto(`${origin}/?server=${encodeURIComponent(server.url.href)}`);
    const handle = await tab.waitForFunction(() => globalThis.__mcpResults, undefined, { timeout: 60_000 });
    const { results, userAgent } = await handle.jsonValue();
    console.log(`chromium: ${userAgent}`);
    const { report } = await import("./checks.mjs");
    const ok = report(results, print, "chromium");
    if (!ok) for (const line of consoleLines) console.log(`  console: ${line}`);
    return ok ? 0 : 1;
  } finally {
    await browser.close();
    await new Promise((resolve) => pages.close(resolve));
    await rm(profile, { recursive: true, force: true });
  }
}
