import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { afterEach, describe, expect, it } from "vitest";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ConnectionClosedError, withCancellation } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { startV1 } from "../http/servers.js";

// A transport whose `send` rejects a request with an error that cannot be read (a `cause` or
// `message` getter that throws, a message that cannot be made a string, a revoked Proxy): the call
// settles once all the same, a ConnectionClosedError never sent, and nothing is an unhandled
// rejection. An outside tester's: the error's text was read unguarded where the call settles, the
// throw lost the call (it never settled, past its timeouts) and escaped as an unhandled rejection.

function oddErrors(): Array<[string, () => unknown]> {
  const withGetter = (key: "cause" | "message"): Error => {
    const error = new Error("socket refused");
    Object.defineProperty(error, key, {
      get() {
        throw new Error(`${key} getter threw`);
      },
    });
    return error;
  };
  const unprintable = new Error("x");
  Object.defineProperty(unprintable, "message", {
    value: {
      toString() {
        throw new Error("toString threw");
      },
    },
  });
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  return [
    ["a cause getter that throws", () => withGetter("cause")],
    ["a message getter that throws", () => withGetter("message")],
    ["a message that cannot be made a string", () => unprintable],
    ["a revoked Proxy", () => revoked.proxy],
  ];
}

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

describe("a transport's send that rejects with an error that cannot be read: the call settles once", () => {
  for (const [name, make] of oddErrors()) {
    it(name, async () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
      process.on("unhandledRejection", onUnhandled);
      cleanup.push(async () => process.off("unhandledRejection", onUnhandled));
      const server = new McpServer({ name: "s", version: "1" });
      server.tool("fast", async () => ({ content: [{ type: "text", text: "ok" }] }));
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      cleanup.push(() => server.close());
      const send = clientSide.send.bind(clientSide);
      clientSide.send = (message, options) =>
        "method" in message && message.method === "tools/call" ? Promise.reject(make()) : send(message, options);
      const transport: Transport = clientSide;
      const client = new Client({ name: "c", version: "1" });
      const mcp = withCancellation(client, transport, { timeoutMs: 2_000 });
      await client.connect(mcp.transport);
      cleanup.push(() => client.close());
      let settled = 0;
      const error = await mcp.callTool({ name: "fast", arguments: {} }).then(
        () => {
          settled++;
          return undefined;
        },
        (e: unknown) => {
          settled++;
          return e;
        },
      );
      expect(error).toBeInstanceOf(ConnectionClosedError);
      expect((error as ConnectionClosedError).record).toMatchObject({ status: "cancelled", outcome: "not-sent" });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(settled).toBe(1);
      expect(unhandled).toEqual([]);
      expect(mcp.pendingCount).toBe(0);
      // The connection is fine: the next request is answered.
      await expect(client.listTools()).resolves.toMatchObject({ tools: [{ name: "fast" }] });
    });
  }
});

// The same over Streamable HTTP: the fetch given to cancellableFetch rejects the tools/call POST
// with an error that cannot be read. An outside tester's: the adapter's look at the error (did the
// request leave?) threw, and the call failed with that internal TypeError instead of its own error.
describe("Streamable HTTP: a fetch that rejects with an error that cannot be read: the call settles ConnectionClosedError", () => {
  const cases: Array<[string, () => unknown]> = [
    ...oddErrors(),
    [
      "fetch failed, its cause's code a getter that throws",
      () =>
        new TypeError("fetch failed", {
          cause: Object.defineProperty({}, "code", {
            get() {
              throw new Error("code getter threw");
            },
          }),
        }),
    ],
  ];
  for (const [name, make] of cases) {
    it(name, async () => {
      const server = await startV1({ stateful: true });
      cleanup.push(() => server.stop());
      const fetch = cancellableFetch({
        fetch: (url, init) =>
          typeof init?.body === "string" && init.body.includes('"tools/call"') ? Promise.reject(make()) : globalThis.fetch(url, init),
      });
      const client = new Client({ name: "c", version: "1" });
      const mcp = withCancellation(client, streamableHttpCancellation(new StreamableHTTPClientTransport(server.url, { fetch })), {
        timeoutMs: 2_000,
      });
      client.onerror = () => {};
      await client.connect(mcp.transport);
      cleanup.push(() => client.close());
      const error = await mcp.callTool({ name: "echo", arguments: { text: "x" } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectionClosedError);
      expect(mcp.pendingCount).toBe(0);
    });
  }
});
