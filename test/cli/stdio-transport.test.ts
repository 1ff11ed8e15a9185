import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { ChildStdioTransport } from "../../src/cli/stdio-transport.js";
import { alive, eventually } from "../helpers/stdio.js";

// The CLI's own stdio transport (the probe's target; the proxy's upstream inherits stderr, so a
// process the server starts cannot hold its pipes there): a server that exits while a process it
// started still holds its stderr pipe. Its exit is seen long before its pipes close; the
// stdout-end grace (closeOnStdoutEnd) tells it as an exit, not as a server that closed its stdout
// and ran on (an outside tester's, in the library's own stdio adapter).

const SCRIPTED = fileURLToPath(new URL("../fixtures/scripted-server.mjs", import.meta.url));
const open: ChildStdioTransport[] = [];
afterEach(async () => {
  for (const transport of open.splice(0)) await transport.close().catch(() => {});
});

describe("ChildStdioTransport, closeOnStdoutEnd", () => {
  it("a server that exits while a process it started holds its stderr: closed within the grace as an exit (code 0), not as a hung-up stdout", async () => {
    const transport = new ChildStdioTransport({ command: process.execPath, args: [SCRIPTED] }, { closeOnStdoutEnd: true });
    open.push(transport);
    let closedAt: number | undefined;
    const closed = new Promise<void>((resolve) => {
      transport.onclose = () => {
        closedAt = performance.now();
        resolve();
      };
    });
    await transport.start();
    const sent = performance.now();
    await transport.send({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "exit-held", arguments: { ms: 50, holdMs: 3_000 } },
    });
    await closed;
    expect(closedAt! - sent).toBeLessThan(2_500); // before the helper lets the pipes go
    expect(transport.exit).toEqual({ code: 0, signal: null });
    // What held its pipes (the helper, in its process group) went with it.
    const helper = Number(/HELD-BY (\d+)/.exec(transport.stderrTail)?.[1]);
    expect(helper).toBeGreaterThan(0);
    expect(await eventually(() => !alive(helper), 2_000)).toBe(true);
  });
});
