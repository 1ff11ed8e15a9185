import type { HttpResult, HttpSide } from "./http-latency.js";
import type { Machine } from "./lib/env.js";
import { quantile } from "./lib/stats.js";
import type { Summary } from "./lib/stats.js";
import type { MaxTimeoutResult } from "./max-timeout.js";
import type { OverheadResult } from "./overhead.js";
import type { ProfileBreakdown } from "./profile.js";
import type { ScaleLine, ScaleResult } from "./scale.js";
import type { StdioResult } from "./stdio-latency.js";

/** One target of issue 5, judged. `met: null` when it could not be measured in this run. */
export interface Target {
  name: string;
  target: string;
  value: string;
  met: boolean | null;
  /** The raw SDK's figure and ours, as measured in this run (for the table). */
  raw: string;
  wrapped: string;
  /** ours / raw where the target is a ratio, else null. */
  ratio: number | null;
}

/** Everything a run produces: written to bench/results.json, rendered to results.md and the chart. */
export interface Results {
  mode: "short" | "full";
  machine: Machine;
  build: string;
  durationS: number;
  targets: Target[];
  overhead: OverheadResult;
  /** The same measured on the v2 SDK, legacy era and pinned to 2026-07-28. */
  overheadV2: { legacy: OverheadResult; modern: OverheadResult };
  /** os.loadavg() when the run started and ended (the machine is shared). */
  load: { start: number[]; end: number[] };
  profile: { raw: ProfileBreakdown; wrapped: ProfileBreakdown } | null;
  stdio: StdioResult;
  http: HttpResult;
  maxTimeout: MaxTimeoutResult;
  scale: ScaleResult;
}

const fmt = (value: number | null | undefined, unit = ""): string =>
  value === null || value === undefined || Number.isNaN(value)
    ? "n/a"
    : `${value.toLocaleString("en-US", { maximumFractionDigits: 3 })}${unit}`;

const mark = (met: boolean | null): string => (met === null ? "not measured" : met ? "met" : "**missed**");

const ratioText = (value: number | null | undefined): string =>
  value === null || value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(3);

/** A target held to a ratio: `met` is null when either side is missing. */
function ratioTarget(
  name: string,
  target: string,
  limit: number,
  ratio: number | null,
  detail: string,
  raw: string,
  wrapped: string,
): Target {
  const ok = ratio !== null && Number.isFinite(ratio);
  return {
    name,
    target,
    value: `${ratioText(ratio)}× (${detail})`,
    met: ok ? ratio <= limit : null,
    raw,
    wrapped,
    ratio: ok ? Math.round(ratio * 1_000) / 1_000 : null,
  };
}

