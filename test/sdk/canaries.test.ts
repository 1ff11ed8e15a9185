// The canaries on the root's SDK versions (package.json devDependencies). The Node 22 leg runs
// the same suite on the newest published versions: test/node22/frameworks/sdk-canaries.test.ts.
import { createRequire } from "node:module";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { WebStandardStreamableHTTPServerTransport as ServerV1 } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { defineSdkCanaries, versionAt } from "./canaries.suite.js";

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
