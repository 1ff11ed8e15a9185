import type { Readable, Writable } from "node:stream";
import { UsageError } from "../args.js";
import type { Output } from "../output.js";
import { parseProxyArgs, PROXY_HELP } from "./args.js";
import { LISTEN_HELP, splitListenArgs } from "./listen/args.js";
import { ConfigError } from "./config.js";
import { RecordsFileError, runProxy } from "./proxy.js";
import { stdioUpstream } from "./upstream.js";

/** The proxy's streams to the client: the process's own stdin and stdout unless given. */
export interface ProxyStreams {
  input?: Readable;
  output?: Writable;
}

/**
 * `mcp-cancellable proxy <argv>`: returns the exit status (0, 1 or 2), never throws. Protocol
 * messages go to `streams.output` (stdout) only; `out.stderr` gets the diagnostics, `out.stdout`
 * only the help.
 */
export async function runProxyCommand(argv: string[], out: Output, streams: ProxyStreams = {}): Promise<number> {
  try {
    const { listen, rest } = splitListenArgs(argv);
    const options = parseProxyArgs(rest);
    if (options === "help") {
      out.stdout(PROXY_HELP + LISTEN_HELP);
      return 0;
    }
    const upstream = options.upstream;
    const io = { input: streams.input ?? process.stdin, output: streams.output ?? process.stdout, log: (text: string) => out.stderr(text) };
    // --otel: the SDK pieces are loaded now, and only now; a missing one is exit status 2.
    const otel = options.otel ? await (await import("./otel.js")).startOtel(process.env, (text) => out.stderr(text)) : undefined;
    if (otel !== undefined) out.stderr(`mcp-cancellable proxy: --otel: ${otel.description}\n`);
    const extras = otel?.observer === undefined ? {} : { observer: otel.observer };
    try {
      if (listen !== undefined)
        return await (await import("./listen/command.js")).runFront(options, listen, (text) => out.stderr(text), extras.observer);
      if (upstream.kind === "stdio") return await runProxy(options, io, () => stdioUpstream(upstream), extras);
      const { httpUpstream } = await import("./http.js");
      return await runProxy(options, io, () => httpUpstream(upstream), extras);
    } finally {
      await otel?.shutdown();
    }
  } catch (error) {
    if (error instanceof UsageError) {
      out.stderr(`mcp-cancellable proxy: ${error.message}\nRun mcp-cancellable proxy --help for the options.\n`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof RecordsFileError || (error as { kind?: unknown }).kind === "missing-sdk") {
      out.stderr(`mcp-cancellable proxy: ${(error as Error).message}\n`);
      return 2;
    }
    const message = error instanceof Error ? error.message : String(error);
    out.stderr(`mcp-cancellable proxy: the proxy itself failed: ${message}\n`);
    if (process.env.MCP_CANCELLABLE_DEBUG !== undefined && error instanceof Error) out.stderr(`${error.stack ?? ""}\n`);
    return 1;
  }
}
