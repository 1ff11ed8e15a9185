import type { Readable, Writable } from "node:stream";
import { UsageError } from "../args.js";
import type { Output } from "../output.js";
import { dashesBeforeCommand, docsHint, parseProxyArgs, PROXY_HELP, PROXY_VALUE_FLAGS } from "./args.js";
import { LISTEN_FLAG_NAMES, LISTEN_HELP, splitListenArgs } from "./listen/args.js";
import { headerSecrets, redactor } from "./listen/guard.js";
import { ConfigError } from "./config.js";
import { RecordsFileError, runProxy } from "./proxy.js";
import type { EndSignal } from "./session.js";
import { stdioUpstream } from "./upstream.js";

/** The proxy's streams to the client: the process's own stdin and stdout unless given (then SIGTERM, SIGINT and SIGHUP end it too). */
export interface ProxyStreams {
  input?: Readable;
  output?: Writable;
}

const SIGNALS: readonly EndSignal[] = ["SIGTERM", "SIGINT", "SIGHUP"];

/** Signal handling on the process: each of SIGTERM, SIGINT, SIGHUP runs the proxy's shutdown. */
function processSignals(handler: (signal: EndSignal) => void): () => void {
  const listeners = SIGNALS.map((signal) => [signal, () => handler(signal)] as const);
  for (const [signal, listener] of listeners) process.on(signal, listener);
  return () => {
    for (const [signal, listener] of listeners) process.removeListener(signal, listener);
  };
}

/**
 * `mcp-cancellable proxy <argv>`: returns the exit status (0, 1 or 2), never throws. Protocol
 * messages go to `streams.output` (stdout) only; `out.stderr` gets the diagnostics, `out.stdout`
 * only the help.
 */
export async function runProxyCommand(argv: string[], out: Output, streams: ProxyStreams = {}): Promise<number> {
  try {
    const { listen, rest } = splitListenArgs(dashesBeforeCommand(argv, [...PROXY_VALUE_FLAGS, ...LISTEN_FLAG_NAMES]));
    const options = parseProxyArgs(rest);
    if (options === "help") {
      out.stdout(PROXY_HELP + LISTEN_HELP);
      return 0;
    }
    const upstream = options.upstream;
    const log = (text: string): void => out.stderr(text);
    const own = streams.input === undefined && streams.output === undefined;
    const io = {
      input: streams.input ?? process.stdin,
      output: streams.output ?? process.stdout,
      log,
      ...(own ? { onSignal: processSignals } : {}),
    };
    // --otel: the SDK pieces are loaded now, and only now; a missing one is exit status 2.
    const spanAttributes = listen === undefined ? undefined : (await import("./listen/spans.js")).frontSpanAttributes;
    // An HTTP upstream's --header secrets are taken out of the spans too (an error's text is a span's status).
    const secrets = upstream.kind === "http" ? redactor(headerSecrets(upstream.headers)) : undefined;
    const otel = options.otel ? await (await import("./otel.js")).startOtel(process.env, log, spanAttributes, secrets) : undefined;
    if (otel !== undefined) out.stderr(`mcp-cancellable proxy: --otel: ${otel.description}\n`);
    // The spans are exported by the shutdown itself, within its bound.
    const extras = {
      ...(otel?.observer === undefined ? {} : { observer: otel.observer }),
      ...(otel === undefined ? {} : { flush: (budgetMs: number) => otel.shutdown(budgetMs) }),
    };
    try {
      if (listen !== undefined) return await (await import("./listen/command.js")).runFront(options, listen, log, extras);
      if (upstream.kind === "stdio")
        return await runProxy(options, io, () => stdioUpstream(upstream, options.maxMessageBytes, log), extras);
      const { httpUpstream } = await import("./http.js");
      return await runProxy(options, io, () => httpUpstream(upstream, log), extras);
    } finally {
      await otel?.shutdown(0);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      out.stderr(`mcp-cancellable proxy: ${error.message}\nRun mcp-cancellable proxy --help for the options; see ${docsHint()}\n`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof RecordsFileError || (error as { kind?: unknown }).kind === "missing-sdk") {
      out.stderr(`mcp-cancellable proxy: ${(error as Error).message}\nSee ${docsHint()}\n`);
      return 2;
    }
    const message = error instanceof Error ? error.message : String(error);
    out.stderr(`mcp-cancellable proxy: the proxy itself failed: ${message}\nSee ${docsHint()}\n`);
    if (process.env.MCP_CANCELLABLE_DEBUG !== undefined && error instanceof Error) out.stderr(`${error.stack ?? ""}\n`);
    return 1;
  }
}
