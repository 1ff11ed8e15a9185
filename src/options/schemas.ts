import { z } from "zod";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { MAX_TIMER_DELAY_MS } from "./defaults.js";

// The option schemas (zod) and the one parse at the boundary. The hot path never re-validates:
// a call's options are parsed here once, or recognised as signal-only without a parse.

/**
 * A duration option in ms, with its bounds in its own error message: an integer from `min` to
 * `max`, and `Infinity` (no limit) where `infinity` says so.
 */
export function msOption(min: number, max: number, infinity: boolean) {
  const bounds = `must be an integer number of ms from ${min} to ${max}${infinity ? ", or Infinity" : ""}`;
  const error = (issue: { input?: unknown }): string => `${bounds}; received ${received(issue.input)}`;
  const finite = z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
  return infinity ? z.union([z.literal(Number.POSITIVE_INFINITY), finite], { error }) : finite;
}

/** A refused value as an error message quotes it: `30.5`, `NaN`, `"30s"` (cut at 40 characters), `a value of type boolean`. @internal */
export function received(value: unknown): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 39)}…` : value);
  if (value === null) return "null";
  if (typeof value !== "object") return `a value of type ${typeof value}`;
  // An object by its tag: "an array", "a Date", "a Map", "an Object".
  const tag = Object.prototype.toString.call(value).slice(8, -1);
  return tag === "Array" ? "an array" : `${/^[AEIOU]/.test(tag) ? "an" : "a"} ${tag}`;
}

/** A boolean option: refused values are quoted, as durations are (`must be true or false; received "yes"`). @internal */
export const booleanOption = (): z.ZodBoolean =>
  z.boolean({ error: (issue) => `must be true or false; received ${received(issue.input)}` });

const count = (min: 0 | 1) => {
  const error = (issue: { input?: unknown }): string =>
    `must be an integer from ${min} to ${MAX_TIMER_DELAY_MS}; received ${received(issue.input)}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(MAX_TIMER_DELAY_MS, { error });
};

/** A function option. */
export const fnOption = z.custom<(...args: never[]) => unknown>((value) => typeof value === "function", {
  error: (issue) => `must be a function; received ${received(issue.input)}`,
});

/**
 * An `AbortSignal`, or an object that acts as one where the library and the SDKs use it: an
 * `aborted` boolean, `addEventListener` and `removeEventListener` (a test double or polyfill
 * without the latter passed before, and the call it was given to was lost once sent).
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  if (typeof value !== "object" || value === null) return false;
  const signal = value as { aborted?: unknown; addEventListener?: unknown; removeEventListener?: unknown };
  return (
    typeof signal.aborted === "boolean" && typeof signal.addEventListener === "function" && typeof signal.removeEventListener === "function"
  );
}

/**
 * Why a `signal` option is refused, for its error: what it must be, and what is wrong with what
 * came (a polyfill's member that is off, an array's item that is no signal). @internal
 */
export function signalRefusal(value: unknown): string {
  const must =
    "must be an AbortSignal or an array of AbortSignals (an object with a boolean `aborted` and `addEventListener` and `removeEventListener` functions will do)";
  if (Array.isArray(value)) {
    const index = value.findIndex((item) => !isAbortSignal(item));
    return `${must}; received an array whose item ${index} is not one: ${signalFault(value[index])}`;
  }
  return `${must}; received ${signalFault(value)}`;
}

function signalFault(value: unknown): string {
  if (typeof value !== "object" || value === null) return received(value);
  if (typeof AbortController === "function" && value instanceof AbortController) return "an AbortController (pass its .signal)";
  const signal = value as { aborted?: unknown; addEventListener?: unknown; removeEventListener?: unknown };
  const faults: string[] = [];
  if (signal.aborted === undefined) faults.push("it has no boolean `aborted`");
  else if (typeof signal.aborted !== "boolean") faults.push(`its \`aborted\` is ${received(signal.aborted)}`);
  for (const member of ["addEventListener", "removeEventListener"] as const) {
    if (typeof signal[member] !== "function") faults.push(`it has no \`${member}\` function`);
  }
  return `${received(value)} (${faults.join(", ")})`;
}

