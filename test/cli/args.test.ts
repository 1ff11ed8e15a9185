import { describe, expect, it } from "vitest";
import {
  DEFAULT_CANCEL_AFTER_MS,
  DEFAULT_GRACE_MS,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_WINDOW_MS,
  parseProbeArgs,
  PROBE_HELP,
  UsageError,
} from "../../src/cli/args.js";
import { shellWords, ShellWordsError } from "../../src/cli/shell-words.js";
import { cli } from "./helpers.js";

describe("shellWords", () => {
  it("splits on whitespace and keeps quoted words whole", () => {
    expect(shellWords("node server.js --flag")).toEqual(["node", "server.js", "--flag"]);
    expect(shellWords(`  node   "my server.js"  'a b'\tc `)).toEqual(["node", "my server.js", "a b", "c"]);
    expect(shellWords(`a"b c"d`)).toEqual(["ab cd"]);
    expect(shellWords(`'' ""`)).toEqual(["", ""]);
    expect(shellWords("")).toEqual([]);
  });

  it("handles backslashes like a POSIX shell, and does no expansion", () => {
    expect(shellWords(String.raw`a\ b c`)).toEqual(["a b", "c"]);
    expect(shellWords(String.raw`"say \"hi\" \\ \n"`)).toEqual([String.raw`say "hi" \ \n`]);
    expect(shellWords(String.raw`'it\'s`)).toEqual(["it\\s"]); // no escapes inside single quotes
    expect(shellWords("$HOME ~ *.js | x")).toEqual(["$HOME", "~", "*.js", "|", "x"]);
    expect(shellWords(`--args '{"a": 1}'`)).toEqual(["--args", '{"a": 1}']);
  });

  it("rejects unterminated quotes and a trailing backslash", () => {
    expect(() => shellWords(`node "x`)).toThrow(ShellWordsError);
    expect(() => shellWords(`node 'x`)).toThrow(/unterminated ' quote at column 6/);
    expect(() => shellWords("node \\")).toThrow(/trailing backslash/);
  });
});

describe("parseProbeArgs", () => {
  it("fills the documented defaults", () => {
    const options = parseProbeArgs(["--stdio", "node s.js"]);
    expect(options).toMatchObject({
      target: { kind: "stdio", command: "node", args: ["s.js"], env: {} },
      era: "legacy",
      tool: undefined,
      toolArgs: {},
      allowSideEffects: false,
      cancelAfterMs: DEFAULT_CANCEL_AFTER_MS,
      windowMs: DEFAULT_WINDOW_MS,
      graceMs: DEFAULT_GRACE_MS,
      timeoutMs: DEFAULT_TIMEOUT_MS,
      json: false,
    });
    expect([DEFAULT_CANCEL_AFTER_MS, DEFAULT_WINDOW_MS, DEFAULT_GRACE_MS, DEFAULT_TIMEOUT_MS]).toEqual([300, 2000, 100, 10000]);
  });

  it("reads every flag", () => {
    const options = parseProbeArgs([
      "--stdio",
      `npx "my server"`,
      "--env",
      "A=1",
      "--env",
      "B=x=y",
      "--cwd",
      ".",
      "--era",
      "2026-07-28",
      "--tool",
      "t",
      "--args",
      '{"n":1}',
      "--allow-side-effects",
      "--cancel-after",
      "0",
      "--window",
      "50",
      "--grace",
      "0",
      "--timeout",
      "7",
      "--json",
    ]);
    expect(options).toMatchObject({
      target: { kind: "stdio", command: "npx", args: ["my server"], env: { A: "1", B: "x=y" }, cwd: "." },
      era: "2026-07-28",
      tool: "t",
      toolArgs: { n: 1 },
      allowSideEffects: true,
      cancelAfterMs: 0,
      windowMs: 50,
      graceMs: 0,
      timeoutMs: 7,
      json: true,
    });
    const http = parseProbeArgs(["--url", "http://127.0.0.1:1/mcp", "--header", "Authorization: Bearer a:b", "--header", "X-A:1"]);
    expect(http).toMatchObject({
      target: { kind: "http", url: "http://127.0.0.1:1/mcp", headers: { Authorization: "Bearer a:b", "X-A": "1" } },
    });
    expect(parseProbeArgs(["-h"])).toBe("help");
  });

  it.each([
    [[], /exactly one target/],
    [["--stdio", "a", "--url", "http://x"], /exactly one target/],
    [["--stdio", ""], /command is empty/],
    [["--stdio", "a 'b"], /--stdio: unterminated/],
    [["--stdio", "a", "--env", "NOEQUALS"], /--env: expected KEY=VALUE/],
    [["--stdio", "a", "--cwd", "/no/such/dir"], /--cwd: .* is not a directory/],
    [["--stdio", "a", "--header", "A: b"], /--header is for --url/],
    [["--url", "ftp://x"], /expected http:\/\/ or https:\/\//],
    [["--url", "not a url"], /is not a URL/],
    [["--url", "http://x", "--header", "no colon"], /--header: expected "Name: value"/],
    // One check for the probe and the proxy: a value no HTTP request can carry, named by its header.
    [["--url", "http://x", "--header", "X-Key: a\nb"], /^--header X-Key: the value .* holds a line break \(LF\)/],
    [["--url", "http://x", "--env", "A=1"], /--env and --cwd are for --stdio/],
    [["--stdio", "a", "--era", "2025"], /--era: expected legacy or 2026-07-28/],
    [["--stdio", "a", "--args", "{"], /--args: not valid JSON/],
    [["--stdio", "a", "--args", "[1]"], /--args: expected a JSON object/],
    [["--stdio", "a", "--window", "0"], /--window: expected 1 to 2147483647 ms, got 0/],
    [["--stdio", "a", "--timeout", "1.5"], /--timeout: expected a whole number of milliseconds/],
    [["--stdio", "a", "--cancel-after=-1"], /--cancel-after: expected a whole number/],
    [["--stdio", "a", "--cancel-after", "-1"], /--cancel-after: expected a whole number/],
    [["--stdio", "a", "--window", "2147483648"], /--window: expected 1 to 2147483647 ms/],
    [["--stdio", "a", "--window", "100", "--grace", "100"], /--grace: must be shorter than --window/],
    [["--stdio", "a", "--bogus"], /^Unknown option '--bogus'$/],
    // Close to a known flag: the proxy's name of it, a typo.
    [["--stdio", "a", "--timeout-ms", "500"], /^Unknown option '--timeout-ms'\. Did you mean --timeout\?$/],
    [["--stdio", "a", "--windw", "500"], /Did you mean --window\?$/],
    [["--stdio", "a", "extra"], /positional/],
  ])("rejects %j", (argv, message) => {
    expect(() => parseProbeArgs(argv)).toThrow(UsageError);
    expect(() => parseProbeArgs(argv)).toThrow(message);
  });
});

describe("--help", () => {
  it("documents every flag, with the unit and default of every duration", () => {
    for (const flag of [
      "--stdio",
      "--env",
      "--cwd",
      "--url",
      "--header",
      "--era",
      "--tool",
      "--args",
      "--allow-side-effects",
      "--cancel-after",
      "--window",
      "--grace",
      "--timeout",
      "--json",
      "--help",
    ]) {
      expect(PROBE_HELP).toContain(flag);
    }
    expect(PROBE_HELP).toMatch(/all in milliseconds/);
    expect(PROBE_HELP).toMatch(/--cancel-after <ms>[\s\S]*Default: 300\./);
    expect(PROBE_HELP).toMatch(/--window <ms>[\s\S]*Default: 2000\./);
    expect(PROBE_HELP).toMatch(/--grace <ms>[\s\S]*Default: 100\./);
    expect(PROBE_HELP).toMatch(/--timeout <ms>[\s\S]*Default: 10000\./);
    expect(PROBE_HELP).toMatch(/--era <era>[\s\S]*Default: legacy\./);
    expect(PROBE_HELP).toMatch(/--args <json>[\s\S]*Default: \{\}\./);
    expect(PROBE_HELP).toMatch(/Exit status: 0 .* 1 .* 2 usage error/s);
  });

  it("exit codes: help 0, usage errors 2 (on stderr, no stack trace)", async () => {
    const help = await cli(["probe", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toBe(PROBE_HELP);
    expect((await cli(["--help"])).code).toBe(0);
    const none = await cli([]);
    expect(none.code).toBe(2);
    const unknown = await cli(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "frobnicate"/);
    const bad = await cli(["probe", "--stdio", "x", "--window", "soon"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^mcp-cancellable probe: --window: expected a whole number of milliseconds, got "soon"/);
    expect(bad.stderr).not.toMatch(/^\s+at /m);
  });
});
