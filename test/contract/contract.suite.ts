// The entry-point contract (issues 19 and 28): one table of behaviours, run against every entry
// point of the library over a real child process on stdio (the scripted server, which can answer
// late, keep sending progress after a cancel, or crash). Each entry point is a driver that
// translates the behaviour's call into its own caller's shape and its outcome back into one common
// shape, so a behaviour that one entry point lacks shows up here as a failing row, not as a bug
// report. An entry point that cannot have a behaviour says so in its driver (`lacks`), with why;
// the same is in docs/frameworks.md. See docs/architecture.md for the one call path they share.
//
// The drivers of the entry points that run on Node 20 are in entry-points.test.ts; Mastra's
// (Node 22.13+) is in test/node22/mastra/contract.test.ts, which runs this same table.
//
// Rows (issue 28): verifiers by tool name, awaitVerification and a per-call verify winning; a
// framework's own timeout (a TimeoutError signal) recorded as a timeout; every request method of
// the SDK-shaped client through the runner; and each client-wide option changing what happens
// (a guard row checks that every option the schema accepts has its row).
import { afterEach, describe, expect, it } from "vitest";
import { callErrorOf, isInvalidOptionError } from "../../src/errors/guards.js";
import type { InvalidOptionError } from "../../src/errors/InvalidOptionError.js";
import type { CallObserver, CancellationOptions, RunRecord, ToolVerifyContext } from "../../src/index.js";
import { clientOptionsSchema } from "../../src/options/schemas.js";
import { otelRecorder } from "../../src/otel/index.js";
import { eventually, fixture } from "../helpers/stdio.js";
import { otelHarness } from "../otel/harness.js";
import { SLACK_MS } from "../helpers/timing.js";
import { asked } from "./asked.js";

/** What a behaviour asks of one call, in the library's terms (durations in ms). */
export interface Ask {
  tool: string;
  args?: Record<string, unknown>;
  timeoutMs?: number;
  maxTotalTimeoutMs?: number;
  resetTimeoutOnProgress?: boolean;
  signal?: AbortSignal;
  /** A per-call verify read, for the entry points that take per-call options (library-shaped, `callOptions`). */
  verify?: () => "applied" | "not-applied";
  /** SDK request options to pass on as they are (`relatedRequestId`, ...), for the entry points that take the SDK's options. */
  sdk?: Record<string, unknown>;
}

/** A call's outcome in one shape: the result, or the error's stable code ("server" for the server's own). */
export type Outcome = { ok: true; value: unknown } | { ok: false; code: string; error: unknown };

/** The SDK client's request methods, as the SDK-shaped entry points expose them (v1 and v2 share these shapes). */
export interface SdkShaped {
  callTool(params: object, ...rest: unknown[]): Promise<unknown>;
  request(request: object, ...rest: unknown[]): Promise<unknown>;
  [method: string]: (...args: never[]) => Promise<unknown>;
}

export interface Session {
  call(ask: Ask): Promise<Outcome>;
  /** The tools/call records. */
  records(): RunRecord[];
  /** Every record (default `records()`). */
  allRecords?(): RunRecord[];
  /** The SDK-shaped client whose every request method goes through the library (SDK-shaped entry points only). */
  sdk?(): SdkShaped;
  /** Whether the SDK-shaped client is the v2 line (argument order of `request`). */
  readonly v2?: boolean;
  close(): Promise<void>;
}

export interface Driver {
  readonly name: string;
  /** `serverArgs`: extra arguments for the scripted server (`--sdk-methods`). */
  connect(options: CancellationOptions, stderr: (line: string) => void, serverArgs: readonly string[]): Promise<Session>;
  /** Behaviours this entry point cannot have, with why (the same is in docs/frameworks.md). */
  readonly lacks?: Readonly<Partial<Record<Behaviour, string>>>;
}

export type Behaviour =
  | "idle-timeout"
  | "max-total-timeout"
  | "abort"
  | "late-result"
  | "late-error"
  | "connection-lost"
  | "refused-send"
  | "sdk-options"
  | "per-call-verify"
  | "sdk-client"
  | "signal-timeout-verified"
  /** A person behind the client, who answers the server's elicitation/create late (drivers.ts: PERSON_MS). */
  | "person";

/** The scripted server and the arguments every driver starts it with (`--list-all`: frameworks call only listed tools). */
export const SCRIPTED_SERVER = fixture("scripted-server.mjs");
export const SERVER_ARGS = [SCRIPTED_SERVER, "--list-all"];

/** What went down an SDK transport's `send`, with the options the SDK handed it (the spawned transports of the drivers that spy). */
export const sends: Array<{ method: string | undefined; options: Record<string, unknown> | undefined }> = [];

/** Records every `send` of `transport` in `sends`. */
export function spy<T extends { send(message: never, options?: never): Promise<void> }>(transport: T): T {
  const send = transport.send.bind(transport) as (message: unknown, options?: unknown) => Promise<void>;
  (transport as { send: unknown }).send = (message: { method?: string }, options?: Record<string, unknown>) => {
    sends.push({ method: message.method, options });
    return send(message, options);
  };
  return transport;
}

/** The library's own errors by their stable code (found through a framework's wrapping too); anything else is "server". */
export function libraryOutcome(error: unknown): Outcome {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return { ok: false, code, error };
  const ours = callErrorOf(error);
  return { ok: false, code: ours?.code ?? "server", error };
}

export const settle = (promise: Promise<unknown>): Promise<Outcome> =>
  promise.then(
    (value) => ({ ok: true, value }) as const,
    (error: unknown) => libraryOutcome(error),
  );

