import { UsageError } from "../args.js";
import type { TransportLike } from "../../adapters/types.js";
import type { ProxyOptions } from "./args.js";
import type { Upstream } from "./proxy.js";

/** A Streamable HTTP server as the proxy's upstream. */
export function httpUpstream(_upstream: Extract<ProxyOptions["upstream"], { kind: "http" }>): Upstream<TransportLike> {
  throw new UsageError("--url is not supported yet");
}
