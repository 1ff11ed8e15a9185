import { ToolMessage } from "@langchain/core/messages";
import { ToolNode } from "@langchain/langgraph/prebuilt";

// LangGraph's ToolNode ends every tool error with "Please fix your mistakes.": with
// handleToolErrors false, the error's own words become the tool message instead.
export class PlainErrorToolNode extends ToolNode {
  constructor(tools: ConstructorParameters<typeof ToolNode>[0]) {
    super(tools, { handleToolErrors: false });
  }

  protected override async runTool(...args: Parameters<ToolNode["runTool"]>): ReturnType<ToolNode["runTool"]> {
    try {
      return await super.runTool(...args);
    } catch (error) {
      const [call] = args;
      return new ToolMessage({ status: "error", content: (error as Error).message, name: call.name, tool_call_id: call.id ?? "" });
    }
  }
}
