import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as V1Stdio } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as V1Http } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as V2Client, StreamableHTTPClientTransport as V2Http } from "@modelcontextprotocol/client";
import { StdioClientTransport as V2Stdio } from "@modelcontextprotocol/client/stdio";
import { describe, expect, expectTypeOf, it } from "vitest";
import { withCancellation } from "../../src/index.js";
import type { AdapterOrTransport, CancellationAdapter, TransportOf } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import type { StreamableHttpAdapter } from "../../src/adapters/streamable-http/index.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";
import { CancellableMCPServer } from "../../src/integrations/openai-agents/index.js";

// A transport chosen at run time (issue 21, item 2): `url ? streamableHttpCancellation(...) :
// stdioCancellation(...)` is a union of two adapter types, and every entry point takes it, with
// the types from the root entry. Checked by `tsc` (npm test runs it first: a signature that
// refuses the union is a TS2345 here); the bodies build the objects but connect nothing.

const pick = (url: string | undefined) =>
  url === undefined
    ? stdioCancellation(new V1Stdio({ command: process.execPath, args: ["-e", ""] }))
    : streamableHttpCancellation(new V1Http(new URL(url), { fetch: cancellableFetch() }));

const pickV2 = (url: string | undefined) =>
  url === undefined
    ? stdioCancellation(new V2Stdio({ command: process.execPath, args: ["-e", ""] }))
    : streamableHttpCancellation(new V2Http(new URL(url)));

describe("an adapter chosen at run time (a union) in every entry point", () => {
  it("the union is an AdapterOrTransport and a CancellationAdapter (root entry types); TransportOf names the transports under it", () => {
    const adapter = pick(undefined);
    expectTypeOf(adapter).toEqualTypeOf<CancellationAdapter<V1Stdio> | StreamableHttpAdapter<V1Http>>();
    expectTypeOf(adapter).toMatchTypeOf<AdapterOrTransport>();
    expectTypeOf(adapter).toMatchTypeOf<CancellationAdapter>();
    expectTypeOf<TransportOf<typeof adapter>>().toEqualTypeOf<V1Stdio | V1Http>();
    expectTypeOf<TransportOf<V2Http>>().toEqualTypeOf<V2Http>(); // a plain transport is its own
    // a variable typed with the root entry's name holds either
    const named: CancellationAdapter = Math.random() < 2 ? pick(undefined) : pick("http://127.0.0.1:1/mcp");
    expect(typeof named.cancel).toBe("function");
  });

  it("withCancellation: v1 and v2 unions; mcp.transport is the union of the SDK transports, and the client connects with it", () => {
    for (const url of [undefined, "http://127.0.0.1:1/mcp"]) {
      const client = new V1Client({ name: "t", version: "1" });
      const mcp = withCancellation(client, pick(url));
      expectTypeOf(mcp.transport).toEqualTypeOf<V1Stdio | V1Http>();
      const connect = () => client.connect(mcp.transport); // type-checks: both are SDK transports
      void connect;
      expect(mcp.transport).toBeDefined();
      const v2 = new V2Client({ name: "t", version: "1" });
      const mcp2 = withCancellation(v2, pickV2(url));
      expectTypeOf(mcp2.transport).toEqualTypeOf<V2Stdio | V2Http>();
      expect(mcp2.records()).toEqual([]);
    }
  });

  it("cancellableTransport (the AI SDK) takes the union", () => {
    for (const url of [undefined, "http://127.0.0.1:1/mcp"]) {
      expect(cancellableTransport(pick(url)).records()).toEqual([]);
      expect(cancellableTransport(pickV2(url), { timeoutMs: 30_000 }).pendingCount).toBe(0);
    }
    // @ts-expect-error an SDK client is not a transport (and says so at run time too)
    expect(() => cancellableTransport(new V1Client({ name: "t", version: "1" }))).toThrow(/transport/);
  });

  it("the OpenAI Agents server's create() returns the union", () => {
    const server = new CancellableMCPServer({
      name: "chosen",
      create: () => ({ client: new V2Client({ name: "t", version: "1" }), transport: pickV2(process.env.NO_SUCH_URL_SET) }),
    });
    expect(server.name).toBe("chosen");
    expect(server.client).toBeNull();
  });
});
