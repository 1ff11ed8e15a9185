import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { headingAnchors, relativeLinks } from "./links.js";

// Words a user can look up (issue 13, item 2): every "rule N" cited anywhere in the project has
// its entry in docs/spec-rules.md, with a source; no user-facing text says "seed".

const root = join(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(join(root, path), "utf8");

function files(dir: string, extensions: RegExp): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (name === "node_modules" || name.startsWith(".")) return [];
    if (statSync(join(root, path)).isDirectory()) return files(path, extensions);
    return extensions.test(name) ? [path] : [];
  });
}

const SOURCES = [
  ...files("src", /\.ts$/),
  ...files("test", /\.(ts|mjs|cjs)$/),
  ...files("demo", /\.ts$/),
  ...files("examples", /\.ts$/),
  ...files("docs", /\.md$/),
  "README.md",
];

/** Every rule number cited as "rule 6", "rules 6, 31", "rules 14-16", "rules 9 and 10" or `rules: [6, 11]`. */
function citedRules(text: string): number[] {
  const found: number[] = [];
  for (const match of text.matchAll(/\brules?\s+(\d+(?:\s*(?:,|and|-|–|to)\s*\d+)*)|\brules:\s*\[([\d,\s]+)\]/g)) {
    const list = (match[1] ?? match[2]!).replace(/\s+/g, "");
    for (const part of list.split(/,|and/)) {
      const range = /^(\d+)(?:[-–]|to)(\d+)$/.exec(part);
      if (range) for (let n = Number(range[1]); n <= Number(range[2]); n++) found.push(n);
      else if (/^\d+$/.test(part)) found.push(Number(part));
    }
  }
  return found;
}

describe("docs/spec-rules.md", () => {
  const page = read("docs/spec-rules.md");
  const rows = new Map([...page.matchAll(/^\| (\d+) \| (.+) \| (.+) \|$/gm)].map((m) => [Number(m[1]), { text: m[2]!, source: m[3]! }]));

  it("lists every rule the code, tests, demo and docs cite, each with its text and a source", () => {
    const cited = new Map<number, string>();
    for (const file of SOURCES)
      for (const rule of citedRules(read(file))) if (!cited.has(rule)) cited.set(rule, relative(root, join(root, file)));
    expect(cited.size).toBeGreaterThan(15);
    const missing = [...cited].filter(([rule]) => !rows.has(rule)).map(([rule, file]) => `rule ${rule} (cited in ${file})`);
    expect(missing).toEqual([]);
    for (const [rule, row] of rows) {
      expect(row.text.length, `rule ${rule}`).toBeGreaterThan(30);
      expect(row.source, `rule ${rule}`).toMatch(/modelcontextprotocol\.io\/specification\/|same as rule|tasks ext\.|schema|^same/);
    }
  });

  it("the scanner reads every form of citation", () => {
    expect(citedRules("rule 6; rules 9, 10; rules 14-16; rules 9 and 11; rules: [6, 28, 40]")).toEqual([
      6, 9, 10, 14, 15, 16, 9, 11, 6, 28, 40,
    ]);
  });
});

describe("user-facing text", () => {
  it('never says "seed" (the worked example is "the worked example")', () => {
    const userFacing = [...SOURCES.filter((file) => !file.startsWith("test")), "CHANGELOG.md"];
    expect(userFacing.length).toBeGreaterThan(40);
    const offending = userFacing.filter((file) =>
      read(file)
        .replace(/FC_SEED|fc\.\w+|seed:/g, "")
        .match(/\bseeds?\b/i),
    );
    expect(offending).toEqual([]);
  });
});

describe("paths the docs cite", () => {
  it("every test/, examples/ and src/ file named in README.md and docs/ exists", () => {
    const pages = [...files("docs", /\.md$/), "README.md"];
    const cited = new Map<string, string>();
    for (const page of pages) {
      for (const match of read(page).matchAll(/\b((?:test|examples|src)\/[\w./-]+\.(?:ts|mjs|cjs|json))\b/g)) {
        if (!cited.has(match[1]!)) cited.set(match[1]!, page);
      }
    }
    expect(cited.size).toBeGreaterThan(20);
    const missing = [...cited].filter(([path]) => !existsSync(join(root, path))).map(([path, page]) => `${path} (cited in ${page})`);
    expect(missing).toEqual([]);
  });
});

describe("links between the pages", () => {
  it("every relative link of README.md, CHANGELOG.md and docs/ reaches a file of the repository, and its #anchor a heading there", () => {
    const pages = ["README.md", "CHANGELOG.md", ...files("docs", /\.md$/)];
    const links = pages.flatMap((page) => relativeLinks(page, read(page)));
    expect(links.length).toBeGreaterThan(50);
    const broken = links
      .filter((link) => {
        if (!existsSync(join(root, link.target))) return true;
        return link.anchor !== undefined && link.target.endsWith(".md") && !headingAnchors(read(link.target)).has(link.anchor);
      })
      .map((link) => `${link.page}: ${link.href}`);
    expect(broken).toEqual([]);
  });

  it("the anchors are GitHub's: punctuation dropped, spaces to hyphens, repeats numbered", () => {
    const anchors = headingAnchors(
      "# Writing your own adapter: `mcp-cancellable/core`\n## Install\n## Install\n```\n# not a heading\n```\n",
    );
    expect([...anchors]).toEqual(["writing-your-own-adapter-mcp-cancellablecore", "install", "install-1"]);
  });
});
