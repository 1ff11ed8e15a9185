import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { dashesBeforeCommand, parseProxyArgs, PROXY_VALUE_FLAGS } from "../../src/cli/proxy/args.js";
import { LISTEN_FLAG_NAMES } from "../../src/cli/proxy/listen/args.js";
import { limitsFor, parseConfig } from "../../src/cli/proxy/config.js";

async function run(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe("mcp-cancellable proxy: command line", () => {
  it("--help prints the usage on stdout, exit 0; the top-level help lists the command", async () => {
    const help = await run(["proxy", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: mcp-cancellable proxy \[options\] -- <command> \[args\.\.\.\]/);
    expect(help.stdout).toMatch(/Exit status: 0 .*; 1 .*; 2 usage error/s);
    expect((await run(["--help"])).stdout).toMatch(/^ {2}proxy {4}/m);
  });

  it("usage errors exit 2 and name the flag, pointing at --help", async () => {
    for (const [argv, message] of [
      [["proxy"], /give exactly one upstream/],
      [["proxy", "--url", "http://127.0.0.1:1/mcp", "--", "node"], /give exactly one upstream/],
      [["proxy", "--url", "http://127.0.0.1:1/mcp", "server.js"], /give exactly one upstream/],
      [["proxy", "--timeout-ms", "0", "--", "node"], /--timeout-ms: expected 1 to 2147483647 ms or "none" \(no limit\), got 0/],
      [["proxy", "--timeout-ms", "-5", "--", "node"], /--timeout-ms: expected a whole number of milliseconds or "none", got "-5"/],
      [
        ["proxy", "--max-total-timeout-ms", "soon", "--", "node"],
        /--max-total-timeout-ms: expected a whole number of milliseconds or "none"/,
      ],
      [["proxy", "--url", "ftp://x"], /--url: expected http:\/\/ or https:\/\//],
      [["proxy", "--url", "http://x/mcp", "--header", "no colon"], /--header: expected "Name: value"/],
      [["proxy", "--header", "A: b", "--", "node"], /--header is for --url \(an HTTP server\); use --env/],
      [["proxy", "--era", "2026-07-28", "--", "node"], /--era is for --url \(an HTTP server\)\n/],
      [["proxy", "--era", "2026-07-28", "--header", "A: b", "--", "node"], /--header and --era are for --url/],
      // A flag with one value, given twice: not the last one silently winning.
      [["proxy", "--timeout-ms", "5000", "--timeout-ms", "300", "--", "node"], /--timeout-ms: given twice/],
      [["proxy", "--url", "http://x/mcp", "--url", "http://y/mcp"], /--url: given twice/],
      [["proxy", "--", ""], /command after "--" is empty/],
      // An unknown flag close to a known one: the probe's name of it, a typo, a front flag.
      [["proxy", "--timeout", "500", "--", "node"], /Unknown option '--timeout'\. Did you mean --timeout-ms\?/],
      [["proxy", "--max-total-timeout", "500", "--", "node"], /Did you mean --max-total-timeout-ms\?/],
      [["proxy", "--heder", "A: b", "--url", "http://x/mcp"], /Unknown option '--heder'\. Did you mean --header\?/],
      [["proxy", "--auth-token-fil", "t", "--", "node"], /Did you mean --auth-token-file\?/],
      [["proxy", "--bogus", "--", "node"], /Unknown option '--bogus'\n/],
    ] as const) {
      const result = await run([...argv]);
      expect(result.code, argv.join(" ")).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).toMatch(/Run mcp-cancellable proxy --help/);
      expect(result.stdout).toBe("");
    }
  });

  it("an error names the documentation by its path in the package that runs (here the clone's docs/proxy.md), and the project's page", async () => {
    const { stderr } = await run(["proxy", "--timeout-ms", "0", "--", "node"]);
    const path =
      /see (\/\S+\/docs\/proxy\.md), or https:\/\/github\.com\/mcp-cancellable\/mcp-cancellable\/blob\/main\/docs\/proxy\.md/.exec(
        stderr,
      )?.[1];
    expect(path, stderr).toBe(fileURLToPath(new URL("../../docs/proxy.md", import.meta.url)));
    expect(existsSync(path!)).toBe(true);
  });

  it("everything after -- is the server's command, flags included; none is Infinity", () => {
    const options = parseProxyArgs(["--timeout-ms", "none", "--env", "A=1", "--", "node", "server.js", "--timeout-ms", "5"]);
    expect(options).toMatchObject({
      upstream: { kind: "stdio", command: "node", args: ["server.js", "--timeout-ms", "5"], env: { A: "1" } },
      limits: { timeoutMs: Infinity },
    });
  });

  it("the server's command may come without --: it starts at the first argument that is not a flag or a flag's value (the MCP Inspector's CLI keeps every --)", () => {
    const split = (argv: string[]) => dashesBeforeCommand(argv, [...PROXY_VALUE_FLAGS, ...LISTEN_FLAG_NAMES]);
    expect(split(["--timeout-ms", "500", "--verbose", "node", "server.js", "--timeout-ms", "5"])).toEqual([
      "--timeout-ms",
      "500",
      "--verbose",
      "--",
      "node",
      "server.js",
      "--timeout-ms",
      "5",
    ]);
    expect(split(["--timeout-ms=500", "--listen", "127.0.0.1:0", "npx", "-y", "srv"])).toEqual([
      "--timeout-ms=500",
      "--listen",
      "127.0.0.1:0",
      "--",
      "npx",
      "-y",
      "srv",
    ]);
    // A "--" among the server's own arguments stays theirs.
    expect(split(["--timeout-ms", "30000", "node", "s.js", "--stdio", "--", "extra"])).toEqual([
      "--timeout-ms",
      "30000",
      "--",
      "node",
      "s.js",
      "--stdio",
      "--",
      "extra",
    ]);
    // With "--", the list is as it was; with only flags, too.
    expect(split(["--verbose", "--", "node", "--inspect"])).toEqual(["--verbose", "--", "node", "--inspect"]);
    expect(split(["--url", "http://127.0.0.1:1/mcp", "--verbose"])).toEqual(["--url", "http://127.0.0.1:1/mcp", "--verbose"]);
    const options = parseProxyArgs(split(["--timeout-ms", "none", "--env", "A=1", "node", "server.js", "--verbose"]));
    expect(options).toMatchObject({
      upstream: { kind: "stdio", command: "node", args: ["server.js", "--verbose"], env: { A: "1" } },
      limits: { timeoutMs: Infinity },
      verbose: false,
    });
  });

  it("--client-wait-timeout-ms and the config file's clientWaitTimeoutMs: a limit of its own, none is Infinity, checked as the others", async () => {
    expect(parseProxyArgs(["--client-wait-timeout-ms", "1500", "--", "node"])).toMatchObject({ limits: { clientWaitTimeoutMs: 1_500 } });
    expect(parseProxyArgs(["--client-wait-timeout-ms", "none", "--", "node"])).toMatchObject({ limits: { clientWaitTimeoutMs: Infinity } });
    const bad = await run(["proxy", "--client-wait-timeout-ms", "0", "--", "node"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--client-wait-timeout-ms: expected 1 to 2147483647 ms or "none" \(no limit\), got 0/);
    const config = parseConfig({ defaults: { clientWaitTimeoutMs: 900 }, tools: { form: { clientWaitTimeoutMs: null } } }, "c.json");
    expect(limitsFor(config, {}, "tools/call", "other")).toMatchObject({ clientWaitTimeoutMs: 900 });
    expect(limitsFor(config, {}, "tools/call", "form")).toMatchObject({ clientWaitTimeoutMs: Infinity });
    expect(() => parseConfig({ defaults: { clientWaitTimeoutMS: 1 } }, "c.json")).toThrow(
      /unknown key "defaults.clientWaitTimeoutMS" \(expected .*"clientWaitTimeoutMs"\)/,
    );
  });

  it("the config file's odd values are named plainly (outside testers'): 1e999, a tool named __proto__, an entry that is no object", () => {
    expect(() => parseConfig(JSON.parse('{"defaults":{"timeoutMs":1e999}}'), "c.json")).toThrow(
      /"defaults.timeoutMs" must be an integer from 1 to 2147483647 \(ms\), or null for no limit, got Infinity \(a number too large for JSON\)$/,
    );
    expect(() => parseConfig(JSON.parse('{"tools":{"__proto__":{"timeoutMs":0}}}'), "c.json")).toThrow(
      '--config c.json: "tools.__proto__" is not a name the proxy takes',
    );
    expect(() => parseConfig({ tools: { x: 5 } }, "c.json")).toThrow(
      '--config c.json: "tools.x" must be an object of limits ("timeoutMs", "maxTotalTimeoutMs", "resetTimeoutOnProgress", "clientWaitTimeoutMs"), got 5',
    );
    expect(() => parseConfig({ defaults: "fast" }, "c.json")).toThrow(/"defaults" must be an object of limits .*, got "fast"$/);
  });

  it("limits: tool over method over the command line over the file's defaults over the built-in ones; null is no limit", () => {
    const config = parseConfig(
      {
        defaults: { timeoutMs: 1_000, maxTotalTimeoutMs: null },
        methods: { "tools/call": { timeoutMs: 2_000 } },
        tools: { slow: { timeoutMs: 3_000, resetTimeoutOnProgress: false } },
      },
      "c.json",
    );
    expect(limitsFor(config, {}, "tools/list", null)).toEqual({
      timeoutMs: 1_000,
      maxTotalTimeoutMs: Infinity,
      resetTimeoutOnProgress: true,
    });
    expect(limitsFor(config, { timeoutMs: 1_500 }, "tools/list", null).timeoutMs).toBe(1_500);
    expect(limitsFor(config, { timeoutMs: 1_500 }, "tools/call", "fast").timeoutMs).toBe(2_000);
    expect(limitsFor(config, { timeoutMs: 1_500 }, "tools/call", "slow")).toMatchObject({
      timeoutMs: 3_000,
      resetTimeoutOnProgress: false,
    });
    // A tool entry applies to tools/call only, and "__proto__"-like names are plain names.
    expect(limitsFor(config, {}, "prompts/get", "slow").timeoutMs).toBe(1_000);
    expect(limitsFor(config, {}, "tools/call", "constructor").timeoutMs).toBe(2_000);
  });
});
