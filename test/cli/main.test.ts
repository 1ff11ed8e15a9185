import { readFileSync } from "node:fs";
import { describe, expect, it, vi } from "vitest";
import { EXIT_USAGE, main } from "../../src/cli/main.js";
import { nodeCommand, probeFixture } from "./helpers.js";

// The v2 SDK client is not installed, as for a user of the v1 SDK only: its import fails.
vi.mock("@modelcontextprotocol/client", () => {
  throw new Error("Cannot find package '@modelcontextprotocol/client'");
});

function capture() {
  const out = { stdout: "", stderr: "" };
  return { out, sink: { stdout: (text: string) => (out.stdout += text), stderr: (text: string) => (out.stderr += text) } };
}

describe("mcp-cancellable (the command)", () => {
  it("--version prints the package's version, exit 0", async () => {
    const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
    for (const flag of ["--version", "-v"]) {
      const { out, sink } = capture();
      expect(await main([flag], sink)).toBe(0);
      expect(out.stdout).toBe(`${version}\n`);
    }
  });

  it("--era 2026-07-28 without the v2 SDK client: exit 2 (a usage problem, not a failed check), naming the package to install", async () => {
    const { out, sink } = capture();
    const code = await main(["probe", "--stdio", nodeCommand(probeFixture("sdk-server.mjs")), "--era", "2026-07-28"], sink);
    expect(code).toBe(EXIT_USAGE);
    expect(out.stderr).toMatch(/npm install @modelcontextprotocol\/client/);
    const json = capture();
    expect(await main(["probe", "--stdio", nodeCommand(probeFixture("sdk-server.mjs")), "--era", "2026-07-28", "--json"], json.sink)).toBe(
      2,
    );
    expect((JSON.parse(json.out.stdout) as { exitCode: number }).exitCode).toBe(2);
  });

  it("a probe usage error says where the flags are documented: --help and docs/probe.md (as the proxy's do)", async () => {
    const { out, sink } = capture();
    expect(await main(["probe", "--stdio", "node x.js", "--grace", "9000", "--window", "100"], sink)).toBe(EXIT_USAGE);
    expect(out.stderr).toMatch(/^mcp-cancellable probe: --grace: must be shorter than --window/);
    expect(out.stderr).toMatch(/Run mcp-cancellable probe --help for the options; see .*docs\/probe\.md/);
  });
});
