import { statSync } from "node:fs";
import { parseArgs } from "node:util";
import leven from "leven";
import type { ParseArgsConfig } from "node:util";
import { shellWords, ShellWordsError } from "./shell-words.js";

/** Default time from the `tools/call` to the cancel, in ms. */
export const DEFAULT_CANCEL_AFTER_MS = 300;
/** Default observation window after each cancel, in ms. */
export const DEFAULT_WINDOW_MS = 2_000;
/**
 * Default grace after a cancel, in ms, used when the fence (the request sent right after the
 * cancel) got no answer: a message arriving this soon after the cancel may have
 * crossed it on the wire (rule 9), so it is a WARN, not a FAIL.
 */
export const DEFAULT_GRACE_MS = 100;
/** Default bound on starting the server, `initialize`, and each follow-up request, in ms. */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** The largest duration accepted, in ms (the largest delay a timer honours). */
export const MAX_MS = 2_147_483_647;

/** The protocol era the probe speaks: the 2025 `initialize` handshake, or 2026-07-28. */
export type Era = "legacy" | "2026-07-28";

/** Everything `mcp-cancellable probe` was asked to do, validated. Durations in ms. */
export interface ProbeOptions {
  target:
    | { kind: "stdio"; command: string; args: string[]; env: Record<string, string>; cwd?: string; line: string }
    | { kind: "http"; url: string; headers: Record<string, string> };
  era: Era;
  tool: string | undefined;
  toolArgs: Record<string, unknown>;
  allowSideEffects: boolean;
  cancelAfterMs: number;
  windowMs: number;
  graceMs: number;
  timeoutMs: number;
  json: boolean;
}

/** A bad command line: the message says what and how to fix it (exit code 2). */
export class UsageError extends Error {
  override name = "UsageError" as const;
}

export const PROBE_HELP = `Usage: mcp-cancellable probe (--stdio "<command>" | --url <url>) [options]

Checks whether an MCP server honours cancellation: calls a tool, cancels it, and watches the
wire. Each check is PASS, FAIL, WARN or SKIP, with the evidence and the spec rule it tests
("rule N": listed with its specification page and section in docs/spec-rules.md).

Target (exactly one):
  --stdio "<command>"   Run a stdio server: the command line, split like a shell splits words
                        (quotes and backslashes; no variables, globs or pipes). Run without a
                        shell, in its own process group, ended when the probe ends.
  --env KEY=VALUE       Environment variable for the stdio server, on top of the probe's own.
                        Repeatable.
  --cwd <dir>           Working directory for the stdio server. Default: the current directory.
  --url <url>           A Streamable HTTP endpoint (http:// or https://).
  --header "Name: value"
                        Header sent with every HTTP request (auth, for example). Repeatable.
                        \${NAME} in the value is the environment variable NAME (unset or empty:
                        a usage error), so a token stays off the command line:
                        --header 'Authorization: Bearer \${MCP_TOKEN}'. $\${ is a literal \${.

Protocol:
  --era <era>           legacy (2025-era: the initialize handshake, v1 SDK client) or 2026-07-28
                        (v2 SDK client, pinned; needs @modelcontextprotocol/client).
                        Default: legacy.

Tool:
  --tool <name>         The tool to call and cancel. Default: picked from tools/list, one whose
                        annotations say readOnlyHint and idempotentHint (never destructiveHint),
                        preferring a slow-sounding name and no required arguments.
  --args <json>         The tool's arguments, a JSON object. Default: {}.
  --allow-side-effects  Allow a tool that may have side effects: --tool naming one not annotated
                        readOnlyHint (or annotated destructiveHint), or a pick from tools/list
                        that is not read-only and idempotent. A cancel does not undo what it
                        already did: only use this on a test server. Default: off.

Timing (all in milliseconds):
  --cancel-after <ms>   Time from the tools/call to the cancel. Pick one at which the tool is
                        still running. Default: ${DEFAULT_CANCEL_AFTER_MS}.
  --window <ms>         How long to watch the wire after each cancel. Default: ${DEFAULT_WINDOW_MS}.
  --grace <ms>          Used only when the tools/list sent right after a cancel gets no answer
                        (that answer is the evidence the server read the cancel): a message
                        this soon after a cancel may have crossed it on the wire (rule 9) and
                        is a WARN, not a FAIL. Default: ${DEFAULT_GRACE_MS}.
  --timeout <ms>        Bound on starting the server and its initialize answer, and on each
                        follow-up request. Default: ${DEFAULT_TIMEOUT_MS}.

Output:
  --json                Print the report as JSON (one object) instead of text.
  -h, --help            Print this help.

Exit status: 0 no check FAILed; 1 a check FAILed, or the server could not be probed (did not
start, crashed or exited during the probe, never answered initialize or server/discover
within --timeout, or does not speak JSON-RPC); 2 usage error, or --era 2026-07-28 without the
v2 SDK client (npm install @modelcontextprotocol/client); 129, 130, 143 stopped by SIGHUP,
SIGINT, SIGTERM (no report; a stdio server it started is stopped).

Example:
  mcp-cancellable probe --stdio "npx -y @modelcontextprotocol/server-everything stdio" \\
    --tool trigger-long-running-operation --args '{"duration":5,"steps":10}'
`;

