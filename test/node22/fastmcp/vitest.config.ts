import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Run from the repository root on Node 22: node node_modules/vitest/vitest.mjs run --config test/node22/fastmcp/vitest.config.ts
export default defineConfig({
  root: dirname(fileURLToPath(import.meta.url)),
  test: {
    include: ["*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 20_000,
  },
});
