// SDK clients (v1 and v2) connected over Streamable HTTP through the library's adapter.
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { withCancellation } from "../../src/index.js";
import type { Anomaly, CancellationOptions } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import type { StreamableHttpCancellationOptions } from "../../src/adapters/streamable-http/index.js";

/** A v1 `Client` over the v1 transport created with `cancellableFetch()`. */
export async function connectV1(url: URL, options: CancellationOptions = {}, adapterOptions: StreamableHttpCancellationOptions = {}) {
  const transport = new TransportV1(url, { fetch: cancellableFetch() });
  const client = new ClientV1({ name: "http-test", version: "1.0.0" });
  const errors: Error[] = [];
  const anomalies: Anomaly[] = [];
  client.onerror = (error) => errors.push(error);
  const adapter = streamableHttpCancellation(transport, adapterOptions);
  const mcp = withCancellation(client, adapter, { onAnomaly: (a) => anomalies.push(a), ...options });
  await client.connect(mcp.transport);
  return { client, transport, adapter, mcp, errors, anomalies, close: () => client.close() };
}

/** A v2 `Client` (2025-era by default, or pinned to 2026-07-28) over the v2 transport as it is. */
export async function connectV2(
  url: URL,
  {
    pin = false,
    fetch,
    answersInput = false,
    ...options
  }: CancellationOptions & { pin?: boolean; fetch?: typeof globalThis.fetch; answersInput?: boolean } = {},
  adapterOptions: StreamableHttpCancellationOptions = {},
) {
  // `fetch`: the transport's own fetch, as a user passes one (the library cannot see its bodies written).
  const transport = new TransportV2(url, fetch === undefined ? undefined : { fetch });
  const client = new ClientV2(
    { name: "http-test", version: "1.0.0" },
    {
      ...(pin ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
      // `answersInput`: the client answers a server's elicitation itself (a handler of its own).
      ...(answersInput ? { capabilities: { elicitation: { form: {} } } } : {}),
    },
  );
  if (answersInput) client.setRequestHandler("elicitation/create", async () => ({ action: "decline" as const }));
  const errors: Error[] = [];
  const anomalies: Anomaly[] = [];
  client.onerror = (error) => errors.push(error);
  const adapter = streamableHttpCancellation(transport, adapterOptions);
  const mcp = withCancellation(client, adapter, { onAnomaly: (a) => anomalies.push(a), ...options });
  await client.connect(mcp.transport);
  return { client, transport, adapter, mcp, errors, anomalies, close: () => client.close() };
}