/** The library's per-call options of an ask. */
export const libraryOptions = (ask: Ask) => ({
  ...(ask.timeoutMs === undefined ? {} : { timeoutMs: ask.timeoutMs }),
  ...(ask.maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeoutMs: ask.maxTotalTimeoutMs }),
  ...(ask.resetTimeoutOnProgress === undefined ? {} : { resetTimeoutOnProgress: ask.resetTimeoutOnProgress }),
  ...(ask.signal === undefined ? {} : { signal: ask.signal }),
  ...(ask.verify === undefined ? {} : { verify: ask.verify }),
});

/** The same, in the SDK's request-option names (what frameworks pass to the client's own methods). */
export const sdkOptions = (ask: Ask) => ({
  ...(ask.timeoutMs === undefined ? {} : { timeout: ask.timeoutMs }),
  ...(ask.maxTotalTimeoutMs === undefined ? {} : { maxTotalTimeout: ask.maxTotalTimeoutMs }),
  ...(ask.resetTimeoutOnProgress === undefined ? {} : { resetTimeoutOnProgress: ask.resetTimeoutOnProgress }),
  ...(ask.signal === undefined ? {} : { signal: ask.signal }),
  ...ask.sdk,
});

/** The per-call options a framework's option hook gives: everything but the signal, which the framework passes itself. */
export const withoutSignal = ({ signal: _signal, sdk: _sdk, ...rest }: Ask): Ask => rest;

/** Why the library-shaped and framework-shaped entry points take no SDK request options. */
export const NO_SDK_OPTIONS = {
  library: "its per-call options are the library's own (CallOptions); the SDK's request options are sdkClient's and attachCancellation's",
  aiSdk: "the AI SDK's tool execute takes an abortSignal only: there are no SDK request options to pass",
  agents: "the Agents runtime hands callTool a signal only (MCPCallToolOptions): there are no SDK request options to pass",
} as const;

/** Why an entry point has no SDK-shaped client of its own (the sdkClient row). */
export const NO_SDK_CLIENT = {
  library: "its calls are the library's own shape; its SDK-shaped client is sdkClient (a driver of its own)",
  aiSdk: "the AI SDK's client speaks JSON-RPC messages itself: every request it sends is a runner call (the AI SDK has no SDK client)",
  agents: "the Agents runtime calls the server's callTool and listTools only; the SDK client it builds is not handed out to call",
} as const;

/** Why an SDK-shaped entry point takes no per-call verify (its verifications come from `verifiers`). */
/** Why an entry point does not wait for a verified outcome when the call's signal timed out. */
export const NO_SIGNAL_TIMEOUT_VERIFIED = {
  aiSdk:
    "the AI SDK's MCP client ends a tool call on its abortSignal itself (\"Request was aborted\") before the transport answers: a framework timeout there is the run's, and no answer of ours reaches it",
  agents:
    "the Agents runtime's signal is the run's: when it aborts (a timeout too) the run is being stopped, and the server answers with the signal's reason, as the runtime expects",
} as const;

export const NO_PER_CALL_VERIFY =
  "the SDK's request options have no verify: a framework calling the SDK-shaped client cannot pass one, so its tool calls are verified by verifiers (the verifier rows)";

interface Harness {
  session: Session;
  lines: string[];
  /** The `notifications/cancelled` the server read. */
  cancels(): Array<{ requestId: unknown; reason?: string }>;
  /** The ids of the `tools/call` requests the server read. */
  toolCalls(): unknown[];
  /** Every request the server read, with its id and method. */
  requests(): Array<{ id: unknown; method: string }>;
  observed: { started: number; records: RunRecord[] };
  /** What the SDK handed the transport's `send` (the drivers that spy on their transport). */
  sends(): typeof sends;
}

/** A promise that never settles (a verify read that never answers). */
const never = () => new Promise<never>(() => {});

/**
 * One client-wide option's effect, run on every entry point: `run` makes calls and asserts what
 * the option changed (each would fail with the option left out). Every option the schema accepts
 * has one (the guard row checks it).
 */
interface OptionEffect {
  readonly option: string;
  /** A behaviour the row needs of the driver (skipped where the driver lacks it, with its reason). */
  readonly needs?: Behaviour;
  readonly options: (probe: Probe) => CancellationOptions;
  run(h: Harness, probe: Probe): Promise<void>;
}

/** What an option's functions saw (a verifier's contexts, `onRecord`'s records, ...). */
interface Probe {
  verified: ToolVerifyContext[];
  readAt: number[];
  records: RunRecord[];
  anomalies: Array<{ kind: string }>;
  timerCalls: number;
}

const silent = (h: Harness, timeoutMs?: number) =>
  h.session.call({ tool: "silent", ...(timeoutMs === undefined ? {} : { timeoutMs }) }).then((outcome) => outcome);

const lastCall = (h: Harness) => h.session.records().at(-1);