const callShape = {
  timeoutMs: msOption(1, MAX_TIMER_DELAY_MS, true),
  maxTotalTimeoutMs: msOption(1, MAX_TIMER_DELAY_MS, true),
  resetTimeoutOnProgress: booleanOption(),
  clientWaitTimeoutMs: msOption(1, MAX_TIMER_DELAY_MS, true),
  signal: z.custom<AbortSignal | readonly AbortSignal[]>(
    // Every index, holes too (`every` skips them: an outside tester's `[signal, <hole>]` passed,
    // and the call was then taken as aborted by the hole).
    (value) => (Array.isArray(value) ? Array.from(value).every(isAbortSignal) : isAbortSignal(value)),
    { error: (issue) => signalRefusal(issue.input) },
  ),
  reason: z.string({ error: (issue) => `must be a string; received ${received(issue.input)}` }),
  forwardAbortReason: booleanOption(),
  onprogress: fnOption,
  verify: fnOption,
  verifyTimeoutMs: msOption(1, MAX_TIMER_DELAY_MS, true),
  verifyDelayMs: msOption(0, MAX_TIMER_DELAY_MS, false),
  verifyWindowMs: msOption(0, MAX_TIMER_DELAY_MS, false),
  verifyIntervalMs: msOption(1, MAX_TIMER_DELAY_MS, false),
} as const;

/** @internal */
export const callOptionsSchema = z.strictObject(callShape).partial();

/** A value `msOption(min, max, infinity)` takes, checked without zod. */
const ms =
  (min: number, infinity: boolean) =>
  (value: unknown): boolean =>
    (infinity && value === Number.POSITIVE_INFINITY) ||
    (Number.isInteger(value) && (value as number) >= min && (value as number) <= MAX_TIMER_DELAY_MS);

/**
 * Each call option's check as its schema in `callShape` makes it, for the values it takes (an
 * array of signals is left to zod): a call's options that pass all of them are valid without a
 * zod parse (about 1.5 µs and 2.5 KB a call with `{ timeoutMs }`); one that fails any goes through
 * `parseOptions` for its error. test/options/fast-check.test.ts holds the two to the same answers.
 */
const QUICK: Record<keyof typeof callShape, (value: unknown) => boolean> = {
  timeoutMs: ms(1, true),
  maxTotalTimeoutMs: ms(1, true),
  resetTimeoutOnProgress: (value) => typeof value === "boolean",
  clientWaitTimeoutMs: ms(1, true),
  signal: isAbortSignal,
  reason: (value) => typeof value === "string",
  forwardAbortReason: (value) => typeof value === "boolean",
  onprogress: (value) => typeof value === "function",
  verify: (value) => typeof value === "function",
  verifyTimeoutMs: ms(1, true),
  verifyDelayMs: ms(0, false),
  verifyWindowMs: ms(0, false),
  verifyIntervalMs: ms(1, false),
};

/** Every call option's name. */
const CALL_OPTION_NAMES: readonly string[] = Object.keys(QUICK);

/**
 * A call's options as one plain object, each read once, so that what is validated is what is
 * used: every call option by property access (own or inherited, a getter's value, enumerable or
 * not: as the SDKs read their own request options), then every other enumerable key, own or
 * inherited, and the SDK's names (`timeout`, `maxTotalTimeout`) by property access (an unknown
 * or misspelt option, for its error), but `omit` (a key another layer takes: `task`,
 * `resultSchema`); keys whose value is `undefined` are left out (they mean "the default"). Own
 * symbol keys are kept as they are (the library's own marks). An outside tester's: a class
 * instance with a getter `timeoutMs` and a field left `undefined` was validated on a copy without
 * the getter and run with -5 or NaN; `request()` copied its options without their getters.
 * @internal
 */
export function readCallOptions(options: object, omit?: string): Record<string | symbol, unknown> {
  const source = options as Record<string | symbol, unknown>;
  const read: Record<string | symbol, unknown> = {};
  for (let i = 0; i < CALL_OPTION_NAMES.length; i++) {
    const key = CALL_OPTION_NAMES[i]!;
    const value = source[key];
    if (value !== undefined) read[key] = value;
  }
  // Every other key, own or inherited (not Object.prototype's), for its error: a typo, a client-wide option.
  for (const key in source) {
    if (key === omit || Object.hasOwn(QUICK, key) || (!Object.hasOwn(source, key) && key in Object.prototype)) continue;
    const value = source[key];
    if (value !== undefined) read[key] = value;
  }
  // The SDK's names for two of them, as the SDK reads them (a getter of an options class too): refused, naming ours.
  for (const key in SDK_OPTION_NAMES) {
    if (key === omit || Object.hasOwn(read, key)) continue;
    const value = source[key];
    if (value !== undefined) read[key] = value;
  }
  for (const key of Object.getOwnPropertySymbols(source)) read[key] = source[key];
  return read;
}

