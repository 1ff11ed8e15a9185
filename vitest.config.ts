import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Suites for packages that need Node >= 22, with their own package.json: run by .ci/run's Node 22 leg.
    exclude: ["**/node_modules/**", "test/node22/**"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
