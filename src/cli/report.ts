import type { Check, Status } from "./checks.js";
import { eventText, rel } from "./checks.js";
import { brief, displayUrl, idLabel, truncate } from "./describe.js";
import type { ProbeReport, ProbeRun } from "./probe.js";
import { lostText } from "./run.js";
import type { WireEvent } from "./recorder.js";
import type { StartupError } from "./target.js";

/** The longest timeline printed per cancel, in lines; the middle is elided (flagged lines are kept). */
export const MAX_TIMELINE_LINES = 40;

/** Counts of each verdict. */
export function tally(checks: Check[]): Record<Status, number> {
  const counts: Record<Status, number> = { PASS: 0, FAIL: 0, WARN: 0, SKIP: 0 };
  for (const check of checks) counts[check.status]++;
  return counts;
}

/**
 * 0 when nothing FAILed and the server stayed up, 1 otherwise: a server that went away during the
 * run could not be probed (the steps after it SKIP, so the checks alone would say "no failures").
 */
export function exitCodeOf(report: ProbeReport): 0 | 1 {
  return report.checks.some((check) => check.status === "FAIL") || serverLost(report.run) !== undefined ? 1 : 0;
}

/**
 * How the server went away during the run, in words (`the server exited with code 5 during the
 * probe`), or `undefined` when it stayed up until the probe ended it.
 */
export function serverLost(run: ProbeRun): string | undefined {
  if (run.closedAt === undefined) return undefined;
  if (run.lost !== undefined) return lostText(run.lost, "during the probe");
  const how = run.diagnosis.find((line) => line.startsWith("the process "))?.slice("the process ".length);
  return `the server ${how ?? "closed the connection"} during the probe`;
}

/** The summary line. */
export function summaryLine(checks: Check[], lost?: string): string {
  const t = tally(checks);
  const counts = `${t.PASS} PASS, ${t.FAIL} FAIL, ${t.WARN} WARN, ${t.SKIP} SKIP`;
  if (lost !== undefined && t.FAIL === 0) return `Summary: ${counts}: incomplete, ${lost}`;
  if (t.FAIL > 0) {
    const failed = checks.filter((check) => check.status === "FAIL").map((check) => check.id);
    return `Summary: ${counts}: the server does not fully honour cancellation (${failed.join(", ")})`;
  }
  if (t.WARN > 0) return `Summary: ${counts}: no failures; read the warnings`;
  return `Summary: ${counts}: no failures`;
}

interface Section {
  title: string;
  base: number;
  from: number;
  to: number;
}

function sections(run: ProbeRun): Section[] {
  const out: Section[] = [];
  const main = run.main;
  if (main !== undefined) {
    const end = run.survive?.endedAt ?? main.windowEnd;
    out.push({
      title:
        main.cancelAt === undefined
          ? `Timeline of tools/call ${idLabel(main.id)} ${main.tool} (ms from the call; it was not cancelled)`
          : `Timeline around the cancel of tools/call ${idLabel(main.id)} ${main.tool} (ms relative to the cancel)`,
      base: main.cancelAt ?? main.sentAt,
      from: main.sentAt - 0.001,
      to: end,
    });
  }
  for (const raw of [run.cancelCompleted, run.cancelUnknown]) {
    if (raw === undefined || raw.skipped !== undefined) continue;
    out.push({
      title:
        raw.kind === "completed"
          ? `Timeline around the cancel of the completed request ${idLabel(raw.requestId)}`
          : `Timeline around the cancel of the unknown id ${idLabel(raw.requestId)}`,
      base: raw.cancelAt,
      from: raw.cancelAt - 0.001,
      to: raw.followUp?.endedAt ?? raw.windowEnd,
    });
  }
  return out;
}

/** For each flagged event: `FAIL (rules 6, 11)`, the worst verdict and the union of the rules. */
function flags(checks: Check[]): Map<number, string> {
  const byEvent = new Map<number, { status: Status; rules: Set<number> }>();
  const rank: Record<Status, number> = { FAIL: 3, WARN: 2, PASS: 1, SKIP: 0 };
  for (const check of checks) {
    for (const seq of check.events) {
      const entry = byEvent.get(seq) ?? { status: check.status, rules: new Set<number>() };
      if (rank[check.status] > rank[entry.status]) entry.status = check.status;
      for (const rule of check.rules) entry.rules.add(rule);
      byEvent.set(seq, entry);
    }
  }
  const map = new Map<number, string>();
  for (const [seq, { status, rules }] of byEvent) {
    const sorted = [...rules].sort((a, b) => a - b);
    map.set(seq, `${status} (rule${sorted.length > 1 ? "s" : ""} ${sorted.join(", ")})`);
  }
  return map;
}

