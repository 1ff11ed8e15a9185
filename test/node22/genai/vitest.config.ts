import { defineConfig } from "vitest/config";

// The Node 22 leg of .ci/run runs this folder on its own (@google/genai 3 needs Node >= 22):
//   npx vitest run --config test/node22/genai/vitest.config.ts
export default defineConfig({
  test: {
    root: new URL(".", import.meta.url).pathname,
    include: ["*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
