import type { RunRecord } from "../types/record.js";
import { isMcpCancellableError } from "../errors/guards.js";
import type { Message } from "../wire/messages.js";
import type { ProbeOptions } from "./args.js";
import { UsageError } from "./args.js";
import { evaluate } from "./checks.js";
import type { Check } from "./checks.js";
import { idLabel, truncate } from "./describe.js";
import { Recorder } from "./recorder.js";
import type { WireEvent } from "./recorder.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { openConnection, PROBE_CLIENT_INFO, StartupError } from "./target.js";
import type { Connection } from "./target.js";
import { lostText } from "./run.js";
import type { ConcurrentCall, ConcurrentRun, CpuWatch, Exchange, MainCancel, ProbeRun, RawCancel, SessionsRun, ToolInfo } from "./run.js";

/** At most this many `tools/list` pages are read. */
export const MAX_TOOL_PAGES = 10;

// The run's shapes live in run.ts, which checks.ts reads too (so the two never import each other).
export type {
  ConcurrentCall,
  ConcurrentRun,
  CpuWatch,
  Exchange,
  MainCancel,
  ProbeRun,
  RawCancel,
  SessionsRun,
  ToolInfo,
} from "./run.js";

/** The outcome of `probe`: the checks and the run they judge. */
export interface ProbeReport {
  run: ProbeRun;
  checks: Check[];
}

/**
 * Runs the probe: connect, pick the tool, time a `tools/list`, call and cancel the tool, send a
 * `tools/list` fence right after the cancel, watch `windowMs` (and the stdio server's CPU time),
 * check the connection, run two concurrent calls (one cancelled), on 2025-era HTTP with sessions
 * two sessions with coinciding request ids, cancel a completed and an unknown request, and judge
 * the timeline. See docs/probe.md.
 *
 * @param recorder where the timeline goes (pass one to keep the timeline of a failed start).
 * @throws {StartupError} the server could not be started or never completed the handshake.
 * @throws {UsageError} the tool asked for is missing, or no tool is safe to call.
 */
export async function probe(options: ProbeOptions, recorder: Recorder = new Recorder()): Promise<ProbeReport> {
  const conn = await openConnection(options, recorder);
  try {
    const run = await exercise(options, conn, recorder);
    return { run, checks: evaluate(run) };
  } finally {
    await conn.close();
  }
}

