import { fileURLToPath } from "node:url";
import { main } from "../../src/cli/main.js";
import type { Check, CheckId, Status } from "../../src/cli/checks.js";

/** Absolute path of a probe fixture. */
export const probeFixture = (name: string): string => fileURLToPath(new URL(`../fixtures/probe/${name}`, import.meta.url));

/** `node <fixture> <flags>` as a --stdio command line (paths quoted). */
export const nodeCommand = (script: string, ...flags: string[]): string =>
  [JSON.stringify(process.execPath), JSON.stringify(script), ...flags].join(" ");

/** Short windows keep the tests fast; the grace stays at its default. */
export const FAST = ["--window", "400", "--timeout", "3000"];

/** A check as `--json` prints it: the CLI's own `Check`. */
export type CheckJson = Check;

export interface ProbeJson {
  ok: boolean;
  exitCode: number;
  summary: Record<Status, number>;
  checks: CheckJson[];
  timeline: Array<{ seq: number; atMs: number; from: string; kind: string; text: string; message?: Record<string, unknown> }>;
  call: {
    tool: string;
    requestId: number | string;
    cancelAtMs: number | null;
    windowEndMs: number;
    record: { summary: string } | null;
  } | null;
  error?: { kind: string; message: string; details: string[] };
  anomalies: string[];
  clientErrors: string[];
  diagnosis: string[];
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `mcp-cancellable <argv>` in this process (the servers are real child processes). */
export async function cli(argv: string[]): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const start = performance.now();
  const code = await main(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) });
  return { code, stdout, stderr, ms: performance.now() - start };
}

/** Runs `mcp-cancellable probe <argv> --json` and parses the report. */
export async function probeJson(argv: string[]): Promise<CliResult & { json: ProbeJson }> {
  const result = await cli(["probe", ...argv, "--json"]);
  let json: ProbeJson;
  try {
    json = JSON.parse(result.stdout) as ProbeJson;
  } catch {
    throw new Error(`not JSON (exit ${result.code}): ${result.stdout}\n${result.stderr}`);
  }
  return { ...result, json };
}

/** `{checkId: status}` of a report. */
export function statuses(json: ProbeJson): Record<CheckId, Status> {
  return Object.fromEntries(json.checks.map((check) => [check.id, check.status])) as Record<CheckId, Status>;
}

export function check(json: ProbeJson, id: CheckId): CheckJson {
  const found = json.checks.find((candidate) => candidate.id === id);
  if (found === undefined) throw new Error(`no check ${id}`);
  return found;
}

/** The checks' verdicts and summaries, as the message of a failed assertion. */
export function why(json: ProbeJson): string {
  return json.checks.map((c) => `${c.status} ${c.id}: ${c.summary}`).join("\n");
}