/**
 * True for call options the schema takes, told without a zod parse: an object literal whose every
 * key is a call option with a value its schema takes, or `undefined`. False sends the options to
 * `parseOptions` (valid ones it takes too; invalid ones get their error there).
 * @internal
 */
export function isValidCallOptions(options: unknown): boolean {
  if (typeof options !== "object" || options === null || Object.getPrototypeOf(options) !== Object.prototype) return false;
  for (const key in options) {
    if (!Object.hasOwn(QUICK, key)) return false;
    const value = (options as Record<string, unknown>)[key];
    if (value !== undefined && !QUICK[key as keyof typeof callShape](value)) return false;
  }
  return true;
}

/**
 * `verifiers`: an object of functions by tool name. A value that is not a function is refused
 * naming `verifiers.<tool>`.
 */
const VERIFIERS_SHAPE = "must be an object of verify functions by tool name";
const verifiersOption = z
  .record(z.string(), fnOption, { error: (issue) => `${VERIFIERS_SHAPE}; received ${received(issue.input)}` })
  .refine((value) => !Array.isArray(value), { error: `${VERIFIERS_SHAPE}; received an array` });

/** `awaitVerification`: true, false or a function (record) => string. */
const awaitVerificationOption = z.union([z.boolean(), fnOption], {
  error: (issue) => `must be true, false or a function (record) => string; received ${received(issue.input)}`,
});

/** What a `clock` answers, read once as the options are checked: it must be a finite number (ms). */
function clockReading(clock: () => unknown): string | undefined {
  let now: unknown;
  try {
    now = clock();
  } catch (error) {
    return `it threw (${(error as Error)?.message ?? String(error)})`;
  }
  return typeof now === "number" && Number.isFinite(now) ? undefined : `it returned ${received(now)}`;
}

/**
 * `clock`: a function answering the time in ms as a finite number (`performance.now()`): one
 * answering `NaN`, a `Date` or a bigint (`process.hrtime.bigint`) turned every timeout off, or
 * failed every call with a bare TypeError (an outside tester's).
 */
const clockOption = z.custom<() => number>((value) => typeof value === "function" && clockReading(value as () => unknown) === undefined, {
  error: (issue) =>
    typeof issue.input === "function"
      ? `must answer the time in ms as a finite number (as performance.now() does); ${clockReading(issue.input as () => unknown)}`
      : `must be a function; received ${received(issue.input)}`,
});

/** @internal */
export const clientOptionsSchema = z
  .strictObject({
    ...callShape,
    verifiers: verifiersOption,
    awaitVerification: awaitVerificationOption,
    onRecord: fnOption,
    onAnomaly: fnOption,
    observer: z.object(
      { start: fnOption },
      {
        error: (issue) => `must be an object with a start(call) method; received ${received(issue.input)}`,
      },
    ),
    maxRecords: count(0),
    maxTombstones: count(1),
    clock: clockOption,
    timers: z.object(
      { setTimeout: fnOption, clearTimeout: fnOption },
      {
        error: (issue) => `must be { setTimeout, clearTimeout }; received ${received(issue.input)}`,
      },
    ),
  })
  .omit({ signal: true, onprogress: true, verify: true })
  .partial();

/**
 * True for call options that hold nothing but an `AbortSignal` (or `signal: undefined`), the
 * common per-call shape: valid without a zod parse. Anything else goes through the schema.
 * @internal
 */
export function isSignalOnly(options: unknown): boolean {
  return signalOnly(options) !== NOT_SIGNAL_ONLY;
}

/** What `signalOnly` answers for options that hold more than a signal. @internal */
export const NOT_SIGNAL_ONLY: unique symbol = Symbol("not signal-only");

/**
 * `isSignalOnly`'s verdict and the signal it read, in one read of `signal` (a getter answering a
 * new signal on each read gives the call the one it checked): the options' signal, or undefined,
 * when they hold only a signal; else `NOT_SIGNAL_ONLY`.
 * @internal
 */
