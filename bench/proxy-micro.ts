/**
 * The proxy's own work per call, without processes or pipes: `runProxy` (built with tsup as it
 * ships) on in-memory streams, its upstream an in-memory server that answers each request at
 * once. N sequential `tools/call`s, the client writing a line and waiting for its answer line:
 * wall and CPU µs per call, and the heap allocated per call (young-generation garbage).
 *
 * Run: node --expose-gc --import tsx bench/proxy-micro.ts [calls] [--no-build] [--src=DIR]
 *   --src=DIR: build another tree's src/ (such as `git archive HEAD src` unpacked), into its own folder.
 */
import { execFileSync } from "node:child_process";
import { PassThrough } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = fileURLToPath(new URL("../", import.meta.url));
const srcArg = process.argv.find((a) => a.startsWith("--src="))?.slice(6);
const src = srcArg === undefined ? `${repo}src` : srcArg.replace(/\/$/, "");
const buildDir = srcArg === undefined ? `${repo}bench/.tmp/proxy-micro-build` : `${src}/../proxy-micro-build`;
const calls = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 20_000);

if (!process.argv.includes("--no-build")) {
  execFileSync(
    process.execPath,
    ["--import", "tsx", `${repo}bench/lib/build.ts`, buildDir, `proxy=${src}/cli/proxy/proxy.ts`, `stdio=${src}/adapters/stdio/index.ts`],
    {
      cwd: repo,
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
}
const { runProxy } = (await import(pathToFileURL(`${buildDir}/proxy.js`).href)) as typeof import("../src/cli/proxy/proxy.js");
const { stdioCancellation } = (await import(pathToFileURL(`${buildDir}/stdio.js`).href)) as typeof import("../src/adapters/stdio/index.js");

/** An in-memory server: answers initialize and every tools/call at once (a microtask later), as JSON text parsed again, as a pipe would. */
class MemoryServer {
  onmessage?: (message: unknown) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  async start(): Promise<void> {}
  async close(): Promise<void> {
    this.onclose?.();
  }
  send(message: { id?: unknown; method?: string }): Promise<void> {
    const text = JSON.stringify(message);
    if (message.id !== undefined && message.method !== undefined) {
      const { id } = JSON.parse(text) as { id: unknown };
      const result =
        message.method === "initialize"
          ? { protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "m", version: "1" } }
          : { content: [{ type: "text", text: "echo" }] };
      const answer = JSON.stringify({ jsonrpc: "2.0", id, result });
      queueMicrotask(() => this.onmessage?.(JSON.parse(answer)));
    }
    return Promise.resolve();
  }
}

const input = new PassThrough();
const output = new PassThrough();
output.setEncoding("utf8");
let wake: (() => void) | undefined;
let buffer = "";
output.on("data", (chunk: string) => {
  buffer += chunk;
  if (buffer.endsWith("\n")) {
    buffer = "";
    wake?.();
  }
});
const server = new MemoryServer();
const options = {
  upstream: { kind: "stdio", command: "x", args: [], env: {} },
  limits: {},
  config: undefined,
  records: undefined,
  verbose: false,
  otel: false,
} as const;
const exit = runProxy(options as never, { input, output, log: () => {} }, () => ({
  adapter: stdioCancellation(server as never),
  ended: () => ({ message: "ended", code: 0 }),
}));
const roundTrip = (line: string): Promise<void> =>
  new Promise((resolve) => {
    wake = resolve;
    input.write(line);
  });
await roundTrip(
  `${JSON.stringify({ jsonrpc: "2.0", id: "init", method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "c", version: "1" } } })}\n`,
);
input.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
const line = (i: number): string =>
  `${JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "echo", arguments: {} } })}\n`;
for (let i = 0; i < 2_000; i++) await roundTrip(line(i));
globalThis.gc?.();
const heap0 = process.memoryUsage().heapUsed;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let allocated = 0;
let last = heap0;
for (let i = 0; i < calls; i++) {
  await roundTrip(line(10_000 + i));
  if (i % 100 === 99) {
    const now = process.memoryUsage().heapUsed;
    if (now > last) allocated += now - last;
    last = now;
  }
}
const wallUs = ((performance.now() - t0) * 1_000) / calls;
const cpu = process.cpuUsage(cpu0);
process.stdout.write(
  `${calls} calls: ${wallUs.toFixed(1)} µs wall, ${((cpu.user + cpu.system) / calls).toFixed(1)} µs CPU per call (the client side's lines included); ~${Math.round(allocated / calls)} B allocated per call\n`,
);
input.end();
await exit;