async function exercise(options: ProbeOptions, conn: Connection, recorder: Recorder): Promise<ProbeRun> {
  const run: ProbeRun = {
    options,
    transport: options.target.kind,
    era: conn.era,
    protocolVersion: conn.protocolVersion,
    serverInfo: conn.serverInfo,
    cancelMechanism: conn.cancelMechanism,
    events: recorder.events,
    droppedEvents: 0,
    baseline: undefined,
    main: undefined,
    survive: undefined,
    concurrent: undefined,
    sessions: undefined,
    cancelCompleted: undefined,
    cancelUnknown: undefined,
    closedAt: undefined,
    clientErrors: [],
    anomalies: [],
    diagnosis: [],
  };
  const finish = async (): Promise<ProbeRun> => {
    // The record as it stands now: late messages discarded after the cancel update it.
    const main = run.main;
    if (main !== undefined) {
      const latest = conn.mcp.records().find((record) => record.method === "tools/call" && record.requestId === main.id);
      if (latest !== undefined) main.record = latest;
    }
    run.droppedEvents = recorder.dropped;
    run.clientErrors = conn.clientErrors();
    run.anomalies = conn.anomalies();
    run.closedAt = recorder.events.find((event) => event.kind === "closed")?.at;
    run.diagnosis = conn.closed ? conn.diagnose() : [];
    // The connection closes on an exit, or on a stdout that ended with the process still running.
    run.lost = conn.closed ? await conn.lost() : undefined;
    return run;
  };

  recorder.mark("tools/list");
  const tools = await listTools(conn, options);
  // A server that went away while tools/list was pending: that, not "name one with --tool".
  if (tools.error !== undefined && options.tool === undefined) {
    const gone = await conn.lost(500);
    if (gone !== undefined) {
      const text = lostText(gone, "before tools/list was answered");
      throw new StartupError(text, "exited", conn.diagnose(), text);
    }
  }
  const chosen = chooseTool(tools.tools, tools.error, options);

  // Twice, keeping the faster: a server's first answers may include its warm-up.
  recorder.mark("latency of tools/list before the call");
  const first = await exchange(conn, recorder, "tools/list", options.timeoutMs);
  if (conn.closed) return finish();
  const second = first.outcome === "result" ? await exchange(conn, recorder, "tools/list", options.timeoutMs) : first;
  if (conn.closed) return finish();
  run.baseline = second.outcome === "result" && second.endedAt - second.sentAt < first.endedAt - first.sentAt ? second : first;

  run.main = await cancelToolCall(conn, recorder, options, chosen);
  if (conn.closed) return finish();

  recorder.mark("is the connection still usable?");
  run.survive = await exchange(conn, recorder, "tools/list", options.timeoutMs);
  if (conn.closed) return finish();

  run.concurrent =
    run.main.cancelAt === undefined
      ? skippedConcurrent("the single call ended before its cancel, so two concurrent ones would too")
      : await concurrentCalls(conn, recorder, options, chosen);
  if (conn.closed) return finish();

  if (run.transport === "http") {
    run.sessions =
      run.era !== "legacy"
        ? skippedSessions("2026-07-28 has no sessions (rule 26)")
        : conn.sessionId() === undefined
          ? skippedSessions("the server assigned no Mcp-Session-Id")
          : run.main.cancelAt === undefined
            ? skippedSessions("the single call ended before its cancel")
            : await twoSessions(options, recorder, chosen, run.protocolVersion);
  }

  // Rule 28: a 2026-07-28 HTTP server expects no notifications/cancelled at all.
  const noNotifications = run.transport === "http" && run.era === "2026-07-28";
  const skipReason = "on 2026-07-28 Streamable HTTP a cancel is a stream close, never a notification (rule 28)";
  const completedId = run.survive.outcome === "result" ? run.survive.id : undefined;
  if (noNotifications) {
    run.cancelCompleted = skippedRaw("completed", skipReason);
  } else if (completedId === undefined) {
    run.cancelCompleted = skippedRaw("completed", "no request completed after the cancel, so there was none to cancel");
  } else {
    run.cancelCompleted = await rawCancel(conn, recorder, options, "completed", completedId);
  }
  if (conn.closed) return finish();
  run.cancelUnknown = noNotifications
    ? skippedRaw("unknown", skipReason)
    : await rawCancel(conn, recorder, options, "unknown", unknownId(recorder));
  return finish();
}

async function listTools(conn: Connection, options: ProbeOptions): Promise<{ tools: ToolInfo[]; error: string | undefined }> {
  const tools: ToolInfo[] = [];
  let cursor: string | undefined;
  try {
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await conn.mcp.request<{ tools?: unknown; nextCursor?: unknown }>(
        { method: "tools/list", params: cursor === undefined ? {} : { cursor } },
        { timeoutMs: options.timeoutMs },
      );
      if (Array.isArray(result.tools)) {
        for (const tool of result.tools) {
          if (typeof tool === "object" && tool !== null && typeof (tool as ToolInfo).name === "string") tools.push(tool as ToolInfo);
        }
      }
      if (typeof result.nextCursor !== "string" || result.nextCursor === "") break;
      cursor = result.nextCursor;
    }
  } catch (error) {
    return { tools, error: errorText(error) };
  }
  return { tools, error: undefined };
}

/** True when the annotations promise no side effects: read-only, idempotent, not destructive. */
export function isSafe(tool: ToolInfo): boolean {
  const a = tool.annotations ?? {};
  return a.readOnlyHint === true && a.idempotentHint === true && a.destructiveHint !== true;
}

/** The tool's annotations as the server's claim, in words. */
export function annotationClaim(tool: ToolInfo): string {
  const a = tool.annotations;
  if (a === undefined) return "the server gives no annotations";
  const parts = (["readOnlyHint", "idempotentHint", "destructiveHint"] as const)
    .filter((key) => a[key] !== undefined)
    .map((key) => `${key}: ${String(a[key])}`);
  return parts.length === 0
    ? "the server gives no annotations"
    : `the server's annotations claim ${parts.join(", ")} (its claim, not verified)`;
}

