import { describeMessage, idLabel } from "./describe.js";
import type { ProbeRun, RawCancel, SessionsRun } from "./run.js";
import { CLOSED_BEFORE_HEADERS } from "./recorder.js";
import type { WireEvent } from "./recorder.js";

/** A check's verdict. */
export type Status = "PASS" | "FAIL" | "WARN" | "SKIP";

/** One check: what it tests, the verdict, and the evidence from the wire. */
export interface Check {
  id: CheckId;
  title: string;
  /** The rules of protocol-rules.md (the MCP spec, distilled) this check tests. */
  rules: number[];
  status: Status;
  /** One line: the verdict's reason. */
  summary: string;
  /** Lines of evidence: times and the messages seen. */
  evidence: string[];
  /** Sequence numbers of the timeline events this check flags. */
  events: number[];
}

export type CheckId =
  | "silent-after-cancel"
  | "work-stops"
  | "connection-survives"
  | "cancel-completed-ignored"
  | "cancel-unknown-ignored"
  | "no-server-cancel"
  | "progress-increases"
  | "http-cancel-mechanism"
  | "concurrent-calls"
  | "sessions-isolated";

/** Every check, in report order, with its title and rules. */
export const CHECKS: ReadonlyArray<{ id: CheckId; title: string; rules: number[] }> = [
  { id: "silent-after-cancel", title: "nothing more for the cancelled request", rules: [6, 11] },
  { id: "work-stops", title: "progress stops after the cancel", rules: [11] },
  { id: "connection-survives", title: "the connection still serves requests after the cancel", rules: [9, 11] },
  { id: "cancel-completed-ignored", title: "a cancel for a completed request is ignored", rules: [9, 10] },
  { id: "cancel-unknown-ignored", title: "a cancel for an unknown request id is ignored", rules: [9, 10] },
  { id: "no-server-cancel", title: "the server sends no notifications/cancelled of its own", rules: [12] },
  { id: "progress-increases", title: "progress values only go up", rules: [21] },
  { id: "http-cancel-mechanism", title: "the HTTP cancel mechanism of the era works", rules: [6, 28, 40] },
  { id: "concurrent-calls", title: "two concurrent calls keep their own progress, and a cancel ends only its own", rules: [11, 20, 22] },
  { id: "sessions-isolated", title: "two sessions with the same request ids get only their own messages", rules: [1, 40] },
];

/**
 * The fence (the request sent right after the cancel) is said to be held by the cancelled work
 * when it took more than this many times its latency before the call…
 */
export const HOL_FACTOR = 10;
/** …and more than this many ms over it (a loaded machine adds tens of ms on its own). */
export const HOL_MIN_EXTRA_MS = 500;
/**
 * The stdio server's processes are said to keep working after the cancel when they used at
 * least this share of the watched wall time as CPU time (low: on a loaded machine a busy
 * process gets a fraction of a core; an idle Node.js server uses next to none)…
 */
export const CPU_BUSY_SHARE = 0.15;
/** …and at least this many ms of CPU time (the clock ticks in 10 ms steps). */
export const CPU_BUSY_MIN_MS = 100;

const MAX_EVIDENCE = 6;

/** Judges a probe run: one check per entry of `CHECKS`, in that order. */
export function evaluate(run: ProbeRun): Check[] {
  return [
    silentAfterCancel(run),
    workStops(run),
    connectionSurvives(run),
    rawCancelIgnored(run, run.cancelCompleted, "cancel-completed-ignored"),
    rawCancelIgnored(run, run.cancelUnknown, "cancel-unknown-ignored"),
    noServerCancel(run),
    progressIncreases(run),
    httpCancelMechanism(run),
    concurrentCalls(run),
    sessionsIsolated(run),
  ];
}

function make(id: CheckId, status: Status, summary: string, evidence: string[] = [], events: WireEvent[] = []): Check {
  const spec = CHECKS.find((check) => check.id === id)!;
  return { id, title: spec.title, rules: spec.rules, status, summary, evidence, events: events.map((event) => event.seq) };
}

/** `+203 ms` relative to `base`. */
export function rel(at: number, base: number): string {
  const delta = Math.round(at - base);
  return `${delta >= 0 ? "+" : "−"}${Math.abs(delta)} ms`;
}

const fromServer = (event: WireEvent): boolean => event.from === "server" && event.kind === "message";

function isResponse(event: WireEvent): boolean {
  return fromServer(event) && event.message!.method === undefined;
}

function isProgressFor(event: WireEvent, token: string | number | undefined): boolean {
  if (!fromServer(event) || event.message!.method !== "notifications/progress" || token === undefined) return false;
  return (event.message!.params as { progressToken?: unknown } | undefined)?.progressToken === token;
}

function progressValue(event: WireEvent): number {
  return Number((event.message!.params as { progress?: unknown } | undefined)?.progress);
}

function within(run: ProbeRun, from: number, to: number): WireEvent[] {
  return run.events.filter((event) => event.at > from && event.at <= to);
}

/** The time of the last event recorded, in ms. */
function runEnd(run: ProbeRun): number {
  return run.events.at(-1)?.at ?? 0;
}

function lines(events: WireEvent[], base: number): string[] {
  const shown = events.slice(0, MAX_EVIDENCE).map((event) => `${rel(event.at, base)}  ${eventText(event)}`);
  if (events.length > MAX_EVIDENCE) shown.push(`… and ${events.length - MAX_EVIDENCE} more`);
  return shown;
}

/** The text of one timeline event, as the report shows it. */
export function eventText(event: WireEvent): string {
  const who = event.from === "client" ? "client →" : event.from === "server" ? "server →" : "probe:";
  switch (event.kind) {
    case "message":
      return `${who} ${describeMessage(event.message!)}`;
    case "invalid":
      return `server → (not JSON-RPC) ${event.text ?? ""}`;
    case "http":
      return event.from === "client" ? `client: ${event.text ?? ""}` : `http: ${event.text ?? ""}`;
    case "closed":
      return `connection closed`;
    case "error":
      return `transport error: ${event.text ?? ""}`;
    case "mark":
      return `— ${event.text ?? ""}`;
  }
}