const OPTION_EFFECTS: readonly OptionEffect[] = [
  {
    option: "timeoutMs",
    options: () => ({ timeoutMs: 200 }),
    async run(h) {
      const started = performance.now();
      expect(await silent(h)).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
      expect(performance.now() - started).toBeLessThan(200 + SLACK_MS);
      expect(lastCall(h)?.cancel?.reason).toBe("Request timed out after 200 ms");
    },
  },
  {
    option: "maxTotalTimeoutMs",
    options: () => ({ maxTotalTimeoutMs: 300 }),
    async run(h) {
      const started = performance.now();
      const outcome = await h.session.call({ tool: "progress", args: { every: 50 } });
      expect(outcome).toMatchObject({ ok: false, code: "MAX_TOTAL_TIMEOUT" });
      expect(performance.now() - started).toBeLessThan(300 + SLACK_MS);
    },
  },
  {
    option: "clientWaitTimeoutMs",
    needs: "person",
    options: () => ({ timeoutMs: 200, clientWaitTimeoutMs: 400 }),
    async run(h) {
      // The server asks the client (elicitation/create); the person answers after 600 ms. The
      // 200 ms idle timeout is paused while the server waits for them, but only 400 ms.
      const started = performance.now();
      expect(await h.session.call({ tool: "ask" })).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
      const settledAt = performance.now();
      expect(settledAt - started).toBeGreaterThanOrEqual(390);
      // From the question reaching the client (the trip there through a child process is not the bound's).
      expect(settledAt - asked.at).toBeLessThan(400 + SLACK_MS);
      expect(lastCall(h)?.cancel?.reason).toBe(
        "The client's answer to the server's request did not come within clientWaitTimeoutMs (400 ms)",
      );
    },
  },
  {
    option: "resetTimeoutOnProgress",
    options: () => ({ timeoutMs: 200, maxTotalTimeoutMs: 700, resetTimeoutOnProgress: true }),
    async run(h) {
      // Progress every 50 ms keeps the 200 ms idle timeout from firing: the maximum ends the call.
      const started = performance.now();
      expect(await h.session.call({ tool: "progress", args: { every: 50 } })).toMatchObject({ ok: false, code: "MAX_TOTAL_TIMEOUT" });
      expect(performance.now() - started).toBeGreaterThanOrEqual(650);
      expect(lastCall(h)?.progress.count).toBeGreaterThan(3);
    },
  },
  {
    option: "reason",
    options: () => ({ timeoutMs: 150, reason: "the bot's budget is spent" }),
    async run(h) {
      expect(await silent(h)).toMatchObject({ code: "REQUEST_TIMEOUT" });
      expect(await eventually(() => h.cancels().length === 1)).toBe(true);
      expect(h.cancels()[0]!.reason).toBe("the bot's budget is spent");
    },
  },
  {
    option: "forwardAbortReason",
    options: () => ({ forwardAbortReason: true }),
    async run(h) {
      const controller = new AbortController();
      const calling = h.session.call({ tool: "silent", signal: controller.signal });
      expect(await eventually(() => h.toolCalls().length === 1)).toBe(true);
      controller.abort(new Error("the user pressed stop"));
      expect((await calling).ok).toBe(false);
      expect(await eventually(() => h.cancels().length === 1)).toBe(true);
      expect(h.cancels()[0]!.reason).toBe("the user pressed stop");
    },
  },
  {
    option: "verifiers",
    options: (probe) => ({
      timeoutMs: 150,
      verifiers: {
        silent: (ctx) => {
          probe.verified.push(ctx);
          return "applied";
        },
      },
    }),
    async run(h, probe) {
      expect(await silent(h)).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
      expect(await eventually(() => lastCall(h)?.outcome === "verified-applied")).toBe(true);
      expect(probe.verified.map((ctx) => ctx.name)).toEqual(["silent"]);
    },
  },
  {
    option: "verifyDelayMs",
    options: (probe) => ({
      timeoutMs: 100,
      verifyDelayMs: 400,
      verifiers: {
        "*": () => {
          probe.readAt.push(performance.now());
          return "not-applied";
        },
      },
    }),
    async run(h, probe) {
      const started = performance.now();
      expect(await silent(h)).toMatchObject({ code: "REQUEST_TIMEOUT" });
      expect(await eventually(() => probe.readAt.length === 1, 3_000)).toBe(true);
      expect(probe.readAt[0]! - started).toBeGreaterThanOrEqual(100 + 400 - 25);
      expect(await eventually(() => lastCall(h)?.outcome === "verified-not-applied")).toBe(true);
    },
  },
  {
    option: "verifyTimeoutMs",
    options: () => ({ timeoutMs: 100, verifyTimeoutMs: 150, verifiers: { "*": never } }),
    async run(h) {
      expect(await silent(h)).toMatchObject({ code: "REQUEST_TIMEOUT" });
      expect(await eventually(() => lastCall(h)?.outcome === "verify-failed", 3_000)).toBe(true);
      expect(lastCall(h)?.verification?.error).toBe("verify did not answer within 150 ms (verifyTimeoutMs)");
    },
  },
  {
    option: "verifyWindowMs",
    options: () => ({ timeoutMs: 100, verifyWindowMs: 300, verifyIntervalMs: 100, verifiers: { "*": () => "not-applied" } }),
    async run(h) {
      expect(await silent(h)).toMatchObject({ code: "REQUEST_TIMEOUT" });
      expect(await eventually(() => lastCall(h)?.outcome === "verified-not-applied", 3_000)).toBe(true);
      // Read at 0, 100, 200 and at the window's end (300 ms; a timer firing a little early adds
      // one): several reads over the window, not one.
      const reads = lastCall(h)!.verification!.reads;
      expect(reads.length).toBeGreaterThanOrEqual(3);
      expect(reads.at(-1)!.atMs - reads[0]!.atMs).toBeGreaterThanOrEqual(300 - 25);
    },
  },
  {
    option: "verifyIntervalMs",
    options: () => ({ timeoutMs: 100, verifyWindowMs: 400, verifyIntervalMs: 200, verifiers: { "*": () => "not-applied" } }),
    async run(h) {
      expect(await silent(h)).toMatchObject({ code: "REQUEST_TIMEOUT" });
      expect(await eventually(() => lastCall(h)?.outcome === "verified-not-applied", 3_000)).toBe(true);
      // Every 200 ms (not the default 1,000: one read at 0 and one at the window's end) within
      // 400 ms: at 0, 200 and 400 (a timer firing a little early may add one at the end).
      const reads = lastCall(h)!.verification!.reads;
      expect(reads.length).toBeGreaterThanOrEqual(3);
      expect(reads[1]!.atMs - reads[0]!.atMs).toBeGreaterThanOrEqual(200 - 25);
      expect(reads[1]!.atMs - reads[0]!.atMs).toBeLessThan(400);
    },
  },
  {
    option: "awaitVerification",
    options: () => ({ timeoutMs: 150, awaitVerification: true, verifiers: { silent: () => "not-applied" } }),
    async run(h) {
      const outcome = await silent(h);
      // The verified outcome in place of the timeout: a tool result (isError) whose text the
      // framework hands the model (Mastra raises it as its tool error: the text is the message).
      const text = outcome.ok ? JSON.stringify(outcome.value) : String((outcome.error as Error | undefined)?.message);
      expect(text).toMatch(
        /The tool call \\?"silent\\?" was cancelled after 0\.\d s \(timed out\); a check afterwards found that its effect was not applied/,
      );
      expect(lastCall(h)?.outcome).toBe("verified-not-applied");
    },
  },
  {
    option: "onRecord",
    options: (probe) => ({ onRecord: (record) => void probe.records.push(record) }),
    async run(h, probe) {
      expect((await h.session.call({ tool: "echo" })).ok).toBe(true);
      expect(probe.records.filter((r) => r.method === "tools/call")).toMatchObject([{ name: "echo", status: "succeeded" }]);
    },
  },
  {
    option: "observer",
    options: () => ({}), // the harness's own observer (every connect passes one)
    async run(h) {
      expect((await h.session.call({ tool: "echo" })).ok).toBe(true);
      expect(h.observed.started).toBe(1);
      expect(h.observed.records.at(-1)).toMatchObject({ name: "echo", status: "succeeded" });
    },
  },
  {
    option: "onAnomaly",
    options: (probe) => ({ onAnomaly: (anomaly) => void probe.anomalies.push(anomaly) }),
    async run(h, probe) {
      expect((await h.session.call({ tool: "stray-progress" })).ok).toBe(true);
      expect(await eventually(() => probe.anomalies.length > 0)).toBe(true);
      expect(probe.anomalies[0]).toMatchObject({ kind: "unknown-progress-token" });
    },
  },
  {
    option: "maxRecords",
    options: () => ({ maxRecords: 1 }),
    async run(h) {
      await h.session.call({ tool: "echo" });
      await h.session.call({ tool: "echo" });
      expect(h.session.records()).toHaveLength(1);
    },
  },
  {
    option: "maxTombstones",
    options: () => ({ maxTombstones: 1 }),
    async run(h) {
      // The late call's id is forgotten once two more calls settled: its late result is no
      // longer recognised (with the default 10,000 it would be dropped and counted).
      expect(await h.session.call({ tool: "late", args: { ms: 600 }, timeoutMs: 100 })).toMatchObject({ code: "REQUEST_TIMEOUT" });
      const late = h.session.records().at(-1)!.callId;
      await h.session.call({ tool: "echo" });
      await h.session.call({ tool: "echo" });
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(h.session.records().find((r) => r.callId === late)?.late.results).toBe(0);
    },
  },
  {
    option: "clock",
    options: () => ({ timeoutMs: 300, clock: () => 2 * performance.now() }),
    async run(h) {
      // A clock running at twice the speed: the record's durations are in its time.
      const started = performance.now();
      expect(await silent(h)).toMatchObject({ code: "REQUEST_TIMEOUT" });
      const real = performance.now() - started;
      expect(lastCall(h)!.elapsedMs).toBeGreaterThan(real * 1.5);
    },
  },
  {
    option: "timers",
    options: (probe) => ({
      timeoutMs: 150,
      timers: {
        setTimeout: (callback, ms) => {
          probe.timerCalls++;
          return globalThis.setTimeout(callback, ms);
        },
        clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
      },
    }),
    async run(h, probe) {
      expect(await silent(h)).toMatchObject({ code: "REQUEST_TIMEOUT" });
      expect(probe.timerCalls).toBeGreaterThan(0);
    },
  },
];

