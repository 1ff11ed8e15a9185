// The Vercel AI SDK's MCP client 2.x (the `ai` 7 line, Node 22): the same suite as on Node 20
// (test/integrations/ai-sdk.test.ts runs it on @ai-sdk/mcp 1.x).
import * as ai from "@ai-sdk/mcp";
import { defineAiSdkSuite } from "../../integrations/ai-sdk.suite.js";

defineAiSdkSuite(ai as never, "@ai-sdk/mcp 2.x");