/**
 * Parses and validates the arguments that follow `probe`.
 * @returns the options, or `"help"` when help was asked for.
 * @throws {UsageError} naming the flag and what is wrong with it.
 */
export function parseProbeArgs(argv: string[]): ProbeOptions | "help" {
  const v = parseFlags(argv, {
    stdio: { type: "string" },
    ...SERVER_FLAGS,
    tool: { type: "string" },
    args: { type: "string" },
    "allow-side-effects": { type: "boolean" },
    "cancel-after": { type: "string" },
    window: { type: "string" },
    grace: { type: "string" },
    timeout: { type: "string" },
    json: { type: "boolean" },
  });
  if (v.help === true) return "help";

  if ((v.stdio === undefined) === (v.url === undefined)) {
    throw new UsageError('give exactly one target: --stdio "<command>" or --url <url>');
  }
  let target: ProbeOptions["target"];
  if (v.stdio !== undefined) {
    if (v.header !== undefined) throw new UsageError("--header is for --url targets; use --env for --stdio");
    let words: string[];
    try {
      words = shellWords(v.stdio);
    } catch (error) {
      if (error instanceof ShellWordsError) throw new UsageError(`--stdio: ${error.message}`);
      throw error;
    }
    const [command, ...args] = words;
    if (command === undefined || command === "") throw new UsageError("--stdio: the command is empty");
    target = { kind: "stdio", command, args, ...stdioFlags(v.env, v.cwd), line: v.stdio };
  } else {
    if (v.env !== undefined || v.cwd !== undefined) throw new UsageError("--env and --cwd are for --stdio targets");
    target = { kind: "http", ...httpFlags(v.url!, v.header) };
  }

  const era = eraFlag(v.era);

  let toolArgs: Record<string, unknown> = {};
  if (v.args !== undefined) {
    let value: unknown;
    try {
      value = JSON.parse(v.args);
    } catch (error) {
      throw new UsageError(`--args: not valid JSON (${(error as Error).message})`);
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new UsageError("--args: expected a JSON object, such as '{\"duration\":5}'");
    }
    toolArgs = value as Record<string, unknown>;
  }
  if (v.tool !== undefined && v.tool.trim() === "") throw new UsageError("--tool: the name is empty");

  const windowMs = msFlag("--window", v.window, { min: 1 }) ?? DEFAULT_WINDOW_MS;
  const graceMs = msFlag("--grace", v.grace, { min: 0 }) ?? DEFAULT_GRACE_MS;
  if (graceMs >= windowMs) throw new UsageError(`--grace: must be shorter than --window (${graceMs} >= ${windowMs} ms)`);
  return {
    target,
    era,
    tool: v.tool,
    toolArgs,
    allowSideEffects: v["allow-side-effects"] === true,
    cancelAfterMs: msFlag("--cancel-after", v["cancel-after"], { min: 0 }) ?? DEFAULT_CANCEL_AFTER_MS,
    windowMs,
    graceMs,
    timeoutMs: msFlag("--timeout", v.timeout, { min: 1 }) ?? DEFAULT_TIMEOUT_MS,
    json: v.json === true,
  };
}

// ---- flag helpers shared by the commands (probe, proxy) --------------------------------------

