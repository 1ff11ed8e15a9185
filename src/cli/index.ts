import { main } from "./main.js";

/**
 * The `mcp-cancellable` executable (`bin`). Runs the command, flushes its output, and exits
 * with its status: a probe leaves nothing running (servers it started are ended, and killed
 * with their process group on an early exit, Ctrl-C included).
 */
process.once("SIGINT", () => process.exit(130));
process.once("SIGTERM", () => process.exit(143));

const code = await main(process.argv.slice(2), {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
});
process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
