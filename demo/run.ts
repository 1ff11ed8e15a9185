/**
 * `npm run demo`: the worked example (docs/faq.md, "The worked example"), run
 * for real against MCP servers on stdio, through mcp-cancellable.
 *
 * The story: a bot calls `generate_quarterly_summary` over stdio; the report takes longer than the
 * bot's budget; the bot sends `notifications/cancelled` with a reason ("exceeded 30s budget") and
 * at once treats the call as done. Then one of three things happens, and the bot must tolerate all
 * three:
 *   (a) the server stops cleanly and sends nothing;
 *   (b) the server had already sent its result, which arrives after the cancel: it must be ignored,
 *       and the run record says "cancelled, late result discarded";
 *   (c) the server cannot stop and writes the report anyway, and (rule 11) still sends nothing:
 *       silence looks exactly like (a), so only a separate, idempotent read can tell.
 * The budget here is 800 ms instead of 30 s. Then the same bot runs against a server nobody here
 * wrote, `@modelcontextprotocol/server-everything`, whose long-running tool keeps sending progress
 * after it was cancelled: the library drops that progress and counts it on the record (d), and the
 * connection stays usable for the next call (e).
 *
 * Then (f) the same report as an MCP task (demo/task-server.ts, 2025-11-25 core tasks with the
 * v1 SDK's task store): the server answers at once with a task, the library polls it, and on the
 * budget it sends the request `tasks/cancel {taskId}` (never `notifications/cancelled`, rules 35,
 * 36); the record says what became of the task. Part (f) also runs the same task against a server
 * that is slow to answer with the task: the budget runs out before the task's id is known; a
 * task-augmented request is never cancelled with `notifications/cancelled` (rules 2, 35, 36), so
 * the library awaits the `CreateTaskResult`, and when it names the task sends it one
 * `tasks/cancel` at once; the record names the task (`task.createdAfterCancel: true`) and what
 * became of it.
 *
 * Prints one line per call, then every run record as JSON Lines (final revision of each), and exits
 * with 1 unless each record is what the worked example says it should be. DEMO_VERBOSE=1 also
 * prints the servers' stderr. `npm run demo -- --otel` also prints the stdio part's OpenTelemetry
 * spans (mcp-cancellable/otel, the SDK's console exporter) as each ends. Every server is a child
 * process started and stopped here; the reports go to a
 * temporary directory, deleted at the end.
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { isCallCancelledError, isCallTimeoutError, jsonLines, withCancellation } from "../src/index.js";
import type { CancellableClient, RunRecord } from "../src/index.js";
import { stdioCancellation } from "../src/adapters/stdio/index.js";
import { otelRecorder } from "../src/otel/index.js";
import { BasicTracerProvider, ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { runHttpDemo } from "./http.js";
import { reportPath } from "./reports.js";
import type { Mode } from "./reports.js";

/** The bot's patience for one report, in ms (the worked example's 30 s, shortened so the demo takes seconds). */
const BUDGET_MS = 800;
/** How long the report takes on this run, in ms: well past the budget (the worked example's 45 s against 30 s). */
const WORK_MS = 1_600;
/**
 * Wait after the cancel before the verify read, in ms: time for a server that cannot stop to
 * finish (case c). The report is written WORK_MS - BUDGET_MS = 800 ms after the cancel.
 */
const VERIFY_DELAY_MS = 1_600;
/** How long the demo waits for late messages to land on a record, at most, in ms. */
const LATE_WAIT_MS = 4_000;
/** A hard stop for the whole demo, in ms: it never hangs. */
const DEMO_DEADLINE_MS = 45_000;

const here = dirname(fileURLToPath(import.meta.url));
const verbose = process.env.DEMO_VERBOSE === "1";
/** `--otel`: spans of the stdio part printed by the OpenTelemetry SDK's console exporter. */
const tracerProvider = process.argv.includes("--otel")
  ? new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())] })
  : undefined;
/** Everything that did not match the worked example; the demo exits 1 unless this stays empty. */
const problems: string[] = [];

// ---------------------------------------------------------------------------------------------
// Connecting: an SDK Client whose stdio transport is wrapped by the library.
// ---------------------------------------------------------------------------------------------