const SLOW_NAME = /long|slow|progress|wait|sleep|delay|stream|research|count/i;

/**
 * The tool to call: the one named by `--tool`, or the best safe one in `tools/list`.
 * Per the spec's annotation defaults, a tool without annotations may be destructive.
 * @throws {UsageError} no such tool, a tool with side effects without `--allow-side-effects`,
 *   or no safe tool to pick.
 */
export function chooseTool(
  tools: ToolInfo[],
  listError: string | undefined,
  options: Pick<ProbeOptions, "tool" | "toolArgs" | "allowSideEffects">,
): { name: string; args: Record<string, unknown>; why: string } {
  const names = tools.map((tool) => tool.name);
  const list = names.length === 0 ? "(none)" : truncate(names.join(", "), 400);
  if (options.tool !== undefined) {
    const tool = tools.find((candidate) => candidate.name === options.tool);
    if (tool === undefined) {
      if (listError !== undefined) {
        return { name: options.tool, args: options.toolArgs, why: `given with --tool (tools/list failed: ${listError})` };
      }
      throw new UsageError(`the server has no tool named ${JSON.stringify(options.tool)}; its tools: ${list}`);
    }
    const a = tool.annotations ?? {};
    // Free of side effects only by its own claim of readOnlyHint, and no claim of destructiveHint
    // (a tool that is not read-only may add or change data even when it is "not destructive").
    const sideEffects = a.readOnlyHint !== true || a.destructiveHint === true;
    if (sideEffects && !options.allowSideEffects) {
      throw new UsageError(
        `${JSON.stringify(tool.name)} may have side effects (its annotations do not say readOnlyHint, or say destructiveHint): ` +
          "a cancel does not undo them. Pass --allow-side-effects to probe it anyway (only on a test server).",
      );
    }
    return { name: tool.name, args: options.toolArgs, why: `given with --tool; ${annotationClaim(tool)}` };
  }
  if (listError !== undefined) {
    throw new StartupError(`tools/list failed (${listError}), so no tool can be picked; name one with --tool`, "tools-list", []);
  }
  const given = Object.keys(options.toolArgs);
  const candidates = tools
    .filter((tool) => options.allowSideEffects || isSafe(tool))
    .filter((tool) => (tool.inputSchema?.required ?? []).every((key) => given.includes(key)))
    .map((tool, index) => ({
      tool,
      score: (isSafe(tool) ? 4 : 0) + (SLOW_NAME.test(tool.name) ? 2 : 0) + (SLOW_NAME.test(tool.description ?? "") ? 1 : 0),
      index,
    }))
    .sort((x, y) => y.score - x.score || x.index - y.index);
  const best = candidates[0];
  if (best === undefined) {
    throw new UsageError(
      (options.allowSideEffects
        ? "no tool can be called without arguments"
        : "no tool is annotated readOnlyHint and idempotentHint (and callable with the given --args)") +
        `; name one with --tool NAME --args JSON. Its tools: ${list}`,
    );
  }
  // Annotations are the server's claim, not a guarantee (a server may mark a state-changing tool read-only).
  const why = isSafe(best.tool)
    ? "picked from tools/list: the server's annotations claim readOnlyHint and idempotentHint, not destructive (its claim, not verified)"
    : "picked from tools/list with --allow-side-effects (its annotations do not claim it is free of side effects)";
  return { name: best.tool.name, args: options.toolArgs, why };
}

