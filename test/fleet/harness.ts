// A fleet on one machine, for the CI leg (test/fleet/haproxy.fleet.ts) and the bench
// (bench/fleet.ts): replicas of `mcp-cancellable proxy --listen` on 127.0.0.1, each with its own
// stdio server, behind a real HAProxy (Debian's package) on 127.0.0.1, configured the way
// docs/proxy.md's fleet recipe says: round robin, affinity on Mcp-Session-Id (a stick table
// learnt from the initialize response), /readyz health checks, no retry of a request once sent.
import { spawn, spawnSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFront } from "../proxy/front/helpers.js";
import type { RunningFront } from "../proxy/front/helpers.js";

/** The nginx binary, or `undefined` when it is not installed. */
export function nginxBinary(): string | undefined {
  for (const candidate of ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"]) {
    if (spawnSync(candidate, ["-v"], { stdio: "ignore" }).status === 0) return candidate;
  }
  return undefined;
}

/** The HAProxy binary, or `undefined` when it is not installed. */
export function haproxyBinary(): string | undefined {
  for (const candidate of ["/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"]) {
    if (spawnSync(candidate, ["-v"], { stdio: "ignore" }).status === 0) return candidate;
  }
  return undefined;
}

/** A free TCP port on 127.0.0.1 (bound, then released). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** docs/proxy.md's HAProxy configuration, for replicas on 127.0.0.1 at `ports`. */
export function haproxyConfig(bind: number, replicas: Array<{ name: string; port: number }>): string {
  return `global
  maxconn 4000

defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  timeout http-request 10s
  # A client that goes away aborts its request on the replica too (the 2026-07-28 cancel).
  option abortonclose
  # Never send a request again once a replica has it: a tool call is not idempotent. The
  # front's 503 is "not sent" (a draining replica's refusal): safe to send to another.
  retry-on conn-failure 503
  retries 1
  option redispatch 1

frontend mcp
  bind 127.0.0.1:${bind}
  default_backend replicas

backend replicas
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  # A replica is taken out of rotation after two failed checks; what it has in flight is left
  # alone (no shutdown-sessions: a replica slow to answer a check is not dead, and a dead one's
  # connections end by themselves).
  timeout check 2s
  default-server inter 300ms fall 2 rise 2
  # 2025-era sessions stay on the replica that made them: learnt from the initialize response.
  stick-table type string len 128 size 100k expire 30m
  stick match req.hdr(mcp-session-id)
  stick store-response res.hdr(mcp-session-id)
${replicas.map((r) => `  server ${r.name} 127.0.0.1:${r.port} check`).join("\n")}
`;
}

export interface Fleet {
  readonly url: URL;
  readonly replicas: Map<string, RunningFront>;
  /** The load balancer's process (HAProxy or nginx). */
  readonly balancer: ChildProcess;
  balancerLog(): string;
  stop(): Promise<void>;
}

/** Starts `names.length` replicas with `args` (each `--replica <name>`) and HAProxy in front; resolves once HAProxy routes to every replica. */
export async function startFleet(names: string[], args: string[], binary: string): Promise<Fleet> {
  return startBalanced(names, args, {
    name: "HAProxy",
    command: (dir, bind, replicas) => {
      const config = join(dir, "haproxy.cfg");
      writeFileSync(config, haproxyConfig(bind, replicas));
      return [binary, ["-db", "-f", config]];
    },
    // It has had time to mark every replica up (rise 2 at 300 ms).
    settleMs: 700,
  });
}

/** The replicas on 127.0.0.1 and one load balancer in front of them, started in `dir`; resolves once it answers `/healthz` (then `settleMs` more). */
async function startBalanced(
  names: string[],
  args: string[],
  balancer: {
    name: string;
    command: (dir: string, bind: number, replicas: Array<{ name: string; port: number }>) => [string, string[]];
    settleMs: number;
  },
): Promise<Fleet> {
  const replicas = new Map<string, RunningFront>();
  for (const name of names) replicas.set(name, await startFront(["--replica", name, ...args]));
  const bind = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "mcp-fleet-"));
  chmodSync(dir, 0o777); // nginx's worker (nobody, when started as root) writes its temp files here
  const [command, argv] = balancer.command(
    dir,
    bind,
    [...replicas].map(([name, front]) => ({ name, port: Number(front.url.port) })),
  );
  const child = spawn(command, argv, { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout?.on("data", (chunk: Buffer) => (log += chunk.toString("utf8")));
  child.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString("utf8")));
  const url = new URL(`http://127.0.0.1:${bind}/mcp`);
  const end = performance.now() + 15_000;
  for (;;) {
    const ok = await fetch(new URL("/healthz", url))
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) break;
    if (performance.now() > end || child.exitCode !== null) throw new Error(`${balancer.name} did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, balancer.settleMs));
  return {
    url,
    replicas,
    balancer: child,
    balancerLog: () => log,
    async stop() {
      child.kill("SIGTERM");
      if (child.exitCode === null) await new Promise((r) => child.once("exit", r));
      await Promise.all([...replicas.values()].map((front) => front.stop("SIGKILL", 5_000)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The "STARTED <id>" lines a replica's stdio servers wrote (the handler of a tool call ran). */
export const startedOn = (front: RunningFront): number =>
  front
    .stderr()
    .split("\n")
    .filter((l) => l.startsWith("STARTED")).length;

/**
 * docs/proxy.md's nginx configuration, for replicas on 127.0.0.1 at their ports (each `upstream`
 * block named as the replica, with the others as its backups), and what nginx needs to run in
 * `dir` (its pid, logs and temp paths) as a user's process.
 */
export function nginxConfig(bind: number, replicas: Array<{ name: string; port: number }>, dir: string): string {
  const all = replicas.map((r) => `server 127.0.0.1:${r.port};`).join(" ");
  const own = replicas
    .map((r) => {
      const backups = replicas.filter((o) => o !== r).map((o) => `server 127.0.0.1:${o.port} backup;`);
      return `  upstream ${r.name} { server 127.0.0.1:${r.port}; ${backups.join(" ")} }`;
    })
    .join("\n");
  return `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
daemon off;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream replicas { ${all} }
${own}
  map $http_mcp_session_id $mcp_upstream {
    ~^(?<replica>r[0-9]+)\\.  $replica;
    default                  replicas;
  }
  server {
    listen 127.0.0.1:${bind};
    location /mcp {
      proxy_pass http://$mcp_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_buffering off;
      proxy_read_timeout 3600s;
      proxy_next_upstream error timeout;
    }
    location ~ ^/(healthz|readyz)$ { proxy_pass http://replicas; }
  }
}
`;
}

/** Starts replicas named `names` (each `--replica <name>`, as the recipe needs) with `args` and nginx in front; resolves once nginx answers. */
export function startNginxFleet(names: string[], args: string[], binary: string): Promise<Fleet> {
  return startBalanced(names, args, {
    name: "nginx",
    command: (dir, bind, replicas) => {
      const config = join(dir, "nginx.conf");
      writeFileSync(config, nginxConfig(bind, replicas, dir));
      return [binary, ["-p", dir, "-c", config]];
    },
    settleMs: 0,
  });
}
