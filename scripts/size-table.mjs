// The size table of docs/package.md, from the packed tarball: `npm run size:table` packs
// (`npm pack --dry-run --json`, whose prepack builds dist/ first) and writes the table between
// the markers below; test/package/pack.test.ts checks the written table against its own pack.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const START = "<!-- size-table: written by `npm run size:table` (scripts/size-table.mjs); checked by test/package/pack.test.ts -->";
export const END = "<!-- /size-table -->";
/** How far a documented size may be from the packed one before the test asks for `npm run size:table`. */
export const TOLERANCE = 0.05;

/**
 * The table's rows from `npm pack --json` output (one package): label and bytes.
 * @param {{ size: number, unpackedSize: number, files: Array<{ path: string, size: number }> }} info
 * @returns {Array<{ label: string, bytes: number }>}
 */
export function sizeRows(info) {
  const sum = (test) => info.files.filter((file) => test(file.path)).reduce((n, file) => n + file.size, 0);
  return [
    { label: "tarball (download)", bytes: info.size },
    { label: "unpacked, everything", bytes: info.unpackedSize },
    { label: "the library (`dist/` without the CLI: ESM, CommonJS, type declarations)", bytes: sum((p) => p.startsWith("dist/") && p !== "dist/cli.js") },
    { label: "the `mcp-cancellable` command (`dist/cli.js`, one minified file with the v1 SDK client bundled)", bytes: sum((p) => p === "dist/cli.js") },
    {
      label: "the documentation (`docs/`, `examples/`), the README and the changelog",
      bytes: sum((p) => p.startsWith("docs/") || p.startsWith("examples/") || p === "README.md" || p === "CHANGELOG.md"),
    },
  ];
}

/** Bytes as npm prints them (1 kB = 1,000 B). */
export const kB = (bytes) => `${Math.round(bytes / 1_000)} kB`;

/** The table, as Markdown between its markers. */
export function renderTable(info, version) {
  const rows = sizeRows(info).map((row) => `| ${row.label} | ${kB(row.bytes)} |`);
  return [START, "", `Measured on the packed tarball (\`npm pack\`, version ${version}):`, "", "| | size |", "|---|---|", ...rows, "", END].join("\n");
}

/** The rows written in a page (label and kB), or `undefined` when the markers are missing. */
export function documentedRows(markdown) {
  const start = markdown.indexOf(START);
  const end = markdown.indexOf(END);
  if (start === -1 || end === -1) return undefined;
  return markdown
    .slice(start, end)
    .split("\n")
    .map((line) => /^\| (.+) \| (\d+) kB \|$/.exec(line))
    .filter((match) => match !== null)
    .map((match) => ({ label: match[1], kB: Number(match[2]) }));
}

/**
 * What is wrong with the page's table against a pack: a row missing, or a size more than
 * `TOLERANCE` away; empty when it is right.
 */
export function staleRows(markdown, info) {
  const written = documentedRows(markdown);
  if (written === undefined) return ["the size table's markers are missing"];
  const problems = [];
  for (const row of sizeRows(info)) {
    const found = written.find((entry) => entry.label === row.label);
    const now = row.bytes / 1_000;
    if (found === undefined) problems.push(`no row "${row.label}"`);
    else if (Math.abs(found.kB - now) > Math.max(1, now * TOLERANCE)) problems.push(`"${row.label}": the page says ${found.kB} kB, the pack has ${kB(row.bytes)}`);
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL("../", import.meta.url));
  const out = execFileSync("npm", ["pack", "--dry-run", "--json"], { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const info = JSON.parse(out.slice(out.search(/^\[\s*$/m)))[0];
  const page = `${root}docs/package.md`;
  const markdown = readFileSync(page, "utf8");
  const start = markdown.indexOf(START);
  const end = markdown.indexOf(END);
  if (start === -1 || end === -1) throw new Error(`docs/package.md: the size table's markers are missing (${START} ... ${END})`);
  const version = JSON.parse(readFileSync(`${root}package.json`, "utf8")).version;
  writeFileSync(page, markdown.slice(0, start) + renderTable(info, version) + markdown.slice(end + END.length));
  for (const row of sizeRows(info)) console.log(`${kB(row.bytes).padStart(8)}  ${row.label}`);
}