/** Judges the targets of issue 12 (each a ratio to the raw SDK in the same run) against a run's numbers. */
export function judge(r: Omit<Results, "targets" | "durationS">): Target[] {
  const http = r.http;
  const fetchHttp = http.fetch.close?.p50 ?? null;
  const overheads: Array<[string, OverheadResult]> = [
    ["v1", r.overhead],
    ["v2 legacy", r.overheadV2.legacy],
    ["v2 pinned 2026-07-28", r.overheadV2.modern],
  ];
  const targets: Target[] = [];
  for (const [label, o] of overheads) {
    targets.push(
      ratioTarget(
        `per-call overhead, sequential, ${label}`,
        "wrapped/raw ≤ 1.10 (wall, net of the harness)",
        1.1,
        o.sequential.ratioNet,
        `CPU ${o.sequential.cpuRatioNet}×; +${fmt(o.sequential.overheadUs)} µs wall, +${fmt(o.sequential.cpuOverheadUs)} µs CPU per call`,
        `${fmt(o.sequential.raw.meanUs)} µs (CPU ${fmt(o.sequential.raw.cpuUs)})`,
        `${fmt(o.sequential.wrapped.meanUs)} µs (CPU ${fmt(o.sequential.wrapped.cpuUs)})`,
      ),
      ratioTarget(
        `per-call overhead, ${o.concurrent.batch.toLocaleString("en-US")} in flight, ${label}`,
        "wrapped/raw ≤ 1.10 (wall; issue 30)",
        1.1,
        o.concurrent.ratio,
        `CPU ${o.concurrent.cpuRatio}×`,
        `${fmt(o.concurrent.rawUsPerCall)} µs (CPU ${fmt(o.concurrent.rawCpuUsPerCall)})`,
        `${fmt(o.concurrent.wrappedUsPerCall)} µs (CPU ${fmt(o.concurrent.wrappedCpuUsPerCall)})`,
      ),
    );
  }
  const lines = r.scale.lines;
  const v1 = lines.v1.concurrent;
  // A v2 line's abort: the ratio, the notifications the peer was handed by each side, and ours
  // again with the peer dropping them unread (its work on them is on the client's thread here).
  const v2AbortText = (c: ScaleLine["concurrent"], label: string): string => {
    const ratio = `${label} ${ratioText(c.ours.settleAllMs / c.raw.settleAllMs)}×`;
    if (c.oursPeerDrops === undefined) return ratio;
    return (
      `${ratio} (the peer handed ${c.ours.cancelsSent.toLocaleString("en-US")} notifications/cancelled by ours, ${c.raw.cancelsSent.toLocaleString("en-US")} by raw; ` +
      `with the peer dropping them unread ${ratioText(c.oursPeerDrops.settleAllMs / c.raw.settleAllMs)}×)`
    );
  };
  targets.push(
    ratioTarget(
      `${v1.ours.calls.toLocaleString("en-US")} pending calls aborted at once: all settled (v1)`,
      "≤ 1.0 × raw v1 time",
      1.0,
      v1.ours.settleAllMs / v1.raw.settleAllMs,
      `${v2AbortText(lines["v2-legacy"].concurrent, "v2 legacy")}, ${v2AbortText(lines["v2-2026"].concurrent, "v2 2026")}; nothing left: pending ${v1.ours.pendingAfter}, listeners ${v1.ours.listenersLeftOnSignal}, resources ${JSON.stringify(v1.ours.resourcesLeft)}`,
      `${fmt(v1.raw.settleAllMs)} ms`,
      `${fmt(v1.ours.settleAllMs)} ms`,
    ),
  );
  for (const [line, label] of [
    ["v1", "v1"],
    ["v2-legacy", "v2 legacy"],
    ["v2-2026", "v2 pinned 2026-07-28"],
  ] as const) {
    const t = lines[line].timeouts;
    targets.push({
      name: `${t.ours.calls.toLocaleString("en-US")} pending calls timing out together (silent peer), ${label}`,
      target: "the last settles ≤ 50 ms after its deadline",
      value:
        `last +${fmt(t.ours.latenessMaxMs)} ms, p50 +${fmt(t.ours.latenessP50Ms)} ms, ${t.ours.early} early (raw SDK: last +${fmt(t.raw.latenessMaxMs)} ms, p50 +${fmt(t.raw.latenessP50Ms)} ms)` +
        (t.ours.peerCancels == null
          ? ""
          : `; the in-memory peer handled ${t.ours.peerCancels.toLocaleString("en-US")} notifications/cancelled from ours, ${(t.raw.peerCancels ?? 0).toLocaleString("en-US")} from raw, on this thread`),
      met: t.ours.latenessMaxMs <= 50 && t.ours.early === 0,
      raw: `+${fmt(t.raw.latenessMaxMs)} ms`,
      wrapped: `+${fmt(t.ours.latenessMaxMs)} ms`,
      ratio: null,
    });
  }
  for (const [line, label] of [
    ["v1", "v1"],
    ["v2-legacy", "v2 legacy"],
    ["v2-2026", "v2 pinned 2026-07-28"],
  ] as const) {
    const c = lines[line].concurrent;
    const extra = c.ours.heapPerPendingCallBytes - c.raw.heapPerPendingCallBytes;
    const timersOurs = c.ours.resourcesWhilePending.Timeout ?? 0;
    const timersRaw = c.raw.resourcesWhilePending.Timeout ?? 0;
    targets.push({
      name: `heap and timers per pending call, ${label}`,
      target: "heap ≤ raw + 512 B; timers ≤ raw's count (+ the client's one shared timer)",
      value: `heap ${fmt(c.ours.heapPerPendingCallBytes)} vs ${fmt(c.raw.heapPerPendingCallBytes)} B (${extra >= 0 ? "+" : ""}${extra} B); timers ${timersOurs} vs ${timersRaw} for ${c.ours.calls.toLocaleString("en-US")} calls`,
      met: extra <= 512 && timersOurs <= timersRaw + 1,
      raw: `${fmt(c.raw.heapPerPendingCallBytes)} B, ${timersRaw} timers`,
      wrapped: `${fmt(c.ours.heapPerPendingCallBytes)} B, ${timersOurs} timers`,
      ratio: Math.round((c.ours.heapPerPendingCallBytes / c.raw.heapPerPendingCallBytes) * 1_000) / 1_000,
    });
  }
  const s = r.scale.sequence;
  const seqV1 = lines.v1.cancelSequence;
  targets.push({
    ...ratioTarget(
      `${s.calls.toLocaleString("en-US")} calls cancelled in sequence (v1)`,
      "≤ 1.2 × raw per call; tombstones and heap flat",
      1.2,
      seqV1.ratio,
      `alternating chunks of ${seqV1.calls.toLocaleString("en-US")} calls: ${fmt(seqV1.oursUs)} vs ${fmt(seqV1.rawUs)} µs, CPU ${seqV1.cpuRatio}×; v2 legacy ${lines["v2-legacy"].cancelSequence.ratio}×, v2 2026 ${lines["v2-2026"].cancelSequence.ratio}×; the long run ${fmt(s.usPerCancelledCall)} µs per call, max ${s.tombstonesMax} tombstones (cap ${s.maxTombstones}), heap ${fmt(s.growthAfterFullMB)} MB after the table filled`,
      `${fmt(seqV1.rawUs)} µs`,
      `${fmt(seqV1.oursUs)} µs`,
    ),
  });
  const seqTarget = targets[targets.length - 1]!;
  const flat = s.tombstonesMax <= s.maxTombstones && Math.abs(s.growthAfterFullMB) <= 2 && s.pendingAfter === 0;
  if (seqTarget.met !== null) seqTarget.met = seqTarget.met && flat;
  const st = r.stdio;
  targets.push(
    ratioTarget(
      "stdio cancel latency, median",
      "≤ 1.1 × raw v1",
      1.1,
      st.ours.read.p50 / st.raw.read.p50,
      `${fmt(st.ours.read.p50)} vs ${fmt(st.raw.read.p50)} ms`,
      `${fmt(st.raw.read.p50)} ms`,
      `${fmt(st.ours.read.p50)} ms`,
    ),
    ratioTarget(
      "stdio cancel latency, p99",
      "≤ 1.5 × raw v1",
      1.5,
      st.ours.read.p99 / st.raw.read.p99,
      `${fmt(st.ours.read.p99)} vs ${fmt(st.raw.read.p99)} ms`,
      `${fmt(st.raw.read.p99)} ms`,
      `${fmt(st.ours.read.p99)} ms`,
    ),
  );
  const oursNotified = http.ours?.notified?.p50 ?? null;
  const rawNotified = http.raw.notified?.p50 ?? null;
  targets.push(
    ratioTarget(
      "2025-era HTTP (v1, stateful server): the notification reaches the server",
      "≤ 1.1 × raw v1",
      1.1,
      oursNotified !== null && rawNotified !== null ? oursNotified / rawNotified : null,
      `${fmt(oursNotified)} vs ${fmt(rawNotified)} ms (median); the stateless server is not part of this bench`,
      `${fmt(rawNotified)} ms`,
      `${fmt(oursNotified)} ms`,
    ),
    ratioTarget(
      "2025-era HTTP (v1): abort → the request's stream closed",
      "≤ 1.5 × bare fetch abort (raw v1 never closes it)",
      1.5,
      http.ours?.close?.p50 !== undefined && fetchHttp !== null ? http.ours.close.p50 / fetchHttp : null,
      `${fmt(http.ours?.close?.p50)} vs floor ${fmt(fetchHttp)} ms; the stream closes at the abort, the notification right after it (rule 40), not waited for; raw v1: ${http.raw.openAtCap}/${http.calls} streams still open at ${http.capMs} ms`,
      "never",
      `${fmt(http.ours?.close?.p50)} ms`,
    ),
    ratioTarget(
      "2025-era HTTP (v2, its own fetch): abort → the request's stream closed",
      "≤ 1.5 × bare fetch abort (raw v2 in the 2025-era never closes it)",
      1.5,
      http.oursLegacyV2?.close?.p50 !== undefined && fetchHttp !== null ? http.oursLegacyV2.close.p50 / fetchHttp : null,
      `${fmt(http.oursLegacyV2?.close?.p50)} vs floor ${fmt(fetchHttp)} ms`,
      "never",
      `${fmt(http.oursLegacyV2?.close?.p50)} ms`,
    ),
    ratioTarget(
      "2025-era HTTP (v2, its own fetch): the notification reaches the server",
      "≤ 1.1 × raw v2 in the 2025-era",
      1.1,
      http.oursLegacyV2?.notified?.p50 !== undefined && http.rawLegacyV2?.notified?.p50 !== undefined
        ? http.oursLegacyV2.notified.p50 / http.rawLegacyV2.notified.p50
        : null,
      `${fmt(http.oursLegacyV2?.notified?.p50)} vs ${fmt(http.rawLegacyV2?.notified?.p50)} ms (median)`,
      `${fmt(http.rawLegacyV2?.notified?.p50)} ms`,
      `${fmt(http.oursLegacyV2?.notified?.p50)} ms`,
    ),
    {
      name: "2025-era HTTP (v2, its own fetch), a JSON-response server: the notification after the abort (the request had arrived before it)",
      target: "≤ 20 ms",
      value: `${fmt(http.oursJsonV2?.notified?.p50)} ms median, ${fmt(http.oursJsonV2?.notified?.p99)} ms p99 (was the 250 ms wait for the headers)`,
      met: http.oursJsonV2?.notified === null || http.oursJsonV2?.notified === undefined ? null : http.oursJsonV2.notified.p50 <= 20,
      raw: "—",
      wrapped: `${fmt(http.oursJsonV2?.notified?.p50)} ms`,
      ratio: null,
    },
    ratioTarget(
      "2026-07-28 HTTP (v2 pinned): abort → the stream closed",
      "≤ 1.1 × raw v2 pinned",
      1.1,
      http.oursModern?.close?.p50 !== undefined && http.rawModern?.close?.p50 !== undefined
        ? http.oursModern.close.p50 / http.rawModern.close.p50
        : null,
      `${fmt(http.oursModern?.close?.p50)} vs ${fmt(http.rawModern?.close?.p50)} ms; bare fetch abort ${fmt(fetchHttp)} ms`,
      `${fmt(http.rawModern?.close?.p50)} ms`,
      `${fmt(http.oursModern?.close?.p50)} ms`,
    ),
    {
      name: "maximum-timeout lateness, median",
      target: "≤ 2 ms",
      value: `+${fmt(r.maxTimeout.ours.lateness.p50)} ms (raw v1 SDK +${fmt(r.maxTimeout.raw.lateness.p50)} ms, bare setTimeout +${fmt(r.maxTimeout.timerFloor.lateness.p50)} ms)`,
      met: r.maxTimeout.ours.lateness.p50 <= 2,
      raw: `+${fmt(r.maxTimeout.raw.lateness.p50)} ms`,
      wrapped: `+${fmt(r.maxTimeout.ours.lateness.p50)} ms`,
      ratio: null,
    },
  );
  return targets;
}

