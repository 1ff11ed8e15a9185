import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headingAnchors, relativeLinks } from "./links.js";

// The package as installed (issue 4, item 6). The repository is copied to a staging folder
// (so the working tree's dist/ is left alone), built there with tsup and packed with npm pack;
// the tarball is installed with the v1 SDK into a fresh folder, where small scripts load it
// through `import` and `require` (root and every subpath in package.json "exports") and make an
// in-memory round trip. publint and @arethetypeswrong/cli check the shipped files.
// Needs the npm registry (or a warm npm cache) for the install: skipped, saying so, only when the
// install fails and the registry cannot be reached at all.

const run = promisify(execFile);
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const consumerFixtures = resolve(root, "test/fixtures/reliability/consumer");
const SDK = "@modelcontextprotocol/sdk@1.32.2";
/** The optional peer of `mcp-cancellable/otel`, installed beside the SDK so that subpath loads. */
const OTEL_API = "@opentelemetry/api@1.9.1";

/** Where each public subpath's source lives; a subpath added to package.json must be added here. */
const SOURCES: Record<string, string> = {
  ".": "src/index.ts",
  "./core": "src/core.ts",
  "./stdio": "src/adapters/stdio/index.ts",
  "./streamable-http": "src/adapters/streamable-http/index.ts",
  "./otel": "src/otel/index.ts",
  "./openai-agents": "src/integrations/openai-agents/index.ts",
  "./ai-sdk": "src/integrations/ai-sdk/index.ts",
  "./mastra": "src/integrations/mastra/index.ts",
};

const pkg = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as {
  name: string;
  version: string;
  exports: Record<string, unknown>;
};
/** The JavaScript subpaths of "exports" other than the root, such as "./stdio". */
const subpaths = Object.keys(pkg.exports).filter((k) => k !== "." && !k.endsWith(".json"));

interface PackInfo {
  filename: string;
  size: number;
  unpackedSize: number;
  files: Array<{ path: string; size: number }>;
}

let work: string;
let tarball: string;
let packInfo: PackInfo;
let consumer: string;
let installed: string;
/** The staged clone, built by prepack: its dist/cli.js is the documented clone line. */
let stage: string;
let offline: string | undefined;
/** attw on the tarball, started as soon as it exists so it overlaps the install. */
let attw: Promise<{ stdout: string }>;

async function sh(command: string, args: string[], cwd: string, timeout = 120_000) {
  return run(command, args, { cwd, timeout, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: "false" } });
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "mcp-cancellable-pack-"));
  // 1. Stage a copy of what the build needs, with the repository's node_modules linked in.
  stage = join(work, "stage");
  // The build's inputs, and what package.json's `files` ships beside dist/ (docs, examples, ...).
  const shipped = (JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as { files: string[] }).files;
  const entries = new Set(["package.json", "tsup.config.ts", "tsconfig.json", "src", ...shipped.filter((entry) => entry !== "dist")]);
  for (const entry of entries) {
    if (existsSync(resolve(root, entry))) cpSync(resolve(root, entry), join(stage, entry), { recursive: true });
  }
  symlinkSync(resolve(root, "node_modules"), join(stage, "node_modules"), "dir");
  // 2. Pack, as a fresh clone would: no dist/ yet, so `prepack` must build it (issue 13, item 1).
  expect(existsSync(join(stage, "dist"))).toBe(false);
  // The build inside (tsup: ESM, CommonJS, declarations, the CLI) takes about 20 s of CPU, minutes of wall time on a loaded machine.
  const packed = await sh("npm", ["pack", "--json", "--pack-destination", work], stage, 300_000);
  // The prepack build logs to stdout first (tsup's lines can hold "[" too): the JSON is the array
  // that starts on a line of its own.
  const json = packed.stdout.search(/^\[\s*$/m);
  expect(json, packed.stdout.slice(-2_000)).toBeGreaterThanOrEqual(0);
  packInfo = (JSON.parse(packed.stdout.slice(json)) as PackInfo[])[0]!;
  tarball = join(work, packInfo.filename);
  // --profile node16: the subpaths exist only through "exports", which TypeScript's legacy
  // node10 resolution ignores by design; engines is node >= 20.3.
  attw = sh("npx", ["attw", tarball, "--profile", "node16", "--format", "json"], root, 90_000);
  attw.catch(() => {}); // awaited (and asserted) in its own test
  // 3. Install the tarball with the SDK into a fresh folder.
  consumer = join(work, "consumer");
  cpSync(consumerFixtures, consumer, { recursive: true });
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
  try {
    await sh(
      "npm",
      ["install", tarball, SDK, OTEL_API, "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline", "--no-package-lock"],
      consumer,
    );
  } catch (error) {
    const reachable = await sh("npm", ["ping"], consumer, 15_000).then(
      () => true,
      () => false,
    );
    if (reachable) throw error; // the registry answers: a failed install is a real failure
    offline = `no network to the npm registry and ${SDK} is not in the npm cache: ${String((error as Error).message).split("\n")[0]}`;
  }
  installed = join(consumer, "node_modules", pkg.name);
}, 450_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
}, 120_000); // thousands of installed files: slow on a loaded disk

