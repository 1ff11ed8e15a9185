/**
 * The floors of any stdio proxy, for bench/proxy.ts: a process that starts the server as its
 * child and relays both ways (stdin → the child's stdin, the child's stdout → stdout).
 * - default: copies bytes, parsing nothing: what one more process between client and server costs;
 * - `--parse`: reads each line as JSON, gives each request an id of its own (and the answer its
 *   client's id back), and writes it out again, one write per chunk: what a proxy that reads every
 *   message costs before any limit, record or cancel of its own.
 * Run: node bench/proxy-relay.ts [--parse] -- <command> [args...] (plain JavaScript-compatible TypeScript, run with tsx)
 */
import { spawn } from "node:child_process";

const dashes = process.argv.indexOf("--");
const parse = process.argv.slice(2, dashes).includes("--parse");
const [command, ...args] = process.argv.slice(dashes + 1);
const child = spawn(command!, args, { stdio: ["pipe", "pipe", "inherit"] });
if (parse) {
  const ids = new Map<number, unknown>();
  let next = 1;
  const relayLines = (from: NodeJS.ReadableStream, to: NodeJS.WritableStream, each: (message: Record<string, unknown>) => void): void => {
    let rest = "";
    from.setEncoding("utf8");
    from.on("data", (chunk: string) => {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop()!;
      let out = "";
      for (const line of lines) {
        if (line.length === 0) continue;
        const message = JSON.parse(line) as Record<string, unknown>;
        each(message);
        out += `${JSON.stringify(message)}\n`;
      }
      if (out.length > 0) to.write(out);
    });
  };
  relayLines(process.stdin, child.stdin, (message) => {
    if (message.method === undefined || message.id === undefined) return;
    ids.set(next, message.id);
    message.id = next++;
  });
  relayLines(child.stdout, process.stdout, (message) => {
    if (message.method !== undefined || typeof message.id !== "number" || !ids.has(message.id)) return;
    const id = message.id;
    message.id = ids.get(id);
    ids.delete(id);
  });
} else {
  process.stdin.pipe(child.stdin);
  child.stdout.pipe(process.stdout);
}
process.stdin.on("end", () => child.stdin.end());
child.on("exit", (code) => process.exit(code ?? 1));