async function cancelToolCall(
  conn: Connection,
  recorder: Recorder,
  options: ProbeOptions,
  chosen: { name: string; args: Record<string, unknown>; why: string },
): Promise<MainCancel> {
  const start = recorder.mark(`call ${chosen.name}, cancel after ${options.cancelAfterMs} ms`);
  const cpuAtCall = conn.cpuTimeMs();
  const controller = new AbortController();
  let ended: MainCancel["endedBeforeCancel"];
  let record: RunRecord | undefined;
  const call = conn.mcp
    .callTool(
      { name: chosen.name, arguments: chosen.args },
      probeCallOptions(controller.signal, `mcp-cancellable probe: cancelled ${options.cancelAfterMs} ms after the call`),
    )
    .then(
      (result) => {
        ended = {
          at: recorder.now(),
          how: result.isError === true ? "tool-error" : "result",
          text: result.isError === true ? "the tool reported an error (isError)" : "the tool returned a result",
        };
      },
      (error: unknown) => {
        if (isMcpCancellableError(error)) record = error.record;
        if (controller.signal.aborted) return;
        ended = {
          at: recorder.now(),
          how: isMcpCancellableError(error) && error.code === "CONNECTION_CLOSED" ? "closed" : "error",
          text: errorText(error),
        };
      },
    );
  await Promise.race([call, sleep(options.cancelAfterMs)]);
  const request = recorder.events.find(
    (event) => event.seq > start.seq && event.from === "client" && event.message?.method === "tools/call",
  )?.message;
  const id = request?.id ?? undefined;
  const meta = request?.params?._meta as { progressToken?: string | number } | undefined;
  let cancelAt: number | undefined;
  let fence: Exchange | undefined;
  let cpu: CpuWatch | undefined;
  if (ended === undefined && !conn.closed) {
    const cpuAtCancel = conn.cpuTimeMs();
    const mark = recorder.mark("cancel");
    controller.abort(new Error("cancelled by mcp-cancellable probe"));
    const notification = recorder.events.find(
      (event) =>
        event.seq > mark.seq &&
        event.from === "client" &&
        event.message?.method === "notifications/cancelled" &&
        (event.message.params as { requestId?: unknown } | undefined)?.requestId === id,
    );
    cancelAt = notification?.at ?? mark.at;
    // 2025 HTTP: the cancel is its own POST, which the server may handle after a later one; the
    // fence goes once the cancel's POST was answered, so the server had it first.
    if (conn.era === "legacy" && options.target.kind === "http") {
      const answered = (event: WireEvent): boolean =>
        event.kind === "http" && event.from === "server" && (event.text ?? "").startsWith("POST notifications/cancelled");
      if (!within(recorder, cancelAt).some(answered)) await recorder.waitFor(answered, options.timeoutMs);
    }
    recorder.mark("fence: tools/list right after the cancel");
    const fencing = exchange(conn, recorder, "tools/list", options.timeoutMs);
    // The CPU watch starts once the server had the time to read the cancel (the fence's answer),
    // at most 100 ms after the cancel: only work that goes on after that counts.
    await Promise.race([fencing, sleep(Math.min(100, options.windowMs))]);
    const watchFrom = recorder.now();
    const cpuAtWatch = conn.cpuTimeMs();
    await sleep(Math.max(0, cancelAt + options.windowMs - recorder.now()));
    const cpuAtEnd = conn.cpuTimeMs();
    const endAt = recorder.now();
    if (cpuAtCall !== undefined && cpuAtCancel !== undefined && cpuAtWatch !== undefined && cpuAtEnd !== undefined) {
      cpu = {
        at: { call: start.at, cancel: cancelAt, watchFrom, end: endAt },
        cpuMs: { call: cpuAtCall, cancel: cpuAtCancel, watchFrom: cpuAtWatch, end: cpuAtEnd },
      };
    }
    fence = await fencing;
  }
  await Promise.race([call, sleep(0)]);
  const windowEnd = recorder.now();
  recorder.mark("end of the observation window");
  return {
    tool: chosen.name,
    args: chosen.args,
    chosen: chosen.why,
    id,
    progressToken: meta?.progressToken,
    sentAt: start.at,
    cancelAt,
    windowEnd,
    endedBeforeCancel: ended,
    record: record ?? conn.mcp.records().find((candidate) => candidate.method === "tools/call" && candidate.requestId === id),
    fence,
    cpu,
  };
}

function within(recorder: Recorder, from: number): WireEvent[] {
  const out: WireEvent[] = [];
  for (let i = recorder.events.length - 1; i >= 0 && recorder.events[i]!.at >= from; i--) out.push(recorder.events[i]!);
  return out;
}

