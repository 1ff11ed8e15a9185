/**
 * Builds the library the way it ships (tsup, the ESM half of tsup.config.ts: target node20,
 * p-timeout bundled, the SDK external) into the directory given as the first argument. Run as a
 * child process by subject.ts, so the bench process never loads tsup or esbuild (their heap
 * would make every garbage collection of the measured calls dearer).
 *
 * Run: node --import tsx bench/lib/build.ts OUT_DIR ENTRY_NAME=PATH...
 */
import { build } from "tsup";

const [outDir, ...entries] = process.argv.slice(2);
if (outDir === undefined || entries.length === 0) {
  process.stderr.write("usage: build.ts OUT_DIR NAME=PATH...\n");
  process.exit(2);
}
await build({
  config: false,
  entry: Object.fromEntries(entries.map((pair) => pair.split("=") as [string, string])),
  format: ["esm"],
  outDir,
  target: "node20",
  dts: false,
  clean: true,
  sourcemap: false,
  silent: true,
  noExternal: ["p-timeout"],
  external: [/^@modelcontextprotocol\//],
});