/** The options of `util.parseArgs`. */
type Flags = NonNullable<ParseArgsConfig["options"]>;

/** The flags both commands take for the server: a stdio server's environment and directory, an HTTP server's URL, headers and era, and help. */
export const SERVER_FLAGS = {
  env: { type: "string", multiple: true },
  cwd: { type: "string" },
  url: { type: "string" },
  header: { type: "string", multiple: true },
  era: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies Flags;

/**
 * `util.parseArgs` over `argv`, strict, no positionals.
 * @param alsoKnown flags taken out of `argv` before (the HTTP front's), for the "did you mean".
 * @throws {UsageError} with its message (an unknown flag close to a known one: "Did you mean
 *   --x?"), through `explain` (to add a hint) if given.
 */
export function parseFlags<const O extends Flags>(
  argv: readonly string[],
  options: O,
  explain: (message: string) => string = (message) => message,
  alsoKnown: readonly string[] = [],
): ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: false }>>["values"] {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: false; tokens: true }>>;
  try {
    parsed = parseArgs({ args: negativeValuesJoined(argv, options), options, strict: true, allowPositionals: false, tokens: true });
  } catch (error) {
    throw new UsageError(explain(withSuggestion(error as Error & { code?: string }, [...Object.keys(options), ...alsoKnown])));
  }
  // A flag with one value given twice (`--timeout-ms 5000 --timeout-ms 300`) is a mistake, not the last one winning.
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option") continue;
    const flag = options[token.name];
    if (flag?.type !== "string" || flag.multiple === true) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name}: given twice`);
    seen.add(token.name);
  }
  return parsed.values;
}

/** `util.parseArgs`'s message, with "Did you mean --x?" after an unknown `--flag` close to a known one. */
function withSuggestion(error: Error & { code?: string }, known: readonly string[]): string {
  const unknown = error.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ? /'--([^'=]+)/.exec(error.message)?.[1] : undefined;
  const suggestion = unknown === undefined ? undefined : closestFlag(unknown, known);
  return suggestion === undefined ? error.message : `${error.message}. Did you mean --${suggestion}?`;
}

/**
 * The known flag closest to `unknown` (names without the dashes), if one is close: the same name
 * but for a `-ms` suffix (the probe's `--timeout`, the proxy's `--timeout-ms`), or a few letters
 * off (at most 2 edits, and at most a third of the name).
 */
export function closestFlag(unknown: string, known: readonly string[]): string | undefined {
  const bare = (name: string): string => name.replace(/-ms$/, "");
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of known) {
    const distance = leven(bare(unknown), bare(name));
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return bestDistance <= Math.min(2, Math.floor(bare(unknown).length / 3)) ? best : undefined;
}

/**
 * `--timeout-ms -5` as `--timeout-ms=-5`: `util.parseArgs` takes a value that starts with "-"
 * for a flag ("argument is ambiguous"), so the flag's own check, which names the flag and the
 * range it takes, would never see it. Only a negative number after a string flag is joined.
 */
function negativeValuesJoined(argv: readonly string[], options: Flags): string[] {
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    if (arg === "--") return [...joined, ...argv.slice(i)];
    const flag = arg.startsWith("--") && !arg.includes("=") ? options[arg.slice(2)] : undefined;
    if (flag?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}

/** `--env KEY=VALUE` (repeatable) and `--cwd <dir>` of a stdio server, checked. */
export function stdioFlags(pairs: readonly string[] | undefined, cwd: string | undefined): { env: Record<string, string>; cwd?: string } {
  const env: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UsageError(`--env: expected KEY=VALUE, got ${JSON.stringify(pair)}`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  if (cwd === undefined) return { env };
  let isDirectory = false;
  try {
    isDirectory = statSync(cwd).isDirectory();
  } catch {
    // reported below
  }
  if (!isDirectory) throw new UsageError(`--cwd: ${JSON.stringify(cwd)} is not a directory`);
  return { env, cwd };
}

/**
 * `--url <url>` (http or https) and `--header "Name: value"` (repeatable) of a Streamable HTTP
 * server, checked. In a header's value `${NAME}` is replaced by the environment variable `NAME`
 * (so a token need not be on the command line or in a shared config file: `--header
 * "Authorization: Bearer ${MCP_TOKEN}"`); `$${` is a literal `${`.
 * @throws {UsageError} a malformed URL or header, or a `${NAME}` that is not set (or is empty).
 */
export function httpFlags(
  text: string,
  list: readonly string[] | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): { url: string; headers: Record<string, string> } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--url: ${JSON.stringify(text)} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new UsageError(`--url: expected http:// or https://, got ${url.protocol}`);
  const headers: Record<string, string> = {};
  for (const header of list ?? []) {
    const colon = header.indexOf(":");
    const name = colon > 0 ? header.slice(0, colon).trim() : "";
    if (name === "" || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new UsageError(`--header: expected "Name: value", got ${JSON.stringify(header)}`);
    }
    // Trimmed as fetch trims it (a variable's own leading or trailing whitespace, a token's final
    // line break, included), so what is sent and what the redaction looks for are one text.
    const value = expandVariables(header.slice(colon + 1).trim(), name, env).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
    // Checked here, once: fetch refuses such a value at every request, with an error that quotes
    // part of it (the token) to the client, while the proxy itself ran on and exited 0.
    const bad = headerValueFault(value);
    if (bad !== undefined) throw new UsageError(`--header ${name}: the value (after \${NAME} expansion) ${bad}`);
    headers[name] = value;
  }
  return { url: url.href, headers };
}

/**
 * What makes a header value one no HTTP request can carry, in words that never quote it (it is a
 * secret, often); `undefined` when it is fine. fetch takes a value as bytes (Latin-1), without CR,
 * LF or NUL (RFC 9110 5.5: a field value is no line break; a token read from a file often ends
 * in one).
 */
function headerValueFault(value: string): string | undefined {
  const control = /[\r\n\0]/.exec(value)?.[0];
  if (control !== undefined) {
    const which = control === "\r" ? "a carriage return (CR)" : control === "\n" ? "a line break (LF)" : "a NUL character";
    return `holds ${which}, which no HTTP header can carry`;
  }
  const wide = /[\u0100-\uffff]/.exec(value);
  if (wide !== null) {
    return `holds a character beyond Latin-1 (at index ${wide.index}), which an HTTP header cannot carry as it is; encode it (percent or base64) as the server expects`;
  }
  return undefined;
}

/** `${NAME}` in a header's value replaced by the environment variable; `$${` kept as `${`. */
function expandVariables(value: string, header: string, env: Readonly<Record<string, string | undefined>>): string {
  return value.replace(/\$\$\{|\$\{([^}]*)\}?/g, (match, name: string | undefined) => {
    if (match === "$${") return "${";
    if (!match.endsWith("}") || name === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new UsageError(
        `--header ${header}: ${JSON.stringify(match)} is not a variable; write \${NAME} for the environment variable NAME (or $\${ for a literal \${)`,
      );
    }
    const found = env[name];
    if (found === undefined) throw new UsageError(`--header ${header}: the environment variable ${name} (\${${name}}) is not set`);
    if (found === "") throw new UsageError(`--header ${header}: the environment variable ${name} (\${${name}}) is empty`);
    return found;
  });
}

/** `--era legacy|2026-07-28` (default legacy). */
export function eraFlag(text: string | undefined): Era {
  const era = text ?? "legacy";
  if (era !== "legacy" && era !== "2026-07-28") throw new UsageError(`--era: expected legacy or 2026-07-28, got ${JSON.stringify(era)}`);
  return era;
}

/**
 * A duration flag: a whole number of ms from `min` to `MAX_MS`, or (with `none`) `none` for no
 * limit (Infinity); `undefined` when the flag is absent.
 */
export function msFlag(flag: string, text: string | undefined, { min, none = false }: { min: number; none?: boolean }): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (none && trimmed === "none") return Infinity;
  if (!/^\d+$/.test(trimmed)) {
    throw new UsageError(`${flag}: expected a whole number of milliseconds${none ? ' or "none"' : ""}, got ${JSON.stringify(text)}`);
  }
  const value = Number(trimmed);
  if (value < min || value > MAX_MS) {
    throw new UsageError(`${flag}: expected ${min} to ${MAX_MS} ms${none ? ' or "none" (no limit)' : ""}, got ${value}`);
  }
  return value;
}