/** Sends `method` through the library with a `timeoutMs` bound and reports how it ended. */
async function exchange(conn: Connection, recorder: Recorder, method: string, timeoutMs: number): Promise<Exchange> {
  const start = recorder.now();
  const startSeq = recorder.events.length + recorder.dropped;
  let outcome: Exchange["outcome"];
  let text: string;
  try {
    const result = await conn.mcp.request<Record<string, unknown>>({ method, params: {} }, { timeoutMs });
    outcome = "result";
    text = Array.isArray(result.tools) ? `answered: ${result.tools.length} tool(s)` : "answered";
  } catch (error) {
    if (isMcpCancellableError(error)) {
      outcome =
        error.code === "CONNECTION_CLOSED"
          ? "closed"
          : error.code === "REQUEST_TIMEOUT" || error.code === "MAX_TOTAL_TIMEOUT"
            ? "timeout"
            : "error";
      text = outcome === "timeout" ? `no answer within ${timeoutMs} ms` : errorText(error);
    } else {
      outcome = "error";
      text = `answered with an error: ${errorText(error)}`;
    }
  }
  const request = recorder.events.find(
    (event) => event.seq >= startSeq && event.from === "client" && event.message?.method === method,
  )?.message;
  const id = request?.id ?? undefined;
  const answer =
    id === undefined
      ? undefined
      : recorder.events.find(
          (event) =>
            event.seq >= startSeq &&
            event.from === "server" &&
            event.kind === "message" &&
            event.message?.method === undefined &&
            event.message?.id === id,
        );
  return {
    method,
    id,
    sentAt: start,
    endedAt: recorder.now(),
    outcome: request === undefined && outcome !== "result" ? "not-sent" : outcome,
    text,
    answeredAt: answer?.at,
  };
}

async function rawCancel(
  conn: Connection,
  recorder: Recorder,
  options: ProbeOptions,
  kind: RawCancel["kind"],
  requestId: string | number,
): Promise<RawCancel> {
  // First a fence: only a server that serves requests now can show that a stray cancel stopped it.
  recorder.mark(
    `wait until the server answers (before the stray cancel of ${kind === "completed" ? "a completed request" : "an unknown id"})`,
  );
  const fence = await exchange(conn, recorder, "tools/list", options.timeoutMs);
  if (fence.outcome !== "result") {
    const busy = `${fence.method} ${fence.id === undefined ? "" : `${idLabel(fence.id)} `}sent first: ${fence.text}`;
    return { kind, requestId, cancelAt: fence.sentAt, windowEnd: fence.endedAt, followUp: undefined, fence, busy };
  }
  recorder.mark(kind === "completed" ? `cancel the completed request ${String(requestId)}` : `cancel an unknown request id`);
  const message: Message = {
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: {
      requestId,
      reason:
        kind === "completed"
          ? "mcp-cancellable probe: cancel for a request that already completed (rule 9)"
          : "mcp-cancellable probe: cancel for a request id never used (rule 10)",
    },
  };
  const sendError = await conn.sendRaw(message).then(
    () => undefined,
    (error: unknown) => errorText(error),
  );
  const cancelAt =
    [...recorder.events].reverse().find((event) => event.from === "client" && event.message === message)?.at ?? recorder.now();
  await sleep(Math.max(0, cancelAt + options.windowMs - recorder.now()));
  const windowEnd = recorder.now();
  const followUp = conn.closed ? undefined : await exchange(conn, recorder, "tools/list", options.timeoutMs);
  return { kind, requestId, cancelAt, windowEnd, followUp, fence, ...(sendError === undefined ? {} : { sendError }) };
}

/**
 * Two calls of the tool at once, each with its own progress token (the SDK uses the request id);
 * the first is cancelled after `cancelAfterMs`, the second is watched for `windowMs` more (or
 * until it ends) and then cancelled too if it still runs. Checks that a server keeps per-call
 * state per call: a framework that keeps the token or the abort signal on a shared tool
 * instance mixes the two calls' progress, or ends the wrong one.
 */