function countKinds(events: WireEvent[]): string {
  const progress = events.filter((event) => event.message?.method === "notifications/progress").length;
  const results = events.filter((event) => event.message?.method === undefined && event.message?.result !== undefined).length;
  const errors = events.filter((event) => event.message?.method === undefined && event.message?.error !== undefined).length;
  const parts = [
    progress > 0 ? `${progress} progress` : "",
    results > 0 ? `${results} result` : "",
    errors > 0 ? `${errors} error` : "",
  ].filter((part) => part !== "");
  return parts.join(", ");
}

/** Common SKIP reasons for the checks that need a cancelled call. */
function mainSkip(run: ProbeRun): string | undefined {
  const main = run.main;
  if (main === undefined) return "the tool call did not run";
  if (main.endedBeforeCancel !== undefined) {
    const { how, at, text } = main.endedBeforeCancel;
    const took = rel(at, main.sentAt).replace("+", "");
    if (how === "closed") return `the connection closed ${took} after the call, before the cancel`;
    return `the call ended before the cancel (${text}, after ${took}): nothing to cancel; use a slower tool or --args, or a smaller --cancel-after`;
  }
  if (main.cancelAt === undefined) return "no cancel was sent (the connection closed first)";
  return undefined;
}

/**
 * The moment after which the server had provably read the cancel: the answer to the fence (the
 * request sent right after the cancel on the same connection, rule 9). Without that answer, the
 * cancel plus `--grace`. `kind` says what the moment shows: `fence`, the server read the cancel
 * by then (it reads its input in order: stdio, and 2025-era HTTP once the cancel's POST was
 * answered); `fence-2026`, the server answered the fence, which on 2026-07-28 HTTP is another
 * request and does not show it had noticed the closed stream; `grace`, the fence got no answer.
 */
interface ReadBy {
  at: number;
  how: string;
  kind: "fence" | "fence-2026" | "grace";
  /** For `grace`: why the fence shows nothing (its request got no answer, or the cancel's own POST got none). */
  why?: string;
}

/**
 * 2025-era HTTP: the cancel is its own POST, and only one the server answered with a 2xx status
 * shows it got the cancel before the fence (an audit's: a cancel POST whose connection was reset
 * counted as answered, and the fence's answer was taken as proof that the server read the cancel).
 */
function cancelAccepted(run: ProbeRun): boolean {
  const cancelAt = run.main!.cancelAt!;
  return run.events.some(
    (event) =>
      event.kind === "http" &&
      event.from === "server" &&
      event.at >= cancelAt &&
      (event.text ?? "").startsWith("POST notifications/cancelled") &&
      event.status !== undefined &&
      event.status >= 200 &&
      event.status < 300,
  );
}

function readCancelBy(run: ProbeRun): ReadBy {
  const main = run.main!;
  const fence = main.fence;
  const legacyHttp = run.transport === "http" && run.era === "legacy";
  if (fence?.answeredAt !== undefined && legacyHttp && !cancelAccepted(run)) {
    const why = "the cancel's own POST got no 2xx answer, so the answer to the request sent right after it shows nothing of the cancel";
    return { at: main.cancelAt! + run.options.graceMs, how: `${why}: the ${run.options.graceMs} ms --grace applies`, kind: "grace", why };
  }
  if (fence?.answeredAt !== undefined) {
    const answered = `the server answered ${fence.method} ${idLabel(fence.id)}, sent right after the cancel, at ${rel(fence.answeredAt, main.cancelAt!)}`;
    if (run.transport === "http" && run.era !== "legacy") {
      return {
        at: fence.answeredAt,
        how: `${answered} (on 2026-07-28 Streamable HTTP that is another request: it does not show the server had noticed the closed stream)`,
        kind: "fence-2026",
      };
    }
    return { at: fence.answeredAt, how: answered, kind: "fence" };
  }
  return {
    at: main.cancelAt! + run.options.graceMs,
    how: `the request sent right after the cancel got no answer, so the ${run.options.graceMs} ms --grace applies`,
    kind: "grace",
    why: "the request sent right after the cancel got no answer",
  };
}

/**
 * Since when a PASS says nothing came, in words that claim only what was seen: "after the server
 * had read the cancel" only when the fence showed it; "after the cancel" when nothing came after
 * the cancel at all (`crossed` 0).
 */
function sincePhrase(run: ProbeRun, boundary: ReadBy, crossed: number): string {
  const cancelAt = run.main!.cancelAt!;
  if (boundary.kind === "fence") {
    return `after the server had read the cancel (by ${rel(boundary.at, cancelAt)}: it answered the request sent right after it)`;
  }
  if (crossed === 0) return "after the cancel";
  return boundary.kind === "fence-2026"
    ? `after the server answered the request sent right after the cancel (${rel(boundary.at, cancelAt)})`
    : `more than the ${run.options.graceMs} ms --grace after the cancel`;
}

/**
 * Since when a FAIL counts messages, in words that claim only what was seen: "after it had read
 * the cancel" only when the fence showed it (an outside tester's: a server that stopped reading
 * its input was said to have read the cancel, its fence unanswered).
 */
function failSince(run: ProbeRun, boundary: ReadBy): string {
  const cancelAt = run.main!.cancelAt!;
  switch (boundary.kind) {
    case "fence":
      return "after the server had read the cancel";
    case "fence-2026":
      return `after the server answered the request sent right after the cancel (${rel(boundary.at, cancelAt)})`;
    case "grace":
      return `more than the ${run.options.graceMs} ms --grace after the cancel (whether the server read the cancel is not known: ${boundary.why})`;
  }
}

/** What the fence could not show of when the server read the cancel, for a PASS ("" when it showed it). */
function readNote(run: ProbeRun, boundary: ReadBy): string {
  const main = run.main!;
  switch (boundary.kind) {
    case "fence":
      return "";
    case "fence-2026":
      return `on 2026-07-28 the cancel closed the response stream of ${idLabel(main.id)}, so nothing for it could come on that stream; when the server noticed the close is not visible (the request sent right after the cancel is another request)`;
    case "grace":
      return `${boundary.why}, so whether, and when, the server read the cancel is not known`;
  }
}

