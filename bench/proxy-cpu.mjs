/**
 * What sits between the v1 SDK client and the bench's stdio server costs, per call, at 1,000
 * concurrent `echo` calls: direct (the middle process is the server itself), a byte relay and a
 * parsing relay (bench/proxy-relay.ts), and the proxy (a build of bench/proxy.ts's, default
 * bench/.tmp/proxy-build). The middle process's CPU from /proc/<pid>/schedstat, the client's from
 * process.cpuUsage(), the median wall per round. STRACE=1 adds `strace -c` of the middle process
 * (STRACE=log writes /tmp/strace-<variant>.log); ROUNDS sets the rounds (default 15). Linux only.
 * Run: node bench/proxy-cpu.mjs [proxyBuildDir] [direct,bytes,parse,proxy]
 */
import { readFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const repo = new URL("../", import.meta.url).pathname;
const node = process.execPath;
const server = ["--import", "tsx", `${repo}bench/proxy-stdio-server.ts`];
const variants = {
  direct: server,
  bytes: ["--import", "tsx", `${repo}bench/proxy-relay.ts`, "--", node, ...server],
  parse: ["--import", "tsx", `${repo}bench/proxy-relay.ts`, "--parse", "--", node, ...server],
  proxy: [`${process.argv[2] ?? repo + "bench/.tmp/proxy-build"}/cli.js`, "proxy", "--", node, ...server],
};
const cpuNs = (pid) => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
const which = (process.argv[3] ?? "direct,bytes,parse,proxy").split(",");
const rounds = Number(process.env.ROUNDS ?? 15),
  n = 1000;
for (const name of which) {
  const transport = new StdioClientTransport({ command: node, args: variants[name], cwd: repo, stderr: "ignore" });
  const client = new Client({ name: "c", version: "1" });
  await client.connect(transport);
  const pid = transport.pid;
  const round = () => Promise.all(Array.from({ length: n }, () => client.callTool({ name: "echo", arguments: { text: "x" } })));
  for (let i = 0; i < 5; i++) await round();
  let st;
  let stOut = "";
  if (process.env.STRACE) {
    st = spawn(
      "strace",
      process.env.STRACE === "log"
        ? ["-e", "trace=read,write,writev", "-o", `/tmp/strace-${name}.log`, "-p", String(pid)]
        : ["-c", "-e", "trace=read,write,writev,epoll_wait", "-p", String(pid)],
    );
    st.stderr.on("data", (d) => (stOut += d));
    await new Promise((r) => setTimeout(r, 300));
  }
  const walls = [];
  const c0 = cpuNs(pid);
  const self0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    await round();
    walls.push(performance.now() - t);
  }
  const mid = (cpuNs(pid) - c0) / 1000 / (rounds * n);
  const su = process.cpuUsage(self0);
  const me = (su.user + su.system) / (rounds * n);
  walls.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(6)} wall median ${walls[rounds >> 1].toFixed(1)} ms; middle-process CPU ${mid.toFixed(1)} µs/call; client CPU ${me.toFixed(1)} µs/call`,
  );
  if (st) {
    st.kill("SIGINT");
    await new Promise((r) => st.on("exit", r));
    console.log(
      stOut
        .split("\n")
        .filter((l) => /read|write|epoll|calls/.test(l))
        .join("\n"),
    );
  }
  await client.close();
}
