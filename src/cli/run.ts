// What one probe run saw, before it is judged: shared by probe.ts (which fills it in) and
// checks.ts (which judges it), so that neither imports the other.
import type { RunRecord } from "../types/record.js";
import type { ProbeOptions } from "./args.js";
import type { WireEvent } from "./recorder.js";
import type { Message } from "../wire/messages.js";

/** How a stdio server went away on its own. */
export interface ServerLost {
  /** After "the server": `exited with code 5`, `was killed by SIGKILL`, `closed its stdout`. */
  how: string;
  /** Its process still ran (it closed a pipe, not exited): the probe stops it. */
  running: boolean;
}

/** `the server exited with code 5 during the probe`: `when` follows `how`; a process still running says the probe stops it. */
export function lostText(lost: ServerLost, when: string): string {
  return `the server ${lost.how} ${when}${lost.running ? " (its process was still running; the probe stops it)" : ""}`;
}

/** A tool as `tools/list` describes it (the fields the probe reads). */
export interface ToolInfo {
  name: string;
  description?: string;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; destructiveHint?: boolean };
  inputSchema?: { required?: string[] };
}

/** How a request the probe sent ended. */
export interface Exchange {
  method: string;
  id: string | number | undefined;
  sentAt: number;
  /** When it ended (answer, error, timeout, close), ms on the timeline. */
  endedAt: number;
  outcome: "result" | "error" | "timeout" | "closed" | "not-sent";
  text: string;
  /** When the server's answer (result or error) for its id arrived on the wire, ms on the timeline. */
  answeredAt?: number | undefined;
}

/** CPU time of the stdio server's process group, in ms, read at the moments the checks compare. */
export interface CpuWatch {
  /** At the `tools/call`, at the cancel, when the after-cancel watch starts, at the end of the window. */
  at: { call: number; cancel: number; watchFrom: number; end: number };
  /** The CPU time used by then, in ms (10 ms resolution). */
  cpuMs: { call: number; cancel: number; watchFrom: number; end: number };
}

/** The tool call the probe cancels, and what happened around the cancel. */
export interface MainCancel {
  tool: string;
  args: Record<string, unknown>;
  /** Why this tool was chosen. */
  chosen: string;
  id: string | number | undefined;
  progressToken: string | number | undefined;
  sentAt: number;
  /** When the cancel went out (the notification, or the stream close), or undefined if the call ended first. */
  cancelAt: number | undefined;
  /** The end of the observation window. */
  windowEnd: number;
  /** The call ended before the cancel: how. */
  endedBeforeCancel: { at: number; how: "result" | "tool-error" | "error" | "closed"; text: string } | undefined;
  record: RunRecord | undefined;
  /**
   * The cheap request (`tools/list`) sent on the same connection right after the cancel (on 2025
   * HTTP, once the cancel's POST was answered). A server that answered it had read the cancel:
   * what it sends for the cancelled id after that answer is a violation, what came before may
   * have crossed the cancel (rule 9). Its latency, against `ProbeRun.baseline`, shows whether the
   * cancelled work holds the queue.
   */
  fence: Exchange | undefined;
  /** The server process's CPU time around the cancel (stdio on Linux only). */
  cpu: CpuWatch | undefined;
}

/** Two concurrent calls of the tool, each with its own progress token; `a` is cancelled, `b` is not. */
export interface ConcurrentRun {
  a: ConcurrentCall;
  b: ConcurrentCall;
  /** When `a` was cancelled. */
  cancelAt: number;
  /** The end of the watch (the window after the cancel, or `b`'s end if sooner). */
  windowEnd: number;
  /** Set when the scenario could not run (with the reason). */
  skipped?: string;
}

/** One of the concurrent calls: its id and token as sent, and how it ended. */
export interface ConcurrentCall {
  id: string | number | undefined;
  progressToken: string | number | undefined;
  sentAt: number;
  /** How it ended: `running` when it was still running at the end of the watch (then it was cancelled). */
  end: { at: number; how: "result" | "tool-error" | "error" | "closed" | "cancelled" | "running"; text: string };
}

/** What each of two extra sessions received (2025-era HTTP servers with sessions). */
export interface SessionsRun {
  /** The request id both sessions used for their `tools/call`. */
  requestId: number;
  sessions: Array<{
    label: "A" | "B";
    sessionId: string | undefined;
    progressToken: string;
    /** Every message the session received after its `initialize` answer, with its time. */
    received: Array<{ at: number; message: Message }>;
  }>;
  /** When session A's call was cancelled. */
  cancelAt: number;
  windowEnd: number;
  /** Set when the scenario could not run (with the reason). */
  skipped?: string;
}

/** A cancel the probe sends on purpose for a request the server cannot be running (rules 9, 10). */
export interface RawCancel {
  kind: "completed" | "unknown";
  requestId: string | number;
  cancelAt: number;
  windowEnd: number;
  followUp: Exchange | undefined;
  /** Set when the scenario could not run (with the reason). */
  skipped?: string;
  /** Set when sending the cancel failed (an HTTP 4xx/5xx for the POST, or a closed pipe). */
  sendError?: string;
  /**
   * The request sent first, to wait until the server serves again (a server still busy with
   * earlier cancelled work would otherwise look as if the stray cancel had stopped it).
   */
  fence?: Exchange;
  /** Set when the fence got no answer: the server was busy, so no stray cancel was sent. */
  busy?: string;
}

/** Everything one probe run saw, before judging it. */
export interface ProbeRun {
  options: ProbeOptions;
  transport: "stdio" | "http";
  era: ProbeOptions["era"];
  protocolVersion: string | undefined;
  serverInfo: { name?: string; version?: string } | undefined;
  cancelMechanism: string;
  events: WireEvent[];
  droppedEvents: number;
  /** The same cheap request (`tools/list`) before the call: the latency the fence is compared with. */
  baseline: Exchange | undefined;
  main: MainCancel | undefined;
  survive: Exchange | undefined;
  concurrent: ConcurrentRun | undefined;
  sessions: SessionsRun | undefined;
  cancelCompleted: RawCancel | undefined;
  cancelUnknown: RawCancel | undefined;
  /** The connection closed during the run, at this time. */
  closedAt: number | undefined;
  /**
   * How a stdio server went away on its own during the run (it exited, or closed its stdout and
   * kept running), when the connection closed; absent otherwise (and over HTTP).
   */
  lost?: ServerLost | undefined;
  /** What the SDK client reported to its `onerror` during the run. */
  clientErrors: string[];
  /** The wire anomalies the library (`onAnomaly`) reported during the run. */
  anomalies: string[];
  diagnosis: string[];
}
