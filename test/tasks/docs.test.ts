import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");

describe("docs/tasks.md", () => {
  it("shows examples/tasks.ts verbatim (so its example is type-checked)", () => {
    const doc = read("docs/tasks.md");
    const marker = "<!-- example: examples/tasks.ts";
    expect(doc.indexOf(marker)).toBeGreaterThan(-1);
    const start = doc.indexOf("```ts\n", doc.indexOf(marker)) + "```ts\n".length;
    expect(doc.slice(start, doc.indexOf("```\n", start))).toBe(read("examples/tasks.ts"));
  });

  it("the README no longer says the library does not drive tasks, and links the tasks page", () => {
    const readme = read("README.md");
    expect(readme).not.toMatch(/does not drive tasks/);
    expect(readme).toContain("docs/tasks.md");
  });
});
