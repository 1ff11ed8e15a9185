import { describe, expect, it } from "vitest";
import type { CheckId } from "../../src/cli/checks.js";
import { check, FAST, nodeCommand, probeFixture, probeJson, statuses } from "./helpers.js";

const rawServer = (...flags: string[]) => nodeCommand(probeFixture("raw-server.mjs"), ...flags);

/** Runs the raw fixture with `flag` and expects exactly the checks in `fails` to FAIL. */
async function expectFails(flag: string, fails: CheckId[]) {
  const { code, json } = await probeJson(["--stdio", rawServer(flag), ...FAST]);
  const s = statuses(json);
  const failed = Object.entries(s).filter(([, status]) => status === "FAIL").map(([id]) => id);
  expect(failed.sort()).toEqual([...fails].sort());
  expect(code).toBe(1);
  expect(json.ok).toBe(false);
  return json;
}

describe("probe: a misbehaving stdio server for each FAIL path", () => {
  it("answers after the cancel: silent-after-cancel FAILs (rules 6, 11); its progress stopped, so work-stops PASSes", async () => {
    const json = await expectFails("--late-result", ["silent-after-cancel"]);
    expect(statuses(json)["work-stops"]).toBe("PASS");
    const silent = check(json, "silent-after-cancel");
    expect(silent.rules).toEqual([6, 11]);
    expect(silent.summary).toMatch(/1 result/);
    const late = json.timeline.find((e) => e.seq === silent.events[0])!;
    expect(late.message?.result).toBeDefined();
    expect(late.atMs).toBeGreaterThan(json.call!.cancelAtMs!);
  });

  it("ignores the cancel and keeps sending progress: work-stops FAILs (rule 11)", async () => {
    const json = await expectFails("--keep-progress", ["silent-after-cancel", "work-stops"]);
    expect(check(json, "work-stops").summary).toMatch(/^the work went on/);
  });

  it("sends a notifications/cancelled of its own: no-server-cancel FAILs (rule 12)", async () => {
    const json = await expectFails("--own-cancel", ["no-server-cancel"]);
    const flagged = json.timeline.find((e) => e.seq === check(json, "no-server-cancel").events[0])!;
    expect(flagged.from).toBe("server");
    expect(flagged.message?.method).toBe("notifications/cancelled");
  });

  it("sends progress that goes down: progress-increases FAILs (rule 21)", async () => {
    const json = await expectFails("--progress-down", ["progress-increases"]);
    expect(check(json, "progress-increases").evidence[0]).toMatch(/98 after 99/);
    // The library saw it too, and said so.
    expect(json.anomalies[0]).toMatch(/^non-increasing-progress: progress 98 for token \S+ did not increase \(rule 21 in docs\/spec-rules.md\)/);
  });

  it("answers a cancel for an unknown id with an error: cancel-unknown-ignored FAILs (rules 9, 10)", async () => {
    const json = await expectFails("--unknown-cancel=error", ["cancel-unknown-ignored"]);
    expect(check(json, "cancel-unknown-ignored").summary).toMatch(/answered the notification/);
  });

  it("exits on a cancel for an unknown id: cancel-unknown-ignored FAILs", async () => {
    const json = await expectFails("--unknown-cancel=exit", ["cancel-unknown-ignored"]);
    expect(check(json, "cancel-unknown-ignored").summary).toMatch(/closed the connection/);
  });

  it("answers a cancel for a completed request with an error: cancel-completed-ignored FAILs (rules 9, 10)", async () => {
    const json = await expectFails("--completed-cancel=error", ["cancel-completed-ignored"]);
    expect(statuses(json)["cancel-unknown-ignored"]).toBe("PASS");
  });

  it("dies when a request is cancelled: connection-survives FAILs, and later steps SKIP", async () => {
    const json = await expectFails("--die-on-cancel", ["connection-survives"]);
    expect(check(json, "connection-survives").summary).toMatch(/connection closed/);
    expect(check(json, "connection-survives").evidence.join("\n")).toMatch(/exited with code 5/);
    expect(statuses(json)["cancel-unknown-ignored"]).toBe("SKIP");
  });
});
