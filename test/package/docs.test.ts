import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");

// Every code block under an `<!-- example: examples/NAME.ts ... -->` marker in docs/ is that
// file verbatim, so the docs' examples are type-checked with the rest (tsconfig includes examples/).
describe("docs examples", () => {
  for (const doc of ["docs/frameworks.md"]) {
    it(`${doc}: each example block is its examples/ file verbatim`, () => {
      const text = read(doc);
      const markers = [...text.matchAll(/<!-- example: (examples\/[\w.-]+\.ts)/g)];
      expect(markers.length).toBeGreaterThan(0);
      for (const marker of markers) {
        const start = text.indexOf("```ts\n", marker.index) + "```ts\n".length;
        const block = text.slice(start, text.indexOf("```\n", start));
        expect(block, marker[1]).toBe(read(marker[1]!));
      }
    });
  }
});
