// The proxy's Streamable HTTP upstream, in both eras, through the library's adapter
// (`streamableHttpCancellation`): on 2026-07-28 the cancel closes that request's own response
// stream and sends nothing (rules 6, 28); on a 2025-era connection `notifications/cancelled` is
// POSTed with the session and protocol-version headers, then the stream is closed (rule 40).
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { TransportLike } from "../../adapters/types.js";
import { cancellableFetch, streamableHttpCancellation } from "../../adapters/streamable-http/index.js";
import type { ProxyOptions } from "./args.js";
import type { Upstream } from "./proxy.js";

/** The v2 SDK client package is an optional peer: `--era 2026-07-28` needs it. Exit code 2. */
export class MissingSdkError extends Error {
  override name = "MissingSdkError" as const;
  readonly kind = "missing-sdk" as const;
}

/**
 * A Streamable HTTP server as the proxy's upstream: the v1 SDK transport for the 2025 era (the
 * client's `initialize` makes the session), the v2 one for 2026-07-28; each with
 * `cancellableFetch()`, so one request's stream can be closed without touching the others.
 * @throws {MissingSdkError} `--era 2026-07-28` without `@modelcontextprotocol/client`.
 */
export async function httpUpstream(upstream: Extract<ProxyOptions["upstream"], { kind: "http" }>): Promise<Upstream<TransportLike>> {
  const url = new URL(upstream.url);
  const init = { requestInit: { headers: upstream.headers }, fetch: cancellableFetch() };
  let transport: TransportLike;
  if (upstream.era === "legacy") {
    transport = new StreamableHTTPClientTransport(url, init) as unknown as TransportLike;
  } else {
    let v2: typeof import("@modelcontextprotocol/client");
    try {
      v2 = await import("@modelcontextprotocol/client");
    } catch {
      throw new MissingSdkError("--era 2026-07-28 needs the v2 SDK client: npm install @modelcontextprotocol/client");
    }
    transport = new v2.StreamableHTTPClientTransport(url, init) as unknown as TransportLike;
  }
  return {
    adapter: streamableHttpCancellation(transport),
    ended: () => ({ message: `the connection to ${url.origin} is closed`, code: 0 }),
  };
}
