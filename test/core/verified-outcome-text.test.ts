import { describe, expect, it } from "vitest";
import { CLIENT_CLOSED_REASON } from "../../src/core/cancellable-call.js";
import { awaitVerifiedText, verifiedOutcomeText } from "../../src/runner/verified-outcome.js";
import type { RunRecord } from "../../src/index.js";

// What `awaitVerification` tells the model of a cancelled call: the cause in plain words. The
// client's own close() is not a lost connection (an outside tester's: it said "lost its connection").
const record = (reason: string): RunRecord =>
  ({
    method: "tools/call",
    name: "write_report",
    elapsedMs: 1_234,
    status: "cancelled",
    outcome: "unverified",
    cancel: { trigger: "connection-closed", reason, mechanism: "notification", sentAt: null, undelivered: null },
    verification: null,
  }) as unknown as RunRecord;

describe("verifiedOutcomeText: the cause of a connection-closed cancel", () => {
  it("the client's own close says so; a lost connection says it was lost", () => {
    expect(verifiedOutcomeText(record(CLIENT_CLOSED_REASON))).toContain(
      'The tool call "write_report" was cancelled after 1.2 s (its connection was closed by the client)',
    );
    expect(verifiedOutcomeText(record("the server exited"))).toContain("(lost its connection)");
  });
});

// A failed verify read as the model reads it: the library's own words only. A verify that answers
// something else (a server's status text, a row) was quoted whole, so what a server said reached
// the model (an outside tester's); and a verify that threw the library's own words with more after
// them passed as the library's text.
const failedRead = (error: string): RunRecord =>
  ({
    ...record("x"),
    cancel: { trigger: "timeout", reason: "x", mechanism: "notification", sentAt: null, undelivered: null },
    outcome: "verify-failed",
    verification: { found: "failed", error, summary: "read failed at 0.2 s", reads: [] },
  }) as unknown as RunRecord;

describe("verifiedOutcomeText: a failed verify read tells the model the library's own words, never what verify answered or threw", () => {
  it("an answer that is neither applied nor not-applied: its kind, not its value", () => {
    const text = verifiedOutcomeText(
      failedRead('verify must answer "applied" or "not-applied", got a string ("found row for postgres://user:SECRET@db")'),
    );
    expect(text).toContain('(verify must answer "applied" or "not-applied", got a string). Check before calling it again.');
    expect(text).not.toMatch(/SECRET|postgres/);
  });
  it("a verify that throws the library's words with its own after them: only the library's words", () => {
    expect(verifiedOutcomeText(failedRead("verify did not answer within 5 ms; password=SECRET"))).toContain(
      "(verify did not answer within 5 ms). Check",
    );
    expect(verifiedOutcomeText(failedRead('verify must answer "applied" or "not-applied", got SECRET'))).toContain(
      "(read failed at 0.2 s). Check",
    );
  });
  it("any other error: the summary stands for it", () => {
    const text = verifiedOutcomeText(failedRead("db connect failed: postgres://admin:SECRET@10.0.0.5/prod"));
    expect(text).toContain("(read failed at 0.2 s). Check");
    expect(text).not.toMatch(/SECRET/);
  });
});

// awaitVerification given as an async function (its type says a string): not waited for, the
// library's text used, and its rejection never unhandled (an outside tester's: the process died).
describe("awaitVerifiedText: a text function that returns a promise", () => {
  it("a rejecting promise: the library's text, nothing unhandled, and the developer told once", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning);
    process.on("unhandledRejection", onUnhandled);
    process.on("warning", onWarning);
    try {
      const final = failedRead("verify did not answer within 5 ms");
      const error = Object.assign(new Error("timed out"), {
        record: { ...final, outcome: "unverified" },
        verification: Promise.resolve(final),
      });
      const text = await awaitVerifiedText(error, (async () => {
        throw new Error("text function failed");
      }) as never);
      expect(text).toBe(verifiedOutcomeText(final));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
      const said = warnings.filter((w) => /answered a promise \(it must answer a string at once; it is not waited for\)/.test(w.message));
      expect(said).toHaveLength(1);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      process.off("warning", onWarning);
    }
  });
});

// A text function that fails (throws, answers a number, answers a promise) is not silent: the
// library's text is used and the developer is told once (an outside tester's: nothing said so).
describe("awaitVerifiedText: a text function that fails is warned about once, naming awaitVerification", () => {
  const final = failedRead("verify did not answer within 5 ms");
  const cancelled = () =>
    Object.assign(new Error("timed out"), { record: { ...final, outcome: "unverified" }, verification: Promise.resolve(final) });
  for (const [how, fn, said] of [
    [
      "throws",
      () => {
        throw new Error("template missing (text test)");
      },
      /awaitVerification's text function threw, so the library's own text was used: template missing \(text test\)/,
    ],
    ["answers a number", () => 42, /awaitVerification's text function answered 42, not a string, so the library's own text was used/],
  ] as const) {
    it(`one that ${how}: the library's text, and one warning however often it fails`, async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => void warnings.push(warning);
      process.on("warning", onWarning);
      try {
        for (let i = 0; i < 3; i++) expect(await awaitVerifiedText(cancelled(), fn as never)).toBe(verifiedOutcomeText(final));
        await new Promise((resolve) => setTimeout(resolve, 20)); // warnings are emitted on the next tick
      } finally {
        process.off("warning", onWarning);
      }
      const ours = warnings.filter((w) => w.name === "McpCancellableWarning" && said.test(w.message));
      expect(ours).toHaveLength(1);
      expect(ours[0]).toMatchObject({ code: "MCP_CANCELLABLE_HOOK_THREW" });
    });
  }
});

// A check that found nothing, then the server's own word that the work was done (a late result
// while or after it read, or its task completed): the model is told the effect was applied (an
// outside tester's: it read "could not tell ... not applied as of 0.0 s").
describe("verifiedOutcomeText: a not-applied check overruled by the server's word that the work was done", () => {
  for (const outcome of ["late-result-discarded", "task-completed-anyway"] as const) {
    it(`${outcome} after a read that found nothing: applied, do not call it again; without such a read: could not tell`, () => {
      const overruled = {
        ...record("x"),
        cancel: { trigger: "timeout", reason: "x", mechanism: "notification", sentAt: null, undelivered: null },
        outcome,
        verification: { error: null, summary: "not applied as of 0.0 s", reads: [{ atMs: 0, found: "not-applied", error: null }] },
      } as unknown as RunRecord;
      const text = verifiedOutcomeText(overruled);
      expect(text).toContain("its effect was applied. Do not call it again to repeat it.");
      expect(text).not.toContain("could not tell");
      const failedCheck = {
        ...overruled,
        verification: { error: "x", summary: "read failed at 0.2 s", reads: [{ atMs: 200, found: "failed", error: "x" }] },
      } as unknown as RunRecord;
      expect(verifiedOutcomeText(failedCheck)).toContain("could not tell");
    });
  }
});
