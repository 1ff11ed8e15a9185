import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { check, cli, FAST, why, nodeCommand, probeFixture, probeJson, statuses } from "./helpers.js";

const sdkServer = nodeCommand(probeFixture("sdk-server.mjs"));
const rawServer = (...flags: string[]) => nodeCommand(probeFixture("raw-server.mjs"), ...flags);
const everything = nodeCommand(resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio");

const ALL_PASS = {
  "silent-after-cancel": "PASS",
  "work-stops": "PASS",
  "connection-survives": "PASS",
  "cancel-completed-ignored": "PASS",
  "cancel-unknown-ignored": "PASS",
  "no-server-cancel": "PASS",
  "progress-increases": "PASS",
  "http-cancel-mechanism": "SKIP",
  "concurrent-calls": "PASS",
  "sessions-isolated": "SKIP",
} as const;

/**
 * For the all-PASS runs: progress that crossed the cancel may arrive up to 350 ms after it before
 * work-stops WARNs (default 100 ms), so a 100 ms stall of either process on a loaded machine does
 * not read as work going on. Still under FAST's --window.
 */
const GRACE = ["--grace", "350"];

describe("probe over stdio: compliant servers", () => {
  it("a v1 SDK McpServer whose tool honours the signal passes every check", async () => {
    const { code, json } = await probeJson(["--stdio", sdkServer, ...FAST, ...GRACE]);
    expect(statuses(json), why(json)).toEqual(ALL_PASS);
    expect(code).toBe(0);
    expect(json.ok).toBe(true);
    // Picked from tools/list: the read-only, idempotent, slow one, never the destructive "wipe".
    expect(json.call?.tool).toBe("slow-count");
    // The timeline: the call, progress, exactly one cancel for it, then nothing for that id.
    const id = json.call!.requestId;
    const call = json.timeline.find((e) => e.from === "client" && e.message?.method === "tools/call")!;
    const cancels = json.timeline.filter(
      (e) =>
        e.from === "client" &&
        e.message?.method === "notifications/cancelled" &&
        (e.message.params as { requestId: unknown }).requestId === id,
    );
    expect(cancels).toHaveLength(1);
    const cancel = cancels[0]!;
    expect(call.seq).toBeLessThan(cancel.seq);
    const progressBefore = json.timeline.filter((e) => e.message?.method === "notifications/progress" && e.seq < cancel.seq);
    expect(progressBefore.length).toBeGreaterThanOrEqual(2);
    expect(json.call!.record?.summary).toMatch(/^cancelled \(aborted\)/);
    // The library kept the SDK quiet: no "unknown message ID" noise, no anomaly.
    expect(json.clientErrors).toEqual([]);
    expect(json.anomalies).toEqual([]);
  });

  it("the raw fixture with no flags passes too, so each flag alone causes its FAIL", async () => {
    const { code, json } = await probeJson(["--stdio", rawServer(), ...FAST, ...GRACE]);
    expect(statuses(json), why(json)).toEqual(ALL_PASS);
    expect(code).toBe(0);
  });
});

describe("probe over stdio: @modelcontextprotocol/server-everything", () => {
  it("catches trigger-long-running-operation sending progress after the cancel (rule 11)", async () => {
    const args = [
      "--stdio",
      everything,
      "--tool",
      "trigger-long-running-operation",
      "--args",
      '{"duration":5,"steps":10}',
      "--window",
      "600",
    ];
    const { code, json } = await probeJson(args);
    expect(code).toBe(1);
    const s = statuses(json);
    expect(s["silent-after-cancel"]).toBe("FAIL");
    expect(s["work-stops"]).toBe("FAIL");
    const stops = check(json, "work-stops");
    expect(stops.rules).toEqual([11]);
    expect(stops.summary).toMatch(/progress notification\(s\) after the server had read the cancel/);
    // The flagged events are progress notifications for the cancelled call, after its cancel.
    const cancelAt = json.call!.cancelAtMs!;
    const flagged = json.timeline.filter((e) => stops.events.includes(e.seq));
    expect(flagged.length).toBeGreaterThanOrEqual(1);
    for (const event of flagged) {
      expect(event.message?.method).toBe("notifications/progress");
      expect(event.atMs).toBeGreaterThan(cancelAt);
    }
    // What it does right: the connection survives, stray cancels are ignored, progress rises.
    expect(s["connection-survives"]).toBe("PASS");
    expect(s["cancel-completed-ignored"]).toBe("PASS");
    expect(s["cancel-unknown-ignored"]).toBe("PASS");
    expect(s["no-server-cancel"]).toBe("PASS");
    expect(s["progress-increases"]).toBe("PASS");
    expect(s["concurrent-calls"]).toBe("PASS");
  });

  it("the text report names the progress after the cancel as a FAIL of rule 11", async () => {
    const { code, stdout } = await cli([
      "probe",
      "--stdio",
      everything,
      "--tool",
      "trigger-long-running-operation",
      "--args",
      '{"duration":5,"steps":10}',
      "--window",
      "600",
    ]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/FAIL {2}progress stops after the cancel \(rule 11\)/);
    expect(stdout).toMatch(/server → notifications\/progress token \S+: 1\/10 +<== FAIL \(rules 6, 11\)/);
    expect(stdout).toMatch(/^Summary: \d PASS, 2 FAIL, 0 WARN, 2 SKIP/m);
  });
});

describe("probe over stdio: tool choice", () => {
  it("refuses a destructive tool without --allow-side-effects (exit 2), names the rest", async () => {
    const refused = await cli(["probe", "--stdio", sdkServer, "--tool", "wipe", ...FAST]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--allow-side-effects/);
    const missing = await cli(["probe", "--stdio", sdkServer, "--tool", "nope", ...FAST]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no tool named "nope"; its tools: slow-count, quick, wipe/);
  });

  it("a tool that finishes before the cancel gives SKIPs, not a false PASS", async () => {
    const { code, json } = await probeJson(["--stdio", sdkServer, "--tool", "quick", ...FAST]);
    expect(code).toBe(0);
    const s = statuses(json);
    expect(s["silent-after-cancel"]).toBe("SKIP");
    expect(s["work-stops"]).toBe("SKIP");
    expect(s["connection-survives"]).toBe("SKIP");
    expect(check(json, "silent-after-cancel").summary).toMatch(/ended before the cancel/);
    expect(json.call!.cancelAtMs).toBeNull();
  });
});

describe("probe over stdio: servers that cannot be probed", () => {
  const noStack = (text: string) => expect(text).not.toMatch(/^\s+at /m);

  it("a server that never answers initialize: a clear message within --timeout, exit 1", async () => {
    const { code, json, stderr, ms } = await probeJson(["--stdio", rawServer("--no-init"), "--timeout", "800"]);
    expect(code).toBe(1);
    expect(json.error?.kind).toBe("timeout");
    expect(stderr).toMatch(/did not answer initialize within --timeout \(800 ms\)/);
    expect(ms).toBeLessThan(800 + 4_000);
    noStack(stderr);
  });

  it("a server that refuses initialize in words that say 'timed out': a refusal (initialize-error) at once, never 'did not answer within --timeout'", async () => {
    // An audit's: the probe took the error's text for its own timeout and told a prompt refusal as silence.
    const started = performance.now();
    const { code, json, stderr } = await probeJson(["--stdio", rawServer("--init-error=upstream-database-timedout"), "--timeout", "20000"]);
    expect(code).toBe(1);
    expect(json.error?.kind).toBe("initialize-error");
    expect(stderr.replace(/\s+/g, " ")).toMatch(/refused initialize: .*upstream-database-timedout/);
    expect(stderr).not.toMatch(/did not answer/);
    expect(performance.now() - started).toBeLessThan(15_000); // never its --timeout of 20 s
    noStack(stderr);
  });

  it("a server that answers initialize under another id: a timeout that says what came (the id it answered with)", async () => {
    const { code, json, stderr } = await probeJson(["--stdio", rawServer("--init-wrong-id"), "--timeout", "800"]);
    expect(code).toBe(1);
    expect(json.error?.kind).toBe("timeout");
    expect(stderr.replace(/\s+/g, " ")).toMatch(
      /did not answer initialize within --timeout \(800 ms\); it answered with id 999, which names no request of the client's/,
    );
    noStack(stderr);
  });

  it("a server that does not speak JSON-RPC", async () => {
    const { code, json, stderr } = await probeJson(["--stdio", rawServer("--not-json"), "--timeout", "2500"]); // room for a slow start under load
    expect(code).toBe(1);
    expect(json.error?.kind).toBe("not-json-rpc");
    expect(stderr).toMatch(/does not speak JSON-RPC/);
    expect(stderr).toMatch(/I do not speak JSON-RPC/);
    noStack(stderr);
  });

  it("a server that crashes: its exit code and stderr", async () => {
    const { code, json, stderr } = await probeJson(["--stdio", rawServer("--crash"), "--timeout", "3000"]);
    expect(code).toBe(1);
    expect(json.error?.kind).toBe("exited");
    expect(stderr).toMatch(/exited with code 3 before answering initialize/);
    expect(stderr).toMatch(/boom, crashing on purpose/);
    noStack(stderr);
  });

  it("a program that does not exist", async () => {
    const { code, stderr } = await cli(["probe", "--stdio", "no-such-program-mcp-cancellable --flag", "--timeout", "3000"]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/could not start `no-such-program-mcp-cancellable --flag`: no such program/);
    noStack(stderr);
  });
});

describe("probe over stdio: the 2026-07-28 era (v2 SDK client, pinned)", () => {
  it("a v2 SDK server (serveStdio) passes; the cancel is still notifications/cancelled on stdio (rule 6)", async () => {
    const { code, json } = await probeJson([
      "--stdio",
      nodeCommand(probeFixture("v2-stdio-server.mjs")),
      "--era",
      "2026-07-28",
      ...FAST,
      ...GRACE,
    ]);
    expect(statuses(json), why(json)).toEqual(ALL_PASS);
    expect(code).toBe(0);
    expect(json.timeline.some((e) => e.from === "client" && e.message?.method === "server/discover")).toBe(true);
    expect(json.timeline.some((e) => e.from === "client" && e.message?.method === "initialize")).toBe(false);
    const cancels = json.timeline.filter((e) => e.from === "client" && e.message?.method === "notifications/cancelled");
    expect(cancels.length).toBeGreaterThanOrEqual(1);
  });

  it("a 2025-era server asked for 2026-07-28: a clear message naming --era legacy, exit 1", async () => {
    const { code, stderr } = await cli(["probe", "--stdio", sdkServer, "--era", "2026-07-28", "--timeout", "3000"]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/refused server\/discover \(2026-07-28\).*try --era legacy/);
  });
});
