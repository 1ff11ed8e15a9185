import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { corkedAtExitCount } from "../../src/utils/slices.js";

// A stdio server whose command cannot be started: the v1 SDK rejects the transport's start and
// reports no close. Nothing of the connection is kept for the process's exit (an audit's: each
// failed start left its wire in the process-wide set of stdins the exit corks, for the
// process's life: a bot retrying a missing command grew it by one per try).
describe("a stdio connection that never started", () => {
  it("connect() rejects with the spawn's error, and the process's exit keeps nothing of it (10 tries)", async () => {
    const before = corkedAtExitCount();
    for (let i = 0; i < 10; i++) {
      const client = new Client({ name: "failed-start", version: "1.0.0" });
      const transport = new StdioClientTransport({ command: "/nonexistent/mcp-cancellable-server", args: [] });
      const mcp = withCancellation(client, stdioCancellation(transport));
      const error = await client.connect(mcp.transport).catch((e: unknown) => e);
      expect(String((error as Error).message)).toMatch(/ENOENT/);
      // No close: a bot that gives up on a server it could not start drops the client.
    }
    expect(corkedAtExitCount()).toBe(before);
  });
});
