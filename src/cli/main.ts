import { parseProbeArgs, PROBE_HELP, UsageError } from "./args.js";
import { docHint, packageRoot } from "./package-root.js";
import { probe } from "./probe.js";
import { runProxyCommand } from "./proxy/command.js";
import { Recorder } from "./recorder.js";
import { exitCodeOf, renderJson, renderStartupError, renderStartupErrorJson, renderText, serverLost } from "./report.js";
import { StartupError } from "./target.js";
import type { Output } from "./output.js";

/** Exit status: no check FAILed. */
export const EXIT_OK = 0;
/** Exit status: a check FAILed, or the server could not be probed. */
export const EXIT_FAIL = 1;
/** Exit status: usage error, or an optional peer the command needs is not installed. */
export const EXIT_USAGE = 2;
/**
 * Exit status of a probe stopped by a signal: 128 + the signal's number, what a shell reports for
 * a process the signal killed, so a script sees the same status either way.
 */
export const EXIT_ON_SIGNAL = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;

export const HELP = `Usage: mcp-cancellable <command> [options]

Commands:
  probe    Check whether an MCP server honours cancellation (mcp-cancellable probe --help)
  proxy    Run between an MCP client and a server, giving every request correct timeouts and
           cancels (mcp-cancellable proxy --help)

Options:
  -h, --help     Print this help.
  -v, --version  Print the version of mcp-cancellable.
`;

/**
 * The package's version, read from its package.json: the nearest one named mcp-cancellable
 * above this module (dist/cli.js in the package, src/cli/main.ts in a clone).
 */
export function version(): string {
  return packageRoot()?.version ?? "unknown";
}

export type { Output } from "./output.js";

/**
 * The `mcp-cancellable` command: runs it with `argv` (without `node` and the script) and
 * returns the exit status (0, 1 or 2; a probe stopped by a signal exits the process with
 * `EXIT_ON_SIGNAL` instead). Never throws; never prints a stack trace unless the environment
 * variable `MCP_CANCELLABLE_DEBUG` is set.
 */
export async function main(argv: string[], out: Output): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    (command === undefined ? out.stderr : out.stdout)(HELP);
    return command === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (command === "-v" || command === "--version" || command === "version") {
    out.stdout(`${version()}\n`);
    return EXIT_OK;
  }
  if (command === "proxy") return runProxyCommand(rest, out);
  if (command !== "probe") {
    out.stderr(`mcp-cancellable: unknown command ${JSON.stringify(command)}\n\n${HELP}`);
    return EXIT_USAGE;
  }
  let json = false;
  const recorder = new Recorder();
  try {
    const options = parseProbeArgs(rest);
    if (options === "help") {
      out.stdout(PROBE_HELP);
      return EXIT_OK;
    }
    json = options.json;
    const stopOnSignal = whenInterrupted(out, options.target.kind === "stdio");
    const report = await probe(options, recorder).finally(stopOnSignal);
    out.stdout(json ? renderJson(report) : renderText(report));
    // The text report says it above its summary; with --json, stderr says it, as for a failed start.
    const lost = serverLost(report.run);
    if (json && lost !== undefined) out.stderr(`mcp-cancellable probe: ${lost}, so it could not be probed to the end\n`);
    return exitCodeOf(report);
  } catch (error) {
    if (error instanceof UsageError) {
      out.stderr(`mcp-cancellable probe: ${error.message}\nRun mcp-cancellable probe --help for the options; see ${docHint("probe.md")}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof StartupError) {
      if (json) out.stdout(renderStartupErrorJson(error, recorder.events));
      out.stderr(renderStartupError(error));
      // A missing optional peer (the v2 SDK for --era 2026-07-28) is a problem with the command,
      // not with the server: the usage status, so a script can tell it from a failed check.
      return error.kind === "missing-sdk" ? EXIT_USAGE : EXIT_FAIL;
    }
    const message = error instanceof Error ? error.message : String(error);
    out.stderr(`mcp-cancellable probe: the probe itself failed: ${message}\n`);
    if (process.env.MCP_CANCELLABLE_DEBUG !== undefined && error instanceof Error) out.stderr(`${error.stack ?? ""}\n`);
    return EXIT_FAIL;
  }
}

/**
 * While a probe runs, SIGHUP, SIGINT and SIGTERM print one line on stderr and exit with
 * `EXIT_ON_SIGNAL`: without it Ctrl-C ended the probe with no word, and SIGHUP killed it before
 * the exit handlers that end a stdio server's process group could run (a server that ignores
 * stdin EOF outlived it). Prepended, so it runs before the executable's own SIGINT and SIGTERM
 * handlers (which exit at once). Returns the function that removes the listeners.
 */
function whenInterrupted(out: Output, startedServer: boolean): () => void {
  const listeners = (Object.keys(EXIT_ON_SIGNAL) as Array<keyof typeof EXIT_ON_SIGNAL>).map((signal) => {
    const listener = (): void => {
      const code = EXIT_ON_SIGNAL[signal];
      // process.exit runs the exit handlers, and the stdio transport's SIGKILLs the server's group.
      out.stderr(
        `mcp-cancellable probe: interrupted by ${signal}${startedServer ? "; the server it started is stopped" : ""}; no report (exit status ${code})\n`,
      );
      process.exit(code);
    };
    process.prependListener(signal, listener);
    return () => void process.removeListener(signal, listener);
  });
  return () => {
    for (const remove of listeners) remove();
  };
}
