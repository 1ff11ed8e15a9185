// The SDK canaries (test/sdk/canaries.suite.ts) on the newest published v1 and v2 lines, pinned in
// this folder's package.json and resolved from its node_modules: a release that moves a private
// field src/sdk/private.ts reads fails here, naming the field, the package and its version.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { WebStandardStreamableHTTPServerTransport as ServerV1 } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { defineSdkCanaries, versionAt } from "../../sdk/canaries.suite.js";

const resolve = createRequire(import.meta.url).resolve;

defineSdkCanaries([
  {
    line: "v1",
    name: "@modelcontextprotocol/sdk",
    version: versionAt(resolve("@modelcontextprotocol/sdk/client/index.js"), "@modelcontextprotocol/sdk"),
    Client: ClientV1 as never,
    StdioClientTransport: StdioV1 as never,
    StreamableHTTPClientTransport: HttpV1 as never,
    WebStandardServerTransport: ServerV1 as never,
  },
  {
    line: "v2",
    name: "@modelcontextprotocol/client",
    version: versionAt(resolve("@modelcontextprotocol/client"), "@modelcontextprotocol/client"),
    Client: ClientV2 as never,
    StdioClientTransport: StdioV2 as never,
    StreamableHTTPClientTransport: HttpV2 as never,
  },
]);

it("resolves both SDK lines from this folder's node_modules, not the root's", () => {
  const here = join(dirname(fileURLToPath(import.meta.url)), "node_modules");
  expect(resolve("@modelcontextprotocol/sdk/client/index.js").startsWith(here)).toBe(true);
  expect(resolve("@modelcontextprotocol/client").startsWith(here)).toBe(true);
});