/** The SDK client's request methods and their arguments (both lines), for the sdkClient row. `paged`: the per-page form (v2 serves the aggregate from its cache). */
const SDK_METHODS: ReadonlyArray<{ name: string; method: string; args: (paged: boolean) => unknown[] }> = [
  { name: "ping", method: "ping", args: () => [] },
  { name: "setLoggingLevel", method: "logging/setLevel", args: () => ["info"] },
  { name: "subscribeResource", method: "resources/subscribe", args: () => [{ uri: "file:///report.md" }] },
  { name: "unsubscribeResource", method: "resources/unsubscribe", args: () => [{ uri: "file:///report.md" }] },
  {
    name: "complete",
    method: "completion/complete",
    args: () => [{ ref: { type: "ref/prompt", name: "summary" }, argument: { name: "quarter", value: "Q" } }],
  },
  { name: "getPrompt", method: "prompts/get", args: () => [{ name: "summary" }] },
  { name: "listPrompts", method: "prompts/list", args: (paged) => [paged ? { cursor: "next" } : undefined] },
  { name: "readResource", method: "resources/read", args: () => [{ uri: "file:///report.md" }] },
  { name: "listResources", method: "resources/list", args: (paged) => [paged ? { cursor: "next" } : undefined] },
  { name: "listResourceTemplates", method: "resources/templates/list", args: (paged) => [paged ? { cursor: "next" } : undefined] },
  { name: "listTools", method: "tools/list", args: (paged) => [paged ? { cursor: "next" } : undefined] },
];