function silentAfterCancel(run: ProbeRun): Check {
  const skip = mainSkip(run);
  if (skip !== undefined) return make("silent-after-cancel", "SKIP", skip);
  const main = run.main!;
  const cancelAt = main.cancelAt!;
  const id = main.id;
  const boundary = readCancelBy(run);
  // Watched for at least the window, and to the end of the run: a message after the window still counts.
  const end = Math.max(main.windowEnd, runEnd(run));
  const forCall = within(run, cancelAt, end).filter(
    (event) => (isResponse(event) && event.message!.id === id) || isProgressFor(event, main.progressToken),
  );
  const late = forCall.filter((event) => event.at > boundary.at);
  const crossed = forCall.filter((event) => event.at <= boundary.at);
  const crossedAnswers = crossed.filter((event) => isResponse(event));
  const crossedNote =
    crossed.length === 0
      ? []
      : [`${crossed.length} message(s) came before that, so they may have crossed the cancel on the wire (rule 9): ${countKinds(crossed)}`];
  if (late.length > 0) {
    return make(
      "silent-after-cancel",
      "FAIL",
      `the server sent ${late.length} message(s) for ${idLabel(id)} ${failSince(run, boundary)} (${countKinds(late)}), ` +
        `from ${rel(late[0]!.at, cancelAt)} to ${rel(late.at(-1)!.at, cancelAt)}; after a cancel it MUST NOT send any further messages for the request`,
      [boundary.how, ...lines(late, cancelAt), ...crossedNote],
      late,
    );
  }
  if (crossedAnswers.length > 0) {
    return make(
      "silent-after-cancel",
      "WARN",
      `the ${countKinds(crossedAnswers)} for ${idLabel(id)} came ${rel(crossedAnswers[0]!.at, cancelAt)} after the cancel, but before the server showed it had read the cancel: ` +
        `it may have been written before (a crossing, which rule 9 allows); nothing came after`,
      [boundary.how, ...lines(crossed, cancelAt)],
      crossedAnswers,
    );
  }
  const blind = unseenAfter(run, cancelAt, main.windowEnd);
  if (blind !== undefined) return make("silent-after-cancel", "SKIP", blind);
  const closed = within(run, cancelAt, end).find((event) => event.kind === "closed");
  // A connection that closed ends the watch: nothing more could come after it.
  const watched =
    closed === undefined ? `watched to ${rel(end, cancelAt)}` : `watched until the connection closed, ${rel(closed.at, cancelAt)}`;
  return make(
    "silent-after-cancel",
    "PASS",
    `no result, error or progress for ${idLabel(id)} ${sincePhrase(run, boundary, crossed.length)}, ${watched}` +
      (boundary.kind === "fence" ? "" : `: ${readNote(run, boundary)}`),
    [boundary.how, ...crossedNote, ...(closed ? [`(the connection closed ${rel(closed.at, cancelAt)} after the cancel)`] : [])],
  );
}

/**
 * Why the watch after the cancel saw nothing that counts, or `undefined`: the connection closed
 * before the window ended while the server's process ran on (it closed its stdout; over HTTP the
 * probe sees no process), so what it did after could not be seen, and silence shows nothing (an
 * outside tester's: a server that closed its stdout at the cancel and worked on passed
 * `silent-after-cancel` and `work-stops`, "the server stopped reporting progress"). A server
 * that exited is gone: its silence is its end.
 */
function unseenAfter(run: ProbeRun, cancelAt: number, windowEnd: number): string | undefined {
  const closedAt = run.closedAt;
  if (closedAt === undefined || closedAt <= cancelAt || closedAt >= windowEnd) return undefined;
  if (run.lost !== undefined && !run.lost.running) return undefined;
  return (
    `the connection closed ${rel(closedAt, cancelAt)} after the cancel, before the ${Math.round(windowEnd - cancelAt)} ms watch ended` +
    `${run.lost === undefined ? "" : ` (the server ${run.lost.how}, its process still running)`}: what the server did after could not be seen`
  );
}

/** What the CPU watch saw, as a verdict input: busy after the cancel, and the lines that say so. */
function cpuAfterCancel(run: ProbeRun): { busy: boolean; line: string } | undefined {
  const cpu = run.main?.cpu;
  if (cpu === undefined) return undefined;
  const before = cpu.cpuMs.cancel - cpu.cpuMs.call;
  const beforeWall = cpu.at.cancel - cpu.at.call;
  const after = cpu.cpuMs.end - cpu.cpuMs.watchFrom;
  const afterWall = cpu.at.end - cpu.at.watchFrom;
  const busy = after >= CPU_BUSY_MIN_MS && after >= CPU_BUSY_SHARE * afterWall;
  return {
    busy,
    line:
      `the server's processes used ${Math.round(before)} ms of CPU time in the ${Math.round(beforeWall)} ms before the cancel, ` +
      `${Math.round(after)} ms in the ${Math.round(afterWall)} ms from ${rel(cpu.at.watchFrom, cpu.at.cancel)} to ${rel(cpu.at.end, cpu.at.cancel)} after it (read from /proc)`,
  };
}