/** Every module a built file reaches (following relative imports), with the bare specifiers it names. */
function reach(entry: string): { files: string[]; specifiers: string[] } {
  const files = new Set<string>();
  const specifiers = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, "utf8");
    const found = [
      // Readable and minified forms alike: `import { a } from "x"` and `import{a}from"x"`.
      ...text.matchAll(/(?:^|[\s;}])(?:import|export)\b[^"'`;]*?\bfrom\s*["']([^"']+)["']/gm),
      ...text.matchAll(/(?:^|[\s;}])import\s*["']([^"']+)["']/gm),
      ...text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g),
      ...text.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g),
    ].map((m) => m[1]!);
    for (const s of found) {
      if (s.startsWith(".")) visit(resolve(dirname(file), s));
      else specifiers.add(s);
    }
  };
  visit(entry);
  return { files: [...files], specifiers: [...specifiers].sort() };
}

const NODE_ONLY = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

describe("the package as installed", () => {
  it("packs built files from a clone without dist/ (prepack builds), without source maps", () => {
    const paths = packInfo.files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining(["dist/index.js", "dist/index.cjs", "dist/index.d.ts", "dist/cli.js", "dist/core.js", "docs/spec-rules.md"]),
    );
    expect(paths.filter((p) => p.endsWith(".map"))).toEqual([]);
    // What a user downloads and unpacks, stated in docs/package.md: a bound, not a speed.
    const library = packInfo.files.filter((f) => f.path.startsWith("dist/") && f.path !== "dist/cli.js");
    const kB = (n: number) => Math.round(n / 1000);
    console.info(
      `npm pack: ${kB(packInfo.size)} kB packed, ${kB(packInfo.unpackedSize)} kB unpacked; ` +
        `library files ${kB(library.reduce((n, f) => n + f.size, 0))} kB, CLI bundle ${kB(packInfo.files.find((f) => f.path === "dist/cli.js")!.size)} kB`,
    );
    const code = packInfo.files.filter((f) => f.path.startsWith("dist/")).reduce((n, f) => n + f.size, 0);
    expect(code).toBeLessThan(1_800_000);
    expect(packInfo.unpackedSize).toBeLessThan(2_600_000);
  });

  it("the proxy runs as docs/proxy.md's desktop config lines say, with the v1 SDK client: from the clone (node /abs/dist/cli.js proxy) and from the tarball (npx --yes --package <tarball> mcp-cancellable proxy)", async (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const server = ["--", process.execPath, resolve(root, "test/fixtures/sdk-stdio-server.mjs")];
    // A desktop client starts servers from a folder of its own: not the clone, not the consumer.
    const elsewhere = mkdtempSync(join(tmpdir(), "desktop-"));
    try {
      for (const [command, args] of [
        [process.execPath, [join(stage, "dist/cli.js"), "proxy", "--timeout-ms", "30000", ...server]],
        ["npx", ["--yes", "--package", tarball, "mcp-cancellable", "proxy", "--timeout-ms", "30000", ...server]],
      ] as const) {
        const client = new Client({ name: "desktop-line", version: "1.0.0" });
        await client.connect(new StdioClientTransport({ command, args: [...args], cwd: elsewhere, stderr: "ignore" }));
        try {
          await expect(client.callTool({ name: "sleep", arguments: { ms: 10 } })).resolves.toMatchObject({
            content: [{ text: "slept 10" }],
          });
        } finally {
          await client.close();
        }
      }
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 180_000);

  it("docs/package.md's size table is the pack's (within 5%; `npm run size:table` writes it); the docs the CLI points to ship", async () => {
    const { staleRows } = await import("../../scripts/size-table.mjs");
    expect(staleRows(readFileSync(resolve(root, "docs/package.md"), "utf8"), packInfo), "run npm run size:table").toEqual([]);
    expect(packInfo.files.map((f) => f.path)).toEqual(expect.arrayContaining(["docs/proxy.md", "docs/probe.md"]));
  });

  it("the CLI, installed, names the proxy's documentation by its path in the installed package", async (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    const failed = await run(process.execPath, [join(installed, "dist/cli.js"), "proxy", "--timeout-ms", "0", "--", "node"]).then(
      () => undefined,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain(`see ${join(installed, "docs/proxy.md")}, or https://`);
    expect(existsSync(join(installed, "docs/proxy.md"))).toBe(true);
  });

  it("the pages that ship link to pages and examples that ship (links into src/ and bench/ are the repository's, and say so in docs/package.md)", () => {
    const shipped = new Set(packInfo.files.map((f) => f.path));
    const pages = [...shipped].filter((path) => path.endsWith(".md"));
    expect(pages).toEqual(expect.arrayContaining(["README.md", "CHANGELOG.md", "docs/api.md", "docs/proxy.md"]));
    const links = pages.flatMap((page) => relativeLinks(page, readFileSync(resolve(root, page), "utf8")));
    const broken = links
      .filter((link) => !/^(src|bench)\//.test(link.target))
      .filter((link) => {
        if (!shipped.has(link.target)) return true;
        return (
          link.anchor !== undefined &&
          link.target.endsWith(".md") &&
          !headingAnchors(readFileSync(resolve(root, link.target), "utf8")).has(link.anchor)
        );
      })
      .map((link) => `${link.page}: ${link.href}`);
    expect(broken).toEqual([]);
  });

  it("one copy of the core per format: every entry of ESM, and every entry of CommonJS, shares it", (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    // One class per error kind, so `instanceof CallTimeoutError` from the root holds for an error
    // thrown inside `mcp-cancellable/openai-agents` or `/ai-sdk`; one id counter, one registry of
    // attached clients. The executable (cli.js) is a bundle of its own and is not counted.
    const dist = join(installed, "dist");
    const defining = (ext: string) =>
      readdirSync(dist).filter(
        (f) =>
          f.endsWith(ext) && f !== "cli.js" && /\bCallTimeoutError = (?:\(_class\d* = )?class\b/.test(readFileSync(join(dist, f), "utf8")),
      );
    expect(defining(".js")).toHaveLength(1);
    expect(defining(".cjs")).toHaveLength(1);
  });

  it("both builds in one process (import and require): they share the id counters, and one refuses a client the other carries", async (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    // An outside tester's: each build counted callId from 1 (two calls of one log under one id),
    // and a second build's attachCancellation of a client the first had wrapped was accepted, and
    // then no request reached the server.
    const script = `
      import { createRequire } from "node:module";
      import { Client } from "@modelcontextprotocol/sdk/client/index.js";
      import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
      import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
      const esm = await import("mcp-cancellable");
      const cjs = createRequire(import.meta.url)("mcp-cancellable");
      const ids = [];
      const clients = [];
      for (const lib of [esm, cjs]) {
        const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
        const server = new McpServer({ name: "s", version: "1.0.0" });
        server.registerTool("echo", {}, () => ({ content: [{ type: "text", text: "echo" }] }));
        await server.connect(serverSide);
        const client = new Client({ name: "dual", version: "1.0.0" });
        const mcp = lib.withCancellation(client, clientSide);
        await client.connect(mcp.transport);
        await mcp.callTool({ name: "echo" });
        const record = mcp.records()[0];
        ids.push([record.callId, record.connectionId]);
        clients.push(client);
      }
      let refused = null;
      try { cjs.attachCancellation(clients[0]); } catch (error) { refused = { name: error.name, option: error.option, copy: /another copy/.test(error.message) }; }
      // An adapter of one copy handed to the other's withCancellation: its layers would be unseen.
      const { stdioCancellation } = await import("mcp-cancellable/stdio");
      let adapterRefused = null;
      try {
        cjs.withCancellation(new Client({ name: "mixed", version: "1.0.0" }), stdioCancellation(InMemoryTransport.createLinkedPair()[0]));
      } catch (error) { adapterRefused = { option: error.option, copy: /another copy/.test(error.message) }; }
      // One copy's handle transport (mcp.transport) handed to the other's withCancellation: a second wire would drop the first's requests.
      let viewRefused = null;
      try {
        const [clientSide] = InMemoryTransport.createLinkedPair();
        const first = esm.withCancellation(new Client({ name: "view", version: "1.0.0" }), clientSide);
        cjs.withCancellation(new Client({ name: "view2", version: "1.0.0" }), first.transport);
      } catch (error) { viewRefused = { option: error.option, copy: /another copy/.test(error.message) }; }
      // A client one copy's Agents server connected: the other copy's attach is refused, naming the copy.
      let agentsRefused = null;
      {
        const { CancellableMCPServer } = await import("mcp-cancellable/openai-agents");
        const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
        const server = new McpServer({ name: "s", version: "1.0.0" });
        await server.connect(serverSide);
        const client = new Client({ name: "agents", version: "1.0.0" });
        const agents = new CancellableMCPServer({ name: "a", create: () => ({ client, transport: clientSide }) });
        await agents.connect();
        try { cjs.attachCancellation(client); } catch (error) { agentsRefused = { option: error.option, copy: /another copy/.test(error.message) }; }
        await agents.close();
      }
      // The CommonJS build's classes keep their names (its chunks were once lowered to _class2 = class ...).
      const names = Object.entries(cjs).filter(([, v]) => typeof v === "function" && Function.prototype.toString.call(v).startsWith("class"))
        .filter(([k, v]) => cjs[v.name] !== v).map(([k, v]) => k + " is named " + v.name);
      for (const client of clients) await client.close();
      console.log(JSON.stringify({ refused, adapterRefused, viewRefused, agentsRefused, names, sameCallId: ids[0][0] === ids[1][0], sameConnectionId: ids[0][1] === ids[1][1] }));
    `;
    const { stdout } = await sh(process.execPath, ["--input-type=module", "-e", script], consumer, 60_000);
    expect(JSON.parse(stdout.trim().split("\n").pop()!)).toEqual({
      refused: { name: "InvalidOptionError", option: "client", copy: true },
      adapterRefused: { option: "transport", copy: true },
      viewRefused: { option: "transport", copy: true },
      agentsRefused: { option: "client", copy: true },
      names: [],
      sameCallId: false,
      sameConnectionId: false,
    });
  });

  it("installs from the packed tarball with the SDK", (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    expect(existsSync(join(installed, "package.json"))).toBe(true);
    const shipped = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { version: string };
    expect(shipped.version).toBe(pkg.version);
    // only what "files" lists ships: no sources, tests or configs
    expect(readdirSync(installed).sort()).toEqual(expect.arrayContaining(["dist", "package.json"]));
    for (const absent of ["src", "test", "tsup.config.ts", "tsconfig.json", "node_modules"]) {
      expect(existsSync(join(installed, absent)), absent).toBe(false);
    }
  });

  for (const [label, script] of [
    ["import (ESM)", "check.mjs"],
    ["require (CommonJS)", "check.cjs"],
  ] as const) {
    it(`${label}: root and every subpath load with the source's exports, and a round trip works`, async (ctx) => {
      if (offline !== undefined) ctx.skip(offline);
      for (const subpath of subpaths) expect(SOURCES, `add ${subpath} to SOURCES`).toHaveProperty([subpath]);
      const { stdout } = await sh(process.execPath, [script, JSON.stringify(subpaths)], consumer, 60_000);
      const result = JSON.parse(stdout.trim().split("\n").pop()!) as {
        error?: string;
        version: string;
        exports: Record<string, string[]>;
        hello: string;
        timeout: { instanceOf: boolean; guard: boolean; code: string; mechanism: string };
        invalid: { instanceOf: boolean; option: string };
        serverSawCancel: boolean;
        records: string[];
      };
      expect(result.error).toBeUndefined();
      expect(result.version).toBe(pkg.version);
      for (const subpath of [".", ...subpaths]) {
        const source = (await import(resolve(root, SOURCES[subpath]!))) as Record<string, unknown>;
        expect(result.exports[subpath], subpath).toEqual(
          Object.keys(source)
            .filter((k) => k !== "default")
            .sort(),
        );
      }
      expect(result.exports["."]).toContain("withCancellation");
      expect(result.exports["./stdio"]).toContain("stdioCancellation");
      expect(result.hello).toBe("hello");
      expect(result.timeout).toEqual({ instanceOf: true, guard: true, code: "REQUEST_TIMEOUT", mechanism: "notification" });
      expect(result.invalid).toEqual({ instanceOf: true, option: "timeoutMs" });
      expect(result.serverSawCancel).toBe(true);
      expect(result.records).toEqual(["succeeded", "cancelled (timeout), outcome unverified"]);
    });
  }

  it("the built root entry (dist/index.js and dist/index.cjs) pulls in no node: module", (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    for (const entry of ["dist/index.js", "dist/index.cjs"]) {
      const { files, specifiers } = reach(join(installed, entry));
      expect(files.length, entry).toBeGreaterThanOrEqual(1);
      expect(
        specifiers.filter((s) => NODE_ONLY.has(s)),
        entry,
      ).toEqual([]);
      expect(
        specifiers.filter((s) => s.startsWith("@modelcontextprotocol/")),
        entry,
      ).toEqual([]);
      expect(specifiers, entry).toEqual(["zod"]); // p-timeout is bundled (ESM only upstream)
    }
  });

  it("no built file imports a framework: the integrations use their framework's types only (optional peers)", (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    for (const subpath of [".", ...subpaths]) {
      const name = subpath === "." ? "index" : subpath.slice(2);
      for (const entry of [`dist/${name}.js`, `dist/${name}.cjs`]) {
        const { specifiers } = reach(join(installed, entry));
        expect(
          specifiers.filter((s) => s.startsWith("@openai/") || s.startsWith("@ai-sdk/")),
          entry,
        ).toEqual([]);
      }
    }
    // The integrations' types name their framework; the root's and the adapters' never do.
    for (const name of ["index", "stdio", "streamable-http", "ai-sdk"]) {
      expect(readFileSync(join(installed, `dist/${name}.d.ts`), "utf8"), name).not.toMatch(/from ['"]@(openai|ai-sdk)\//);
    }
    expect(readFileSync(join(installed, "dist/openai-agents.d.ts"), "utf8")).toMatch(/from ['"]@openai\/agents['"]/);
  });

  it("the scan sees node: imports where there are some (the CLI bundle)", (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    if (!existsSync(join(installed, "dist/cli.js"))) ctx.skip("no CLI bundle in this build");
    expect(reach(join(installed, "dist/cli.js")).specifiers.some((s) => NODE_ONLY.has(s))).toBe(true);
  });

  it("publint reports no problems on the installed files", async (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    const { stdout } = await sh("npx", ["publint", "--strict", "--pack", "false", installed], root, 60_000);
    expect(stdout).toContain("All good!");
  });

  it("@arethetypeswrong/cli reports no problems on the tarball (node16 and bundler resolution)", async (ctx) => {
    if (offline !== undefined) ctx.skip(offline);
    const { stdout } = await attw;
    const report = JSON.parse(stdout) as { analysis: { problems: unknown[] } };
    expect(report.analysis.problems.filter((p) => (p as { resolutionKind?: string }).resolutionKind !== "node10")).toEqual([]);
  });
});

// Install lines that work (issue 21, item 1): one scratch project for every Node 20 integration,
// with exactly the packages README.md and docs/package.md tell a bot author to install for them
// (the tarball standing for `mcp-cancellable`; versions pinned to the ones tested in the repo),
// and nothing else: no @modelcontextprotocol/client, so the Agents servers build their client
// with the v1 SDK that @openai/agents 0.14 uses. One project, not one per integration, to keep
// `npm test` to one install; each integration's packages are disjoint but for the SDK, which
// each install line names. Each script runs that integration's call with a timeout against the
// v1 SDK server (test/fixtures/sdk-stdio-server.mjs) and prints one JSON line.
const read = (path: string) => readFileSync(resolve(root, path), "utf8");
const INTEGRATION_PACKAGES = [
  "@modelcontextprotocol/sdk@1.32.2",
  "@openai/agents@0.14.3",
  "@ai-sdk/mcp@1.0.102",
  "@langchain/mcp-adapters@1.1.4",
  "@langchain/core@1.4.0",
];

describe("each integration installed as docs/package.md says, running its call", () => {
  let scratch: string;
  let skipped: string | undefined;
  beforeAll(async () => {
    if (offline !== undefined) {
      skipped = offline;
      return;
    }
    scratch = join(work, "integrations");
    cpSync(resolve(root, "test/fixtures/install"), scratch, { recursive: true });
    cpSync(resolve(root, "test/fixtures/sdk-stdio-server.mjs"), join(scratch, "server.mjs"));
    writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "integrations", version: "1.0.0", private: true, type: "module" }));
    await sh(
      "npm",
      ["install", tarball, ...INTEGRATION_PACKAGES, "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline", "--no-package-lock"],
      scratch,
      400_000,
    );
  }, 450_000);

  const runScript = async (script: string) => {
    const { stdout } = await sh(process.execPath, [script], scratch, 60_000);
    return JSON.parse(stdout.trim().split("\n").pop()!) as Record<string, unknown>;
  };

  it("the install lines are the ones in README.md and docs/package.md", () => {
    const docs = read("docs/package.md");
    const readme = read("README.md");
    for (const line of [
      "npm install mcp-cancellable @openai/agents@0.14 @modelcontextprotocol/sdk",
      "npm install mcp-cancellable @ai-sdk/mcp@1 @modelcontextprotocol/sdk",
      "npm install mcp-cancellable @langchain/mcp-adapters @langchain/core @modelcontextprotocol/sdk",
    ]) {
      expect(docs, line).toContain(line);
      expect(readme, line).toContain(line);
      // what is installed here is that line, pinned
      for (const name of line.split(" ").slice(3))
        expect(INTEGRATION_PACKAGES.some((p) => p.startsWith(name.replace(/@\d+(\.\d+)*$/, "")))).toBe(true);
    }
  });

  it("OpenAI Agents JS 0.14 with only the v1 SDK: the Runner's tool call times out at our bound, the model gets its next turn", async (ctx) => {
    if (skipped !== undefined) ctx.skip(skipped);
    expect(existsSync(join(scratch, "node_modules", "@modelcontextprotocol", "client"))).toBe(false);
    const result = await runScript("agents.mjs");
    expect(result).toEqual({ finalOutput: "done", sdkLine: "v1", turns: 2, calls: ["cancelled (timeout), outcome unverified"] });
  });

  it("Vercel AI SDK (@ai-sdk/mcp 1.x): the tool's execute rejects -32001 at our bound", async (ctx) => {
    if (skipped !== undefined) ctx.skip(skipped);
    const result = await runScript("ai-sdk.mjs");
    expect(result).toEqual({
      code: -32001,
      dataCode: "REQUEST_TIMEOUT",
      records: ["succeeded", "cancelled (timeout), outcome unverified"],
    });
  });

  it("LangChain JS (loadMcpTools over mcp.sdkClient): the tool's invoke fails naming our timeout", async (ctx) => {
    if (skipped !== undefined) ctx.skip(skipped);
    const result = await runScript("langchain.mjs");
    expect(result.failed).toBeUndefined();
    expect(String(result.error)).toMatch(/timed out after 300 ms/);
    expect(result.records).toEqual(["succeeded", "cancelled (timeout), outcome unverified"]);
  });
});
