import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as V1Stdio } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as V2Client } from "@modelcontextprotocol/client";
import { StdioClientTransport as V2Stdio } from "@modelcontextprotocol/client/stdio";
import { describe, expect, it } from "vitest";
import { isInvalidOptionError } from "../../src/index.js";
import { streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { cancellableTransport } from "../../src/integrations/ai-sdk/index.js";
import {
  CancellableMCPServer,
  CancellableMCPServerStdio,
  CancellableMCPServerStreamableHttp,
} from "../../src/integrations/openai-agents/index.js";

// Usage mistakes a bot author made in the field (issue 21, item 7): each message names the
// function that was called and says what to do instead.

function refusal(make: () => unknown): { option: string; message: string } {
  try {
    make();
  } catch (error) {
    expect(isInvalidOptionError(error)).toBe(true);
    return error as { option: string; message: string };
  }
  throw new Error("expected an InvalidOptionError");
}

describe("usage messages", () => {
  it("cancellableTransport(client) names cancellableTransport (not withCancellation) and says it got a client", () => {
    for (const client of [new V1Client({ name: "t", version: "1" }), new V2Client({ name: "t", version: "1" })]) {
      const { option, message } = refusal(() => cancellableTransport(client as never));
      expect(option).toBe("transport");
      expect(message).toMatch(/^cancellableTransport: transport must be/);
      expect(message).not.toMatch(/withCancellation/);
      expect(message).toContain("this is an MCP client, not its transport");
    }
  });

  it("streamableHttpCancellation(a stdio transport) says it is not a Streamable HTTP transport and names stdioCancellation, not the v1 fetch advice", () => {
    for (const transport of [new V1Stdio({ command: "node" }), new V2Stdio({ command: "node" })]) {
      const { option, message } = refusal(() => streamableHttpCancellation(transport));
      expect(option).toBe("transport");
      expect(message).toMatch(/not a Streamable HTTP transport/);
      expect(message).toContain("use stdioCancellation(transport)");
      expect(message).not.toMatch(/cancellableFetch/);
    }
  });

  it("Agents: fullCommand is refused as not supported, with command and args to use instead (not 'command must be a non-empty string')", () => {
    const { option, message } = refusal(() => new CancellableMCPServerStdio({ fullCommand: "node report-server.js" } as never));
    expect(option).toBe("fullCommand");
    expect(message).toMatch(/^CancellableMCPServerStdio: "fullCommand" is not supported/);
    expect(message).toContain('command: "node", args: ["report-server.js"]');
  });

  it("Agents: clientSessionTimeoutSeconds says to use timeoutMs in ms (and maxTotalTimeoutMs), on every server class", () => {
    for (const make of [
      () => new CancellableMCPServerStdio({ command: "node", clientSessionTimeoutSeconds: 5 } as never),
      () => new CancellableMCPServerStreamableHttp({ url: "http://127.0.0.1:1/mcp", clientSessionTimeoutSeconds: 5 } as never),
      () => new CancellableMCPServer({ name: "x", create: () => ({}) as never, clientSessionTimeoutSeconds: 5 } as never),
    ]) {
      const { option, message } = refusal(make);
      expect(option).toBe("clientSessionTimeoutSeconds");
      expect(message).toContain('"clientSessionTimeoutSeconds" is the Agents runtime\'s MCPServer option (seconds');
      expect(message).toContain("clientSessionTimeoutSeconds: 5 is timeoutMs: 5_000");
    }
  });

  it("Agents: a top-level errorFunction (or toolFilter) says to pass it in agents: { ... }; inside agents it is accepted", () => {
    for (const key of ["errorFunction", "toolFilter"]) {
      const { option, message } = refusal(() => new CancellableMCPServerStdio({ command: "node", [key]: null } as never));
      expect(option).toBe(key);
      expect(message).toBe(
        `CancellableMCPServerStdio: "${key}" is an Agents-side setting: pass it in agents: { ${key} }, which is handed to the Agents runtime as it is`,
      );
    }
    const server = new CancellableMCPServerStdio({ command: "node", agents: { errorFunction: null } });
    expect((server as unknown as { errorFunction?: unknown }).errorFunction).toBeNull();
  });
});
