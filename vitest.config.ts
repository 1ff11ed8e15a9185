import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Folders with their own package.json (packages that need Node >= 22), run by their own legs of .ci/run.
    exclude: ["**/node_modules/**", "test/node22/**"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
