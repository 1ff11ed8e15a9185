import { defineConfig } from "tsup";

export default defineConfig({
  entry: {
    index: "src/index.ts",
    stdio: "src/adapters/stdio/index.ts",
    "streamable-http": "src/adapters/streamable-http/index.ts",
  },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
  // p-timeout is ESM only: bundle it so the CommonJS build can require it.
  noExternal: ["p-timeout"],
  external: [/^@modelcontextprotocol\//],
});
