import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// Every export of the public entries carries its documentation (issue 13, item 6): what an
// editor shows on hover, and what docs/api.md and docs/package.md point to.

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const ENTRIES = ["src/index.ts", "src/core.ts", "src/adapters/stdio/index.ts", "src/adapters/streamable-http/index.ts"];

describe("public exports", () => {
  const program = ts.createProgram(
    ENTRIES.map((entry) => resolve(root, entry)),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      skipLibCheck: true,
      noEmit: true,
    },
  );
  const checker = program.getTypeChecker();

  for (const entry of ENTRIES) {
    it(`${entry}: every export has a doc comment`, () => {
      const file = program.getSourceFile(resolve(root, entry))!;
      const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(file)!);
      expect(exports.length).toBeGreaterThan(0);
      const undocumented = exports
        .filter((symbol) => {
          const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
          return ts.displayPartsToString(target.getDocumentationComment(checker)).trim() === "";
        })
        .map((symbol) => symbol.name);
      expect(undocumented).toEqual([]);
    });
  }
});