function workStops(run: ProbeRun): Check {
  const skip = mainSkip(run);
  if (skip !== undefined) return make("work-stops", "SKIP", skip);
  const main = run.main!;
  const cancelAt = main.cancelAt!;
  const cpu = cpuAfterCancel(run);
  const cpuLines = cpu === undefined ? [] : [cpu.line];
  const busyWarn = (said: string): Check =>
    make(
      "work-stops",
      "WARN",
      `${said}, but its processes kept using CPU after the cancel: the work appears to go on (rule 11: the server SHOULD stop as soon as practical)`,
      cpuLines,
    );
  if (main.progressToken === undefined) {
    if (cpu?.busy === true) return busyWarn("the call carried no progress token");
    return make("work-stops", "SKIP", "the call carried no progress token", cpuLines);
  }
  const boundary = readCancelBy(run);
  const progress = run.events.filter((event) => event.at > main.sentAt && isProgressFor(event, main.progressToken));
  const before = progress.filter((event) => event.at <= cancelAt);
  const end = Math.max(main.windowEnd, runEnd(run));
  const after = progress.filter((event) => event.at > boundary.at);
  if (after.length > 0) {
    const values = after.map(progressValue);
    return make(
      "work-stops",
      "FAIL",
      `the work went on: ${after.length} progress notification(s) ${failSince(run, boundary)} (${values[0]} … ${values.at(-1)}), ` +
        `the last at ${rel(after.at(-1)!.at, cancelAt)}; the server SHOULD stop as soon as practical and MUST NOT send more`,
      [`${before.length} progress notification(s) before the cancel`, boundary.how, ...lines(after, cancelAt), ...cpuLines],
      after,
    );
  }
  // Progress after the cancel but before the server showed it had read it (the fence's answer)
  // was sent before the server read the cancel: it crossed the cancel on the wire (rule 9), and
  // is not work after the cancel, however late a slow link delivers it. Only progress that came
  // more than a round trip (plus --grace) after the cancel was sent when the cancel had had time
  // to reach the server: a server that went on working and reporting, and answered the fence only
  // after (one that reads its input only between calls), did not stop at the cancel.
  const crossed = progress.filter((event) => event.at > cancelAt && event.at <= boundary.at);
  const trip = roundTrip(run);
  const reachedBy = cancelAt + (trip?.ms ?? 0) + run.options.graceMs;
  const wentOn = crossed.filter((event) => event.at > reachedBy);
  const result = run.events.find((event) => event.at > cancelAt && isResponse(event) && event.message!.id === main.id);
  const tripText = trip === undefined ? "" : `a round trip of ${Math.round(trip.ms)} ms, ${trip.how}, plus `;
  if (wentOn.length > 0) {
    const values = wentOn.map(progressValue);
    return make(
      "work-stops",
      "WARN",
      `the work went on after the cancel had had time to reach the server: ${wentOn.length} progress notification(s) (${values[0]} … ${values.at(-1)}) ` +
        `came from ${rel(wentOn[0]!.at, cancelAt)} to ${rel(wentOn.at(-1)!.at, cancelAt)} after the cancel, later than ${tripText}the ${run.options.graceMs} ms --grace` +
        `${result === undefined ? "" : `, then its ${result.message!.error === undefined ? "result" : "error"} at ${rel(result.at, cancelAt)}`}; ` +
        `${boundary.how}, only after them: it did not stop at the cancel (rule 11: the server SHOULD stop as soon as practical)`,
      [
        `${before.length} progress notification(s) before the cancel`,
        ...(crossed.length > wentOn.length
          ? [`${crossed.length - wentOn.length} within ${tripText}the --grace (they may have crossed the cancel)`]
          : []),
        ...lines(wentOn, cancelAt),
        ...cpuLines,
      ],
      wentOn,
    );
  }
  const seen = [...before, ...crossed];
  if (seen.length > 0) {
    // Silence proves nothing if the tool's own pace is slower than the watch: progress that
    // came every 3 s cannot be missed in a 2 s window. The longest gap seen before the server
    // read the cancel (from the call, for a single notification) is the tool's pace.
    const gaps = [main.sentAt, ...seen.map((event) => event.at)].map((at, i, all) => (i === 0 ? 0 : at - all[i - 1]!));
    const pace = Math.max(...(seen.length > 1 ? gaps.slice(2) : gaps));
    const watched = end - cancelAt;
    if (watched <= pace) {
      return make(
        "work-stops",
        "WARN",
        `the window was too short to judge: progress came every ${Math.round(pace)} ms before the cancel, and only ${Math.round(watched)} ms were watched after it; ` +
          `run again with --window ${Math.ceil((pace * 2) / 1000) * 1000} or more`,
        lines(seen.slice(-3), cancelAt),
      );
    }
    const crossing =
      crossed.length === 0
        ? ""
        : `, ${crossed.length} after it that crossed it on the wire (within ${tripText}the ${run.options.graceMs} ms --grace, before the server showed it had read it)`;
    const closedAt = run.closedAt !== undefined && run.closedAt > cancelAt && run.closedAt < end ? run.closedAt : undefined;
    const said =
      `${before.length} progress notification(s) before the cancel${crossing}, none ${sincePhrase(run, boundary, crossed.length)}` +
      `, watched ${closedAt === undefined ? `to ${rel(end, cancelAt)}` : `until the connection closed, ${rel(closedAt, cancelAt)}`}: the server stopped reporting progress`;
    if (cpu?.busy === true) return busyWarn(said);
    const blind = unseenAfter(run, cancelAt, main.windowEnd);
    if (blind !== undefined) return make("work-stops", "SKIP", blind, [...lines(seen.slice(-3), cancelAt), ...cpuLines]);
    const unwatched =
      run.transport === "http"
        ? "silence alone does not show that the work stopped; the probe sees no process of an HTTP server"
        : "silence alone does not show that the work stopped; its processes' CPU could not be read";
    const note = readNote(run, boundary);
    const known = note === "" ? "" : `; ${note}`;
    return make(
      "work-stops",
      "PASS",
      cpu === undefined ? `${said} (${unwatched})${known}` : `${said}, and its processes used little CPU after it${known}`,
      [...lines(seen.slice(-3), cancelAt), ...cpuLines],
    );
  }
  if (cpu?.busy === true) return busyWarn("the tool sent no progress");
  return make(
    "work-stops",
    "SKIP",
    "the tool sent no progress, so the wire cannot show whether the work stopped (try a later --cancel-after, or a tool that reports progress)",
    cpuLines,
  );
}

/**
 * The longest a message the server sent before it had the cancel can arrive after the cancel:
 * one round trip, the latency of the `tools/list` before the call (the faster of two) or, on
 * 2025-era HTTP, the time the cancel's own POST took to be answered, whichever is longer.
 */