function row(cells: Array<string | number>): string {
  return `| ${cells.join(" | ")} |`;
}

function latencyRow(label: string, s: Summary | null, extra = ""): string {
  if (s === null) return row([label, "n/a", "n/a", "n/a", "n/a", extra]);
  return row([label, fmt(s.p50), fmt(s.p90), fmt(s.p99), fmt(s.max), extra]);
}

function httpRow(label: string, side: HttpSide | null, calls: number, cap: number): string {
  if (side === null) return row([label, "—", "—", "—", "—", "not measured"]);
  const open = side.openAtCap > 0 ? `${side.openAtCap}/${calls} still open at the ${cap} ms cap` : "";
  const notified = side.notified === null ? "" : `notification POST arrived p50 ${fmt(side.notified.p50)} ms`;
  return latencyRow(label, side.close, [open, notified].filter((x) => x.length > 0).join("; "));
}

/** The machine line used in results.md, the README draft and the chart's caption. */
export function machineLine(m: Machine): string {
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; ${m.os}; Node ${m.node}; ${m.sdk}`;
}

/** results.md */
export function markdown(r: Results): string {
  const o = r.overhead;
  const cOurs = r.scale.concurrent.ours;
  const cRaw = r.scale.concurrent.raw;
  const s = r.scale.sequence;
  const lines: string[] = [
    `# mcp-cancellable benchmark results (${r.mode} mode)`,
    "",
    `Machine: ${machineLine(r.machine)}.`,
    `Commit ${r.machine.commit}, ${r.machine.date}; library built with ${r.build}; tinybench ${r.machine.tinybench}; run took ${r.durationS} s.`,
    "Generated by `npm run bench" +
      (r.mode === "full" ? ":full" : "") +
      '`; do not edit by hand. Times in ms unless said; "raw" is the v1 SDK `Client` without this library.',
    "",
    "## Targets",
    "",
    `Load average (1, 5, 15 min) at the start ${r.load.start.map((x) => x.toFixed(2)).join(", ")}, at the end ${r.load.end.map((x) => x.toFixed(2)).join(", ")} on ${r.machine.cores} cores: wall-time ratios are noisy at this load; CPU ratios are given beside them.`,
    "",
    row(["what", "target", "raw", "wrapped", "ratio", "verdict", "details"]),
    row(["---", "---", "---:", "---:", "---:", "---", "---"]),
    ...r.targets.map((t) => row([t.name, t.target, t.raw, t.wrapped, t.ratio === null ? "—" : t.ratio.toFixed(3), mark(t.met), t.value])),
    "",
    "## 1. Per-call overhead (in-memory transport, trivial tool)",
    "",
    row(["run", "raw v1 SDK", "wrapped", "wrapped / raw", "overhead per call"]),
    row(["---", "---:", "---:", "---:", "---:"]),
    row([
      `${o.sequential.calls.toLocaleString("en-US")} sequential calls, wall mean`,
      `${fmt(o.sequential.raw.meanUs)} µs`,
      `${fmt(o.sequential.wrapped.meanUs)} µs`,
      `**${o.sequential.ratioNet}** (gross ${o.sequential.ratio})`,
      `${fmt(o.sequential.overheadUs)} µs`,
    ]),
    row([
      "sequential, wall p50 / p99",
      `${fmt(o.sequential.raw.p50Us)} / ${fmt(o.sequential.raw.p99Us)} µs`,
      `${fmt(o.sequential.wrapped.p50Us)} / ${fmt(o.sequential.wrapped.p99Us)} µs`,
      (o.sequential.wrapped.p50Us / o.sequential.raw.p50Us).toFixed(3),
      "",
    ]),
    row([
      "sequential, CPU time",
      `${fmt(o.sequential.raw.cpuUs)} µs`,
      `${fmt(o.sequential.wrapped.cpuUs)} µs`,
      String(o.sequential.cpuRatioNet),
      `${fmt(o.sequential.cpuOverheadUs)} µs`,
    ]),
    row([
      `${o.concurrent.batch.toLocaleString("en-US")} concurrent (${o.concurrent.batches} batches), wall per call`,
      `${fmt(o.concurrent.rawUsPerCall)} µs`,
      `${fmt(o.concurrent.wrappedUsPerCall)} µs`,
      String(o.concurrent.ratio),
      `${fmt(o.concurrent.overheadUs)} µs`,
    ]),
    row([
      "concurrent, CPU time per call",
      `${fmt(o.concurrent.rawCpuUsPerCall)} µs`,
      `${fmt(o.concurrent.wrappedCpuUsPerCall)} µs`,
      String(o.concurrent.cpuRatio),
      "",
    ]),
    "",
    `Net wall ratio of one chunk (its spread is the noise of this machine): p10 ${o.sequential.chunks.p10}, p50 ${o.sequential.chunks.p50}, p90 ${o.sequential.chunks.p90} over ${o.sequential.chunks.turns} chunks.`,
    `Method: ${o.method}. The loop's own cost per call: ${fmt(o.sequential.harnessUs)} µs wall, ${fmt(o.sequential.harnessCpuUs)} µs CPU.`,
    "",
  ];
  lines.push(
    "### Every SDK line, raw beside wrapped",
    "",
    "Each line in its own process phase, raw and wrapped alternating (ABBA); wall ratios net of the harness, CPU from `process.cpuUsage()`.",
    "",
    row(["line", "sequential raw", "wrapped", "ratio wall / CPU", "in flight raw", "wrapped", "ratio wall / CPU"]),
    row(["---", "---:", "---:", "---:", "---:", "---:", "---:"]),
    ...(
      [
        ["v1 SDK", r.overhead],
        ["v2 SDK, legacy era", r.overheadV2.legacy],
        ["v2 SDK pinned 2026-07-28", r.overheadV2.modern],
      ] as const
    ).map(([label, x]) =>
      row([
        `${label} (${x.sequential.calls.toLocaleString("en-US")} calls; ${x.concurrent.batch} in flight)`,
        `${fmt(x.sequential.raw.meanUs)} µs / CPU ${fmt(x.sequential.raw.cpuUs)}`,
        `${fmt(x.sequential.wrapped.meanUs)} µs / CPU ${fmt(x.sequential.wrapped.cpuUs)}`,
        `${x.sequential.ratioNet} / ${x.sequential.cpuRatioNet}`,
        `${fmt(x.concurrent.rawUsPerCall)} µs / CPU ${fmt(x.concurrent.rawCpuUsPerCall)}`,
        `${fmt(x.concurrent.wrappedUsPerCall)} µs / CPU ${fmt(x.concurrent.wrappedCpuUsPerCall)}`,
        `${x.concurrent.ratio} / ${x.concurrent.cpuRatio}`,
      ]),
    ),
    "",
  );
  if (r.profile !== null) {
    const top = Object.entries(r.profile.wrapped.owners).slice(0, 15);
    lines.push(
      "### Where the wrapped call's time goes (CPU profile)",
      "",
      `CPU per call: raw ${fmt(r.profile.raw.totalUsPerCall)} µs (GC ${fmt(r.profile.raw.gcUsPerCall)}), wrapped ${fmt(r.profile.wrapped.totalUsPerCall)} µs (GC ${fmt(r.profile.wrapped.gcUsPerCall)}), under the sampling profiler (which inflates both). Top owners of the wrapped run (zod, built-in and native frames charged to the caller):`,
      "",
      row(["owner", "µs per call"]),
      row(["---", "---:"]),
      ...top.map(([owner, us]) => row([`\`${owner}\``, fmt(us)])),
      "",
      "See bench/NOTES.md for the analysis.",
      "",
    );
  }
  lines.push(
    "## 2. Cancel latency: abort → the server observes the cancel",
    "",
    `### stdio (${r.stdio.calls} calls per side)`,
    "",
    row(["side", "p50", "p90", "p99", "max", "notes"]),
    row(["---", "---:", "---:", "---:", "---:", "---"]),
    latencyRow("ours: server read the notification", r.stdio.ours.read, `caller released p50 ${fmt(r.stdio.ours.callerReleased.p50)} ms`),
    latencyRow(
      "raw v1 SDK: server read the notification",
      r.stdio.raw.read,
      `caller released p50 ${fmt(r.stdio.raw.callerReleased.p50)} ms`,
    ),
    latencyRow("ours: tool's signal aborted", r.stdio.ours.toolAborted),
    latencyRow("raw v1 SDK: tool's signal aborted", r.stdio.raw.toolAborted),
    "",
    `Caller sees: ours \`${r.stdio.ours.error}\`; raw \`${r.stdio.raw.error}\`.`,
    `Clock cross-check (server − client): ours ${fmt(r.stdio.ours.clockOffsetMs)} ± ${fmt(r.stdio.ours.clockErrorMs)} ms, raw ${fmt(r.stdio.raw.clockOffsetMs)} ± ${fmt(r.stdio.raw.clockErrorMs)} ms.`,
    `Method: ${r.stdio.method}.`,
    "",
    `### Streamable HTTP (${r.http.calls} calls per side)`,
    "",
    row(["side", "p50", "p90", "p99", "max", "notes"]),
    row(["---", "---:", "---:", "---:", "---:", "---"]),
    httpRow("bare fetch abort (floor)", r.http.fetch, r.http.calls, r.http.capMs),
    httpRow("2026-07-28 · ours (v2 SDK pinned): stream closed", r.http.oursModern, r.http.calls, r.http.capMs),
    httpRow("2026-07-28 · raw v2 SDK pinned: stream closed", r.http.rawModern, r.http.calls, r.http.capMs),
    httpRow("2025-era · ours (v1 SDK): stream closed", r.http.ours, r.http.calls, r.http.capMs),
    httpRow("2025-era · raw v1 SDK: stream closed", r.http.raw, r.http.calls, r.http.capMs),
    "",
    ...(r.http.oursMissing === null ? [] : [`Ours not measured: ${r.http.oursMissing}.`, ""]),
    "In the 2025-era the cancel is `notifications/cancelled` POSTed first, and ours closes the stream once the server answered it (202), at most `flushTimeoutMs` (250 ms) later (rule 40): the notification column is when the server learnt of the cancel. On 2026-07-28 the stream close is the cancel and nothing else is sent.",
    "",
    `Caller sees: raw v1 \`${r.http.raw.error}\`; raw v2 \`${r.http.rawModern?.error ?? "n/a"}\`${r.http.ours === null ? "" : `; ours \`${r.http.ours.error}\``}.`,
    `Method: ${r.http.method}.`,
    "",
    "![cancel latency](cancel-latency.svg)",
    "",
    `## 3. Maximum-timeout precision (${r.maxTimeout.calls} calls per side, progress every ${r.maxTimeout.progressEveryMs} ms)`,
    "",
    row(["side", "lateness p50", "p90", "p99", "max", "settled with"]),
    row(["---", "---:", "---:", "---:", "---:", "---"]),
    row([
      "ours (`maxTotalTimeoutMs`)",
      fmt(r.maxTimeout.ours.lateness.p50),
      fmt(r.maxTimeout.ours.lateness.p90),
      fmt(r.maxTimeout.ours.lateness.p99),
      fmt(r.maxTimeout.ours.lateness.max),
      `\`${r.maxTimeout.ours.error}\``,
    ]),
    row([
      "raw v1 SDK (`maxTotalTimeout`)",
      fmt(r.maxTimeout.raw.lateness.p50),
      fmt(r.maxTimeout.raw.lateness.p90),
      fmt(r.maxTimeout.raw.lateness.p99),
      fmt(r.maxTimeout.raw.lateness.max),
      `\`${r.maxTimeout.raw.error}\``,
    ]),
    row([
      "bare `setTimeout` (floor)",
      fmt(r.maxTimeout.timerFloor.lateness.p50),
      fmt(r.maxTimeout.timerFloor.lateness.p90),
      fmt(r.maxTimeout.timerFloor.lateness.p99),
      fmt(r.maxTimeout.timerFloor.lateness.max),
      "",
    ]),
    "",
    `Method: ${r.maxTimeout.method}.`,
    "",
    "## 4. Scale",
    "",
    `### ${cOurs.calls.toLocaleString("en-US")} pending calls cancelled at once (one shared AbortController)`,
    "",
    row(["", "ours", "raw v1 SDK"]),
    row(["---", "---:", "---:"]),
    row(["abort() → all settled", `${fmt(cOurs.settleAllMs)} ms`, `${fmt(cRaw.settleAllMs)} ms`]),
    row(["heap per pending call", `${fmt(cOurs.heapPerPendingCallBytes)} B`, `${fmt(cRaw.heapPerPendingCallBytes)} B`]),
    row([
      "heap retained afterwards",
      `${fmt(cOurs.heapRetainedAfterBytes / 2 ** 20)} MB`,
      `${fmt(cRaw.heapRetainedAfterBytes / 2 ** 20)} MB`,
    ]),
    row([
      "timers etc. while pending (beyond baseline)",
      `\`${JSON.stringify(cOurs.resourcesWhilePending)}\``,
      `\`${JSON.stringify(cRaw.resourcesWhilePending)}\``,
    ]),
    row(["resources left afterwards", `\`${JSON.stringify(cOurs.resourcesLeft)}\``, `\`${JSON.stringify(cRaw.resourcesLeft)}\``]),
    row(["abort listeners left on the shared signal", cOurs.listenersLeftOnSignal, cRaw.listenersLeftOnSignal]),
    row(["pending / tombstones / records afterwards", `${cOurs.pendingAfter} / ${cOurs.tombstonesAfter} / ${cOurs.recordsAfter}`, "—"]),
    row(["notifications/cancelled sent", cOurs.cancelsSent, cRaw.cancelsSent]),
    "",
    "### Every SDK line: cancel all at once, timeouts together, cancels in sequence",
    "",
    row([
      "line",
      "aborted at once: all settled, raw / ours",
      "heap per pending call, raw / ours",
      "timers while pending, raw / ours",
      "timeouts together: last settles after its deadline, raw / ours",
      "cancelled in sequence, per call, raw / ours (ratio wall, CPU)",
    ]),
    row(["---", "---:", "---:", "---:", "---:", "---:"]),
    ...(["v1", "v2-legacy", "v2-2026"] as const).map((line) => {
      const x = r.scale.lines[line];
      return row([
        line,
        `${fmt(x.concurrent.raw.settleAllMs)} / ${fmt(x.concurrent.ours.settleAllMs)} ms`,
        `${fmt(x.concurrent.raw.heapPerPendingCallBytes)} / ${fmt(x.concurrent.ours.heapPerPendingCallBytes)} B`,
        `${x.concurrent.raw.resourcesWhilePending.Timeout ?? 0} / ${x.concurrent.ours.resourcesWhilePending.Timeout ?? 0}`,
        `+${fmt(x.timeouts.raw.latenessMaxMs)} / +${fmt(x.timeouts.ours.latenessMaxMs)} ms (${x.timeouts.ours.calls.toLocaleString("en-US")} calls of ${x.timeouts.ours.timeoutMs} ms, made over ${fmt(x.timeouts.ours.spreadMs)} ms)`,
        `${fmt(x.cancelSequence.rawUs)} / ${fmt(x.cancelSequence.oursUs)} µs (${x.cancelSequence.ratio}, ${x.cancelSequence.cpuRatio})`,
      ]);
    }),
    "",
    "On the v2 lines the peer is a v2 McpServer whose tool waits for the cancel (its memory counts on both sides alike); on v1 it is the silent peer. " +
      "The v2 peer is in memory, so its work on each notifications/cancelled (a zod parse, the tool's abort) runs on the client's thread: both sides send one a call, " +
      "but raw settles every call in the abort's one listener run and most of that work comes after its last settle, while ours settles in slices (the loop is never held " +
      "longer than one) and the peer's work on each slice's notifications runs between them, inside ours' figure. " +
      `Ours with the peer dropping them unread, aborted at once: ${(["v2-legacy", "v2-2026"] as const)
        .map((line) => {
          const c = r.scale.lines[line].concurrent;
          return c.oursPeerDrops === undefined ? `${line} not measured` : `${line} ${fmt(c.oursPeerDrops.settleAllMs)} ms`;
        })
        .join(", ")}.`,
    "",
    `### ${s.calls.toLocaleString("en-US")} calls cancelled in sequence`,
    "",
    `Driver: ${s.driver}. ${fmt(s.usPerCancelledCall)} µs per cancelled call (wall, including the heap samples); the raw v1 SDK doing the same: ${fmt(s.rawUsPerCancelledCall)} µs (over ${s.rawCalls.toLocaleString("en-US")} calls).`,
    "",
    row(["calls", ...s.heapMB.map((_, i) => (i * s.sampleEvery).toLocaleString("en-US"))]),
    row(["---", ...s.heapMB.map(() => "---:")]),
    row(["heap (MB)", ...s.heapMB.map((v) => fmt(v))]),
    row(["tombstones", ...s.tombstones.map((v) => String(v))]),
    "",
    `Tombstones never above ${s.tombstonesMax} (cap ${s.maxTombstones}); heap growth after the table filled: ${fmt(s.growthAfterFullMB)} MB; pending afterwards ${s.pendingAfter}; resources left \`${JSON.stringify(s.resourcesLeft)}\`.`,
    `Method: ${r.scale.method}.`,
    "",
  );
  return lines.join("\n");
}