export function signalOnly(options: unknown): AbortSignal | undefined | typeof NOT_SIGNAL_ONLY {
  // A literal only: anything else (an array, a Date, another realm's object) goes to parseOptions.
  if (typeof options !== "object" || options === null || Object.getPrototypeOf(options) !== Object.prototype) return NOT_SIGNAL_ONLY;
  for (const key in options) if (key !== "signal") return NOT_SIGNAL_ONLY;
  // Every other option read by property access too, as `readCallOptions` reads them (and the SDK
  // its own): one that `for...in` does not list (non-enumerable, a Proxy's `get`) is an option
  // all the same, not a signal-only call (an outside tester's: a non-enumerable timeoutMs was
  // never read). Named loads: a few nanoseconds on a literal's shape.
  const o = options as Record<keyof typeof callShape | "timeout" | "maxTotalTimeout", unknown>;
  if (
    o.timeoutMs !== undefined ||
    o.maxTotalTimeoutMs !== undefined ||
    o.resetTimeoutOnProgress !== undefined ||
    o.clientWaitTimeoutMs !== undefined ||
    o.reason !== undefined ||
    o.forwardAbortReason !== undefined ||
    o.onprogress !== undefined ||
    o.verify !== undefined ||
    o.verifyTimeoutMs !== undefined ||
    o.verifyDelayMs !== undefined ||
    o.verifyWindowMs !== undefined ||
    o.verifyIntervalMs !== undefined ||
    o.timeout !== undefined ||
    o.maxTotalTimeout !== undefined
  ) {
    return NOT_SIGNAL_ONLY;
  }
  const { signal } = o;
  return signal === undefined || (typeof AbortSignal === "function" && signal instanceof AbortSignal)
    ? (signal as AbortSignal | undefined)
    : NOT_SIGNAL_ONLY;
}

/** The call options that only a call can have (a client-wide one would be shared by every call). */
const PER_CALL_ONLY = { signal: true, onprogress: true, verify: true, task: true } as const;

/**
 * Where a per-call option given client-wide goes, for the entry point named by `where`: a
 * framework's tools take a signal their own way, and have no `callTool` of ours.
 */
function perCallWay(where: string, options: readonly string[]): string {
  const option = options[0]!;
  const it = options.length > 1 ? "them" : "it";
  if (option === "signal") {
    if (where.startsWith("cancellableTransport")) {
      return "the AI SDK hands each tool call's abortSignal to the transport: generateText({ abortSignal }) or the tool's execute(input, { abortSignal })";
    }
    if (where.startsWith("CancellableMCPServer")) return "Agents hands each tool call the run's signal: run(agent, input, { signal })";
    if (where.startsWith("attachMastra")) return "Mastra hands each tool call its abortSignal: execute(input, { abortSignal })";
  }
  if (where.startsWith("cancellableTransport") || where.startsWith("CancellableMCPServer")) {
    return `return ${it} per call from callOptions: callOptions: (...) => ({ ${option} })`;
  }
  return `pass ${it} to each call: callTool(params, { ${option} })`;
}

/** The Streamable HTTP adapter's options (`streamableHttpCancellation(transport, options)`), never a client's or a call's. */
const ADAPTER_OPTIONS = { flushTimeoutMs: true, notificationTimeoutMs: true } as const;

/** The SDK's request option names a caller may pass by habit, and this library's name for each. */
export const SDK_OPTION_NAMES: Record<string, string> = { timeout: "timeoutMs", maxTotalTimeout: "maxTotalTimeoutMs" };

/**
 * Validates an options object against a strict zod schema, once, at the boundary; `undefined`
 * values mean "the default".
 * @param where the function named in the message, such as `"call options"`.
 * @throws {InvalidOptionError} for a non-object, an unknown option (naming every unknown one,
 *   with the option meant where it is the SDK's name or differs only in case, such as
 *   `timeoutMS`), or a bad value (naming the option and its bounds).
 */
