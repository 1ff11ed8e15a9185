import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StreamableHTTPClientTransport as StreamableHTTPClientTransportV2 } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { ConnectionClosedError, InvalidOptionError, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";

// Mistakes a new user made with the package (a fresh-user trial), each refused with an error
// that names what to do, before anything is sent.

const url = new URL("http://127.0.0.1:9/mcp"); // never contacted: every case fails before a request

describe("a Streamable HTTP transport without the HTTP adapter is refused", () => {
  const transports = {
    "v1 transport": () => new StreamableHTTPClientTransport(url),
    "v2 transport": () => new StreamableHTTPClientTransportV2(url),
  };
  for (const [name, make] of Object.entries(transports)) {
    it(`${name} passed as a plain transport, or to stdioCancellation`, () => {
      for (const wrap of [(t: object) => withCancellation(new Client({ name: "b", version: "1" }), t as never), (t: object) => stdioCancellation(t as never)]) {
        let error: unknown;
        try {
          wrap(make());
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(InvalidOptionError);
        expect((error as InvalidOptionError).option).toBe("transport");
        expect((error as Error).message).toContain("streamableHttpCancellation");
      }
    });
  }
});

describe("the HTTP helpers check their options like the rest of the library", () => {
  it("unknown or wrong options of streamableHttpCancellation and cancellableFetch name the option", () => {
    const cases: Array<[() => unknown, string]> = [
      [() => streamableHttpCancellation(new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() }), { flushTimeout: 5 } as never), "flushTimeout"],
      [() => streamableHttpCancellation(new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() }), { flushTimeoutMs: 20_000 }), "flushTimeoutMs"],
      [() => cancellableFetch({ typo: 1 } as never), "typo"],
      [() => cancellableFetch({ fetch: 5 } as never), "fetch"],
    ];
    for (const [make, option] of cases) {
      let error: unknown;
      try {
        make();
      } catch (e) {
        error = e;
      }
      expect(error, option).toBeInstanceOf(InvalidOptionError);
      expect((error as InvalidOptionError).option).toBe(option);
      expect((error as Error).message).toContain(`"${option}"`);
    }
  });
});

describe("calls while the connection is not open", () => {
  it("before client.connect(mcp.transport): a ConnectionClosedError saying it was not sent and how to connect", async () => {
    const [clientTransport] = InMemoryTransport.createLinkedPair();
    const mcp = withCancellation(new Client({ name: "b", version: "1" }), clientTransport);
    const error = await mcp.callTool({ name: "x" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionClosedError);
    expect((error as Error).message).toContain("client.connect(mcp.transport)");
    expect((error as ConnectionClosedError).record).toMatchObject({ requestId: null, outcome: "not-sent" });
    expect(mcp.pendingCount).toBe(0);
  });

  it("a client connected to the raw transport instead of mcp.transport: refused, not silently unguarded", async () => {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    serverTransport.onmessage = () => {};
    await serverTransport.start();
    const client = new Client({ name: "b", version: "1" });
    const mcp = withCancellation(client, clientTransport);
    void client.connect(clientTransport, { timeout: 50 }).catch(() => {}); // the mistake
    await expect(mcp.callTool({ name: "x" })).rejects.toBeInstanceOf(ConnectionClosedError);
  });
});