// ---------------------------------------------------------------- the chart

interface Series {
  label: string;
  sub: string;
  color: string;
  samples: number[];
  /** Samples at or above this value are streams still open at the cap. */
  cap?: number;
  missing?: string;
}

const escapeXml = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

function seriesOf(r: Results): Series[] {
  const http = r.http;
  return [
    { label: "stdio · ours", sub: "server read notifications/cancelled", color: "#1f77b4", samples: r.stdio.ours.samples },
    { label: "stdio · raw v1 SDK", sub: "server read notifications/cancelled", color: "#ff7f0e", samples: r.stdio.raw.samples },
    { label: "HTTP · bare fetch abort", sub: "server response 'close' (floor)", color: "#7f7f7f", samples: http.fetch.samples },
    httpSeries("HTTP 2026-07-28 · ours", "v2 SDK pinned: response 'close'", "#1f77b4", http.oursModern, http),
    httpSeries("HTTP 2026-07-28 · raw v2 SDK", "pinned: response 'close'", "#ff7f0e", http.rawModern, http),
    httpSeries("HTTP 2025 · ours", "v1 SDK: notification, then 'close'", "#1f77b4", http.ours, http),
    httpSeries("HTTP 2025 · raw v1 SDK", "response 'close'", "#ff7f0e", http.raw, http),
  ];
}

