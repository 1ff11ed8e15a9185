import { describe, expect, it } from "vitest";
import type { CheckId } from "../../src/cli/checks.js";
import { check, FAST, nodeCommand, probeFixture, probeJson, statuses, why } from "./helpers.js";

const rawServer = (...flags: string[]) => nodeCommand(probeFixture("raw-server.mjs"), ...flags);

/** Runs the raw fixture with `flag` and expects exactly the checks in `fails` to FAIL. */
async function expectFails(flag: string, fails: CheckId[]) {
  const { code, json } = await probeJson(["--stdio", rawServer(flag), ...FAST]);
  const s = statuses(json);
  expect(Object.values(s).length, why(json)).toBeGreaterThan(0);
  const failed = Object.entries(s)
    .filter(([, status]) => status === "FAIL")
    .map(([id]) => id);
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
    expect(json.anomalies[0]).toMatch(
      /^non-increasing-progress: progress 98 for token \S+ did not increase \(rule 21 in docs\/spec-rules.md\)/,
    );
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

  // Tester I item 5: the server exited as it read the cancel, so the fence got no answer.
  it("dies when a request is cancelled: silent-after-cancel and work-stops PASS by what was seen, never 'after the server had read the cancel'", async () => {
    const json = await expectFails("--die-on-cancel", ["connection-survives"]);
    for (const id of ["silent-after-cancel", "work-stops"] as const) {
      const verdict = check(json, id);
      expect(verdict.status, why(json)).toBe("PASS");
      expect(verdict.summary).not.toMatch(/after the server had read/);
      expect(verdict.summary).toMatch(
        /the request sent right after the cancel got no answer, so whether, and when, the server read the cancel is not known/,
      );
    }
    // "after the cancel", or past the --grace when progress sent before the cancel crossed it on the wire (timing).
    expect(check(json, "silent-after-cancel").summary).toMatch(
      /^no result, error or progress for #\d+ (after the cancel|more than the \d+ ms --grace after the cancel), watched until the connection closed, \+\d+ ms/,
    );
  });

  // An outside tester's: a server that closed its stdout at the cancel and worked on passed both,
  // "the server stopped reporting progress": its progress went nowhere (DROP lines in its stderr).
  it("closes its stdout at the cancel and works on: silent-after-cancel and work-stops SKIP (nothing after could be seen), never PASS", async () => {
    const { json } = await probeJson(["--stdio", rawServer("--close-stdout-on-cancel"), ...FAST]);
    for (const id of ["silent-after-cancel", "work-stops"] as const) {
      const verdict = check(json, id);
      expect(verdict.status, why(json)).toBe("SKIP");
      expect(verdict.summary).toMatch(
        /^the connection closed \+\d+ ms after the cancel, before the \d+ ms watch ended \(the server closed its stdout, its process still running\): what the server did after could not be seen/,
      );
    }
  });

  // An outside tester's: output that is not JSON-RPC, written with every tools/list from the
  // first on, failed both stray-cancel checks (rules 9, 10), as if the cancels had caused it.
  it("writes output that is not JSON-RPC with every tools/list: the rule 31 note, not a FAIL of the stray-cancel checks", async () => {
    const { json } = await probeJson(["--stdio", rawServer("--noise-with-list"), ...FAST]);
    expect(statuses(json)["cancel-completed-ignored"], why(json)).toBe("PASS");
    expect(statuses(json)["cancel-unknown-ignored"], why(json)).toBe("PASS");
    expect(json.timeline.some((event) => event.kind === "invalid")).toBe(true);
  });
});

