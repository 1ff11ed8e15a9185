import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const src = resolve(dirname(fileURLToPath(import.meta.url)), "../../src");

/** Every module the root entry reaches through static imports, with the specifiers it imports. */
function reach(entry: string): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    const text = readFileSync(file, "utf8");
    const specifiers = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"/gms)].map((m) => m[1]!);
    seen.set(file, specifiers);
    for (const s of specifiers) if (s.startsWith(".")) visit(resolve(dirname(file), s.replace(/\.js$/, ".ts")));
  };
  visit(entry);
  return seen;
}

describe("the root entry", () => {
  it("pulls in no node: module and no Node-only SDK module (runs in browsers, Deno, Bun)", () => {
    const modules = reach(resolve(src, "index.ts"));
    expect(modules.size).toBeGreaterThan(10);
    const external = [...modules.values()].flat().filter((s) => !s.startsWith("."));
    expect(external.filter((s) => s.startsWith("node:") || /^(fs|path|child_process|http|net|events)$/.test(s))).toEqual([]);
    expect(external.filter((s) => s.startsWith("@modelcontextprotocol/"))).toEqual([]);
    expect(new Set(external)).toEqual(new Set(["zod", "p-timeout"]));
  });

  it("the core subpath (mcp-cancellable/core) pulls in no node: module and no SDK module either", () => {
    const modules = reach(resolve(src, "core.ts"));
    const external = [...modules.values()].flat().filter((s) => !s.startsWith("."));
    expect(external.filter((s) => s.startsWith("@modelcontextprotocol/") || s.startsWith("node:"))).toEqual([]);
  });

  it("the root exports what a bot author uses; the state machine and wire types are in mcp-cancellable/core", async () => {
    const root = (await import("../../src/index.js")) as Record<string, unknown>;
    const core = (await import("../../src/core.js")) as Record<string, unknown>;
    for (const internal of ["CancellableCall", "notificationCancellation", "summarize"]) {
      expect(root, internal).not.toHaveProperty(internal);
      expect(core, internal).toHaveProperty(internal);
    }
    expect(root).toHaveProperty("withCancellation");
  });

  it("the stdio subpath pulls in no SDK module either: it works with v1 and v2 transports alike", () => {
    const modules = reach(resolve(src, "adapters/stdio/index.ts"));
    const external = [...modules.values()].flat().filter((s) => !s.startsWith("."));
    expect(external.filter((s) => s.startsWith("@modelcontextprotocol/") || s.startsWith("node:"))).toEqual([]);
  });

  it("the root and the adapters never reach a framework integration; the integrations import their framework for types only", () => {
    for (const entry of ["index.ts", "adapters/stdio/index.ts", "adapters/streamable-http/index.ts"]) {
      const modules = reach(resolve(src, entry));
      expect(
        [...modules.keys()].filter((file) => file.includes("/integrations/")),
        entry,
      ).toEqual([]);
      expect(
        [...modules.values()].flat().filter((s) => s.startsWith("@openai/") || s.startsWith("@ai-sdk/")),
        entry,
      ).toEqual([]);
    }
    for (const integration of ["openai-agents", "ai-sdk"]) {
      const text = readFileSync(resolve(src, `integrations/${integration}/index.ts`), "utf8");
      for (const line of text.split("\n").filter((l) => /from "@(openai|ai-sdk)\//.test(l))) {
        expect(line, integration).toMatch(/^import type /);
      }
    }
  });
});