function httpSeries(label: string, sub: string, color: string, side: HttpSide | null, http: HttpResult): Series {
  if (side === null) return { label, sub, color, samples: [], missing: http.oursMissing ?? "not measured" };
  return { label, sub, color, samples: side.samples, cap: http.capMs };
}

/** A deterministic jitter in [-1, 1] for the i-th dot (no randomness: the SVG is reproducible). */
const jitter = (i: number): number => (((i * 2654435761) % 1000) / 1000) * 2 - 1;

/**
 * The cancel-latency chart, hand-written SVG: one row per side, every call a dot on a log
 * scale (ms), the interquartile box, the median tick, the p99 diamond; streams still open at
 * the cap are drawn at the cap with an arrow. The caption names the machine and Node version.
 */
export function svg(r: Results): string {
  const series = seriesOf(r);
  const width = 960;
  const left = 230;
  const right = 200;
  const top = 64;
  const rowHeight = 58;
  const plotWidth = width - left - right;
  const height = top + series.length * rowHeight + 108;
  const all = series.flatMap((s) => s.samples).filter((v) => v > 0);
  const lo = 10 ** Math.floor(Math.log10(Math.max(1e-3, Math.min(...all, 0.1))));
  // The smallest 1-2-5 step at or above 1.3 × the largest sample.
  const ladder = (v: number): number => {
    const decade = 10 ** Math.floor(Math.log10(v));
    return [1, 2, 5, 10].map((m) => m * decade).find((step) => step >= v)!;
  };
  const hi = ladder(Math.max(...all, 10) * 1.3);
  const label = (v: number): string => (v >= 1_000 ? `${v / 1_000}k` : v >= 1 ? String(v) : v.toPrecision(1));
  const x = (v: number): number => {
    const clamped = Math.min(Math.max(v, lo), hi);
    return left + ((Math.log10(clamped) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotWidth;
  };
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="${left}" y="24" font-size="16" font-weight="600" fill="#222">Cancel latency: abort() → the server observes the cancel (ms, log scale)</text>`,
    `<text x="${left}" y="44" fill="#555">dots: each call · box: p25–p75 · bar: median · ◆: p99 · ▶: stream still open at the ${r.http.capMs} ms cap</text>`,
  );
  // grid
  for (let decade = Math.log10(lo); decade <= Math.log10(hi) + 1e-9; decade++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** decade;
      if (v < lo * 0.999 || v > hi * 1.001) continue;
      const gx = x(v).toFixed(1);
      parts.push(
        `<line x1="${gx}" y1="${top - 6}" x2="${gx}" y2="${top + series.length * rowHeight}" stroke="${m === 1 ? "#d0d0d0" : "#eeeeee"}"/>`,
      );
      parts.push(`<text x="${gx}" y="${top + series.length * rowHeight + 16}" text-anchor="middle" fill="#555">${label(v)}</text>`);
    }
  }
  parts.push(
    `<text x="${left + plotWidth / 2}" y="${top + series.length * rowHeight + 34}" text-anchor="middle" fill="#333">ms after abort()</text>`,
  );
  series.forEach((s, index) => {
    const cy = top + index * rowHeight + rowHeight / 2;
    if (index % 2 === 0) parts.push(`<rect x="0" y="${cy - rowHeight / 2}" width="${width}" height="${rowHeight}" fill="#f7f7f9"/>`);
    parts.push(`<text x="${left - 12}" y="${cy - 2}" text-anchor="end" font-weight="600" fill="${s.color}">${escapeXml(s.label)}</text>`);
    parts.push(`<text x="${left - 12}" y="${cy + 13}" text-anchor="end" fill="#666" font-size="11">${escapeXml(s.sub)}</text>`);
    if (s.samples.length === 0) {
      parts.push(`<text x="${left + 8}" y="${cy + 4}" fill="#999" font-style="italic">${escapeXml(s.missing ?? "no data")}</text>`);
      return;
    }
    const sorted = [...s.samples].sort((a, b) => a - b);
    const p25 = quantile(sorted, 0.25);
    const p50 = quantile(sorted, 0.5);
    const p75 = quantile(sorted, 0.75);
    const p99 = quantile(sorted, 0.99);
    const open = s.cap === undefined ? 0 : sorted.filter((v) => v >= s.cap!).length;
    s.samples.forEach((v, i) => {
      const atCap = s.cap !== undefined && v >= s.cap;
      const cx = x(v).toFixed(1);
      const dy = (cy + jitter(i) * 14).toFixed(1);
      if (atCap) parts.push(`<path d="M ${cx} ${dy} l -7 -4 l 0 8 z" fill="${s.color}" fill-opacity="0.35"/>`);
      else parts.push(`<circle cx="${cx}" cy="${dy}" r="2.6" fill="${s.color}" fill-opacity="0.35"/>`);
    });
    parts.push(
      `<rect x="${x(p25).toFixed(1)}" y="${cy - 18}" width="${Math.max(1, x(p75) - x(p25)).toFixed(1)}" height="36" fill="none" stroke="${s.color}" stroke-width="1.5"/>`,
    );
    parts.push(
      `<line x1="${x(p50).toFixed(1)}" y1="${cy - 20}" x2="${x(p50).toFixed(1)}" y2="${cy + 20}" stroke="${s.color}" stroke-width="3"/>`,
    );
    const dx = x(p99);
    parts.push(`<path d="M ${dx.toFixed(1)} ${cy - 26} l 5 5 l -5 5 l -5 -5 z" fill="${s.color}"/>`);
    const summary =
      open === sorted.length
        ? `all ${open} open at ${s.cap} ms`
        : `p50 ${fmt(Number(p50.toPrecision(3)))} · p99 ${fmt(Number(p99.toPrecision(3)))} ms${open > 0 ? ` · ${open} open at cap` : ""}`;
    parts.push(`<text x="${left + plotWidth + 12}" y="${cy + 4}" fill="#222">${escapeXml(summary)}</text>`);
    parts.push(`<text x="${left + plotWidth + 12}" y="${cy + 18}" fill="#777" font-size="11">n = ${sorted.length}</text>`);
  });
  const m = r.machine;
  const captionY = top + series.length * rowHeight + 58;
  parts.push(
    `<text x="12" y="${captionY}" fill="#444">${escapeXml(`${m.cpu}, ${m.cores} cores · Node ${m.node} · ${m.sdk} · ${r.mode} mode · ${m.date.slice(0, 10)} · commit ${m.commit}`)}</text>`,
    `<text x="12" y="${captionY + 18}" fill="#777" font-size="11">${escapeXml("stdio: abort() → the child-process server read notifications/cancelled (both processes timestamp with performance.timeOrigin + performance.now()).")}</text>`,
    `<text x="12" y="${captionY + 33}" fill="#777" font-size="11">${escapeXml("HTTP: abort() → the server's response 'close' (server and client in one process, one clock). 2025-era: v1 SDK; 2026-07-28: v2 SDK pinned.")}</text>`,
    `</svg>`,
  );
  return `${parts.join("\n")}\n`;
}