/**
 * Runs the contract table on each driver: its behaviour rows, its option rows (each client-wide
 * option changes what happens), or both.
 */
export function entryPointContract(drivers: readonly Driver[], rows: "behaviours" | "options" | "all" = "all"): void {
  const behaviours = rows !== "options";
  const options = rows !== "behaviours";
  describe.each(drivers)(`entry-point contract${options && !behaviours ? " (options)" : ""}: $name`, (driver) => {
    const open: Session[] = [];
    afterEach(async () => {
      for (const session of open.splice(0)) await session.close().catch(() => {});
    });

    async function connect(options: CancellationOptions = {}, serverArgs: readonly string[] = []): Promise<Harness> {
      const lines: string[] = [];
      const observed = { started: 0, records: [] as RunRecord[] };
      const observer: CallObserver = {
        start: (call) => {
          if (call.method !== "tools/call") return undefined;
          observed.started++;
          return { record: (record) => void observed.records.push(record) };
        },
      };
      sends.length = 0;
      const session = await driver.connect({ observer, ...options }, (line) => lines.push(line), serverArgs);
      open.push(session);
      const read = () =>
        lines
          .filter((l) => l.startsWith("RECV "))
          .map((l) => JSON.parse(l.slice(5)) as { method?: string; id?: unknown; params?: Record<string, unknown> });
      return {
        session,
        lines,
        observed,
        cancels: () =>
          read()
            .filter((m) => m.method === "notifications/cancelled")
            .map((m) => m.params as { requestId: unknown; reason?: string }),
        toolCalls: () =>
          read()
            .filter((m) => m.method === "tools/call")
            .map((m) => m.id),
        requests: () =>
          read()
            .filter((m) => m.id !== undefined && typeof m.method === "string")
            .map((m) => ({ id: m.id, method: m.method! })),
        sends: () => sends,
      };
    }

    const skipIfLacking = (behaviour: Behaviour) => driver.lacks?.[behaviour] !== undefined;

    if (behaviours) {
      it("a result is delivered as the result; one record, succeeded; the observer saw one call", async () => {
        const h = await connect();
        const outcome = await h.session.call({ tool: "echo" });
        expect(outcome.ok).toBe(true);
        expect(h.session.records()).toHaveLength(1);
        expect(h.session.records()[0]).toMatchObject({ status: "succeeded", method: "tools/call", name: "echo" });
        expect(h.observed.started).toBe(1);
        expect(h.observed.records.at(-1)?.status).toBe("succeeded");
      });

      it.skipIf(skipIfLacking("person"))(
        "waiting on the client is not the server's silence: a person answering after 3x the idle timeout, the call completes (issue 29, item 4)",
        async () => {
          const h = await connect({ timeoutMs: 200 });
          const outcome = await h.session.call({ tool: "ask" });
          expect(outcome).toMatchObject({ ok: true });
          expect(h.session.records()[0]).toMatchObject({ status: "succeeded" });
          expect(h.cancels()).toEqual([]);
        },
      );

      it.skipIf(skipIfLacking("idle-timeout"))(
        "idle timeout: REQUEST_TIMEOUT, settled at once, one notifications/cancelled naming the request, nothing re-sent",
        async () => {
          const h = await connect();
          const started = performance.now();
          const outcome = await h.session.call({ tool: "silent", timeoutMs: 200 });
          const elapsed = performance.now() - started;
          expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
          expect(elapsed).toBeGreaterThanOrEqual(190);
          expect(elapsed).toBeLessThan(200 + SLACK_MS);
          expect(await eventually(() => h.cancels().length === 1)).toBe(true);
          const [id] = h.toolCalls();
          expect(h.cancels()[0]!.requestId).toBe(id);
          expect(h.toolCalls()).toHaveLength(1);
          const [record] = h.session.records();
          expect(record).toMatchObject({ status: "cancelled", cancel: { trigger: "timeout", mechanism: "notification" }, requestId: id });
          expect(h.observed.records.at(-1)?.cancel?.trigger).toBe("timeout");
        },
      );

      it.skipIf(skipIfLacking("max-total-timeout"))(
        "maximum total timeout: progress resets the idle timeout but never the maximum",
        async () => {
          const h = await connect();
          const started = performance.now();
          const outcome = await h.session.call({
            tool: "progress",
            args: { every: 50 },
            timeoutMs: 300,
            maxTotalTimeoutMs: 700,
            resetTimeoutOnProgress: true,
          });
          const elapsed = performance.now() - started;
          expect(outcome).toMatchObject({ ok: false, code: "MAX_TOTAL_TIMEOUT" });
          expect(elapsed).toBeGreaterThanOrEqual(690);
          expect(elapsed).toBeLessThan(700 + SLACK_MS);
          const [record] = h.session.records();
          expect(record?.cancel?.trigger).toBe("max-total-timeout");
          expect(record?.progress?.count).toBeGreaterThan(3);
          // The server keeps sending progress after the cancel: dropped, counted on the record.
          expect(await eventually(() => (h.session.records()[0]?.late.progress ?? 0) > 0)).toBe(true);
        },
      );

      it.skipIf(skipIfLacking("abort"))("abort: CANCELLED at once, the reason kept local, one notifications/cancelled", async () => {
        const h = await connect();
        const controller = new AbortController();
        const calling = h.session.call({ tool: "silent", signal: controller.signal });
        expect(await eventually(() => h.toolCalls().length === 1)).toBe(true);
        const abortedAt = performance.now();
        controller.abort(new Error("private: the user's own words"));
        const outcome = await calling;
        expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
        expect(outcome).toMatchObject({ ok: false, code: "CANCELLED" });
        expect(await eventually(() => h.cancels().length === 1)).toBe(true);
        expect(h.cancels()[0]!.reason ?? "").not.toMatch(/private/);
        expect(h.session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "aborted" } });
      });

      it("a framework's own timeout (the call's signal aborts with a TimeoutError, as AbortSignal.timeout and LangChain's timeout do) is recorded timeout, never a user abort (issue 28, item 4)", async () => {
        const h = await connect();
        const outcome = await h.session.call({ tool: "silent", signal: AbortSignal.timeout(200) });
        expect(outcome.ok).toBe(false);
        expect(await eventually(() => h.session.records().length === 1)).toBe(true);
        const [record] = h.session.records();
        expect(record).toMatchObject({ status: "cancelled", cancel: { trigger: "timeout" } });
        expect(record!.cancel!.reason).toMatch(/^Request timed out after \d+ ms \(the caller's signal\)$/);
        // Where the library's error reaches the caller (through a framework's wrapping too), it is the timeout's.
        const ours = callErrorOf(outcome.ok ? undefined : outcome.error);
        if (ours !== undefined) expect(ours.code).toBe("REQUEST_TIMEOUT");
        expect(await eventually(() => h.cancels().length === 1)).toBe(true);
      });

      it.skipIf(skipIfLacking("late-result"))(
        "a late result is dropped and counted: the caller keeps the timeout, the record says late result discarded",
        async () => {
          const h = await connect();
          const outcome = await h.session.call({ tool: "late", args: { ms: 400 }, timeoutMs: 150 });
          expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
          expect(await eventually(() => h.session.records()[0]?.late.results === 1, 3_000)).toBe(true);
          expect(h.session.records()[0]).toMatchObject({ status: "cancelled", outcome: "late-result-discarded" });
          // The connection is still good.
          expect((await h.session.call({ tool: "echo" })).ok).toBe(true);
        },
      );

      it.skipIf(skipIfLacking("late-error"))("a late error is dropped and counted", async () => {
        const h = await connect();
        const outcome = await h.session.call({ tool: "late-error", args: { ms: 400 }, timeoutMs: 150 });
        expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
        expect(await eventually(() => h.session.records()[0]?.late.errors === 1, 3_000)).toBe(true);
        expect((await h.session.call({ tool: "echo" })).ok).toBe(true);
      });

      it.skipIf(skipIfLacking("connection-lost"))(
        "the connection lost mid-call: CONNECTION_CLOSED at once, with its record, nothing re-sent",
        async () => {
          const h = await connect();
          const started = performance.now();
          const outcome = await h.session.call({ tool: "crash", args: { ms: 100 }, timeoutMs: 10_000 });
          expect(performance.now() - started).toBeLessThan(100 + SLACK_MS * 4);
          expect(outcome).toMatchObject({ ok: false, code: "CONNECTION_CLOSED" });
          expect(h.session.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed" } });
          expect(h.toolCalls()).toHaveLength(1);
        },
      );

      it.skipIf(skipIfLacking("refused-send"))(
        "a refused send (the server is gone): CONNECTION_CLOSED at once, with its record, never sent",
        async () => {
          const h = await connect();
          expect(await h.session.call({ tool: "crash", args: { ms: 50 }, timeoutMs: 10_000 })).toMatchObject({
            ok: false,
            code: "CONNECTION_CLOSED",
          });
          const started = performance.now();
          const outcome = await h.session.call({ tool: "echo", timeoutMs: 10_000 });
          expect(performance.now() - started).toBeLessThan(SLACK_MS);
          expect(outcome).toMatchObject({ ok: false, code: "CONNECTION_CLOSED" });
          const records = h.session.records();
          expect(records).toHaveLength(2);
          expect(records[1]).toMatchObject({
            status: "cancelled",
            name: "echo",
            requestId: null,
            cancel: { trigger: "connection-closed", mechanism: "none" },
          });
          expect(h.toolCalls()).toHaveLength(1);
        },
      );

      it.skipIf(skipIfLacking("sdk-options"))(
        "the SDK's request options: timeout mapped to the idle timeout, the rest (relatedRequestId) handed to the SDK",
        async () => {
          const h = await connect();
          const outcome = await h.session.call({ tool: "silent", timeoutMs: 150, sdk: { relatedRequestId: "parent-7" } });
          expect(outcome).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
          const [sent] = h.sends().filter((m) => m.method === "tools/call");
          expect(sent?.options?.relatedRequestId).toBe("parent-7");
          expect(h.session.records()[0]?.cancel?.trigger).toBe("timeout");
        },
      );

      it("the observer (OpenTelemetry): one span per call, its error.type by how the call ended", async () => {
        const otel = otelHarness();
        const h = await connect({ observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter }) });
        expect((await h.session.call({ tool: "echo" })).ok).toBe(true);
        expect(await h.session.call({ tool: "silent", timeoutMs: 150 })).toMatchObject({ code: "REQUEST_TIMEOUT" });
        const controller = new AbortController();
        const calling = h.session.call({ tool: "silent", signal: controller.signal });
        expect(await eventually(() => h.toolCalls().length === 3)).toBe(true);
        controller.abort(new Error("private"));
        expect(await calling).toMatchObject({ code: "CANCELLED" });
        const spans = otel.spans().filter((span) => span.attributes["mcp.method.name"] === "tools/call" && span.parentSpanId === undefined);
        expect(spans.map((span) => span.attributes["error.type"])).toEqual([undefined, "timeout", "cancelled"]);
        expect(spans.map((span) => span.attributes["jsonrpc.request.id"])).toEqual(h.toolCalls().map(String));
        await otel.shutdown();
      });

      it("records: one per call, each with its own call id; the observer saw every call once", async () => {
        const h = await connect();
        await Promise.all([
          h.session.call({ tool: "echo" }),
          h.session.call({ tool: "echo" }),
          h.session.call({ tool: "silent", timeoutMs: 150 }),
        ]);
        const records = h.session.records();
        expect(records).toHaveLength(3);
        expect(new Set(records.map((r) => r.callId)).size).toBe(3);
        expect(new Set(records.map((r) => r.requestId)).size).toBe(3);
        expect(h.observed.started).toBe(3);
      });

      // --- verifiers by tool name (issue 28, item 1) -------------------------------------------

      it("verifiers by tool name: the entry point's own tool calls are verified, the tool's verifier else \"*\"'s, with name, arguments, record and signal", async () => {
        const seen: Array<{ by: string; ctx: ToolVerifyContext }> = [];
        const h = await connect({
          verifiers: {
            silent: (ctx) => {
              seen.push({ by: "silent", ctx });
              return "applied";
            },
            "*": async (ctx) => {
              seen.push({ by: "*", ctx });
              return "not-applied" as const;
            },
          },
        });
        expect(await h.session.call({ tool: "silent", args: { ms: 1 }, timeoutMs: 150 })).toMatchObject({ code: "REQUEST_TIMEOUT" });
        expect(await h.session.call({ tool: "late", args: { ms: 2_000 }, timeoutMs: 150 })).toMatchObject({ code: "REQUEST_TIMEOUT" });
        expect(await eventually(() => h.session.records().every((r) => r.outcome.startsWith("verified-")))).toBe(true);
        expect(h.session.records().map((r) => [r.name, r.outcome])).toEqual([
          ["silent", "verified-applied"],
          ["late", "verified-not-applied"],
        ]);
        expect(seen.map(({ by, ctx }) => [by, ctx.name, ctx.arguments])).toEqual([
          ["silent", "silent", { ms: 1 }],
          ["*", "late", { ms: 2_000 }],
        ]);
        const [first] = seen;
        expect(first!.ctx.record).toMatchObject({ name: "silent", status: "cancelled", requestId: h.toolCalls()[0] });
        expect(first!.ctx.signal).toBeInstanceOf(AbortSignal);
        // A call that succeeds is not verified.
        expect((await h.session.call({ tool: "echo" })).ok).toBe(true);
        expect(seen).toHaveLength(2);
      });

      it.skipIf(skipIfLacking("per-call-verify"))("a per-call verify wins over the verifiers", async () => {
        const h = await connect({ verifiers: { "*": () => "not-applied" } });
        expect(await h.session.call({ tool: "silent", timeoutMs: 150, verify: () => "applied" })).toMatchObject({
          code: "REQUEST_TIMEOUT",
        });
        expect(await eventually(() => h.session.records()[0]?.outcome === "verified-applied")).toBe(true);
      });

      it("awaitVerification with verifiers: a tool call cancelled by a limit answers with its verified outcome, which is what the framework hands its model", async () => {
        let reads = 0;
        /** While set, a read waits for it before it answers. */
        let gate: Promise<void> | undefined;
        const h = await connect({
          timeoutMs: 200,
          verifyDelayMs: 100,
          awaitVerification: true,
          verifiers: {
            silent: async () => {
              reads++;
              await gate;
              return "applied" as const;
            },
          },
        });
        const started = performance.now();
        const outcome = await h.session.call({ tool: "silent" });
        expect(performance.now() - started).toBeGreaterThanOrEqual(300 - 25); // the timeout, then the delayed read
        const text = outcome.ok ? JSON.stringify(outcome.value) : String((outcome.error as Error | undefined)?.message);
        expect(text).toMatch(
          /a check afterwards found that its effect was applied \(applied at 0\.\d s\)\. Do not call it again to repeat it\./,
        );
        expect(reads).toBe(1);
        expect(h.session.records()[0]).toMatchObject({ outcome: "verified-applied" });
        expect(h.toolCalls()).toHaveLength(1);
        // A caller's abort is never waited for: the run is being stopped. Its read is held until
        // the caller is released (a wait for it would never end), so the bound is about the
        // release alone, not the read's delay (SLACK_MS: a loaded machine).
        let releaseFirst!: () => void;
        gate = new Promise<void>((resolve) => (releaseFirst = resolve));
        const controller = new AbortController();
        const calling = h.session.call({ tool: "silent", signal: controller.signal });
        expect(await eventually(() => h.toolCalls().length === 2)).toBe(true);
        const abortedAt = performance.now();
        controller.abort();
        expect((await calling).ok).toBe(false);
        expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
        releaseFirst();
        // Nor is one that comes while the verification of a call a limit cancelled is awaited (an
        // outside tester's: the caller was held until the read ended). The read goes on, and its
        // answer still revises the record.
        expect(await eventually(() => reads === 2)).toBe(true); // the aborted call's own read (every cancel is verified)
        let release!: () => void;
        gate = new Promise<void>((resolve) => (release = resolve));
        const stop = new AbortController();
        const waiting = h.session.call({ tool: "silent", signal: stop.signal });
        expect(await eventually(() => reads === 3, 3_000)).toBe(true); // timed out, and its read is under way
        const stoppedAt = performance.now();
        stop.abort();
        const stopped = await waiting;
        expect(performance.now() - stoppedAt).toBeLessThan(SLACK_MS); // the read is held by the gate: a wait would never end
        expect(stopped.ok).toBe(false); // released with an error, not the verified text it was waiting for
        release();
        expect(await eventually(() => h.session.records().at(-1)?.outcome === "verified-applied")).toBe(true);
        expect(h.toolCalls()).toHaveLength(3);
        // A framework's own timeout (its signal aborts with a TimeoutError, as LangChain's does) is
        // a limit, not the caller's abort: its verified outcome is waited for (an outside tester's:
        // the model read "outcome unverified" while the record said verified applied).
        if (skipIfLacking("signal-timeout-verified")) return;
        gate = undefined;
        const timedOut = await h.session.call({ tool: "silent", signal: AbortSignal.timeout(150) });
        const said = timedOut.ok ? JSON.stringify(timedOut.value) : String((timedOut.error as Error | undefined)?.message);
        expect(said).toMatch(/a check afterwards found that its effect was applied/);
        expect(h.toolCalls()).toHaveLength(4);
      });

      // --- every request method of the SDK-shaped client through the runner (issue 28, item 5) --

      it.skipIf(skipIfLacking("sdk-client"))(
        "every request method of the SDK-shaped client goes through the runner: a record for each; then, the server silent, each times out (one notifications/cancelled naming it) or is cancelled by its signal",
        async () => {
          const h = await connect({}, ["--sdk-methods"]);
          const sdk = h.session.sdk!();
          const all = () => (h.session.allRecords ?? h.session.records)();
          const before = all().length;
          for (const { name, args } of SDK_METHODS) await (sdk[name] as (...a: unknown[]) => Promise<unknown>)(...args(false));
          const answered = all().slice(before);
          for (const { method } of SDK_METHODS)
            expect(answered.filter((r) => r.method === method && r.status === "succeeded")).not.toEqual([]);
          // The server stops answering everything but tools/call.
          await sdk.callTool({ name: "mute", arguments: {} });
          for (const { name, method, args } of SDK_METHODS) {
            const outcome = await settle((sdk[name] as (...a: unknown[]) => Promise<unknown>)(...args(true), { timeout: 150 }));
            expect(outcome, name).toMatchObject({ ok: false, code: "REQUEST_TIMEOUT" });
            const record = all().at(-1)!;
            expect(record, name).toMatchObject({ method, status: "cancelled", cancel: { trigger: "timeout", mechanism: "notification" } });
            expect(await eventually(() => h.cancels().some((c) => c.requestId === record.requestId)), name).toBe(true);
          }
          // request(), and a signal: cancelled on the wire, recorded aborted.
          const controller = new AbortController();
          const ping =
            h.session.v2 === true
              ? sdk.request({ method: "ping" }, { signal: controller.signal })
              : sdk.request({ method: "ping" }, undefined, { signal: controller.signal });
          expect(await eventually(() => h.requests().filter((r) => r.method === "ping").length === 3)).toBe(true);
          controller.abort();
          expect(await settle(ping)).toMatchObject({ ok: false, code: "CANCELLED" });
          expect(all().at(-1)).toMatchObject({ method: "ping", cancel: { trigger: "aborted" } });
          const pings = h.requests().filter((r) => r.method === "ping");
          expect(await eventually(() => h.cancels().some((c) => c.requestId === pings.at(-1)!.id))).toBe(true);
        },
      );
    }

    // --- every option changes what happens (issue 28, item 3) ---------------------------------

    if (options) {
      it.each(OPTION_EFFECTS.map((effect) => [effect.option, effect] as const))(
        "option %s: it takes effect on this entry point's own calls",
        async (_option, effect) => {
          if (effect.needs !== undefined && skipIfLacking(effect.needs)) return;
          const probe: Probe = { verified: [], readAt: [], records: [], anomalies: [], timerCalls: 0 };
          const h = await connect(effect.options(probe));
          await effect.run(h, probe);
        },
      );
    }
  });

  if (options) {
    describe.each(drivers)("entry-point contract (options): $name, refused at once", (driver) => {
      it("a verifier that is not a function is refused at once, naming verifiers.<tool>; so is a bad awaitVerification", async () => {
        for (const [bad, option] of [
          [{ verifiers: { generate_report: "applied" } }, "verifiers.generate_report"],
          [{ verifiers: ["not", "by", "name"] }, "verifiers"],
          [{ awaitVerification: "yes" }, "awaitVerification"],
        ] as const) {
          const error = await driver
            .connect(bad as unknown as CancellationOptions, () => {}, [])
            .then(
              async (session) => {
                await session.close();
                return undefined;
              },
              (e: unknown) => e,
            );
          expect(isInvalidOptionError(error), option).toBe(true);
          expect((error as InvalidOptionError).option).toBe(option);
          expect((error as Error).message).toContain(`"${option}" must be`);
        }
      });
    });

    describe("entry-point contract: every option has its row", () => {
      it("the option-effect rows name every client-wide option the schema accepts", () => {
        expect(OPTION_EFFECTS.map((effect) => effect.option).sort()).toEqual(Object.keys(clientOptionsSchema.shape).sort());
      });
    });
  }
}
