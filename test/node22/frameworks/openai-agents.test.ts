// OpenAI Agents JS 0.20 (builds a v2 SDK client; pulls openai 7, which needs Node 22): the same
// suite as on Node 20 (test/integrations/openai-agents.test.ts runs it on 0.14.x).
import * as agents from "@openai/agents";
import { defineAgentsSuite } from "../../integrations/openai-agents.suite.js";

defineAgentsSuite(agents as never, "@openai/agents 0.20");
