// The Vercel AI SDK on Node 20: @ai-sdk/mcp 1.x (the `ai` 6 line). @ai-sdk/mcp 2.x (`ai` 7) needs
// Node 22: the same suite runs on it in test/node22/frameworks/ on the Node 22 leg of .ci/run.
import * as ai from "@ai-sdk/mcp";
import { defineAiSdkSuite } from "./ai-sdk.suite.js";

defineAiSdkSuite(ai as never, "@ai-sdk/mcp 1.x");
