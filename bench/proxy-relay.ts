/**
 * The floor of any stdio proxy, for bench/proxy.ts: a process that starts the server as its
 * child and copies bytes both ways (stdin → the child's stdin, the child's stdout → stdout),
 * parsing nothing. What it adds is what one more process between client and server costs.
 * Run: node bench/proxy-relay.ts -- <command> [args...] (plain JavaScript-compatible TypeScript, run with tsx)
 */
import { spawn } from "node:child_process";

const dashes = process.argv.indexOf("--");
const [command, ...args] = process.argv.slice(dashes + 1);
const child = spawn(command!, args, { stdio: ["pipe", "pipe", "inherit"] });
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
process.stdin.on("end", () => child.stdin.end());
child.on("exit", (code) => process.exit(code ?? 1));
