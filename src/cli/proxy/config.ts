// The proxy's policy: the limits of each request, from the defaults, the command line and a
// `--config <file>` (JSON, validated with zod once, when the proxy starts).
import { readFileSync } from "node:fs";
import { z } from "zod";
import { MAX_MS } from "../args.js";

/** The largest duration accepted, in ms (the largest delay a timer honours). */
export const MAX_PROXY_MS = MAX_MS;
/**
 * The bound on the whole shutdown, in ms, from the moment the proxy is told to end (stdin closed,
 * a signal, the client's stdout gone) to its exit: every call in flight cancelled by the upstream's
 * mechanism, the HTTP session deleted, the records ended, the spans exported, the stdio server's
 * process group stopped (which alone may take `STOP_BOUND_MS`, the same 1,800 ms).
 */
export const SHUTDOWN_BOUND_MS = 1_800;

/** How long the executable waits at its end for its stdout and stderr to flush, in ms (a client that stopped reading cannot hold it). */
export const EXIT_FLUSH_MS = 50;

/** The last part of `SHUTDOWN_BOUND_MS` kept for the executable's end (`EXIT_FLUSH_MS`, then the exit itself), in ms: the shutdown's flush to the client ends this long before the bound. */
export const EXIT_RESERVE_MS = 150;

/** The proxy's default idle timeout, in ms (reset by progress). */
export const DEFAULT_PROXY_TIMEOUT_MS = 60_000;

/**
 * The limits of one request. Durations in ms; `Infinity` is no limit (`null` in the config file,
 * `none` on the command line). An absent limit is the next less specific one's.
 */
export interface Limits {
  /** Idle timeout, in ms: how long a request may wait for its answer or (with `resetTimeoutOnProgress`) its next progress. */
  timeoutMs?: number;
  /** Maximum total timeout, in ms from the send; progress never extends it. */
  maxTotalTimeoutMs?: number;
  /** Whether progress restarts the idle timeout. */
  resetTimeoutOnProgress?: boolean;
  /**
   * How long a request's idle timeout stays paused while a request of the server's (elicitation,
   * sampling, roots: a person answering a form) waits for the client's answer, in ms; then the
   * request times out naming it. The maximum total timeout holds throughout. Default: the
   * library's, 300,000 ms.
   */
  clientWaitTimeoutMs?: number;
}

/** The config file, validated: defaults, then overrides per method and per tool (most specific wins). */
export interface ProxyConfig {
  defaults: Limits;
  methods: Record<string, Limits>;
  tools: Record<string, Limits>;
}

/** A config file that cannot be used: the message names the file and the key. Exit code 2. */
export class ConfigError extends Error {
  override name = "ConfigError" as const;
}

const RANGE = `an integer from 1 to ${MAX_PROXY_MS} (ms), or null for no limit`;
const must = { error: `must be ${RANGE}` };
const ms = z.number(must).int(must).min(1, must).max(MAX_PROXY_MS, must).nullable();
const limitsSchema = z
  .strictObject({
    timeoutMs: ms,
    maxTotalTimeoutMs: ms,
    resetTimeoutOnProgress: z.boolean({ error: "must be true or false" }),
    clientWaitTimeoutMs: ms,
  })
  .partial();
const configSchema = z
  .strictObject({
    $schema: z.string(),
    defaults: limitsSchema,
    methods: z.record(z.string(), limitsSchema),
    tools: z.record(z.string(), limitsSchema),
  })
  .partial();

type RawLimits = z.infer<typeof limitsSchema>;

function limitsOf(raw: RawLimits | undefined): Limits {
  const limits: Limits = {};
  if (raw === undefined) return limits;
  if (raw.timeoutMs !== undefined) limits.timeoutMs = raw.timeoutMs ?? Infinity;
  if (raw.maxTotalTimeoutMs !== undefined) limits.maxTotalTimeoutMs = raw.maxTotalTimeoutMs ?? Infinity;
  if (raw.resetTimeoutOnProgress !== undefined) limits.resetTimeoutOnProgress = raw.resetTimeoutOnProgress;
  if (raw.clientWaitTimeoutMs !== undefined) limits.clientWaitTimeoutMs = raw.clientWaitTimeoutMs ?? Infinity;
  return limits;
}

