import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// docs/frameworks.md shows examples/*.ts verbatim, so its code is type-checked: examples/langchain.ts
// and examples/attach.ts by the root tsconfig, examples/google-genai.ts by test/node22/genai's.
const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");

describe("docs/frameworks.md", () => {
  const doc = read("docs/frameworks.md");
  const markers = [...doc.matchAll(/<!-- example: (examples\/[\w-]+\.ts) -->\n```ts\n([\s\S]*?)```\n/g)];

  it("has a type-checked example for LangChain, Google GenAI and attachCancellation", () => {
    expect(markers.map((m) => m[1])).toEqual(["examples/langchain.ts", "examples/google-genai.ts", "examples/attach.ts"]);
  });

  for (const [, path, block] of markers) {
    it(`shows ${path} verbatim`, () => expect(block).toBe(read(path!)));
  }

  it("keeps the sections other integrations add to (LangChain JS, Google GenAI, Attaching to a connected client)", () => {
    for (const heading of ["## LangChain JS", "## Google GenAI", "## Attaching to a connected client"]) {
      expect(doc).toContain(`\n${heading}\n`);
    }
  });
});