function roundTrip(run: ProbeRun): { ms: number; how: string } | undefined {
  const main = run.main!;
  const trips: Array<{ ms: number; how: string }> = [];
  if (run.baseline?.outcome === "result")
    trips.push({ ms: ms(run.baseline), how: `the latency of ${run.baseline.method} before the call` });
  if (run.transport === "http" && run.era === "legacy") {
    const post = run.events.find(
      (event) =>
        event.kind === "http" &&
        event.from === "server" &&
        event.status !== undefined &&
        event.at >= main.cancelAt! &&
        (event.text ?? "").startsWith(`POST notifications/cancelled ${idLabel(main.id)}`),
    );
    if (post !== undefined) trips.push({ ms: post.at - main.cancelAt!, how: "the time the cancel's POST took to be answered" });
  }
  return trips.sort((x, y) => y.ms - x.ms)[0];
}

function connectionSurvives(run: ProbeRun): Check {
  const main = run.main;
  const base = main?.cancelAt ?? main?.sentAt ?? 0;
  const survive = run.survive;
  if (survive === undefined) {
    if (run.closedAt !== undefined && main !== undefined) {
      const closed = run.events.find((event) => event.kind === "closed");
      return make(
        "connection-survives",
        "FAIL",
        `the connection closed ${rel(run.closedAt, base)} after the ${main.cancelAt === undefined ? "call" : "cancel"}`,
        [...run.diagnosis],
        closed ? [closed] : [],
      );
    }
    return make("connection-survives", "SKIP", "the probe did not get this far");
  }
  const what = `${survive.method} ${survive.id === undefined ? "" : idLabel(survive.id)}`.trim();
  if (main?.cancelAt === undefined && survive.outcome === "result") {
    return make("connection-survives", "SKIP", `no cancel was sent, so there is nothing to survive (${what} ${survive.text})`);
  }
  const when = `sent ${rel(survive.sentAt, base)} after the ${main?.cancelAt === undefined ? "call" : "cancel"}`;
  if (survive.outcome === "result") {
    const held = headOfLine(run);
    if (held !== undefined) return make("connection-survives", "WARN", held.summary, held.evidence);
    const fence = main?.fence;
    const fenceLine =
      fence !== undefined && run.baseline?.outcome === "result" && fence.outcome === "result"
        ? [
            `${fence.method} sent right after the cancel was answered in ${ms(fence)} ms (the same request took ${ms(run.baseline)} ms before the call was made)`,
          ]
        : [];
    return make(
      "connection-survives",
      "PASS",
      `${what} (${when}) ${survive.text} in ${Math.round(survive.endedAt - survive.sentAt)} ms`,
      fenceLine,
    );
  }
  const listedBefore = run.events.some(
    (event) =>
      isResponse(event) && event.message!.result !== undefined && (event.message!.result as { tools?: unknown }).tools !== undefined,
  );
  if (survive.outcome === "error" && !listedBefore) {
    return make(
      "connection-survives",
      "WARN",
      `${what} (${when}) ${survive.text}; it failed before the cancel too, so the connection may be fine`,
    );
  }
  return make("connection-survives", "FAIL", `${what} (${when}): ${survive.text}`, run.closedAt === undefined ? [] : run.diagnosis);
}

function ms(exchange: { sentAt: number; endedAt: number }): number {
  return Math.round(exchange.endedAt - exchange.sentAt);
}

/**
 * Head-of-line blocking: the request sent right after the cancel took far longer than the same
 * request before the call (or got no answer), so the cancelled work held the server's queue.
 */
function headOfLine(run: ProbeRun): { summary: string; evidence: string[] } | undefined {
  const fence = run.main?.fence;
  const baseline = run.baseline;
  if (fence === undefined || baseline?.outcome !== "result") return undefined;
  const before = ms(baseline);
  const evidence = [`the same ${baseline.method} took ${before} ms before the call`];
  if (fence.outcome !== "result") {
    return {
      summary: `${fence.method} sent right after the cancel: ${fence.text}; only later requests were answered, so the cancelled work held the queue`,
      evidence,
    };
  }
  const after = ms(fence);
  if (after <= before * HOL_FACTOR || after <= before + HOL_MIN_EXTRA_MS) return undefined;
  return {
    summary:
      `${fence.method} sent right after the cancel was answered in ${after} ms, against ${before} ms before the call: ` +
      `the cancelled work held the queue (head-of-line blocking; the server SHOULD stop it as soon as practical, rule 11)`,
    evidence,
  };
}

function rawCancelIgnored(run: ProbeRun, raw: RawCancel | undefined, id: CheckId): Check {
  if (raw === undefined) {
    return make(id, "SKIP", run.closedAt !== undefined ? "the connection had closed before this step" : "the probe did not get this far");
  }
  if (raw.skipped !== undefined) return make(id, "SKIP", raw.skipped);
  const what = raw.kind === "completed" ? `the completed request ${idLabel(raw.requestId)}` : `the unknown id ${idLabel(raw.requestId)}`;
  if (raw.busy !== undefined) {
    // The server did not serve before the stray cancel was sent: busy, not stopped by it.
    return make(
      id,
      "WARN",
      `the server was busy, so no cancel for ${what} was sent: ${raw.busy} (still working on earlier cancelled work?); run again once it serves, or with a longer --timeout`,
    );
  }
  const clientIds = new Set(
    run.events
      .filter((event) => event.from === "client" && event.message?.method !== undefined && event.message.id !== undefined)
      .map((event) => event.message!.id),
  );
  const end = raw.followUp?.endedAt ?? raw.windowEnd;
  const seen = within(run, raw.cancelAt, end);
  // Output that is not JSON-RPC is the cancel's doing only from a server that wrote none before
  // any cancel: one that writes it anyway (with each tools/list, say) breaks rule 31, which the
  // report's header notes, not rules 9 and 10 (an outside tester's: both stray-cancel checks
  // failed on lines that came with the follow-up tools/list).
  const firstCancel = run.main?.cancelAt ?? raw.cancelAt;
  const noisy = run.events.some((event) => event.kind === "invalid" && event.at <= firstCancel);
  const bad = seen.filter(
    (event) =>
      (isResponse(event) && (event.message!.id === raw.requestId || event.message!.id === null || !clientIds.has(event.message!.id))) ||
      (event.kind === "invalid" && !noisy) ||
      event.kind === "closed",
  );
  const followUp = raw.followUp;
  const evidence = lines(bad, raw.cancelAt);
  if (raw.sendError !== undefined) {
    const http = seen.filter((event) => event.kind === "http" && (event.status ?? 0) >= 400);
    return make(
      id,
      "FAIL",
      `the cancel for ${what} was refused${http[0]?.status === undefined ? "" : ` with HTTP ${http[0].status}`}: ${raw.sendError} (a notification gets no response, and an invalid cancel SHOULD be ignored)`,
      lines([...http, ...bad], raw.cancelAt),
      [...http, ...bad],
    );
  }
  let followText: string;
  if (followUp === undefined) followText = "no request could follow (the connection closed)";
  else if (followUp.outcome === "result") followText = `${followUp.method} ${idLabel(followUp.id)} then ${followUp.text}`;
  else followText = `${followUp.method} ${followUp.id === undefined ? "" : idLabel(followUp.id)} then failed: ${followUp.text}`;
  if (bad.length > 0 || followUp?.outcome !== "result") {
    const closed = bad.some((event) => event.kind === "closed");
    const answered = bad.some((event) => event.kind === "message");
    const reason = closed
      ? "the server closed the connection"
      : answered
        ? "the server answered the notification (a notification gets no response, and an invalid cancel SHOULD be ignored)"
        : bad.length > 0
          ? "the server wrote output that is not JSON-RPC"
          : "the connection stopped serving requests";
    return make(id, "FAIL", `after a cancel for ${what}, ${reason}; ${followText}`, [...evidence, ...(closed ? run.diagnosis : [])], bad);
  }
  return make(id, "PASS", `no answer, no error in ${Math.round(raw.windowEnd - raw.cancelAt)} ms; ${followText}`);
}

