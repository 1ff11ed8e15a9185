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

/**
 * Runs the front until a signal ends it; resolves with the exit status. The signals are the
 * front's from before it starts: one that comes while it starts (its shared stdio server
 * starting, its socket binding, the "listening on" line just written) is held and drains it as
 * soon as it is up (an outside tester's: a SIGTERM within 3 ms of that line killed the process by
 * the signal's default action, and the stdio server outlived it).
 */
export async function runFront(
  options: ProxyOptions,
  listen: ListenOptions,
  log: (text: string) => void,
  extras: ProxyExtras,
): Promise<number> {
  let front: Awaited<ReturnType<typeof startFront>> | undefined;
  let heldSignal: EndSignal | undefined;
  let signalled = 0;
  let firstSignal: EndSignal | undefined;
  let finished!: () => void;
  let exit!: (status: number) => void;
  const status = new Promise<number>((resolve) => (exit = resolve));
  const drained = new Promise<void>((resolve) => (finished = resolve));
  const drain = (running: NonNullable<typeof front>, signal: EndSignal): void => {
    void running.drain(signal).then(() => {
      finished();
      exit(0);
    });
  };
  const onSignal = (signal: EndSignal): void => {
    signalled++;
    if (signalled > 1) {
      // Both named: "SIGINT again" after a SIGTERM said a signal came twice that came once.
      log(`mcp-cancellable proxy [${listen.replica}]: a second signal (${signal}, after ${firstSignal}) while draining: exiting now\n`);
      finished();
      exit(1);
      return;
    }
    firstSignal = signal;
    log(`mcp-cancellable proxy [${listen.replica}]: ${signal}: draining\n`);
    if (front === undefined) heldSignal = signal;
    else drain(front, signal);
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
  try {
    front = await startFront(options, listen, {
      log,
      observer: extras.observer,
      makeUpstream: frontUpstreams(options, log),
      flush: extras.flush,
    });
  } catch (error) {
    finished(); // the signals go back to the executable
    throw error;
  }
  // A signal held while it started drains it now (a second one meanwhile has ended it already).
  if (heldSignal !== undefined && signalled === 1) drain(front, heldSignal);
  return status;
}

const SIGNALS: readonly EndSignal[] = ["SIGTERM", "SIGINT", "SIGHUP"];
