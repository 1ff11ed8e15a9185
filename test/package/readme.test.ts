import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");

describe("README", () => {
  it("shows examples/quick-start.ts verbatim (so the README's example is type-checked)", () => {
    const readme = read("README.md");
    const marker = "<!-- example: examples/quick-start.ts";
    const start = readme.indexOf("```ts\n", readme.indexOf(marker)) + "```ts\n".length;
    const block = readme.slice(start, readme.indexOf("```\n", start));
    expect(readme.indexOf(marker)).toBeGreaterThan(-1);
    expect(block).toBe(read("examples/quick-start.ts"));
  });

  it("docs/observability.md shows examples/otel.ts verbatim (so its example is type-checked)", () => {
    const doc = read("docs/observability.md");
    const marker = "<!-- example: examples/otel.ts";
    const start = doc.indexOf("```ts\n", doc.indexOf(marker)) + "```ts\n".length;
    expect(doc.indexOf(marker)).toBeGreaterThan(-1);
    expect(doc.slice(start, doc.indexOf("```\n", start))).toBe(read("examples/otel.ts"));
  });

  it("gives the demo and test commands, and .ci/run runs the same test command", () => {
    const readme = read("README.md");
    expect(readme).toContain("npm ci && npm run demo");
    expect(readme).toContain("npm ci && npm test");
    expect(read(".ci/run")).toMatch(/^npm test( |$)/m);
  });
});
