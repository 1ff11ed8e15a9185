import { defineConfig } from "tsup";

export default defineConfig([
  {
    entry: {
      index: "src/index.ts",
      core: "src/core.ts",
      stdio: "src/adapters/stdio/index.ts",
      "streamable-http": "src/adapters/streamable-http/index.ts",
      otel: "src/otel/index.ts",
      // Framework integrations: type-only imports of their framework (an optional peer), never loaded.
      "openai-agents": "src/integrations/openai-agents/index.ts",
      "ai-sdk": "src/integrations/ai-sdk/index.ts",
      // Structural types of Mastra's MCPClient only: nothing of @mastra/* is imported.
      mastra: "src/integrations/mastra/index.ts",
    },
    format: ["esm", "cjs"],
    // Shared code goes into chunks in both formats, so every entry of one format shares one copy
    // of the core: one CallTimeoutError class (instanceof holds across subpaths), one id counter,
    // one registry of attached clients. Without it each CommonJS entry carried its own core.
    splitting: true,
    // The CommonJS chunks go through rollup (ESM to CommonJS, nothing lowered). Without it tsup
    // converts them with sucrase, which also lowered every `?.`, `??` and class field for
    // Node 20 that runs them natively: a helper call with an array and closures per `?.`, and
    // classes named `_class2` (an outside tester's: util.inspect of a CommonJS CallTimeoutError).
    treeshake: true,
    dts: true,
    clean: true,
    // No source maps in the package: the build is not minified, so a stack trace already points
    // at readable code with the source's names, and maps would double what every user installs.
    sourcemap: false,
    target: "node20",
    // p-timeout is ESM only: bundle it so the CommonJS build can require it.
    noExternal: ["p-timeout"],
    // Optional peers, imported only by their own entries: @opentelemetry/api (otel), the frameworks (type-only).
    external: [/^@modelcontextprotocol\//, "@opentelemetry/api", /^@openai\//, /^@ai-sdk\//],
  },
  {
    // The `mcp-cancellable` executable (bin): ESM only, with its shebang. The v1 SDK client is
    // bundled so `npx mcp-cancellable probe` runs without the optional peer installed; the v2
    // client (--era 2026-07-28) and undici stay external and are loaded only when needed.
    entry: {
      cli: "src/cli/index.ts",
    },
    format: ["esm"],
    banner: { js: "#!/usr/bin/env node" },
    dts: false,
    clean: false,
    // Minified, without a map: nobody steps through the probe's bundle, and the bundled SDK is
    // most of its size (608 kB readable, about a third of that minified).
    sourcemap: false,
    minify: true,
    target: "node20",
    // leven: the "did you mean" of an unknown flag (src/cli/args.ts).
    noExternal: ["p-timeout", "leven", /^@modelcontextprotocol\/sdk(\/|$)/],
    external: ["@modelcontextprotocol/client", "@modelcontextprotocol/server", "@modelcontextprotocol/node", "undici"],
  },
]);