/**
 * Reads and validates a config file.
 * @throws {ConfigError} naming the file, and the key with what is wrong with it.
 */
export function loadConfig(file: string): ProxyConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new ConfigError(`--config ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`--config ${file}: not valid JSON (${(error as Error).message})`);
  }
  return parseConfig(value, file);
}

/**
 * Validates a parsed config file.
 * @throws {ConfigError} naming the file, and the key with what is wrong with it.
 */
export function parseConfig(value: unknown, file: string): ProxyConfig {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(`--config ${file}: expected a JSON object with "defaults", "methods" and "tools"`);
  }
  // JSON.parse makes "__proto__" an own key, which the schema's records pass over unchecked: refused by name.
  for (const map of ["methods", "tools"] as const) {
    const entries = (value as Record<string, unknown>)[map];
    if (typeof entries === "object" && entries !== null && Object.hasOwn(entries, "__proto__")) {
      throw new ConfigError(`--config ${file}: "${map}.__proto__" is not a name the proxy takes`);
    }
  }
  const result = configSchema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const at = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      const key = [...at, issue.keys[0]!].join(".");
      const known =
        at.length === 0
          ? '"defaults", "methods", "tools"'
          : '"timeoutMs", "maxTotalTimeoutMs", "resetTimeoutOnProgress", "clientWaitTimeoutMs"';
      throw new ConfigError(`--config ${file}: unknown key "${key}" (expected ${known})`);
    }
    const key = at.join(".");
    const map = at[0] === "methods" || at[0] === "tools";
    const message =
      at.length === 1 && map
        ? "must be an object of names to limits"
        : (at.length === 2 && map) || (at.length === 1 && at[0] === "defaults")
          ? 'must be an object of limits ("timeoutMs", "maxTotalTimeoutMs", "resetTimeoutOnProgress", "clientWaitTimeoutMs")'
          : issue.message;
    throw new ConfigError(`--config ${file}: "${key}" ${message}, got ${received(valueAt(value, at))}`);
  }
  const data = result.data;
  const byName = (entries: Record<string, RawLimits> | undefined): Record<string, Limits> =>
    Object.fromEntries(Object.entries(entries ?? {}).map(([name, raw]) => [name, limitsOf(raw)]));
  return { defaults: limitsOf(data.defaults), methods: byName(data.methods), tools: byName(data.tools) };
}

/**
 * Built-in limits per method, over the command line and under the config file's `methods`:
 * a `subscriptions/listen` is a stream meant to stay open (rules 32-34), so no request limit
 * cuts it; it ends with the client's cancel, the server's end of it, or the session.
 */
export const BUILT_IN_METHOD_LIMITS: Readonly<Record<string, Limits>> = {
  "subscriptions/listen": { timeoutMs: Infinity, maxTotalTimeoutMs: Infinity },
  // The 2026-07-28 handshake, as initialize is the 2025 one: it includes starting the server (a
  // first `npx -y` downloads it), so only the maximum total timeout bounds it (an outside tester's
  // finding: a server that took 2.5 s to start had its client's server/discover cut at 1 s), and
  // it is never cancelled (the wire's rule for it: rule 39, and the library's own choice for server/discover).
  "server/discover": { timeoutMs: Infinity },
};

/**
 * The limits of one request: the proxy's defaults, the config file's defaults, the command line,
 * the built-in entry of its method (`BUILT_IN_METHOD_LIMITS`), the config's method entry, then
 * its tool entry (for `tools/call`), each over the one before.
 */
export function limitsFor(config: ProxyConfig, cli: Limits, method: string, tool: string | null): Limits {
  return entryLimits(config, cli, method, tool) ?? baseLimits(config, cli);
}

/**
 * The limits of a request that no method or tool entry names: the proxy's defaults, the config
 * file's, then the command line; `resetTimeoutOnProgress` only where it can matter (`withReset`).
 */
export function baseLimits(config: ProxyConfig, cli: Limits): Limits {
  return withReset({ timeoutMs: DEFAULT_PROXY_TIMEOUT_MS, resetTimeoutOnProgress: true, ...config.defaults, ...cli });
}

/** Whether some method or tool has limits of its own (an entry in the config file). */
export function hasOverrides(config: ProxyConfig): boolean {
  return Object.keys(config.methods).length > 0 || Object.keys(config.tools).length > 0;
}

/** Whether `method` has built-in limits of its own. */
export function hasBuiltInLimits(method: string): boolean {
  return Object.hasOwn(BUILT_IN_METHOD_LIMITS, method);
}

/** The limits of a request that a built-in, method or tool entry names (`limitsFor`), or `undefined` when none does (its limits are `baseLimits`). */
export function entryLimits(config: ProxyConfig, cli: Limits, method: string, tool: string | null): Limits | undefined {
  const builtIn = hasBuiltInLimits(method) ? BUILT_IN_METHOD_LIMITS[method] : undefined;
  const byMethod = Object.hasOwn(config.methods, method) ? config.methods[method] : undefined;
  const byTool = method === "tools/call" && tool !== null && Object.hasOwn(config.tools, tool) ? config.tools[tool] : undefined;
  if (builtIn === undefined && byMethod === undefined && byTool === undefined) return undefined;
  const base = { timeoutMs: DEFAULT_PROXY_TIMEOUT_MS, resetTimeoutOnProgress: true, ...config.defaults, ...cli };
  return withReset(Object.assign(base, builtIn, byMethod, byTool));
}

/**
 * The limits with `resetTimeoutOnProgress` true only when progress can restart something: an
 * idle timeout shorter than the maximum total timeout. The library asks the server for progress
 * (a progress token on the request) exactly when it is true or the client asked for progress
 * itself, so a request with no idle timeout, or with reset off, carries no token of the proxy's.
 */
export function withReset(limits: Limits): Limits {
  const idle = limits.timeoutMs ?? DEFAULT_PROXY_TIMEOUT_MS;
  const total = limits.maxTotalTimeoutMs ?? Math.max(DEFAULT_MAX_TOTAL_MS, idle);
  const reset = limits.resetTimeoutOnProgress !== false && Number.isFinite(idle) && idle < total;
  return limits.resetTimeoutOnProgress === reset ? limits : { ...limits, resetTimeoutOnProgress: reset };
}

/** The library's default maximum total timeout when only the idle timeout is given, in ms: max(600,000, the idle timeout). */
const DEFAULT_MAX_TOTAL_MS = 600_000;

/** The maximum total timeout of a request with these limits, in ms (`Infinity`: none): given, or max(600,000, the idle timeout). */
export function totalLimitMs(limits: Limits): number {
  return limits.maxTotalTimeoutMs ?? Math.max(DEFAULT_MAX_TOTAL_MS, limits.timeoutMs ?? DEFAULT_PROXY_TIMEOUT_MS);
}

/** The longest a request with these limits may wait for anything, in ms: the smaller of its idle and maximum total timeouts (`Infinity`: no limit). */
export function waitLimitMs(limits: Limits): { ms: number; which: "timeoutMs" | "maxTotalTimeoutMs" } {
  const idle = limits.timeoutMs ?? DEFAULT_PROXY_TIMEOUT_MS;
  const total = limits.maxTotalTimeoutMs ?? Math.max(DEFAULT_MAX_TOTAL_MS, idle);
  return total < idle ? { ms: total, which: "maxTotalTimeoutMs" } : { ms: idle, which: "timeoutMs" };
}

function valueAt(value: unknown, path: readonly string[]): unknown {
  let at = value;
  for (const key of path) at = typeof at === "object" && at !== null ? (at as Record<string, unknown>)[key] : undefined;
  return at;
}

function received(value: unknown): string {
  if (value === undefined) return "nothing";
  // JSON has no infinite number: 1e999 parses as Infinity, which JSON.stringify writes as null.
  if (typeof value === "number" && !Number.isFinite(value)) return `${String(value)} (a number too large for JSON)`;
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** The empty config: no file given. */
export const NO_CONFIG: ProxyConfig = { defaults: {}, methods: {}, tools: {} };
