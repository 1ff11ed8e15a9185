import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// Every import runs downward (design.md's layers; issue 13, item 8). A folder of src/ may import
// its own folder and the folders ranked below it, never one above. types/ and errors/ share the
// bottom rank above utils/ (the options throw InvalidOptionError; the errors carry a RunRecord),
// so the file graph is also checked for cycles. A folder not listed here (a new one) is ranked
// just below cli/: it may import every library layer, and nothing but cli/ may import it.
const RANK: Record<string, number> = {
  utils: 0,
  types: 1,
  errors: 1,
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
  });
});
