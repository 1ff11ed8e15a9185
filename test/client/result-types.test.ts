import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ListToolsResultSchema } from "@modelcontextprotocol/sdk/types.js";
import type {
  CallToolResult as V1CallToolResult,
  ListToolsResult as V1ListToolsResult,
  ReadResourceResult as V1ReadResourceResult,
} from "@modelcontextprotocol/sdk/types.js";
import { Client as V2Client } from "@modelcontextprotocol/client";
import type { CallToolResult as V2CallToolResult, ListToolsResult as V2ListToolsResult } from "@modelcontextprotocol/client";
import { describe, expectTypeOf, it } from "vitest";
import { withCancellation } from "../../src/index.js";
import type { ClientLike, ToolResult } from "../../src/index.js";

// Results carry the SDK's own types, from whichever SDK line the client is (issue 13, item 4),
// with neither SDK a dependency of the library: the types are read from the client's own
// methods. Checked by `tsc` (npm test runs it first); the bodies never run a call.

const transport = () => InMemoryTransport.createLinkedPair()[0];

describe("result types", () => {
  it("v1 client: callTool is the v1 CallToolResult (content usable without a cast); request is the method's result", () => {
    const mcp = withCancellation(new V1Client({ name: "t", version: "1" }), transport());
    expectTypeOf<Awaited<ReturnType<typeof mcp.callTool>>>().toEqualTypeOf<V1CallToolResult>();
    const typed = async () => {
      const result = await mcp.callTool({ name: "x" });
      const first = result.content[0];
      if (first?.type === "text") expectTypeOf(first.text).toEqualTypeOf<string>();
      expectTypeOf(await mcp.request({ method: "tools/list" })).toEqualTypeOf<V1ListToolsResult>();
      expectTypeOf(await mcp.request({ method: "resources/read", params: { uri: "a://b" } })).toEqualTypeOf<V1ReadResourceResult>();
      // a result schema types (and, on v1, validates) the result
      expectTypeOf(await mcp.request({ method: "tools/list" }, { resultSchema: ListToolsResultSchema })).toEqualTypeOf<V1ListToolsResult>();
      // methods without a typed SDK method: a plain object, or your own type
      expectTypeOf(await mcp.request({ method: "x/custom" })).toEqualTypeOf<Record<string, unknown>>();
      expectTypeOf(await mcp.request<{ rows: number }>({ method: "x/custom" })).toEqualTypeOf<{ rows: number }>();
      // a misspelled key is an error, as on the SDK's own callTool (found from outside: `argumnets`)
      // @ts-expect-error `argumnets` is not a tools/call param
      await mcp.callTool({ name: "x", argumnets: { quarter: "Q3" } });
      // With exactOptionalPropertyTypes (this repository's tsconfig), optional params and options
      // take `undefined` as the SDK's callTool does and the runtime does (found from outside).
      const args: Record<string, unknown> | undefined = undefined as Record<string, unknown> | undefined;
      const limit: number | undefined = undefined as number | undefined;
      await mcp.callTool({ name: "x", arguments: args }, { timeoutMs: limit, signal: undefined, onprogress: undefined });
    };
    void typed;
  });

  it("v2 client: the v2 CallToolResult and ListToolsResult", () => {
    const mcp = withCancellation(new V2Client({ name: "t", version: "1" }), transport());
    expectTypeOf<Awaited<ReturnType<typeof mcp.callTool>>>().toEqualTypeOf<V2CallToolResult>();
    const typed = async () => {
      expectTypeOf(await mcp.request({ method: "tools/list" })).toEqualTypeOf<V2ListToolsResult>();
    };
    void typed;
  });

  it("a client typed only as ClientLike: the loose ToolResult", () => {
    const loose = (client: ClientLike) => withCancellation(client, transport());
    expectTypeOf<Awaited<ReturnType<ReturnType<typeof loose>["callTool"]>>>().toEqualTypeOf<ToolResult>();
  });
});
