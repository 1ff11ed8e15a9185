import { describe, expect, it } from "vitest";
import { CLIENT_CLOSED_REASON } from "../../src/core/cancellable-call.js";
import { verifiedOutcomeText } from "../../src/runner/verified-outcome.js";
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
