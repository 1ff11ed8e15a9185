// What one probe run saw, before it is judged: shared by probe.ts (which fills it in) and
// checks.ts (which judges it), so that neither imports the other.
import type { RunRecord } from "../types/record.js";
import type { ProbeOptions } from "./args.js";
import type { WireEvent } from "./recorder.js";

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
  main: MainCancel | undefined;
  survive: Exchange | undefined;
  cancelCompleted: RawCancel | undefined;
  cancelUnknown: RawCancel | undefined;
  /** The connection closed during the run, at this time. */
  closedAt: number | undefined;
  /** What the SDK client reported to its `onerror` during the run. */
  clientErrors: string[];
  /** The wire anomalies the library (`onAnomaly`) reported during the run. */
  anomalies: string[];
  diagnosis: string[];
}
