import { stdioCancellation } from "../../adapters/stdio/index.js";
import { ChildStdioTransport } from "../stdio-transport.js";
import type { StdioTarget } from "../stdio-transport.js";
import type { Upstream } from "./proxy.js";

/** A stdio server as the proxy's upstream: the child process, cancels as `notifications/cancelled` (rules 6, 31). */
export function stdioUpstream(target: StdioTarget): Upstream<ChildStdioTransport> {
  // The server's stderr is the proxy's own (diagnostics never reach the client's stdout).
  const child = new ChildStdioTransport(target, { stderr: "inherit" });
  return {
    adapter: stdioCancellation(child),
    onInvalid(handler) {
      child.oninvalid = handler;
    },
    ended() {
      const exit = child.exit;
      if (exit === undefined) return { message: "the server is stopped", code: 1 };
      if (exit.signal !== null) return { message: `the server was ended by ${exit.signal}`, code: 1 };
      return { message: `the server exited with code ${String(exit.code)}`, code: exit.code === 0 ? 0 : 1 };
    },
  };
}