async function concurrentCalls(
  conn: Connection,
  recorder: Recorder,
  options: ProbeOptions,
  chosen: { name: string; args: Record<string, unknown> },
): Promise<ConcurrentRun> {
  const mark = recorder.mark(`two concurrent calls of ${chosen.name}; the first is cancelled after ${options.cancelAfterMs} ms`);
  const launch = (label: string) => {
    const controller = new AbortController();
    const sentAt = recorder.now();
    let end: ConcurrentCall["end"] | undefined;
    const promise = conn.mcp
      .callTool(
        { name: chosen.name, arguments: chosen.args },
        probeCallOptions(controller.signal, `mcp-cancellable probe: concurrent call ${label} cancelled`),
      )
      .then(
        (result) => {
          end = {
            at: recorder.now(),
            how: result.isError === true ? "tool-error" : "result",
            text: result.isError === true ? "the tool reported an error (isError)" : "completed with a result",
          };
        },
        (error: unknown) => {
          const closed = isMcpCancellableError(error) && error.code === "CONNECTION_CLOSED";
          end = { at: recorder.now(), how: controller.signal.aborted ? "cancelled" : closed ? "closed" : "error", text: errorText(error) };
        },
      );
    return { controller, sentAt, promise, end: () => end };
  };
  const a = launch("A");
  const b = launch("B");
  await Promise.race([Promise.all([a.promise, b.promise]), sleep(options.cancelAfterMs)]);
  const requests = recorder.events.filter(
    (event) => event.seq > mark.seq && event.from === "client" && event.message?.method === "tools/call",
  );
  const describeCall = (index: number, call: typeof a, fallbackEnd: ConcurrentCall["end"]): ConcurrentCall => {
    const message = requests[index]?.message;
    return {
      id: message?.id ?? undefined,
      progressToken: (message?.params?._meta as { progressToken?: string | number } | undefined)?.progressToken,
      sentAt: call.sentAt,
      end: call.end() ?? fallbackEnd,
    };
  };
  if (a.end() !== undefined) {
    b.controller.abort(new Error("end of the watch"));
    await Promise.all([a.promise, b.promise]);
    const endA = a.end()!;
    return {
      a: describeCall(0, a, endA),
      b: describeCall(1, b, endA),
      cancelAt: endA.at,
      windowEnd: recorder.now(),
      skipped: `the first call ended before its cancel (${endA.text})`,
    };
  }
  const cancelMark = recorder.mark("cancel the first concurrent call");
  a.controller.abort(new Error("cancelled by mcp-cancellable probe"));
  const cancelAt =
    recorder.events.find(
      (event) => event.seq > cancelMark.seq && event.from === "client" && event.message?.method === "notifications/cancelled",
    )?.at ?? cancelMark.at;
  await Promise.race([b.promise, sleep(options.windowMs)]);
  const windowEnd = recorder.now();
  const runningAtEnd = b.end() === undefined;
  if (runningAtEnd) {
    recorder.mark("the second concurrent call still runs at the end of the watch: cancel it");
    b.controller.abort(new Error("end of the watch"));
  }
  await Promise.all([a.promise, b.promise]);
  // Let what crossed the second cancel arrive, so it is not mistaken for the first call's.
  await sleep(Math.min(100, options.windowMs));
  return {
    a: describeCall(0, a, { at: cancelAt, how: "cancelled", text: "cancelled" }),
    b: runningAtEnd
      ? {
          ...describeCall(1, b, { at: windowEnd, how: "running", text: "" }),
          end: { at: windowEnd, how: "running", text: "still running at the end of the watch" },
        }
      : describeCall(1, b, { at: windowEnd, how: "running", text: "" }),
    cancelAt,
    windowEnd,
  };
}

function skippedConcurrent(why: string): ConcurrentRun {
  const none: ConcurrentCall = { id: undefined, progressToken: undefined, sentAt: 0, end: { at: 0, how: "running", text: "" } };
  return { a: none, b: none, cancelAt: 0, windowEnd: 0, skipped: why };
}

/** The request id both extra sessions give their `tools/call`. */
export const SESSION_CALL_ID = 2;

/**
 * Two more sessions on a 2025-era HTTP server with sessions, each initialized on its own, whose
 * `tools/call` requests carry the same request id (`SESSION_CALL_ID`) and their own progress
 * tokens; the first is cancelled. Request ids are unique per sender (rule 1), so the server must
 * route each message by session: what session B receives must be B's own.
 */
