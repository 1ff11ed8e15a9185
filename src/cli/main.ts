import { parseProbeArgs, PROBE_HELP, UsageError } from "./args.js";
import { probe } from "./probe.js";
import { Recorder } from "./recorder.js";
import { exitCodeOf, renderJson, renderStartupError, renderStartupErrorJson, renderText } from "./report.js";
import { StartupError } from "./target.js";

/** Exit status: no check FAILed. */
export const EXIT_OK = 0;
/** Exit status: a check FAILed, or the server could not be probed. */
export const EXIT_FAIL = 1;
/** Exit status: usage error. */
export const EXIT_USAGE = 2;

export const HELP = `Usage: mcp-cancellable <command> [options]

Commands:
  probe    Check whether an MCP server honours cancellation (mcp-cancellable probe --help)

Options:
  -h, --help  Print this help.
`;

/** Where the command writes. */
export interface Output {
  stdout(text: string): void;
  stderr(text: string): void;
}

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
      return EXIT_FAIL;
    }
    const message = error instanceof Error ? error.message : String(error);
    out.stderr(`mcp-cancellable probe: the probe itself failed: ${message}\n`);
    if (process.env.MCP_CANCELLABLE_DEBUG !== undefined && error instanceof Error) out.stderr(`${error.stack ?? ""}\n`);
    return EXIT_FAIL;
  }
}
