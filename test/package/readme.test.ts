import { readFileSync, readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");

/** README.md and every page of docs/. */
const PAGES = [
  "README.md",
  ...readdirSync(new URL("docs/", root))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/**
 * Every TypeScript block of a page with the example file its marker names. A block that shows
 * the API is type-checked by being an example: `<!-- example: examples/NAME.ts ... -->` on the
 * line before the block, and the block identical to the file (tsc checks examples/).
 */
function blocks(page: string): Array<{ example: string | undefined; code: string }> {
  const text = read(page);
  return [...text.matchAll(/(?:<!-- example: (\S+)[^\n]*-->\n)?```(?:ts|typescript|js|javascript|mjs|cjs)\n([\s\S]*?)```\n/g)].map((m) => ({
    example: m[1],
    code: m[2]!,
  }));
}

describe("README and docs", () => {
  it("the README's first screen: what it is for, then the quick start (wrap, connect, call with a timeout, catch the typed error)", () => {
    const readme = read("README.md");
    const quickStart = readme.indexOf("<!-- example: examples/quick-start.ts");
    expect(quickStart).toBeGreaterThan(-1);
    expect(readme.slice(0, quickStart).split("\n").length).toBeLessThan(15);
    const code = read("examples/quick-start.ts");
    for (const step of ["withCancellation(", "client.connect(mcp.transport)", "timeoutMs:", "isCallTimeoutError("])
      expect(code).toContain(step);
    expect(code.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("import ")).length).toBeLessThanOrEqual(14);
    expect(readme.split("\n").length).toBeLessThan(120);
  });

  it("every code block that shows the API (README and docs/) is an example file, verbatim, so tsc checks it", () => {
    let count = 0;
    for (const page of PAGES) {
      for (const { example, code } of blocks(page)) {
        count++;
        expect(example, `${page}: a code block without an <!-- example: examples/NAME.ts --> marker:\n${code.slice(0, 200)}`).toBeDefined();
        expect(example!, page).toMatch(/^examples\/[\w-]+\.ts$/);
        expect(code, `${page} shows ${example!}`).toBe(read(example!));
      }
    }
    expect(count).toBeGreaterThanOrEqual(4);
  });

  it("every docs/ page is reachable from the README", () => {
    const readme = read("README.md");
    for (const page of PAGES.filter((p) => p.startsWith("docs/"))) expect(readme, page).toContain(`](${page}`);
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