async function twoSessions(
  options: ProbeOptions,
  recorder: Recorder,
  chosen: { name: string; args: Record<string, unknown> },
  protocolVersion: string | undefined,
): Promise<SessionsRun> {
  const target = options.target;
  if (target.kind !== "http") return skippedSessions("not an HTTP target");
  recorder.mark(`two more sessions, each calling ${chosen.name} with request id ${SESSION_CALL_ID}`);
  const sessions: SessionsRun["sessions"] = [];
  const transports: StreamableHTTPClientTransport[] = [];
  const close = async (): Promise<void> => {
    await Promise.race([
      Promise.all(
        transports.map(async (transport) => {
          await transport.terminateSession().catch(() => undefined);
          await transport.close().catch(() => undefined);
        }),
      ),
      sleep(3_000),
    ]);
  };
  try {
    for (const label of ["A", "B"] as const) {
      const transport = new StreamableHTTPClientTransport(new URL(target.url), { requestInit: { headers: target.headers } });
      transports.push(transport);
      const received: Array<{ at: number; message: Message }> = [];
      transport.onmessage = (message) => void received.push({ at: recorder.now(), message: message as Message });
      transport.onerror = () => {};
      await transport.start();
      await transport.send({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: protocolVersion ?? "2025-06-18", capabilities: {}, clientInfo: PROBE_CLIENT_INFO },
      });
      const init = await until(() => received.find((entry) => entry.message.id === 1), options.timeoutMs);
      const result = init?.message.result as { protocolVersion?: unknown } | undefined;
      if (result === undefined) {
        await close();
        return skippedSessions(`session ${label} could not be initialized (${init === undefined ? "no answer" : "an error"})`);
      }
      if (typeof result.protocolVersion === "string") transport.setProtocolVersion(result.protocolVersion);
      await transport.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      received.length = 0;
      sessions.push({ label, sessionId: transport.sessionId, progressToken: `mcp-cancellable-probe-session-${label}`, received });
    }
    for (const [index, session] of sessions.entries()) {
      transports[index]!.send({
        jsonrpc: "2.0",
        id: SESSION_CALL_ID,
        method: "tools/call",
        params: { name: chosen.name, arguments: chosen.args, _meta: { progressToken: session.progressToken } },
      }).catch(() => undefined);
    }
    await sleep(options.cancelAfterMs);
    const cancelAt = recorder.now();
    recorder.mark(`cancel request ${SESSION_CALL_ID} of session A only`);
    await transports[0]!
      .send({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: SESSION_CALL_ID, reason: "mcp-cancellable probe: cancel in session A only" },
      })
      .catch(() => undefined);
    await sleep(Math.max(0, cancelAt + options.windowMs - recorder.now()));
    const windowEnd = recorder.now();
    await close();
    return { requestId: SESSION_CALL_ID, sessions, cancelAt, windowEnd };
  } catch (error) {
    await close();
    return skippedSessions(`the extra sessions failed: ${errorText(error)}`);
  }
}

function skippedSessions(why: string): SessionsRun {
  return { requestId: SESSION_CALL_ID, sessions: [], cancelAt: 0, windowEnd: 0, skipped: why };
}

/** Polls `find` every 10 ms for at most `ms`. */
async function until<T>(find: () => T | undefined, ms: number): Promise<T | undefined> {
  const deadline = performance.now() + ms;
  for (;;) {
    const found = find();
    if (found !== undefined || performance.now() >= deadline) return found;
    await sleep(10);
  }
}

function skippedRaw(kind: RawCancel["kind"], why: string): RawCancel {
  return { kind, requestId: 0, cancelAt: 0, windowEnd: 0, followUp: undefined, skipped: why };
}

/** A request id no request of this run used: numeric, far above the ids the SDK hands out. */
function unknownId(recorder: Recorder): number {
  let max = 0;
  for (const event of recorder.events) {
    const id = event.message?.id;
    if (typeof id === "number" && id > max) max = id;
  }
  return max + 900_001;
}

function errorText(error: unknown): string {
  if (error instanceof Error) return truncate(error.message, 300);
  return truncate(String(error), 300);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export { StartupError };

/**
 * The options of a call the probe cancels itself: only its signal ends it (no timeout of ours,
 * so the probe sees what the server does), and an `onprogress`, so the request carries a progress
 * token and the server may report progress on it.
 */
function probeCallOptions(signal: AbortSignal, reason: string) {
  return {
    signal,
    timeoutMs: Number.POSITIVE_INFINITY,
    maxTotalTimeoutMs: Number.POSITIVE_INFINITY,
    onprogress: () => {},
    reason,
  };
}
