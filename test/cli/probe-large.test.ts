import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { check, nodeCommand, probeJson, statuses } from "./helpers.js";

// Issue 29, item 8: the probe shares the proxy's line reader, and a 120 MB result is one line
// (server-memory's read_graph on a large graph). @modelcontextprotocol/server-memory is not a
// development dependency here, so a scripted stdio server writes the line: test/proxy/fixtures/
// line-server.mjs, tool `big` (a text result of `bytes` bytes, written at once, the id last).
const LINE = fileURLToPath(new URL("../proxy/fixtures/line-server.mjs", import.meta.url));
const BYTES = 120_000_000;

describe("mcp-cancellable probe: a 120 MB result", () => {
  it("is read as the result it is (not dropped as not JSON-RPC); no check FAILs the server for the probe's own reading; --json cuts the long text", async () => {
    const { code, json, stdout } = await probeJson([
      "--stdio",
      nodeCommand(LINE),
      "--tool",
      "big",
      "--args",
      JSON.stringify({ bytes: BYTES }),
      "--allow-side-effects",
      // The cancel goes before the result can have been read whole (120 MB take far longer than
      // 20 ms to build, write and read), however fast the machine: with the default 300 ms a
      // quick machine reads the whole result first, and the call ends before the cancel (SKIP).
      "--cancel-after",
      "20",
      "--timeout",
      "60000",
    ]);
    const verdicts = statuses(json);
    expect(Object.values(verdicts)).not.toContain("FAIL");
    expect(code).toBe(0);
    // The result of the cancelled call came, whole: a crossing (rule 9), judged by the fence.
    expect(["WARN", "PASS"]).toContain(verdicts["silent-after-cancel"]);
    expect(check(json, "silent-after-cancel").summary).not.toMatch(/not JSON-RPC|longer than/);
    expect(json.diagnosis.join("\n")).not.toMatch(/not JSON-RPC|longer than/);
    const results = json.timeline.filter(
      (event) => event.from === "server" && (event.message as { result?: unknown } | undefined)?.result !== undefined,
    );
    expect(results.some((event) => JSON.stringify(event.message).includes("characters in all, cut in this report"))).toBe(true);
    // Only evidence makes a concurrent-calls PASS: two 120 MB results give none in the window.
    expect(["SKIP", "PASS", "WARN"]).toContain(verdicts["concurrent-calls"]);
    expect(stdout.length).toBeLessThan(5_000_000);
  }, 180_000);
});
