/**
 * Where the proxy's time per call goes: the built proxy (bench/.tmp/proxy-build/cli.js, as
 * bench/proxy.ts builds it) run under `node --cpu-prof` between the bare v1 SDK client and the
 * bench's stdio server, N sequential `echo` calls, then the profile's self time per function
 * (µs per call, idle and the program's start excluded as far as the samples allow).
 *
 * Run: node --import tsx bench/proxy-profile.ts [calls] [--build] [--concurrent]
 *   --build: build the proxy first (otherwise the last build of bench/proxy.ts is used);
 *   --concurrent: the calls go in batches of 1,000 in flight (bench/proxy.ts's concurrent row), not one by one.
 * The .cpuprofile goes to bench/.tmp/proxy-profile/ (open it in Chrome DevTools).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const repo = fileURLToPath(new URL("../", import.meta.url));
const buildDir = `${repo}bench/.tmp/proxy-build`;
const profileDir = `${repo}bench/.tmp/proxy-profile`;
const node = process.execPath;
const calls = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 3_000);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

if (process.argv.includes("--build")) {
  execFileSync(
    node,
    [
      "--import",
      "tsx",
      `${repo}bench/lib/build.ts`,
      buildDir,
      `cli=${repo}src/cli/index.ts`,
      `proxy-command=${repo}src/cli/proxy/command.ts`,
    ],
    {
      cwd: repo,
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
}
rmSync(profileDir, { recursive: true, force: true });
mkdirSync(profileDir, { recursive: true });

const client = new Client({ name: "bench-proxy-profile", version: "1.0.0" });
await client.connect(
  new StdioClientTransport({
    command: node,
    args: [
      "--cpu-prof",
      `--cpu-prof-dir=${profileDir}`,
      "--cpu-prof-interval=100",
      `${buildDir}/cli.js`,
      "proxy",
      "--",
      node,
      "--import",
      "tsx",
      `${repo}bench/proxy-stdio-server.ts`,
    ],
    cwd: repo,
    stderr: "ignore",
  }),
);
const concurrent = process.argv.includes("--concurrent");
const batch = (n: number) => Promise.all(Array.from({ length: n }, () => client.callTool({ name: "echo", arguments: {} })));
for (let i = 0; i < 200; i++) await client.callTool({ name: "echo", arguments: {} });
const started = performance.now();
if (concurrent) for (let done = 0; done < calls; done += 1_000) await batch(Math.min(1_000, calls - done));
else for (let i = 0; i < calls; i++) await client.callTool({ name: "echo", arguments: {} });
const wallUs = ((performance.now() - started) * 1_000) / calls;
await client.close();
for (let i = 0; i < 100 && readdirSync(profileDir).length === 0; i++) await new Promise((r) => setTimeout(r, 50));

const file = readdirSync(profileDir).find((name) => name.endsWith(".cpuprofile"));
if (file === undefined) throw new Error("no .cpuprofile written");
const profile = JSON.parse(readFileSync(`${profileDir}/${file}`, "utf8")) as {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
};
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let busy = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const n = byId.get(profile.samples[i]!)!;
  const dt = profile.timeDeltas[i] ?? 0;
  const name = n.callFrame.functionName || "(anonymous)";
  if (name === "(idle)" || name === "(program)") continue;
  busy += dt;
  const where = n.callFrame.url.replace(/^.*\/(node_modules\/[^/]+(?:\/[^/]+)?)\/.*$/, "$1").replace(/^.*\//, "");
  const key = `${name} ${where}:${n.callFrame.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
}
const total = calls + 200;
process.stdout.write(
  `${calls} calls${concurrent ? " (1,000 in flight)" : ""}, ${wallUs.toFixed(1)} µs wall per call (client side); proxy busy ${(busy / total).toFixed(1)} µs per call (startup included)\n`,
);
for (const [key, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40))
  process.stdout.write(`${(us / total).toFixed(2).padStart(8)} µs  ${key}\n`);
process.stdout.write(`profile: ${profileDir}/${file}\n`);
