import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { replaceTransportFetch } from "../../src/sdk/private.js";
import { startV1, type TestServer } from "../http/servers.js";

// Canary for the one write into an SDK's private field as attachCancellation uses it on a v1
// transport created without cancellableFetch() (issue 21, item 6): the v1 transport reads `_fetch`
// at each request, so a fetch written after it was created and connected carries every request
// from then on. If a release captured the fetch at construction instead, attach on such a transport
// would claim a stream close it cannot do: this fails first, naming the field.

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

describe("v1 StreamableHTTPClientTransport._fetch, written after connect", () => {
  it("carries the next requests (POSTs of tools/call), and the old fetch no longer does", async () => {
    const server: TestServer = await startV1({ stateful: true });
    cleanups.push(() => server.stop());
    const transport = new StreamableHTTPClientTransport(server.url);
    const client = new Client({ name: "canary", version: "1.0.0" });
    await client.connect(transport);
    cleanups.push(() => client.close());
    const seen: string[] = [];
    const wrote = replaceTransportFetch(transport, (current) => {
      expect(current, "v1 @modelcontextprotocol/sdk: StreamableHTTPClientTransport._fetch is set without a fetch option").toBeUndefined();
      return (url: string | URL, init?: RequestInit) => {
        seen.push(
          `${init?.method ?? "GET"} ${typeof init?.body === "string" ? (JSON.parse(init.body) as { method?: string }).method : ""}`,
        );
        return globalThis.fetch(url, init);
      };
    });
    expect(wrote).toBe(true);
    await client.callTool({ name: "slow", arguments: { ms: 1 } });
    expect(seen, "v1 @modelcontextprotocol/sdk: StreamableHTTPClientTransport no longer reads _fetch at each request").toContain(
      "POST tools/call",
    );
  });
});