export function parseOptions<T>(
  schema: z.ZodType<T>,
  options: unknown,
  where: string,
  sdkNames?: Record<string, string>,
  /** The options' own name when they are one option of a larger set (`task`): errors name `task.ttlMs`. */
  prefix?: string,
): T {
  if (!isOptionsObject(options)) {
    throw new InvalidOptionError(prefix ?? "options", `${where} must be an object; received ${received(options)}`);
  }
  const named = (name: string): string => (prefix === undefined ? name : `${prefix}.${name}`);
  const result = schema.safeParse(defined(options));
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const names = issue.keys.map((key) => `"${key}"`).join(", ");
    const known = Object.keys((schema as { shape?: Record<string, unknown> }).shape ?? {});
    const hints = issue.keys.flatMap((key) => {
      if (sdkNames !== undefined && Object.hasOwn(sdkNames, key)) return [`"${sdkNames[key]}" instead of the SDK's "${key}"`];
      const meant = known.find((name) => name.toLowerCase() === key.toLowerCase());
      return meant === undefined ? [] : [`"${meant}" (not "${key}")`];
    });
    const hint = hints.length > 0 ? `; use ${hints.join(", ")}` : "";
    // A client-wide option given per call (`awaitVerification`, `verifiers`, `onRecord`): where it goes.
    const wide =
      schema === (callOptionsSchema as z.ZodType) ? issue.keys.filter((key) => Object.hasOwn(clientOptionsSchema.shape, key)) : [];
    const clientWide =
      wide.length > 0
        ? `; ${wide.map((key) => `"${key}"`).join(", ")} ${wide.length > 1 ? "are client-wide options" : "is a client-wide option"} (withCancellation or attachCancellation options)`
        : "";
    // And the other way: a per-call option among the client-wide ones (an outside tester's: a bare refusal).
    const perCall = schema === (clientOptionsSchema as z.ZodType) ? issue.keys.filter((key) => Object.hasOwn(PER_CALL_ONLY, key)) : [];
    // The Streamable HTTP adapter's own options, given to the client or a call.
    const adapter = issue.keys.filter((key) => Object.hasOwn(ADAPTER_OPTIONS, key));
    const adapterHint =
      (schema === (clientOptionsSchema as z.ZodType) || schema === (callOptionsSchema as z.ZodType)) && adapter.length > 0
        ? `; ${adapter.map((key) => `"${key}"`).join(", ")} ${adapter.length > 1 ? "are options" : "is an option"} of the adapter: streamableHttpCancellation(transport, { ${adapter.join(", ")} })`
        : "";
    const perCallHint =
      perCall.length > 0
        ? `; ${perCall.map((key) => `"${key}"`).join(", ")} ${perCall.length > 1 ? "are per-call options" : "is a per-call option"} (${perCallWay(where, perCall)}${perCall.includes("verify") ? '; "verifiers" ({ toolName: verify }) gives tools their verify client-wide' : ""})`
        : "";
    throw new InvalidOptionError(
      named(issue.keys[0]!),
      `${where}: unknown option${issue.keys.length > 1 ? "s" : ""} ${names}${hint}${clientWide}${perCallHint}${adapterHint}`,
    );
  }
  const option = issue.path.length > 0 ? named(issue.path.map(pathPart).join(".")) : (prefix ?? "options");
  throw new InvalidOptionError(option, `${where}: "${option}" ${issue.message}`);
}

/** The longest key an option's name quotes, in characters (a 10 MB key is cut, as values are). */
const KEY_LENGTH = 100;

/**
 * One step of an option's path as its name gives it: a symbol key as `Symbol(description)` (a
 * join would throw: an outside tester's, a bare TypeError for `verifiers: { [Symbol()]: fn }`),
 * a key past `KEY_LENGTH` characters cut with "…".
 */
function pathPart(part: PropertyKey): string {
  const text = typeof part === "symbol" ? part.toString() : String(part);
  return text.length > KEY_LENGTH ? `${text.slice(0, KEY_LENGTH)}…` : text;
}

/**
 * An object of options: a literal, a class instance (its own `Symbol.toStringTag` too), one from
 * another realm; not an array, a `Date`, a `Map` or another built-in (by its tag, so one from
 * another realm too), each of which would pass a schema of optional keys as `{}` (every
 * default) and hide the mistake.
 */
export function isOptionsObject(value: unknown): value is object {
  if (typeof value !== "object" || value === null) return false;
  const tag = Object.prototype.toString.call(value).slice(8, -1);
  return tag === "Object" || !(BUILT_IN_TAGS.has(tag) || tag.endsWith("Array"));
}

/** The tags of built-in objects that are no options (typed arrays end with "Array"). */
const BUILT_IN_TAGS = new Set([
  "Arguments",
  "ArrayBuffer",
  "SharedArrayBuffer",
  "DataView",
  "Date",
  "RegExp",
  "Error",
  "Map",
  "Set",
  "WeakMap",
  "WeakSet",
  "WeakRef",
  "Promise",
  "Boolean",
  "Number",
  "String",
  "Symbol",
  "BigInt",
  "Function",
  "AbortSignal",
  "AbortController",
  "EventTarget",
  "URL",
  "URLSearchParams",
  "Headers",
  "Request",
  "Response",
  "Blob",
  "FormData",
  "ReadableStream",
  "WritableStream",
  "Generator",
  "AsyncGenerator",
  "Iterator",
]);

/** Drops keys whose value is `undefined`, so `{timeoutMs: undefined}` means "use the default". */
function defined<T extends object>(options: T): T {
  let copy: Record<string, unknown> | undefined;
  for (const key in options) {
    if ((options as Record<string, unknown>)[key] === undefined) {
      copy ??= { ...options } as Record<string, unknown>;
      delete copy[key];
    }
  }
  return (copy as T | undefined) ?? options;
}
