import { describe, expect, it } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { attachCancellation, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { CancellableMCPServer } from "../../src/integrations/openai-agents/index.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";

// An outside tester's: withCancellation(client, mcp.transport), a handle's transport wrapped again,
// was accepted on stdio and in memory, and no call of the second handle ever reached the server
// (the first wire took its requests for settled calls of its own and dropped them): a 100 ms
// tool "timed out" with a record saying it was cancelled and may have run; a call without a limit
// never settled. Over Streamable HTTP it was refused, but with a message naming the adapter.

const CARRIES = /withCancellation: this transport carries the library already \(a handle's mcp\.transport/;
const DECORATED = /^withCancellation: attachCancellation decorated this transport in place/;

let received = 0;

/** A v1 server on an in-memory pair, counting the tool calls it received (all servers together). */
async function serving() {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = new McpServer({ name: "s", version: "1.0.0" });
  server.registerTool("echo", {}, () => {
    received++;
    return { content: [{ type: "text" as const, text: "echo" }] };
  });
  await server.connect(serverSide);
  return { clientSide, server };
}

async function connected() {
  received = 0;
  const { clientSide, server } = await serving();
  const client = new ClientV1({ name: "c", version: "1.0.0" });
  return { client, clientSide, server };
}

describe("a transport the library is in the path of is never wrapped again", () => {
  it("a handle's mcp.transport, for the same client, another client, or inside an adapter: refused naming it; the first handle works on", async () => {
    const { client, clientSide, server } = await connected();
    const mcp = withCancellation(client, clientSide);
    const other = new ClientV1({ name: "other", version: "1.0.0" });
    for (const [who, transport] of [
      [client, mcp.transport],
      [other, mcp.transport],
      [other, { transport: mcp.transport, cancel: () => "none" }],
    ] as const) {
      expect(() => withCancellation(who, transport as never)).toThrow(
        expect.objectContaining({ name: "InvalidOptionError", option: "transport" }),
      );
      expect(() => withCancellation(who, transport as never)).toThrow(CARRIES);
    }
    await client.connect(mcp.transport);
    await mcp.callTool({ name: "echo", arguments: {} });
    expect(received).toBe(1);
    expect(mcp.records().map((record) => record.status)).toEqual(["succeeded"]);
    await client.close();
    await server.close();
  });

  it("a transport attachCancellation decorated in place: refused; the attached client's calls go on", async () => {
    const { client, clientSide, server } = await connected();
    await client.connect(clientSide);
    const mcp = attachCancellation(client);
    expect(() => withCancellation(new ClientV1({ name: "other", version: "1.0.0" }), clientSide)).toThrow(DECORATED);
    await client.callTool({ name: "echo", arguments: {} });
    expect(received).toBe(1);
    expect(mcp.records()).toHaveLength(1);
    await client.close();
    await server.close();
  });

  it("Streamable HTTP: the second wrap is named as such, not as a transport without its adapter", () => {
    const transport = new StreamableHTTPClientTransport(new URL("http://127.0.0.1:9/mcp"), { fetch: cancellableFetch() });
    const mcp = withCancellation(new ClientV1({ name: "c", version: "1.0.0" }), streamableHttpCancellation(transport));
    const refused = (() => {
      try {
        withCancellation(new ClientV1({ name: "other", version: "1.0.0" }), mcp.transport);
      } catch (error) {
        return error as Error;
      }
      return undefined;
    })();
    expect(refused?.message).toMatch(CARRIES);
    expect(refused?.message).not.toMatch(/needs streamableHttpCancellation/);
  });

  it("an adapter around a handle's mcp.transport: refused by the adapter, naming the second wrap (not its fetch)", () => {
    const [clientSide] = InMemoryTransport.createLinkedPair();
    const mcp = withCancellation(new ClientV1({ name: "c", version: "1.0.0" }), clientSide);
    expect(() => stdioCancellation(mcp.transport)).toThrow(/^stdioCancellation: this transport carries the library already/);
    const http = withCancellation(
      new ClientV1({ name: "h", version: "1.0.0" }),
      streamableHttpCancellation(new StreamableHTTPClientTransport(new URL("http://127.0.0.1:9/mcp"), { fetch: cancellableFetch() })),
    );
    expect(() => streamableHttpCancellation(http.transport)).toThrow(
      /^streamableHttpCancellation: this transport carries the library already/,
    );
  });
});

// A second outside tester's: attachCancellation, client.close(), then withCancellation on the same
// client with a new transport was accepted; the client's own callTool (a framework's) then followed
// the new connection through the attach's wire over the handle's, and never reached the server.
/** A client attached on one server's transport, closed, and a second server to connect it to next. */
async function attachedThenClosed() {
  const { client, clientSide, server } = await connected();
  await client.connect(clientSide);
  const mcp = attachCancellation(client);
  await client.callTool({ name: "echo", arguments: {} });
  await client.close();
  return { client, server, mcp, next: await serving() };
}

describe("a client attachCancellation carries is never wrapped again", () => {
  it("withCancellation of it after its close: refused; connected again as it is, the attach follows and its calls arrive", async () => {
    const { client, server, mcp, next } = await attachedThenClosed();
    expect(() => withCancellation(client, next.clientSide)).toThrow(
      expect.objectContaining({
        name: "InvalidOptionError",
        option: "client",
        message: expect.stringMatching(/^withCancellation: this client carries attachCancellation/),
      }),
    );
    await client.connect(next.clientSide);
    await client.callTool({ name: "echo", arguments: {} });
    expect(received).toBe(2);
    expect(mcp.records().map((record) => record.status)).toEqual(["succeeded", "succeeded"]);
    await client.close();
    await server.close();
    await next.server.close();
  });

  it("connected through another handle's mcp.transport: its own calls are refused, nothing sent", async () => {
    const { client, server, next } = await attachedThenClosed();
    const other = withCancellation(new ClientV1({ name: "other", version: "1.0.0" }), next.clientSide);
    await client.connect(other.transport);
    await expect(client.callTool({ name: "echo", arguments: {} })).rejects.toMatchObject({
      name: "InvalidOptionError",
      option: "client",
      message: expect.stringMatching(/now connected through a transport the library is already in the path of/),
    });
    expect(received).toBe(1); // the first connection's call only
    await client.close();
    await server.close();
    await next.server.close();
  });

  it("the Agents server's create() returning such a client: connect() refuses it", async () => {
    const { client, server, next } = await attachedThenClosed();
    const agents = new CancellableMCPServer({
      name: "agents",
      create: () => ({ client: client as never, transport: next.clientSide as never }),
    });
    await expect(agents.connect()).rejects.toThrow(/^CancellableMCPServer create\(\): this client carries attachCancellation/);
    await server.close();
    await next.server.close();
  });
});

// A third outside tester's: the AI SDK's cancellableTransport (a transport of the SDK's shape with
// the library's own runner in its path) was taken by withCancellation and attachCancellation: the
// outer wire's notifications/cancelled went into the inner one, which drops a cancel for a request
// of its own call still pending, and the server ran the tool to its end while the record said the
// cancel went. And a transport an attach had decorated (its client since closed) was refused
// to a new client's attach, as if it were a handle's transport.
describe("the AI SDK's transport, and a transport a closed attach decorated", () => {
  it("cancellableTransport: refused by withCancellation and by attachCancellation of a client connected through it", async () => {
    received = 0;
    const { clientSide, server } = await serving();
    const viaAiSdk = cancellableTransport(clientSide);
    expect(() => withCancellation(new ClientV1({ name: "c", version: "1.0.0" }), viaAiSdk as never)).toThrow(
      /^withCancellation: this transport carries the library already \(a handle's mcp\.transport, the AI SDK's cancellableTransport/,
    );
    const client = new ClientV1({ name: "framework", version: "1.0.0" });
    await client.connect(viaAiSdk as never);
    expect(() => attachCancellation(client)).toThrow(
      expect.objectContaining({
        option: "client",
        message: expect.stringMatching(
          /^attachCancellation: the client is connected through a transport the library is already in the path of/,
        ),
      }),
    );
    await client.close();
    await server.close();
  });

  it("a new client on the transport a closed client's attach decorated is attached anew, its calls arrive; withCancellation of it says why not", async () => {
    // A transport that can start again (as the SDK's stdio transport does, which the raw SDK then
    // answers with an unhandled "write after end" of its own): a new server on each start.
    let current: Awaited<ReturnType<typeof serving>> | undefined;
    const started: Array<Awaited<ReturnType<typeof serving>>> = [];
    const transport: Record<string, unknown> & { onmessage?: (m: unknown) => void; onclose?: () => void } = {
      async start() {
        current = await serving();
        started.push(current);
        current.clientSide.onmessage = (message) => transport.onmessage?.(message);
        current.clientSide.onclose = () => transport.onclose?.();
        await current.clientSide.start();
      },
      send: (message: never) => current!.clientSide.send(message),
      close: () => current!.clientSide.close(),
    };
    received = 0;
    const first = new ClientV1({ name: "first", version: "1.0.0" });
    await first.connect(transport as never);
    attachCancellation(first);
    await first.close();
    const second = new ClientV1({ name: "second", version: "1.0.0" });
    await second.connect(transport as never);
    const mcp = attachCancellation(second, { timeoutMs: 5_000 });
    await second.callTool({ name: "echo", arguments: {} });
    expect(received).toBe(1);
    expect(mcp.records().map((record) => record.status)).toEqual(["succeeded"]);
    expect(() => withCancellation(new ClientV1({ name: "third", version: "1.0.0" }), transport as never)).toThrow(DECORATED);
    await second.close();
    for (const { server } of started) await server.close();
    expect(started).toHaveLength(2);
  });
});

describe("one SDK transport given to two clients' wrappers (an outside tester's: the second took the first one's answers)", () => {
  it("a second wrapper over a transport in use is refused, naming `transport`; the first client's calls are answered", async () => {
    const { client, clientSide } = await connected();
    const mcp = withCancellation(client, stdioCancellation(clientSide as never));
    await client.connect(mcp.transport);
    const other = new ClientV1({ name: "c2", version: "1.0.0" });
    expect(() => withCancellation(other, stdioCancellation(clientSide as never))).toThrow(
      expect.objectContaining({ option: "transport", message: expect.stringContaining("in use by another client's wrapper") }),
    );
    expect(() => withCancellation(other, clientSide)).toThrow(expect.objectContaining({ option: "transport" }));
    await expect(mcp.callTool({ name: "echo", arguments: {} })).resolves.toMatchObject({ content: [{ text: "echo" }] });
    expect(received).toBe(1);
    await client.close();
    // Closed, the transport is free again (whatever an SDK transport makes of a second start).
    expect(() => withCancellation(other, clientSide)).not.toThrow();
  });

  it("two wrappers made before either connected: the earlier one's connect is refused (the later holds the transport), the later one works", async () => {
    const { client, clientSide } = await connected();
    const first = withCancellation(client, clientSide);
    const other = new ClientV1({ name: "c2", version: "1.0.0" });
    const second = withCancellation(other, clientSide);
    await expect(client.connect(first.transport)).rejects.toMatchObject({
      option: "transport",
      message: expect.stringContaining("given to another client's wrapper after this one"),
    });
    await other.connect(second.transport);
    // The refused client's SDK still holds its view: nothing of it goes out on the transport (an
    // outside tester's: it did, and the other client's call resolved with its answer).
    const stray = await client.listTools().catch((e: unknown) => e);
    expect(stray).toBeInstanceOf(Error);
    await expect(first.callTool({ name: "echo", arguments: {} })).rejects.toBeInstanceOf(Error);
    await expect(second.callTool({ name: "echo", arguments: {} })).resolves.toMatchObject({ content: [{ text: "echo" }] });
    expect(received).toBe(1);
    // The refused client closed: the transport is the other's, and stays open for it.
    await client.close();
    await expect(second.callTool({ name: "echo", arguments: {} })).resolves.toMatchObject({ content: [{ text: "echo" }] });
    expect(received).toBe(2);
    await other.close();
  });
});
