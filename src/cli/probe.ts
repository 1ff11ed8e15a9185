import type { RunRecord } from "../types/record.js";
import { isMcpCancellableError } from "../errors/guards.js";
import type { Message } from "../wire/messages.js";
import type { ProbeOptions } from "./args.js";
import { UsageError } from "./args.js";
import { evaluate } from "./checks.js";
import type { Check } from "./checks.js";
import { truncate } from "./describe.js";
import { Recorder } from "./recorder.js";
import { openConnection, StartupError } from "./target.js";
import type { Connection } from "./target.js";
import type { Exchange, MainCancel, ProbeRun, RawCancel, ToolInfo } from "./run.js";

/** At most this many `tools/list` pages are read. */
export const MAX_TOOL_PAGES = 10;

// The run's shapes live in run.ts, which checks.ts reads too (so the two never import each other).
export type { Exchange, MainCancel, ProbeRun, RawCancel, ToolInfo } from "./run.js";

/** The outcome of `probe`: the checks and the run they judge. */
export interface ProbeReport {
  run: ProbeRun;
  checks: Check[];
}

/**
 * Runs the probe: connect, pick the tool, call and cancel it, watch `windowMs`, then check the
 * connection, cancel a completed and an unknown request, and judge the timeline.
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
    main: undefined,
    survive: undefined,
    cancelCompleted: undefined,
    cancelUnknown: undefined,
    closedAt: undefined,
    clientErrors: [],
    anomalies: [],
    diagnosis: [],
  };
  const finish = (): ProbeRun => {
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
    return run;
  };

  recorder.mark("tools/list");
  const tools = await listTools(conn, options);
  const chosen = chooseTool(tools.tools, tools.error, options);

  run.main = await cancelToolCall(conn, recorder, options, chosen);
  if (conn.closed) return finish();

  recorder.mark("is the connection still usable?");
  run.survive = await exchange(conn, recorder, "tools/list", options.timeoutMs);
  if (conn.closed) return finish();

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
    const destructive = a.readOnlyHint !== true && a.destructiveHint !== false;
    if (destructive && !options.allowSideEffects) {
      throw new UsageError(
        `${JSON.stringify(tool.name)} may have side effects (its annotations do not say readOnlyHint, or say destructiveHint): ` +
          "a cancel does not undo them. Pass --allow-side-effects to probe it anyway (only on a test server).",
      );
    }
    return { name: tool.name, args: options.toolArgs, why: "given with --tool" };
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
  const why = isSafe(best.tool)
    ? "picked from tools/list: annotated readOnlyHint and idempotentHint, not destructive"
    : "picked from tools/list with --allow-side-effects (not annotated as free of side effects)";
  return { name: best.tool.name, args: options.toolArgs, why };
}

async function cancelToolCall(
  conn: Connection,
  recorder: Recorder,
  options: ProbeOptions,
  chosen: { name: string; args: Record<string, unknown>; why: string },
): Promise<MainCancel> {
  const start = recorder.mark(`call ${chosen.name}, cancel after ${options.cancelAfterMs} ms`);
  const controller = new AbortController();
  let ended: MainCancel["endedBeforeCancel"];
  let record: RunRecord | undefined;
  const call = conn.mcp
    .callTool(
      { name: chosen.name, arguments: chosen.args },
      {
        signal: controller.signal,
        timeoutMs: Number.POSITIVE_INFINITY,
        maxTotalTimeoutMs: Number.POSITIVE_INFINITY,
        onprogress: () => {},
        reason: `mcp-cancellable probe: cancelled ${options.cancelAfterMs} ms after the call`,
      },
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
  if (ended === undefined && !conn.closed) {
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
    await sleep(Math.max(0, cancelAt + options.windowMs - recorder.now()));
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
  };
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
      outcome = error.code === "CONNECTION_CLOSED" ? "closed" : error.code === "REQUEST_TIMEOUT" || error.code === "MAX_TOTAL_TIMEOUT" ? "timeout" : "error";
      text = outcome === "timeout" ? `no answer within ${timeoutMs} ms` : errorText(error);
    } else {
      outcome = "error";
      text = `answered with an error: ${errorText(error)}`;
    }
  }
  const request = recorder.events.find(
    (event) => event.seq >= startSeq && event.from === "client" && event.message?.method === method,
  )?.message;
  return {
    method,
    id: request?.id ?? undefined,
    sentAt: start,
    endedAt: recorder.now(),
    outcome: request === undefined && outcome !== "result" ? "not-sent" : outcome,
    text,
  };
}

async function rawCancel(
  conn: Connection,
  recorder: Recorder,
  options: ProbeOptions,
  kind: RawCancel["kind"],
  requestId: string | number,
): Promise<RawCancel> {
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
  return { kind, requestId, cancelAt, windowEnd, followUp, ...(sendError === undefined ? {} : { sendError }) };
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
