import { parseProbeArgs, PROBE_HELP, UsageError } from "./args.js";
import { packageRoot } from "./package-root.js";
import { probe } from "./probe.js";
import { runProxyCommand } from "./proxy/command.js";
import { Recorder } from "./recorder.js";
import { exitCodeOf, renderJson, renderStartupError, renderStartupErrorJson, renderText } from "./report.js";
import { StartupError } from "./target.js";
import type { Output } from "./output.js";

/** Exit status: no check FAILed. */
export const EXIT_OK = 0;
/** Exit status: a check FAILed, or the server could not be probed. */
export const EXIT_FAIL = 1;
/** Exit status: usage error, or an optional peer the command needs is not installed. */
export const EXIT_USAGE = 2;

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
 * returns the exit status (0, 1 or 2). Never throws; never prints a stack trace unless the
 * environment variable `MCP_CANCELLABLE_DEBUG` is set.
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
    const report = await probe(options, recorder);
    out.stdout(json ? renderJson(report) : renderText(report));
    return exitCodeOf(report.checks);
  } catch (error) {
    if (error instanceof UsageError) {
      out.stderr(`mcp-cancellable probe: ${error.message}\nRun mcp-cancellable probe --help for the options.\n`);
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