interface Session {
  mcp: CancellableClient<StdioClientTransport>;
  /** Ends the server's stdin and waits for the child to exit (the SDK escalates to SIGTERM after 2 s). Idempotent. */
  close(): Promise<void>;
  stderr(): string;
}

/**
 * Spawns `command args` as a stdio MCP server and connects a v1 SDK `Client` to it through
 * `withCancellation` + `stdioCancellation`: a cancel is one `notifications/cancelled {requestId,
 * reason}` line on the server's stdin (rules 6, 31), and the SDK's own timeout never decides a call.
 */
async function connect(command: string, args: string[]): Promise<Session> {
  const client = new Client({ name: "report-bot", version: "1.0.0" });
  // The story: the bot tolerates every case "without crashing": no error may reach the SDK's onerror.
  client.onerror = (error) => problems.push(`client.onerror: ${error.message}`);
  const transport = new StdioClientTransport({ command, args, stderr: "pipe" });
  const mcp = withCancellation(client, stdioCancellation(transport), {
    onAnomaly: (anomaly) => problems.push(`wire anomaly: ${anomaly.kind}: ${anomaly.message}`),
    ...(tracerProvider === undefined ? {} : { observer: otelRecorder({ tracer: tracerProvider.getTracer("demo") }) }),
  });
  const stderr: string[] = [];
  transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  await client.connect(mcp.transport);
  let closing: Promise<void> | undefined;
  return { mcp, close: () => (closing ??= client.close()), stderr: () => stderr.join("") };
}

/** Starts demo/report-server.ts (under tsx's loader) in one of the worked example's three modes. */
function startReportServer(mode: Mode, dir: string): Promise<Session> {
  const server = join(here, "report-server.ts");
  const args = ["--import", import.meta.resolve("tsx"), server, "--mode", mode, "--dir", dir, "--work-ms", String(WORK_MS)];
  return connect(process.execPath, args);
}

/** Starts @modelcontextprotocol/server-everything from its installed `bin`, in stdio mode. */
function startServerEverything(): Promise<Session> {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("@modelcontextprotocol/server-everything/package.json");
  const { bin } = require(manifest) as { bin: Record<string, string> };
  const entry = join(dirname(manifest), bin["mcp-server-everything"] ?? "dist/index.js");
  return connect(process.execPath, [entry, "stdio"]);
}

// ---------------------------------------------------------------------------------------------
// The bot.
// ---------------------------------------------------------------------------------------------

/**
 * The bot asks for a report and gives up after `BUDGET_MS`. On the timeout the library sends
 * `notifications/cancelled` with the reason and rejects the call at once, without waiting for the
 * server (rules 14, 15: time out, cancel, stop waiting). Because silence is not proof that the work
 * stopped, the call carries a `verify` read: `VERIFY_DELAY_MS` after the cancel it checks whether
 * the report file exists, a read that changes nothing (the worked example's second rule). Its answer becomes
 * the record's outcome: `verified-applied` or `verified-not-applied`.
 *
 * `verifyAfterCancel: false` leaves the verify read out. Case (b) runs that way so that its record
 * shows the worked example's "cancelled, late result discarded": with a verify read, the read's answer (here
 * "applied", since that server finished) would set the outcome instead, and the late result would
 * still be counted in `late.results`.
 *
 * @returns what the call resolved with (never, once cancelled) or rejected with.
 */
async function askForReport(
  mcp: CancellableClient<StdioClientTransport>,
  dir: string,
  quarter: string,
  verifyAfterCancel: boolean,
): Promise<{ result: unknown; error: unknown }> {
  try {
    const result = await mcp.callTool(
      { name: "generate_quarterly_summary", arguments: { quarter } },
      {
        timeoutMs: BUDGET_MS,
        reason: `exceeded ${BUDGET_MS}ms budget`,
        ...(verifyAfterCancel && {
          verifyDelayMs: VERIFY_DELAY_MS,
          verify: () => (existsSync(reportPath(dir, quarter)) ? "applied" : "not-applied"),
        }),
      },
    );
    return { result, error: undefined };
  } catch (error) {
    return { result: undefined, error };
  }
}

// ---------------------------------------------------------------------------------------------
// Checking records against the worked example.
// ---------------------------------------------------------------------------------------------

