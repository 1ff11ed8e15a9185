import { defineConfig } from "vitest/config";

// The Node 22 leg of .ci/run runs this folder on its own (@modelcontextprotocol/inspector 2 needs Node >= 22.19):
//   npx vitest run --config test/node22/inspector/vitest.config.ts
export default defineConfig({
  test: {
    root: new URL(".", import.meta.url).pathname,
    include: ["*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 20_000,
  },
});