// Issue 15: servers that behave like real frameworks did (raw fixtures reproducing them: fastmcp
// 4.20 needs Node 22 through mcp-proxy's pipenet, so it cannot be a root devDependency).
describe("probe: what real servers did, judged fairly", () => {
  it("a busy event loop writes the result before reading the cancel (server-memory): WARN with the evidence, not FAIL (rule 9)", async () => {
    const { code, json } = await probeJson(["--stdio", rawServer("--busy-result=800"), "--window", "1500", "--timeout", "5000"]);
    const silent = check(json, "silent-after-cancel");
    expect(silent.status, why(json)).toBe("WARN");
    expect(silent.summary).toMatch(/before the server showed it had read the cancel/);
    expect(silent.evidence[0]).toMatch(/the server answered tools\/list #\d+, sent right after the cancel/);
    const flagged = json.timeline.find((e) => e.seq === silent.events[0])!;
    expect(flagged.message?.result).toBeDefined();
    expect(flagged.atMs).toBeGreaterThan(json.call!.cancelAtMs! + 100); // beyond the default --grace: a fixed grace would FAIL it
    expect(code).toBe(0);
  });

  it("a tool that ignores its abort signal falls silent but keeps burning CPU (fastmcp 4.20): work-stops WARNs", async () => {
    const { json } = await probeJson(["--stdio", rawServer("--burn-after-cancel=6000"), "--window", "1500", "--timeout", "5000"]);
    const stops = check(json, "work-stops");
    expect(stops.status, why(json)).toBe("WARN");
    expect(stops.summary).toMatch(
      /the server stopped reporting progress, but its processes kept using CPU after the cancel: the work appears to go on/,
    );
    expect(stops.evidence.join("\n")).toMatch(/read from \/proc/);
    expect(check(json, "silent-after-cancel").status).toBe("PASS");
  });

  it("progress token and cancel kept on a shared tool instance (mcp-framework 0.2.22): concurrent-calls FAILs", async () => {
    const json = await expectFails("--shared-state", ["concurrent-calls", "progress-increases"]);
    expect(check(json, "concurrent-calls").summary).toMatch(/mixed the two calls/);
  });

  it("requests handled one at a time (tmcp 1.20 over stdio): connection-survives WARNs head-of-line blocking", async () => {
    const { json } = await probeJson(["--stdio", rawServer("--serial"), "--args", '{"steps":30}', ...FAST]);
    const survives = check(json, "connection-survives");
    expect(survives.status, why(json)).toBe("WARN");
    expect(survives.summary).toMatch(
      /sent right after the cancel was answered in \d+ ms, against \d+ ms before the call: the cancelled work held the queue/,
    );
    // What the queue let through before the fence's answer crossed the cancel: noted, not failed.
    expect(check(json, "silent-after-cancel").status).toBe("WARN");
  });

  it("a serial server whose fence answer comes only after the cancelled work ends: no verdict contradicts its own timeline (issue 24 item 5)", async () => {
    const { json } = await probeJson(["--stdio", rawServer("--serial"), "--args", '{"steps":30}', ...FAST]);
    const cancelAt = json.call!.cancelAtMs!;
    const progressAfter = json.timeline.filter(
      (e) =>
        e.atMs > cancelAt && e.from === "server" && (e.message as { method?: string } | undefined)?.method === "notifications/progress",
    );
    const stops = check(json, "work-stops");
    // The timeline shows the work going on after the cancel: the verdict must not say it stopped.
    if (progressAfter.length > 1) {
      expect(stops.status, why(json)).not.toBe("PASS");
      expect(stops.summary).toMatch(/the work went on/);
    }
    // Two calls on a server that serves one at a time are not concurrent: never a PASS calling a queued call "still running".
    const concurrent = check(json, "concurrent-calls");
    expect(concurrent.status, why(json)).not.toBe("PASS");
    expect(concurrent.summary).not.toMatch(/still running/);
    // The stray cancels come after a fence the server answered, or the server is reported busy: never "stopped serving".
    for (const id of ["cancel-completed-ignored", "cancel-unknown-ignored"] as const) {
      expect(check(json, id).summary, why(json)).not.toMatch(/stopped serving/);
      expect(["PASS", "WARN"]).toContain(check(json, id).status);
    }
  });

  it("a real tmcp 1.20 server over stdio holds the queue while the cancelled tool runs: connection-survives WARNs", async () => {
    const { code, json } = await probeJson([
      "--stdio",
      nodeCommand(probeFixture("tmcp-server.mjs")),
      "--window",
      "600",
      "--timeout",
      "5000",
    ]);
    const survives = check(json, "connection-survives");
    expect(survives.status, why(json)).toBe("WARN");
    expect(survives.summary).toMatch(/the cancelled work held the queue \(head-of-line blocking/);
    // The result the queue let out before the cancel was read: a crossing, not a violation.
    expect(check(json, "silent-after-cancel").status).toBe("WARN");
    expect(code).toBe(0);
  });
});