/** One call's line in the output: its label, its final record, and what happened, in words. */
interface Line {
  label: string;
  record: RunRecord;
  note: string;
}

/** Records a mismatch unless `actual` equals `expected` (compared as JSON). */
function expectEqual(label: string, what: string, actual: unknown, expected: unknown): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    problems.push(`[${label}] ${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

/** Records a mismatch unless `ok`. */
function expectThat(label: string, what: string, ok: boolean, actual: unknown): void {
  if (!ok) problems.push(`[${label}] expected ${what}, got ${JSON.stringify(actual)}`);
}

/** Polls `read` every 20 ms until `done` holds or `withinMs` ms have passed; returns the last value. */
async function waitFor<T>(read: () => T, done: (value: T) => boolean, withinMs: number): Promise<T> {
  const until = performance.now() + withinMs;
  let value = read();
  while (!done(value) && performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    value = read();
  }
  return value;
}

/** The latest revision of the session's most recent run record. */
function lastRecord(session: Session): RunRecord | undefined {
  return session.mcp.records().at(-1);
}

// ---------------------------------------------------------------------------------------------
// Cases (a), (b), (c): the report server.
// ---------------------------------------------------------------------------------------------

interface ReportCase {
  label: "a" | "b" | "c";
  mode: Mode;
  verifyAfterCancel: boolean;
  /** The record's outcome the worked example asks for. */
  outcome: RunRecord["outcome"];
  /** Late results the record must count: only (b)'s server sends one. */
  lateResults: number;
  /** Whether the report file exists once the server has exited. */
  fileExists: boolean;
  note: string;
}

const REPORT_CASES: ReportCase[] = [
  {
    label: "a",
    mode: "stop",
    verifyAfterCancel: true,
    outcome: "verified-not-applied",
    lateResults: 0,
    fileExists: false,
    note: "the server stopped cleanly and sent nothing; the verify read found no report",
  },
  {
    label: "b",
    mode: "late",
    verifyAfterCancel: false,
    outcome: "late-result-discarded",
    lateResults: 1,
    fileExists: true,
    note: "the server's result arrived after the cancel; it was dropped, the bot never saw it",
  },
  {
    label: "c",
    mode: "ignore",
    verifyAfterCancel: true,
    outcome: "verified-applied",
    lateResults: 0,
    fileExists: true,
    note: "the server could not stop and wrote the report, sending nothing; the verify read found it",
  },
];

async function runReportCase(spec: ReportCase, session: Session, dir: string): Promise<Line[]> {
  const { label } = spec;
  const { result, error } = await askForReport(session.mcp, dir, "Q3", spec.verifyAfterCancel);
  expectEqual(label, "the call's result (a cancelled call never delivers one)", result, undefined);
  expectThat(
    label,
    "a CallTimeoutError (code REQUEST_TIMEOUT)",
    isCallTimeoutError(error) && error.code === "REQUEST_TIMEOUT",
    String(error),
  );
  if (isCallTimeoutError(error)) await error.verification; // the record once the verify read (if any) answered
  // A late result (b) lands whenever the server gets round to it: wait for it, bounded.
  await waitFor(
    () => lastRecord(session),
    (r) => r !== undefined && r.late.results >= spec.lateResults,
    LATE_WAIT_MS,
  );
  expectEqual(label, "pending count once settled", session.mcp.pendingCount, 0);
  await session.close(); // the server has exited: the report directory is final
  const record = lastRecord(session);
  if (record === undefined) {
    problems.push(`[${label}] no run record`);
    return [];
  }
  expectEqual(label, "status", record.status, "cancelled");
  expectEqual(label, "cancel.trigger", record.cancel?.trigger, "timeout");
  expectEqual(label, "cancel.mechanism", record.cancel?.mechanism, "notification");
  expectEqual(label, "cancel.reason", record.cancel?.reason, `exceeded ${BUDGET_MS}ms budget`);
  expectEqual(label, "outcome", record.outcome, spec.outcome);
  expectEqual(label, "late", record.late, { results: spec.lateResults, errors: 0, progress: 0 });
  expectEqual(label, "report file exists", existsSync(reportPath(dir, "Q3")), spec.fileExists);
  return [{ label, record, note: spec.note }];
}

// ---------------------------------------------------------------------------------------------
// Cases (d), (e): server-everything.
// ---------------------------------------------------------------------------------------------

/** trigger-long-running-operation: 10 progress steps over 3 s. */
const LONG_RUN = { duration: 3, steps: 10 } as const;
/** The bot gives up after this many progress notifications. */
const GIVE_UP_AFTER = 2;

async function runServerEverything(session: Session): Promise<Line[]> {
  // (d) Progress resets the idle timeout (rule 17); the bot aborts after two updates. The server
  // keeps going: its tool sends progress through `server.notification()`, which the SDK does not
  // hold back for a cancelled request, so progress keeps coming after the cancel (against rule 22).
  const giveUp = new AbortController();
  let progressSeen = 0;
  let error: unknown;
  try {
    await session.mcp.callTool(
      { name: "trigger-long-running-operation", arguments: { ...LONG_RUN } },
      {
        timeoutMs: 2_000,
        maxTotalTimeoutMs: 10_000,
        resetTimeoutOnProgress: true,
        signal: giveUp.signal,
        onprogress: () => {
          progressSeen++;
          if (progressSeen === GIVE_UP_AFTER) giveUp.abort(`the bot moved on after ${GIVE_UP_AFTER} progress updates`);
        },
      },
    );
    problems.push("[d] the call resolved; it should have been cancelled");
  } catch (caught) {
    error = caught;
  }
  expectThat("d", "a CallCancelledError (code CANCELLED)", isCallCancelledError(error), String(error));
  // Keep the connection open while the server works through its remaining steps: each progress it
  // sends for the cancelled request is dropped before the SDK sees it, and counted on the record.
  const remaining = LONG_RUN.steps - GIVE_UP_AFTER;
  const longRun = await waitFor(
    () => lastRecord(session),
    (r) => r !== undefined && r.late.progress >= remaining,
    LATE_WAIT_MS,
  );
  if (longRun === undefined) {
    problems.push("[d] no run record");
    return [];
  }
  const late = longRun.late.progress;
  expectEqual("d", "status", longRun.status, "cancelled");
  expectEqual("d", "cancel.trigger", longRun.cancel?.trigger, "aborted");
  expectEqual("d", "cancel.mechanism", longRun.cancel?.mechanism, "notification");
  expectEqual("d", "progress.count (received while live)", longRun.progress.count, GIVE_UP_AFTER);
  expectEqual("d", "progress seen by the bot's onprogress", progressSeen, GIVE_UP_AFTER);
  expectThat("d", "late.progress > 0 (progress sent after the cancel, dropped and counted)", late > 0, late);
  expectEqual("d", "late.results (the SDK server sends no response after a cancel)", longRun.late.results, 0);
  expectEqual("d", "outcome (a read-only tool, nothing to verify)", longRun.outcome, "unverified");

  // (e) The cancel did not poison the session (case C13): the next call on it just works.
  const echo = await session.mcp.callTool({ name: "echo", arguments: { message: "still there?" } }, { timeoutMs: 5_000 });
  const echoRecord = lastRecord(session)!;
  expectEqual("e", "status", echoRecord.status, "succeeded");
  expectEqual("e", "pending count once settled", session.mcp.pendingCount, 0);
  const text = (echo.content?.[0] as { text?: unknown } | undefined)?.text;
  return [
    {
      label: "d",
      record: longRun,
      note:
        late > 0
          ? `server-everything kept sending progress after the cancel: ${late} notifications dropped and counted, none reached the bot`
          : "server-everything sent NO progress after the cancel in this version: there was nothing to drop",
    },
    { label: "e", record: echoRecord, note: `same connection, next call answered ${JSON.stringify(text)}` },
  ];
}

// ---------------------------------------------------------------------------------------------
// Case (f): the report as a task.
// ---------------------------------------------------------------------------------------------

/**
 * The report tool as a task (execution.taskSupport "required"): the bot calls it with the `task`
 * option and the same budget. The budget covers the whole task, not only the `tools/call` that
 * created it; on expiry the library sends one `tasks/cancel {taskId}`, releases the bot at once,
 * and keeps watching (bounded) until the server says the task is `cancelled`.
 */
async function runTaskCase(): Promise<Line | undefined> {
  const dir = await mkdtemp(join(tmpdir(), "mcp-cancellable-demo-task-"));
  let session: Session | undefined;
  try {
    const args = ["--import", import.meta.resolve("tsx"), join(here, "task-server.ts"), "--dir", dir, "--work-ms", String(WORK_MS)];
    session = await connect(process.execPath, args);
    let error: unknown;
    try {
      await session.mcp.callTool(
        { name: "generate_quarterly_summary", arguments: { quarter: "Q3" } },
        // The budget is the whole task's: its maximum total timeout. The idle timeout measures
        // silence, and a task that answers its polls is never silent (rule 37).
        { task: { ttlMs: 60_000 }, maxTotalTimeoutMs: BUDGET_MS, reason: `exceeded ${BUDGET_MS}ms budget` },
      );
      problems.push("[f] the call resolved; it should have been cancelled");
    } catch (caught) {
      error = caught;
    }
    expectThat(
      "f",
      "a CallTimeoutError (code MAX_TOTAL_TIMEOUT)",
      isCallTimeoutError(error) && error.code === "MAX_TOTAL_TIMEOUT",
      String(error),
    );
    const record = await waitFor(
      () => lastRecord(session!),
      (r) => r?.outcome === "task-cancelled",
      LATE_WAIT_MS,
    );
    // Let the server's work reach its next step (it sees the cancel there and stops).
    await new Promise((resolve) => setTimeout(resolve, WORK_MS / 4));
    expectEqual("f", "pending count once settled", session.mcp.pendingCount, 0);
    await session.close();
    if (record === undefined) {
      problems.push("[f] no run record");
      return undefined;
    }
    expectEqual("f", "status", record.status, "cancelled");
    expectEqual("f", "cancel.trigger", record.cancel?.trigger, "max-total-timeout");
    expectEqual("f", "cancel.mechanism", record.cancel?.mechanism, "tasks/cancel");
    expectEqual("f", "outcome", record.outcome, "task-cancelled");
    expectEqual("f", "task.status", record.task?.status, "cancelled");
    expectEqual("f", "report file exists", existsSync(reportPath(dir, "Q3")), false);
    const cancels = session
      .stderr()
      .split("\n")
      .filter((line) => line.includes("read tasks/cancel") || line.includes("read notifications/cancelled"));
    expectEqual("f", "cancels the server read", cancels, [`[task-server] read tasks/cancel {"taskId":"${record.task?.taskId}"}`]);
    if (verbose) process.stderr.write(session.stderr());
    return {
      label: "f",
      record,
      note: "the report ran as a task; on the budget the bot sent one tasks/cancel, the server confirmed it and wrote nothing",
    };
  } catch (error) {
    problems.push(`[f] the task part failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return undefined;
  } finally {
    await session?.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * How late the server answers the `tools/call` with its task in the second (f) case, in ms: well
 * past the budget, so the bot has given up before it knows the task's id.
 */
const CREATE_DELAY_MS = 2 * BUDGET_MS;
/** The work of that task, in ms: long enough that the late `tasks/cancel` still finds it working. */
const LATE_TASK_WORK_MS = 4 * WORK_MS;

/**
 * The same task, cancelled before its id was known: the server creates the task as it reads the
 * `tools/call` but answers with it only `CREATE_DELAY_MS` later, and it ignores
 * `notifications/cancelled` (rule 10 allows it). On the budget the library cancels the
 * `tools/call` the stdio way (`notifications/cancelled`, rule 31) and releases the bot at once;
 * when the late `CreateTaskResult` names the task, it sends that task one `tasks/cancel` at once
 * and watches it, and the record names the task and what became of it.
 */
async function runLateTaskCase(): Promise<Line | undefined> {
  const label = "f";
  const dir = await mkdtemp(join(tmpdir(), "mcp-cancellable-demo-late-task-"));
  let session: Session | undefined;
  try {
    const server = join(here, "task-server.ts");
    const args = [
      "--import",
      import.meta.resolve("tsx"),
      server,
      "--dir",
      dir,
      "--work-ms",
      String(LATE_TASK_WORK_MS),
      "--create-delay-ms",
      String(CREATE_DELAY_MS),
    ];
    session = await connect(process.execPath, args);
    const reason = `exceeded ${BUDGET_MS}ms budget`;
    let error: unknown;
    try {
      await session.mcp.callTool(
        { name: "generate_quarterly_summary", arguments: { quarter: "Q4" } },
        { task: { ttlMs: 60_000 }, maxTotalTimeoutMs: BUDGET_MS, reason },
      );
      problems.push(`[${label}] the late task's call resolved; it should have been cancelled`);
    } catch (caught) {
      error = caught;
    }
    expectThat(
      label,
      "a CallTimeoutError (code MAX_TOTAL_TIMEOUT) for the late task",
      isCallTimeoutError(error) && error.code === "MAX_TOTAL_TIMEOUT",
      String(error),
    );
    // Released at once: the task's id is not known yet (the server answers CREATE_DELAY_MS late).
    expectEqual(label, "the late task's record at the release names no task yet", lastRecord(session)?.task, undefined);
    const record = await waitFor(
      () => lastRecord(session!),
      (r) => r?.outcome === "task-cancelled",
      CREATE_DELAY_MS + LATE_WAIT_MS,
    );
    // The server's work sees the cancel at its next step and stops.
    await waitFor(
      () => session!.stderr(),
      (text) => text.includes(": cancelled, stopped at step"),
      LATE_TASK_WORK_MS,
    );
    expectEqual(label, "pending count once settled (late task)", session.mcp.pendingCount, 0);
    await session.close();
    if (record === undefined) {
      problems.push(`[${label}] no run record for the late task`);
      return undefined;
    }
    const taskId = record.task?.taskId;
    expectEqual(label, "late task: status", record.status, "cancelled");
    expectEqual(label, "late task: cancel.trigger", record.cancel?.trigger, "max-total-timeout");
    expectEqual(label, "late task: cancel.mechanism (the task's tasks/cancel, once its id came)", record.cancel?.mechanism, "tasks/cancel");
    expectEqual(label, "late task: outcome", record.outcome, "task-cancelled");
    expectEqual(label, "late task: task.status", record.task?.status, "cancelled");
    expectEqual(label, "late task: task.createdAfterCancel", record.task?.createdAfterCancel, true);
    expectThat(label, "late task: the record names the task", typeof taskId === "string" && taskId.length > 0, taskId);
    expectEqual(label, "late task: report file exists", existsSync(reportPath(dir, "Q4")), false);
    // What the server read and did, in order: no notifications/cancelled for the task-augmented
    // tools/call, its late answer with the task, then exactly one tasks/cancel naming it, then the work stopped.
    const seen = session
      .stderr()
      .split("\n")
      .filter((line) =>
        /read (tasks\/cancel|notifications\/cancelled)|answering the tools\/call|: cancelled, stopped at step|wrote /.test(line),
      )
      .map((line) => line.replace(/stopped at step \d+/, "stopped at step N"));
    expectEqual(label, "late task: what the server read and did", seen, [
      `[task-server slow-to-answer] task ${taskId}: answering the tools/call with the task, ${CREATE_DELAY_MS} ms late`,
      `[task-server slow-to-answer] read tasks/cancel {"taskId":"${taskId}"}`,
      `[task-server slow-to-answer] task ${taskId}: cancelled, stopped at step N of 8, nothing written`,
    ]);
    if (verbose) process.stderr.write(session.stderr());
    return {
      label,
      record,
      note:
        "the budget ran out before the server answered with its task: a task's tools/call is never cancelled with notifications/cancelled (rules 35, 36), so the bot awaited its id; " +
        `when it arrived about ${CREATE_DELAY_MS - BUDGET_MS} ms later the bot sent it one tasks/cancel at once, and the record names the task ` +
        "(task.createdAfterCancel: true): cancelled by the server, nothing written",
    };
  } catch (error) {
    problems.push(`[${label}] the late task part failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return undefined;
  } finally {
    await session?.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const watchdog = setTimeout(() => {
    console.error(`demo: did not finish within ${DEMO_DEADLINE_MS} ms`);
    process.exit(1);
  }, DEMO_DEADLINE_MS);
  watchdog.unref();
  console.log(`mcp-cancellable demo: the worked example over stdio (budget ${BUDGET_MS} ms, the report takes ${WORK_MS} ms)`);
  console.log(
    "Cases [a] to [d] run at the same time, each on its own connection to its own server process;\n" +
      "then case [e] runs on [d]'s connection. Results print in case order once all are done.\n",
  );

  const root = await mkdtemp(join(tmpdir(), "mcp-cancellable-demo-"));
  const dirs = REPORT_CASES.map((spec) => join(root, spec.label));
  const sessions: Session[] = [];
  const lines: Line[] = [];
  try {
    // One server per case, all started at once (each takes a second or two to boot).
    const starting = await Promise.allSettled([
      ...REPORT_CASES.map(async (spec, i) => {
        await mkdir(dirs[i]!);
        return startReportServer(spec.mode, dirs[i]!);
      }),
      startServerEverything(),
    ]);
    for (const started of starting) if (started.status === "fulfilled") sessions.push(started.value);
    for (const started of starting) if (started.status === "rejected") throw started.reason;
    // The cases share nothing (own server, own directory), so they run side by side; lines print in order.
    const results = await Promise.all([
      ...REPORT_CASES.map((spec, i) => runReportCase(spec, sessions[i]!, dirs[i]!)),
      runServerEverything(sessions[REPORT_CASES.length]!),
    ]);
    lines.push(...results.flat());
  } catch (error) {
    problems.push(`the demo itself failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    await Promise.all(sessions.map((session) => session.close()));
    await rm(root, { recursive: true, force: true });
    if (verbose) for (const session of sessions) process.stderr.write(session.stderr());
  }

  for (const { label, record, note } of lines) {
    console.log(`[${label}] ${(record.name ?? record.method).padEnd(32)} ${record.summary}`);
    console.log(`    ${note}`);
  }
  console.log("\nRun records (JSON Lines, final revision of each call):");
  const write = jsonLines((line) => process.stdout.write(line));
  for (const { record } of lines) write(record);

  if (lines.length !== REPORT_CASES.length + 2) problems.push(`expected ${REPORT_CASES.length + 2} run records, got ${lines.length}`);
  if (problems.length > 0) {
    console.error(`\nDEMO FAILED: ${problems.length} check(s) differ from what the worked example says:`);
    const byLabel = (problem: string): string => (/^\[[a-e]\]/.test(problem) ? problem.slice(0, 3) : "[~]");
    for (const problem of problems.sort((x, y) => byLabel(x).localeCompare(byLabel(y)))) console.error(`  - ${problem}`);
    if (!verbose) for (const session of sessions) process.stderr.write(session.stderr());
    process.exitCode = 1;
  } else {
    console.log("\nOK: every record is what the worked example says it should be.");
  }
  await tracerProvider?.shutdown();
  // The same worked example over Streamable HTTP (demo/http.ts): the server sees the stream close.
  // (f) The report as a task, cancelled on the budget with tasks/cancel: it shares nothing with
  // the HTTP part (own server, own directory), so it runs beside it and prints after it.
  const problemsBefore = problems.length;
  // The task cancelled before its id was known runs beside both, on its own server and directory.
  const taskPart = Promise.all([runTaskCase(), runLateTaskCase()]);
  const overHttp = await runHttpDemo();
  for (const line of overHttp.lines) console.log(line);
  if (!overHttp.ok) process.exitCode = 1;
  const asTasks = await taskPart;
  console.log("");
  for (const asTask of asTasks) {
    if (asTask === undefined) continue;
    console.log(`[f] ${(asTask.record.name ?? asTask.record.method).padEnd(32)} ${asTask.record.summary}`);
    console.log(`    ${asTask.note}`);
  }
  for (const asTask of asTasks) if (asTask !== undefined) write(asTask.record);
  if (asTasks.some((asTask) => asTask === undefined)) problems.push("[f] expected 2 task records");
  if (problems.length > problemsBefore) {
    console.error(`\nDEMO FAILED (task part):`);
    for (const problem of problems.slice(problemsBefore)) console.error(`  - ${problem}`);
    process.exitCode = 1;
  } else {
    console.log("OK: each task's record says what became of it.");
  }
  clearTimeout(watchdog);
}

await main();