function noServerCancel(run: ProbeRun): Check {
  const cancels = run.events.filter((event) => fromServer(event) && event.message!.method === "notifications/cancelled");
  const serverRequests = new Set(
    run.events
      .filter((event) => fromServer(event) && event.message!.method !== undefined && event.message!.id !== undefined)
      .map((event) => event.message!.id),
  );
  const ownRequest = (event: WireEvent): boolean =>
    run.era === "legacy" &&
    serverRequests.has((event.message!.params as { requestId?: unknown } | undefined)?.requestId as string | number);
  const bad = cancels.filter((event) => !ownRequest(event));
  const base = run.main?.cancelAt ?? run.main?.sentAt ?? 0;
  if (bad.length > 0) {
    return make(
      "no-server-cancel",
      "FAIL",
      `the server sent ${bad.length} notifications/cancelled of its own; it may send one only to end a subscriptions/listen stream, and the probe opened none`,
      lines(bad, base),
      bad,
    );
  }
  const allowed = cancels.length - bad.length;
  return make(
    "no-server-cancel",
    "PASS",
    allowed === 0
      ? "the server sent no notifications/cancelled"
      : `the server cancelled only ${allowed} request(s) it had sent itself (allowed before 2026-07-28, rule 39)`,
  );
}

function progressIncreases(run: ProbeRun): Check {
  const byToken = new Map<string, WireEvent[]>();
  for (const event of run.events) {
    if (!fromServer(event) || event.message!.method !== "notifications/progress") continue;
    const key = JSON.stringify((event.message!.params as { progressToken?: unknown } | undefined)?.progressToken ?? null);
    const list = byToken.get(key) ?? [];
    list.push(event);
    byToken.set(key, list);
  }
  const base = run.main?.cancelAt ?? run.main?.sentAt ?? 0;
  const bad: WireEvent[] = [];
  const evidence: string[] = [];
  let checked = 0;
  for (const [token, events] of byToken) {
    if (events.length < 2) continue;
    checked++;
    for (let i = 1; i < events.length; i++) {
      const previous = progressValue(events[i - 1]!);
      const value = progressValue(events[i]!);
      if (!(value > previous)) {
        bad.push(events[i]!);
        if (evidence.length < MAX_EVIDENCE) {
          evidence.push(`${rel(events[i]!.at, base)}  token ${token}: ${value} after ${previous}`);
        }
      }
    }
  }
  if (bad.length > 0) {
    return make(
      "progress-increases",
      "FAIL",
      `${bad.length} progress notification(s) did not increase; progress MUST increase with each notification`,
      evidence,
      bad,
    );
  }
  if (checked === 0) return make("progress-increases", "SKIP", "fewer than two progress notifications for any request");
  const sample = [...byToken]
    .filter(([, events]) => events.length >= 2)
    .map(([token, events]) => {
      const values = events.map(progressValue);
      return `token ${token}: ${values.length > 8 ? `${values.slice(0, 4).join(", ")}, …, ${values.at(-1)}` : values.join(", ")}`;
    });
  return make("progress-increases", "PASS", `every progress value rose (${sample.join("; ")})`);
}