function timelineLines(run: ProbeRun, section: Section, flagged: Map<number, string>): string[] {
  // The probe's own "cancel" marker is redundant when the notification it caused is on the line below.
  const events = run.events.filter(
    (event, index) =>
      event.at >= section.from &&
      event.at <= section.to &&
      !(event.kind === "mark" && event.text === "cancel" && run.events[index + 1]?.message?.method === "notifications/cancelled"),
  );
  const rendered = events.map((event) => {
    const time = (event.at === section.base ? "0 ms" : rel(event.at, section.base)).padStart(10);
    const flag = flagged.get(event.seq);
    return { flagged: flag !== undefined, text: `${time}  ${eventText(event)}${flag === undefined ? "" : `   <== ${flag}`}` };
  });
  if (rendered.length <= MAX_TIMELINE_LINES) return rendered.map((line) => line.text);
  const head = 12;
  const tail = 12;
  const kept = rendered.map((line, index) => line.flagged || index < head || index >= rendered.length - tail);
  const out: string[] = [];
  let skipped = 0;
  let flaggedShown = 0;
  rendered.forEach((line, index) => {
    const keep = kept[index] && (index < head || index >= rendered.length - tail || flaggedShown++ < 10);
    if (keep) {
      if (skipped > 0) out.push(`            … ${skipped} more`);
      skipped = 0;
      out.push(line.text);
    } else skipped++;
  });
  if (skipped > 0) out.push(`            … ${skipped} more`);
  return out;
}

/** The readable report. */
export function renderText(report: ProbeReport): string {
  const { run, checks } = report;
  const o = run.options;
  const out: string[] = [];
  const server = run.serverInfo === undefined ? "(unnamed server)" : `${run.serverInfo.name ?? "?"} ${run.serverInfo.version ?? ""}`.trim();
  const target = o.target.kind === "stdio" ? `stdio: ${o.target.line}` : `Streamable HTTP: ${displayUrl(o.target.url)}`;
  out.push("mcp-cancellable probe");
  out.push(`  server   ${server}, protocol ${run.protocolVersion ?? "?"} (${run.era === "legacy" ? "2025-era" : "2026-07-28"}), ${target}`);
  if (run.main !== undefined) {
    out.push(`  tool     ${run.main.tool} ${brief(run.main.args, 100)} (${run.main.chosen})`);
  }
  out.push(`  cancel   ${run.cancelMechanism}, ${o.cancelAfterMs} ms after the call`);
  const record = run.main?.record;
  if (record !== undefined && record.cancel !== null) {
    const late = record.late;
    out.push(
      `  record   ${record.summary}; mechanism ${record.cancel.mechanism}; discarded late: ` +
        `${late.results} result(s), ${late.errors} error(s), ${late.progress} progress (mcp-cancellable run record)`,
    );
  }
  out.push(
    `  watch    ${o.windowMs} ms after each cancel; a tools/list sent right after the cancel tells a crossing (before its answer, rule 9) from a violation (after it); ` +
      `without its answer, messages within ${o.graceMs} ms of the cancel may have crossed it`,
  );
  out.push(
    `  rules    "rule N" is a requirement of the MCP specification, listed with its page and section in docs/spec-rules.md (in the package and the repository)`,
  );
  const invalid = run.events.filter((event) => event.kind === "invalid").length;
  if (invalid > 0) {
    out.push(
      `  note     the server wrote ${invalid} line(s) that are not JSON-RPC on stdout, where stdio allows only MCP messages (rule 31)`,
    );
  }
  if (run.droppedEvents > 0) out.push(`  note     ${run.droppedEvents} wire events beyond the first ${run.events.length} were not kept`);
  const flagged = flags(checks);
  for (const section of sections(run)) {
    out.push("", section.title);
    out.push(...timelineLines(run, section, flagged));
  }
  out.push("", "Checks");
  for (const check of checks) {
    out.push(`  ${check.status.padEnd(4)}  ${check.title} (rule${check.rules.length > 1 ? "s" : ""} ${check.rules.join(", ")})`);
    out.push(`        ${check.summary}`);
    for (const line of check.evidence) out.push(`          ${line}`);
  }
  if (run.anomalies.length > 0) {
    out.push("", "Anomalies the library noticed (onAnomaly)", ...run.anomalies.map((line) => `  ${truncate(line, 200)}`));
  }
  if (run.clientErrors.length > 0) {
    out.push("", "The SDK client reported (onerror)", ...run.clientErrors.map((line) => `  ${truncate(line, 200)}`));
  }
  if (run.diagnosis.length > 0) {
    out.push("", "The server process", ...run.diagnosis.map((line) => `  ${line}`));
  }
  const lost = serverLost(run);
  if (lost !== undefined) {
    out.push("", `The probe could not finish: ${lost}; the steps after that could not run (exit status 1).`);
  }
  out.push("", summaryLine(checks, lost));
  return out.join("\n") + "\n";
}

