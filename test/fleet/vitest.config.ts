import { defineConfig } from "vitest/config";

// The fleet leg of .ci/run (.ci/fleet.sh) runs this folder on its own: it needs HAProxy.
//   npx vitest run --config test/fleet/vitest.config.ts
export default defineConfig({
  test: {
    include: ["test/fleet/*.fleet.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