function httpCancelMechanism(run: ProbeRun): Check {
  if (run.transport === "stdio") {
    return make("http-cancel-mechanism", "SKIP", "stdio target: its cancel is notifications/cancelled on stdin (rule 31), checked above");
  }
  const skip = mainSkip(run);
  if (skip !== undefined) return make("http-cancel-mechanism", "SKIP", skip);
  const main = run.main!;
  const cancelAt = main.cancelAt!;
  const after = within(run, cancelAt - 1, main.windowEnd);
  const label = idLabel(main.id);
  const post = after.find(
    (event) => event.kind === "http" && event.from === "server" && (event.text ?? "").startsWith(`POST notifications/cancelled ${label}`),
  );
  const closedStream = after.find(
    (event) => event.kind === "http" && event.from === "client" && (event.text ?? "").includes(`tools/call ${label}`),
  );
  const survived = run.survive?.outcome === "result";
  const then = survived ? "and the server answered the next request" : "but the server did not answer the next request";
  if (run.era === "legacy") {
    if (post === undefined) {
      return make(
        "http-cancel-mechanism",
        "FAIL",
        `no POST of notifications/cancelled for ${label} was seen (2025-era: the cancel is that POST, rule 40)`,
      );
    }
    const status = post.status ?? 0;
    const evidence = lines([post, ...(closedStream ? [closedStream] : [])], cancelAt);
    if (status === 202 && survived)
      return make("http-cancel-mechanism", "PASS", `the POSTed notifications/cancelled got 202 Accepted ${then}`, evidence);
    if (status >= 200 && status < 300 && survived) {
      return make(
        "http-cancel-mechanism",
        "WARN",
        `the POSTed notifications/cancelled got ${status}; a notification POST expects 202 Accepted`,
        evidence,
        [post],
      );
    }
    return make("http-cancel-mechanism", "FAIL", `the POSTed notifications/cancelled got ${status || "no answer"} ${then}`, evidence, [
      post,
    ]);
  }
  if (post !== undefined) {
    return make(
      "http-cancel-mechanism",
      "FAIL",
      `a notifications/cancelled was POSTed on a 2026-07-28 connection (rule 28: there it is a stream close only)`,
      lines([post], cancelAt),
      [post],
    );
  }
  if (closedStream === undefined) {
    return make(
      "http-cancel-mechanism",
      "FAIL",
      `the client closed neither the response stream of ${label} nor its request before the response headers (2026-07-28: closing it is the cancel, rule 6)`,
    );
  }
  // A server that holds its response head until its first event (the v2 SDK's createMcpHandler,
  // when the tool sent nothing yet) is cancelled before the headers: the request itself closes.
  const closed = (closedStream.text ?? "").startsWith(CLOSED_BEFORE_HEADERS)
    ? `the client closed the request of ${label} before its response headers came (closing the request closes its stream too)`
    : `the client closed the response stream of ${label}`;
  return make(
    "http-cancel-mechanism",
    survived ? "PASS" : "FAIL",
    `${closed} and sent no notification, ${then}`,
    lines([closedStream], cancelAt),
  );
}

function concurrentCalls(run: ProbeRun): Check {
  const concurrent = run.concurrent;
  if (concurrent === undefined) {
    return make(
      "concurrent-calls",
      "SKIP",
      run.closedAt !== undefined ? "the connection had closed before this step" : "the probe did not get this far",
    );
  }
  if (concurrent.skipped !== undefined) return make("concurrent-calls", "SKIP", concurrent.skipped);
  const { a, b, cancelAt } = concurrent;
  const label = (call: typeof a): string => `${idLabel(call.id)} (progress token ${JSON.stringify(call.progressToken ?? null)})`;
  const from = Math.min(a.sentAt, b.sentAt);
  const seen = within(run, from, concurrent.windowEnd);
  const bad: WireEvent[] = [];
  const evidence: string[] = [];
  // Each token's progress must rise on its own: two calls reporting on one token interleave. Only
  // telling when the single call's progress rose (otherwise progress-increases already says it).
  const single = run.main?.progressToken === undefined ? [] : run.events.filter((event) => isProgressFor(event, run.main!.progressToken));
  const singleRose = single.every((event, i) => i === 0 || progressValue(event) > progressValue(single[i - 1]!));
  for (const call of singleRose ? [a, b] : []) {
    if (call.progressToken === undefined) continue;
    const own = seen.filter((event) => isProgressFor(event, call.progressToken));
    for (let i = 1; i < own.length; i++) {
      if (!(progressValue(own[i]!) > progressValue(own[i - 1]!))) {
        bad.push(own[i]!);
        if (evidence.length < MAX_EVIDENCE) {
          evidence.push(
            `${rel(own[i]!.at, cancelAt)}  ${label(call)}: progress ${progressValue(own[i]!)} after ${progressValue(own[i - 1]!)} (two calls' progress on one token?)`,
          );
        }
      }
    }
  }
  // What comes for the cancelled call itself after its cancel is silent-after-cancel's and
  // work-stops' to judge (on the single call); here only cross-talk between the two counts.
  // Progress with a token neither call carries.
  const tokens = new Set([a.progressToken, b.progressToken, run.main?.progressToken].filter((token) => token !== undefined));
  const stray = seen.filter(
    (event) =>
      fromServer(event) &&
      event.message!.method === "notifications/progress" &&
      !tokens.has((event.message!.params as { progressToken?: string | number } | undefined)?.progressToken as string | number),
  );
  for (const event of stray) {
    bad.push(event);
    if (evidence.length < MAX_EVIDENCE) evidence.push(`${rel(event.at, cancelAt)}  a token neither call carries: ${eventText(event)}`);
  }
  const progressB = seen.filter((event) => event.at > cancelAt && isProgressFor(event, b.progressToken)).length;
  const bBefore = seen.filter((event) => event.at <= cancelAt && isProgressFor(event, b.progressToken));
  const aBefore = seen.filter((event) => event.at <= cancelAt && isProgressFor(event, a.progressToken));
  // Judged from the timeline: a call that showed nothing at all (no progress, no answer) was not
  // seen running; it may be queued behind the other.
  const bShown = bBefore.length + progressB > 0 || b.end.how !== "running";
  const bEnd =
    b.end.how === "running"
      ? bShown
        ? `was still running ${rel(concurrent.windowEnd, cancelAt)} after the cancel of the other, ${progressB} progress of its own meanwhile`
        : `showed no progress and no answer up to ${rel(concurrent.windowEnd, cancelAt)} after the cancel of the other (queued, or silent)`
      : b.end.how === "result"
        ? `completed with its result ${rel(b.end.at, cancelAt)} after the cancel of the other`
        : `ended (${b.end.text}) ${rel(b.end.at, cancelAt)} after the cancel of the other`;
  const endedWrongly = b.end.how === "error" || b.end.how === "closed" || b.end.how === "tool-error";
  // B reported progress steadily before the cancel of A and fell silent at it, for longer than
  // three of its intervals: A's cancel stopped B.
  const interval = bBefore.length >= 2 ? (bBefore.at(-1)!.at - bBefore[0]!.at) / (bBefore.length - 1) : Number.POSITIVE_INFINITY;
  const stopped = b.end.how === "running" && progressB === 0 && concurrent.windowEnd - cancelAt > 3 * interval + run.options.graceMs;
  if (bad.length > 0 || endedWrongly || stopped) {
    const why = [
      bad.length > 0 ? `${bad.length} progress notification(s) mixed the two calls or carried a token neither call sent` : "",
      endedWrongly ? `the call that was not cancelled, ${label(b)}, ${bEnd}` : "",
      stopped ? `the call that was not cancelled, ${label(b)}, stopped reporting progress when the other was cancelled` : "",
    ].filter((part) => part !== "");
    return make(
      "concurrent-calls",
      "FAIL",
      `two concurrent calls, ${label(a)} cancelled and ${label(b)} not: ${why.join("; ")}. A server keeps each request's progress token and cancel apart (state kept on a shared tool instance mixes them)`,
      evidence,
      bad,
    );
  }
  // A reported progress while B showed nothing: the server ran one call at a time, so the two
  // were never concurrent and the timeline cannot show whether it keeps them apart.
  if (b.progressToken !== undefined && aBefore.length > 0 && bBefore.length === 0) {
    const firstB = seen.find((event) => event.at > cancelAt && isProgressFor(event, b.progressToken));
    return make(
      "concurrent-calls",
      "WARN",
      `the calls did not run at the same time: ${label(a)} reported ${aBefore.length} progress before its cancel while ${label(b)} reported none; ` +
        `${label(b)} ${firstB === undefined ? bEnd : `first reported progress ${rel(firstB.at, cancelAt)} after the cancel of the other, then ${bEnd}`}. ` +
        `The server appears to serve one call at a time, so whether it keeps two calls apart cannot be judged`,
      lines(
        seen.filter((event) => isProgressFor(event, a.progressToken) || isProgressFor(event, b.progressToken)).slice(0, MAX_EVIDENCE),
        cancelAt,
      ),
    );
  }
  // A PASS needs evidence that the cancel ended only its own call: the other one went on after
  // it (its result came after the cancel, or its progress did). Anything less is no evidence
  // either way: SKIP (a call that ended before the cancel, or showed nothing at all after it).
  const wentOn = (b.end.how === "result" && b.end.at > cancelAt) || progressB > 0;
  if (!wentOn) {
    return make(
      "concurrent-calls",
      "SKIP",
      `no evidence either way: ${label(a)} was cancelled and ${label(b)} ${b.end.how === "result" ? `completed with its result before that cancel` : bEnd}. ` +
        "A PASS needs the call that was not cancelled to go on after the other's cancel (its progress or its result): try a later --cancel-after, or a tool that reports progress",
    );
  }
  // Whether each token's progress rose on its own was seen only if both calls reported progress.
  const progressA = seen.filter((event) => isProgressFor(event, a.progressToken)).length;
  const progressSeenB = seen.filter((event) => isProgressFor(event, b.progressToken)).length;
  const progressJudged =
    progressA > 0 && progressSeenB > 0
      ? "each token's progress rose on its own"
      : "not both calls reported progress, so only the cancel was judged (not whether progress is kept apart)";
  return make("concurrent-calls", "PASS", `${label(a)} was cancelled; ${label(b)} ${bEnd}; ${progressJudged}`);
}