function eventJson(event: WireEvent): Record<string, unknown> {
  return {
    seq: event.seq,
    atMs: Math.round(event.at * 10) / 10,
    from: event.from,
    kind: event.kind,
    text: eventText(event),
    ...(event.message === undefined ? {} : { message: event.message }),
    ...(event.status === undefined ? {} : { status: event.status }),
  };
}

/** The report as one JSON object (`--json`). Times are ms since the probe started. */
export function renderJson(report: ProbeReport): string {
  const { run, checks } = report;
  const o = run.options;
  const main = run.main;
  return (
    JSON.stringify(
      {
        probe: "mcp-cancellable",
        ok: exitCodeOf(report) === 0,
        exitCode: exitCodeOf(report),
        serverLost: serverLost(run) ?? null,
        summary: tally(checks),
        target: o.target.kind === "stdio" ? { stdio: o.target.line, cwd: o.target.cwd ?? null } : { url: displayUrl(o.target.url) },
        era: run.era,
        protocolVersion: run.protocolVersion ?? null,
        server: run.serverInfo ?? null,
        settings: { cancelAfterMs: o.cancelAfterMs, windowMs: o.windowMs, graceMs: o.graceMs, timeoutMs: o.timeoutMs },
        cancelMechanism: run.cancelMechanism,
        call:
          main === undefined
            ? null
            : {
                tool: main.tool,
                arguments: main.args,
                chosen: main.chosen,
                requestId: main.id ?? null,
                progressToken: main.progressToken ?? null,
                sentAtMs: round(main.sentAt),
                cancelAtMs: main.cancelAt === undefined ? null : round(main.cancelAt),
                windowEndMs: round(main.windowEnd),
                endedBeforeCancel: main.endedBeforeCancel ?? null,
                record: main.record ?? null,
                fence: main.fence ?? null,
                cpu: main.cpu ?? null,
              },
        baseline: run.baseline ?? null,
        concurrent: run.concurrent ?? null,
        sessions: run.sessions ?? null,
        checks,
        diagnosis: run.diagnosis,
        clientErrors: run.clientErrors,
        anomalies: run.anomalies,
        timeline: run.events.map(eventJson),
        droppedEvents: run.droppedEvents,
      },
      cutLongStrings,
      2,
    ) + "\n"
  );
}

/** A startup failure, for people. */
export function renderStartupError(error: StartupError): string {
  return [`mcp-cancellable probe: ${error.message}`, ...error.details.map((line) => `  ${line}`)].join("\n") + "\n";
}

/** A startup failure, as JSON (`--json`). */
export function renderStartupErrorJson(error: StartupError, events: WireEvent[]): string {
  return (
    JSON.stringify(
      {
        probe: "mcp-cancellable",
        ok: false,
        exitCode: error.kind === "missing-sdk" ? 2 : 1,
        serverLost: error.serverLost ?? null,
        error: { kind: error.kind, message: error.message, details: error.details },
        timeline: events.map(eventJson),
      },
      cutLongStrings,
      2,
    ) + "\n"
  );
}

/** The longest string `--json` writes, in characters: a longer one (a 120 MB result's text) is cut, and says so. */
export const MAX_JSON_STRING_CHARS = 2_000;

function cutLongStrings(_key: string, value: unknown): unknown {
  if (typeof value !== "string" || value.length <= MAX_JSON_STRING_CHARS) return value;
  return `${value.slice(0, MAX_JSON_STRING_CHARS)}... (${value.length} characters in all, cut in this report)`;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
