import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The folder of the package this module runs from: the nearest one above it whose package.json
 * is named mcp-cancellable (dist/cli.js in an installed or packed package, npx's cache included;
 * src/cli/ in a clone). `undefined` when there is none.
 */
export function packageRoot(): { url: URL; version: string | undefined } | undefined {
  for (let up = "../"; up.length <= 12; up += "../") {
    const url = new URL(up, import.meta.url);
    try {
      const pkg = JSON.parse(readFileSync(new URL("package.json", url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "mcp-cancellable") return { url, version: typeof pkg.version === "string" ? pkg.version : undefined };
    } catch {
      // not there: look one folder up
    }
  }
  return undefined;
}

/** The project's page, for a doc the package does not carry. */
export const HOMEPAGE = "https://github.com/mcp-cancellable/mcp-cancellable";

/**
 * Where a user reads `docs/<page>`: its absolute path in the package that runs (wherever npm or npx
 * put it), and the project's page.
 */
export function docHint(page: string): string {
  const root = packageRoot();
  const file = root === undefined ? undefined : fileURLToPath(new URL(`docs/${page}`, root.url));
  const local = file !== undefined && existsSync(file) ? file : `docs/${page} in the package`;
  return `${local}, or ${HOMEPAGE}/blob/main/docs/${page}`;
}
