import { describe, expect, it } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { attachCancellation, withCancellation } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";

// An outside tester's: withCancellation(client, mcp.transport), a handle's transport wrapped again,
// was accepted on stdio and in memory, and no call of the second handle ever reached the server
// (the first wire took its requests for settled calls of its own and dropped them): a 100 ms
// tool "timed out" with a record saying it was cancelled and may have run; a call without a limit
// never settled. Over Streamable HTTP it was refused, but with a message naming the adapter.

const CARRIES =
  /withCancellation: this transport carries the library already \(it is a handle's mcp\.transport, or a transport attachCancellation decorated\)/;

async function connected() {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  let received = 0;
  const server = new McpServer({ name: "s", version: "1.0.0" });
  server.registerTool("echo", {}, () => {
    received++;
    return { content: [{ type: "text" as const, text: "echo" }] };
  });
  await server.connect(serverSide);
  const client = new ClientV1({ name: "c", version: "1.0.0" });
  return { client, clientSide, server, received: () => received };
}

describe("a transport the library is in the path of is never wrapped again", () => {
  it("a handle's mcp.transport, for the same client, another client, or inside an adapter: refused naming it; the first handle works on", async () => {
    const { client, clientSide, server, received } = await connected();
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
    expect(received()).toBe(1);
    expect(mcp.records().map((record) => record.status)).toEqual(["succeeded"]);
    await client.close();
    await server.close();
  });

  it("a transport attachCancellation decorated in place: refused; the attached client's calls go on", async () => {
    const { client, clientSide, server, received } = await connected();
    await client.connect(clientSide);
    const mcp = attachCancellation(client);
    expect(() => withCancellation(new ClientV1({ name: "other", version: "1.0.0" }), clientSide)).toThrow(CARRIES);
    await client.callTool({ name: "echo", arguments: {} });
    expect(received()).toBe(1);
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
});