function sessionsIsolated(run: ProbeRun): Check {
  if (run.transport === "stdio") return make("sessions-isolated", "SKIP", "stdio target: one process, one session");
  const sessions = run.sessions;
  if (sessions === undefined) {
    return make(
      "sessions-isolated",
      "SKIP",
      run.closedAt !== undefined ? "the connection had closed before this step" : "the probe did not get this far",
    );
  }
  if (sessions.skipped !== undefined) return make("sessions-isolated", "SKIP", sessions.skipped);
  const evidence: string[] = [];
  let wrong = 0;
  // A session's own messages: progress on its token, an answer for the id its call used.
  const own = (session: SessionsRun["sessions"][number]): number =>
    session.received.filter(
      (entry) =>
        (entry.message.method === undefined && entry.message.id === sessions.requestId) ||
        (entry.message.method === "notifications/progress" &&
          (entry.message.params as { progressToken?: unknown } | undefined)?.progressToken === session.progressToken),
    ).length;
  for (const session of sessions.sessions) {
    const others = sessions.sessions.filter((other) => other !== session).map((other) => other.progressToken);
    const foreign = session.received.filter((entry) => {
      const token = (entry.message.params as { progressToken?: unknown } | undefined)?.progressToken;
      return entry.message.method === "notifications/progress" && others.includes(token as string);
    });
    const answers = session.received.filter((entry) => entry.message.method === undefined && entry.message.id === sessions.requestId);
    const extraAnswers = answers.length > 1 ? answers.slice(1) : [];
    wrong += foreign.length + extraAnswers.length;
    for (const entry of [...foreign, ...extraAnswers].slice(0, 3)) {
      evidence.push(`${rel(entry.at, sessions.cancelAt)}  session ${session.label} received ${describeMessage(entry.message)}`);
    }
  }
  const counts = sessions.sessions.map((session) => `session ${session.label}: ${session.received.length} message(s)`).join(", ");
  if (wrong > 0) {
    return make(
      "sessions-isolated",
      "FAIL",
      `${wrong} message(s) of one session reached the other (both used request id ${sessions.requestId}; session A's was cancelled): ` +
        `a server routes each message to its own session, or a cancelled call's result lands in another session's pending call with the same id`,
      evidence,
    );
  }
  // Isolation is shown only by a message one session received and the other did not: with none
  // of its own call's messages in either session, there is nothing to compare.
  if (sessions.sessions.every((session) => own(session) === 0)) {
    return make(
      "sessions-isolated",
      "SKIP",
      `no evidence either way: sessions A and B both called with request id ${sessions.requestId}, and neither received progress on its token or an answer for its id ` +
        `in the ${Math.round(sessions.windowEnd - sessions.cancelAt)} ms watched after session A's cancel (${counts}). ` +
        "A PASS needs a message of one session's call that the other did not get: try a tool that reports progress, or a longer --window",
    );
  }
  return make(
    "sessions-isolated",
    "PASS",
    `sessions A and B both called with request id ${sessions.requestId} and got only their own messages (${counts})`,
  );
}
