import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// Every import runs downward (design.md's layers; issue 13, item 8). A folder of src/ may import
// its own folder and the folders ranked below it, never one above. types/ and errors/ share the
// bottom rank above utils/ (the errors carry a RunRecord), so the file graph is also checked for
// cycles; options/ (the option schemas, defaults and merging) sits just above them, as its parses
// throw InvalidOptionError. A folder not listed here (a new one) is ranked
// just below cli/: it may import every library layer, and nothing but cli/ may import it.
const RANK: Record<string, number> = {
  utils: 0,
  types: 1,
  errors: 1,
  options: 1.5, // schemas, defaults, warnings and merging of the option types: imports utils, types, errors only
  sdk: 1.5, // src/sdk/private.ts, every read of an SDK's private shape: imports utils, types, errors only
  core: 2,
  wire: 3,
  adapters: 4,
  ledger: 5,
  runner: 5.5, // the one call path (docs/architecture.md): below every shell
  client: 6,
  cli: 9,
  ".": 10, // index.ts and other entry files at the root of src/
};
const NEW_FOLDER_RANK = 8;

const src = resolve(dirname(fileURLToPath(import.meta.url)), "../../src");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

const folderOf = (file: string): string => {
  const first = relative(src, file).split("/")[0]!;
  return first.endsWith(".ts") ? "." : first;
};
const rankOf = (file: string): number => RANK[folderOf(file)] ?? NEW_FOLDER_RANK;

/** Each source file with the source files it imports (static, type-only included). */
function graph(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of files(src)) {
    const text = readFileSync(file, "utf8");
    const specifiers = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"/gms)].map((m) => m[1]!);
    edges.set(
      file,
      specifiers.map((s) => resolve(dirname(file), s.replace(/\.js$/, ".ts"))),
    );
  }
  return edges;
}

describe("layers", () => {
  const edges = graph();

  it("reads the whole source tree", () => {
    expect(edges.size).toBeGreaterThan(30);
    for (const targets of edges.values()) for (const target of targets) expect(edges.has(target), target).toBe(true);
  });

  it("every import runs downward: a folder imports its own folder or one ranked below it", () => {
    const upward: string[] = [];
    for (const [file, targets] of edges) {
      for (const target of targets) {
        if (folderOf(target) !== folderOf(file) && rankOf(target) > rankOf(file)) {
          upward.push(`${relative(src, file)} -> ${relative(src, target)}`);
        }
      }
    }
    expect(upward).toEqual([]);
  });

  it("no two files import each other, directly or through others (no cycles)", () => {
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const stack: string[] = [];
    const visit = (file: string) => {
      state.set(file, "open");
      stack.push(file);
      for (const target of edges.get(file) ?? []) {
        if (state.get(target) === "open") {
          cycles.push([...stack.slice(stack.indexOf(target)), target].map((f) => relative(src, f)).join(" -> "));
        } else if (state.get(target) === undefined) visit(target);
      }
      stack.pop();
      state.set(file, "done");
    };
    for (const file of edges.keys()) if (state.get(file) === undefined) visit(file);
    expect(cycles).toEqual([]);
  });

  it("the check can fail: an upward import is found", () => {
    const file = resolve(src, "errors/CallTimeoutError.ts");
    const target = resolve(src, "core/record.ts");
    expect(folderOf(target) !== folderOf(file) && rankOf(target) > rankOf(file)).toBe(true);
    // options/ sits above types/ and errors/, below core/.
    const options = resolve(src, "options/schemas.ts");
    expect(rankOf(options) > rankOf(resolve(src, "types/options.ts"))).toBe(true);
    expect(rankOf(resolve(src, "core/deadlines.ts")) > rankOf(options)).toBe(true);
  });

  it("types/ holds types only: no runtime import, no runtime export (schemas and defaults live in options/)", () => {
    const runtime: string[] = [];
    for (const file of files(resolve(src, "types"))) {
      const text = readFileSync(file, "utf8");
      for (const line of text.split("\n")) {
        if (/^import (?!type )/.test(line) || /^export (?!type |interface )/.test(line)) runtime.push(`${relative(src, file)}: ${line}`);
      }
    }
    expect(runtime).toEqual([]);
    // The check can fail: it sees a runtime line.
    expect(/^export (?!type |interface )/.test("export const DEFAULT_TIMEOUT_MS = 60_000;")).toBe(true);
  });
});
