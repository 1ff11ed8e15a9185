import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Folders with their own package.json, run by their own leg of .ci/run (Node 22 frameworks).
    exclude: ["**/node_modules/**", "test/node22/**"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
