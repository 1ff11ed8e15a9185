// OpenAI Agents JS on Node 20: @openai/agents 0.14.x (0.15 and later pull openai 7, which needs
// Node 22: those run in test/node22/frameworks/ on the Node 22 leg of .ci/run).
import * as agents from "@openai/agents";
import { defineAgentsSuite } from "./openai-agents.suite.js";

defineAgentsSuite(agents as never, "@openai/agents 0.14");
