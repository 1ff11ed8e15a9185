// `mcp-cancellable proxy --listen ...`: the HTTP front as a command. Runs until SIGTERM, SIGINT or
// SIGHUP, then drains (no new sessions or requests, what is in flight gets `--drain-ms`, the rest
// is cancelled upstream) and resolves with exit status 0. A second signal during the drain ends
// the process at once (status 1), after stopping every stdio server's process group.
import type { TransportLike } from "../../../adapters/types.js";
import type { ProxyOptions } from "../args.js";
import type { EndSignal, ProxyExtras, Upstream } from "../session.js";
import { stdioUpstream } from "../upstream.js";
import type { ListenOptions } from "./args.js";
import { startFront } from "./front.js";

/** The upstream maker of the front: a new stdio server per 2025-era session and one for 2026-07-28 traffic, or HTTP connections to `--url`. */
export function frontUpstreams(
  options: ProxyOptions,
  log: (text: string) => void,
): (era: "legacy" | "2026-07-28") => Promise<Upstream<TransportLike>> | undefined {
  const upstream = options.upstream;
  if (upstream.kind === "stdio") return async () => stdioUpstream(upstream, options.maxMessageBytes, log);
  return (era) => {
    // 2026-07-28 traffic needs an upstream that speaks it (--era 2026-07-28); 2025-era sessions
    // use the 2025 handshake on any Streamable HTTP server (a 2026-07-28 server keeps serving it).
    if (era === "2026-07-28" && upstream.era !== "2026-07-28") return undefined;
    return import("../http.js").then(({ httpUpstream }) => httpUpstream({ ...upstream, era }, log));
  };
}

/** Runs the front until a signal ends it; resolves with the exit status. */
export async function runFront(
  options: ProxyOptions,
  listen: ListenOptions,
  log: (text: string) => void,
  extras: ProxyExtras,
): Promise<number> {
  const front = await startFront(options, listen, {
    log,
    observer: extras.observer,
    makeUpstream: frontUpstreams(options, log),
    flush: extras.flush,
  });
  let finished!: () => void;
  const drained = new Promise<void>((resolve) => (finished = resolve));
  return new Promise<number>((resolve) => {
    let signalled = 0;
    const onSignal = (signal: EndSignal): void => {
      signalled++;
      if (signalled > 1) {
        log(`mcp-cancellable proxy [${listen.replica}]: ${signal} again: exiting now\n`);
        finished();
        resolve(1);
        return;
      }
      log(`mcp-cancellable proxy [${listen.replica}]: ${signal}: draining\n`);
      void front.drain(signal).then(() => {
        finished();
        resolve(0);
      });
    };
    // The front owns these signals while it runs: the executable's own handlers (exit at once)
    // are set aside and put back once the drain is over.
    const setAside = SIGNALS.map((name) => [name, process.listeners(name)] as const);
    for (const [name, listeners] of setAside) for (const listener of listeners) process.removeListener(name, listener);
    for (const name of SIGNALS) process.on(name, onSignal);
    void drained.then(() => {
      for (const name of SIGNALS) process.removeListener(name, onSignal);
      for (const [name, listeners] of setAside) for (const listener of listeners) process.on(name, listener as () => void);
    });
  });
}

const SIGNALS: readonly EndSignal[] = ["SIGTERM", "SIGINT", "SIGHUP"];
