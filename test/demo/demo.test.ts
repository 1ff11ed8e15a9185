import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/index.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `npm run demo` as a user would, with the servers' stderr on (DEMO_VERBOSE=1); at most 55 s. */
function runDemo(): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      "npm",
      ["run", "--silent", "demo"],
      { cwd: root, env: { ...process.env, DEMO_VERBOSE: "1" }, timeout: 55_000, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe("npm run demo (the worked example, against real stdio servers)", () => {
  it("exits 0, prints the worked example's three outcomes and the server-everything run, and records them", async () => {
    const { code, stdout, stderr } = await runDemo();
    expect(code, `stdout:\n${stdout}\nstderr:\n${stderr}`).toBe(0);

    // One summary line per call, in order.
    const summaries = stdout.split("\n").filter((line) => /^\[[a-f]\] /.test(line));
    expect(summaries.map((line) => line.replace(/\s+/g, " "))).toEqual([
      "[a] generate_quarterly_summary cancelled (timeout), verified not applied",
      "[b] generate_quarterly_summary cancelled (timeout), late result discarded",
      "[c] generate_quarterly_summary cancelled (timeout), verified applied",
      "[d] trigger-long-running-operation cancelled (aborted), outcome unverified",
      "[e] echo succeeded",
      "[f] generate_quarterly_summary cancelled (max-total-timeout), task cancelled by the server",
      "[f] generate_quarterly_summary cancelled (max-total-timeout), task cancelled by the server",
    ]);
    expect(stdout).toContain("OK: every record is what the worked example says it should be.");
    // Words a new user can follow: how the cases run, no Node internals, no project jargon.
    expect(stdout).toContain("Cases [a] to [d] run at the same time, each on its own connection");
    expect(stdout).not.toMatch(/writableFinished|seed/i);
    // What each HTTP server saw prints in the order it happened.
    const serverLines = stdout.split("\n").filter((line) => line.trimStart().startsWith("server: "));
    expect(serverLines).toHaveLength(2);
    for (const line of serverLines) {
      const times = [...line.matchAll(/at \+(\d+) ms/g)].map((m) => Number(m[1]));
      expect(times.length, line).toBeGreaterThanOrEqual(2);
      expect(times, line).toEqual([...times].sort((x, y) => x - y));
    }

    // The run records, as JSON Lines: one per call, in the same order.
    const records = stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as RunRecord);
    expect(records.map((r) => r.outcome)).toEqual([
      "verified-not-applied",
      "late-result-discarded",
      "verified-applied",
      "unverified",
      "completed",
      "task-cancelled",
      "task-cancelled",
    ]);
    const [a, b, c, d] = records as [RunRecord, RunRecord, RunRecord, RunRecord];
    for (const r of [a, b, c]) {
      expect(r.cancel).toMatchObject({ trigger: "timeout", mechanism: "notification", reason: "exceeded 800ms budget" });
    }
    expect([a.late.results, b.late.results, c.late.results]).toEqual([0, 1, 0]);
    expect(b.revision).toBeGreaterThanOrEqual(1); // updated when the late result landed
    expect(d.cancel).toMatchObject({ trigger: "aborted", mechanism: "notification" });
    expect(d.progress.count).toBe(2);
    expect(d.late.progress).toBeGreaterThan(0);
    expect(d.late.results).toBe(0);

    // The servers saw what the worked example describes. Each read exactly one cancel, with the request's id
    // and the reason; (a) stopped and wrote nothing; (b) wrote its report and answered before it
    // read the cancel; (c) wrote its report after the cancel.
    for (const mode of ["stop", "late", "ignore"]) {
      const cancels = stderr.split("\n").filter((line) => line.startsWith(`[report-server ${mode}] read notifications/cancelled`));
      expect(cancels, mode).toEqual([
        `[report-server ${mode}] read notifications/cancelled {"requestId":1,"reason":"exceeded 800ms budget"}`,
      ]);
    }
    expect(stderr).toMatch(/\[report-server stop\] request 1: the tool's signal aborted: exceeded 800ms budget/);
    expect(stderr).not.toMatch(/\[report-server stop\] request 1: wrote/);
    const late = stderr.split("\n").filter((line) => line.startsWith("[report-server late]"));
    const wrote = late.findIndex((line) => line.includes("request 1: wrote "));
    expect(wrote).toBeGreaterThanOrEqual(0);
    expect(late.findIndex((line) => line.includes("read notifications/cancelled"))).toBeGreaterThan(wrote);
    expect(stderr).toMatch(/\[report-server ignore\] request 1: wrote \S+ \(after the cancel\)/);

    // (f) The task: exactly one tasks/cancel naming it, no notifications/cancelled (rules 2, 35).
    const f = records[5]!;
    expect(f.cancel).toMatchObject({ trigger: "max-total-timeout", mechanism: "tasks/cancel" });
    expect(f.task).toMatchObject({ status: "cancelled", revision: "2025-11-25" });
    const taskCancels = stderr.split("\n").filter((line) => /^\[task-server\] read (tasks\/cancel|notifications\/cancelled)/.test(line));
    expect(taskCancels).toEqual([`[task-server] read tasks/cancel {"taskId":"${f.task!.taskId}"}`]);
    expect(stderr).toMatch(/\[task-server\] task \S+: cancelled, stopped at step \d of 8, nothing written/);
    expect(stdout).toContain("OK: each task's record says what became of it.");

    // (f) The task cancelled before its id was known: no notifications/cancelled for a task's
    // tools/call (rules 2, 35, 36); its late CreateTaskResult gets exactly one tasks/cancel; the
    // record names the task and says the server cancelled it.
    const g = records[6]!;
    expect(g.cancel).toMatchObject({ trigger: "max-total-timeout", mechanism: "tasks/cancel", reason: "exceeded 800ms budget" });
    expect(g.task).toMatchObject({ status: "cancelled", revision: "2025-11-25", createdAfterCancel: true });
    expect(g.task!.taskId).not.toBe(f.task!.taskId);
    expect(f.task!.createdAfterCancel).toBeUndefined();
    const slow = stderr
      .split("\n")
      .filter((line) => /^\[task-server slow-to-answer\] (read |task \S+: (answering|cancelled|wrote))/.test(line))
      .map((line) => line.replace(/step \d of/, "step N of"));
    expect(slow).toEqual([
      `[task-server slow-to-answer] task ${g.task!.taskId}: answering the tools/call with the task, 1600 ms late`,
      `[task-server slow-to-answer] read tasks/cancel {"taskId":"${g.task!.taskId}"}`,
      `[task-server slow-to-answer] task ${g.task!.taskId}: cancelled, stopped at step N of 8, nothing written`,
    ]);
    expect(stdout).toContain("the record names the task (task.createdAfterCancel: true)");

    // The temporary report directory is gone.
    const written = /wrote (\S+)/.exec(stderr)?.[1];
    expect(written).toBeDefined();
    expect(existsSync(dirname(dirname(written!)))).toBe(false);
  }, 60_000);
});
