import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StreamableHTTPClientTransport as StreamableHTTPClientTransportV2 } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ConnectionClosedError, InvalidOptionError, isConnectionClosedError, withCancellation } from "../../src/index.js";
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
      for (const wrap of [
        (t: object) => withCancellation(new Client({ name: "b", version: "1" }), t as never),
        (t: object) => stdioCancellation(t as never),
      ]) {
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
      [
        () =>
          streamableHttpCancellation(new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() }), { flushTimeout: 5 } as never),
        "flushTimeout",
      ],
      [
        () => streamableHttpCancellation(new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() }), { flushTimeoutMs: 20_000 }),
        "flushTimeoutMs",
      ],
      [
        () =>
          streamableHttpCancellation(new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() }), { notificationTimeoutMs: 0 }),
        "notificationTimeoutMs",
      ],
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

describe("usage mistakes around connect() are usage errors, never a closed connection (issue 11 item 5)", () => {
  it("a call before client.connect(mcp.transport): InvalidOptionError saying to connect first, nothing sent", async () => {
    const [clientTransport] = InMemoryTransport.createLinkedPair();
    const records: unknown[] = [];
    const mcp = withCancellation(new Client({ name: "b", version: "1" }), clientTransport, { onRecord: (r) => records.push(r) });
    const error = await mcp.callTool({ name: "x" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(isConnectionClosedError(error)).toBe(false);
    expect((error as InvalidOptionError).option).toBe("client");
    expect((error as Error).message).toContain("not connected yet");
    expect((error as Error).message).toContain("await client.connect(mcp.transport)");
    expect(records).toEqual([]); // nothing was sent, nothing to record
    expect(mcp.pendingCount).toBe(0);
  });

  it("a client connected to the raw transport instead of mcp.transport: InvalidOptionError saying exactly that", async () => {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    serverTransport.onmessage = () => {};
    await serverTransport.start();
    const client = new Client({ name: "b", version: "1" });
    const mcp = withCancellation(client, clientTransport);
    void client.connect(clientTransport, { timeout: 50 }).catch(() => {}); // the mistake
    const error = await mcp.callTool({ name: "x" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).option).toBe("transport");
    expect((error as Error).message).toContain("connected through another transport than mcp.transport");
    expect((error as Error).message).toContain("attachCancellation");
    expect(mcp.pendingCount).toBe(0);
  });

  it("withCancellation on a client whose connect() failed and was not closed: the refusal says to close it first, and after client.close() it wraps", async () => {
    const client = new Client({ name: "b", version: "1" });
    // As the SDK's stdio transport when the command does not exist: start fails; close reports the close.
    const broken: { onclose?: () => void; start(): Promise<void>; send(): Promise<void>; close(): Promise<void> } = {
      start: () => Promise.reject(new Error("spawn report-server ENOENT")),
      send: () => Promise.resolve(),
      close: async () => broken.onclose?.(),
    };
    await expect(client.connect(broken as never)).rejects.toThrow(/ENOENT/);
    let error: unknown;
    try {
      withCancellation(client, InMemoryTransport.createLinkedPair()[0]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as Error).message).toContain("a client.connect() of it failed and it was not closed");
    expect((error as Error).message).toContain("await client.close() first");
    await client.close();
    expect(() => withCancellation(client, InMemoryTransport.createLinkedPair()[0])).not.toThrow();
  });

  it("withCancellation on a client that is already connected: InvalidOptionError naming attachCancellation", async () => {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const server = new McpServer({ name: "s", version: "1" });
    await server.connect(serverTransport);
    const client = new Client({ name: "b", version: "1" });
    await client.connect(clientTransport);
    const [other] = InMemoryTransport.createLinkedPair();
    let error: unknown;
    try {
      withCancellation(client, other);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).option).toBe("client");
    expect((error as Error).message).toContain("already connected");
    expect((error as Error).message).toContain("attachCancellation(client");
    await client.close();
    await server.close();
  });

  it("a call after the connection closed is still a ConnectionClosedError (a real closed connection), not sent", async () => {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const server = new McpServer({ name: "s", version: "1" });
    await server.connect(serverTransport);
    const client = new Client({ name: "b", version: "1" });
    const mcp = withCancellation(client, clientTransport);
    await client.connect(mcp.transport);
    await client.close();
    const error = await mcp.callTool({ name: "x" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionClosedError);
    expect((error as ConnectionClosedError).record).toMatchObject({ requestId: null, outcome: "not-sent" });
    expect((error as Error).message).toContain("reconnect");
    await server.close();
  });
});
