// The HTTP front's own revisions of a record (an answer its client never got) and the library's
// later revisions of the same record (a cancel that left after the settle, a late answer): the
// file gets one chain, revisions only growing, each later line carrying what the front learned.
// An outside tester's: a 2025-era request timed out after its client dropped the stream was
// written as revision 0, the front's revision 1 (`answerUndelivered`), then the library's
// `cancel.sentAt` revision as a second revision 1 without it, and its summary blamed
// `--events-per-session 0` though events were on.
import type { WriteStream } from "node:fs";
import { describe, expect, it } from "vitest";
import { FrontRevisions, recordsFor } from "../../../src/cli/proxy/listen/records.js";
import type { RunRecord } from "../../../src/types/record.js";

/** A record as the library writes it, cut to what these tests read. */
const record = (callId: number, revision: number, more: Partial<RunRecord> = {}): RunRecord =>
  ({
    callId,
    revision,
    clientRequestId: `c${callId}`,
    status: "cancelled",
    summary: "cancelled (timeout), outcome unverified",
    cancel: { trigger: "timeout", sentAt: revision === 0 ? null : "2026-12-07T00:00:00.010Z" },
    late: { results: 0, errors: 0, progress: 0 },
    ...more,
  }) as unknown as RunRecord;

function fileView() {
  const written: string[] = [];
  const file = { writableEnded: false, write: (line: string) => written.push(line) > 0 } as unknown as WriteStream;
  const view = recordsFor(file, "r1", { session: "s1" })!;
  const parsed = () => written.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { view, parsed };
}

describe("proxy --listen records: the front's revisions and the library's later ones are one chain", () => {
  it("2025-era: the library's revision after the front's answerUndelivered one is written as the next revision and keeps it", () => {
    const { view, parsed } = fileView();
    view.write(`${JSON.stringify(record(7, 0))}\n`);
    view.unwritten(view.take("c7")!, "No connection established for request ID: c7", "refused");
    view.write(`${JSON.stringify(record(7, 1))}\n`);
    const lines = parsed();
    expect(lines.map((line) => line.revision)).toEqual([0, 1, 2]);
    const said =
      "cancelled (timeout), outcome unverified; the answer was not written to the client (its response stream closed first): lost (the session's transport refused it, so no resume has it)";
    expect(lines[1]).toMatchObject({ summary: said, answerUndelivered: { resumable: false }, replica: "r1", clientSessionId: "s1" });
    expect(lines[2]).toMatchObject({
      revision: 2,
      summary: said,
      answerUndelivered: { error: "No connection established for request ID: c7", resumable: false },
      cancel: { sentAt: "2026-12-07T00:00:00.010Z" },
      replica: "r1",
      clientSessionId: "s1",
    });
    // Another request's lines go as the library wrote them.
    view.write(`${JSON.stringify(record(8, 0))}\n`);
    expect(parsed()[3]).toMatchObject({ callId: 8, revision: 0, summary: "cancelled (timeout), outcome unverified" });
    expect(parsed()[3]).not.toHaveProperty("answerUndelivered");
  });

  it("2025-era: a library revision written after the line was taken (its cancel left first) is what the front revises: no revision number twice", () => {
    const { view, parsed } = fileView();
    view.write(`${JSON.stringify(record(9, 0))}\n`);
    const taken = view.take("c9")!;
    view.write(`${JSON.stringify(record(9, 1))}\n`);
    view.unwritten(taken, "closed before the answer was written", "events-off");
    const lines = parsed();
    expect(lines.map((line) => line.revision)).toEqual([0, 1, 2]);
    expect(lines[2]).toMatchObject({ cancel: { sentAt: "2026-12-07T00:00:00.010Z" }, answerUndelivered: { resumable: false } });
  });

  it.each([
    ["resumable", "kept for a resume (Last-Event-ID)", true],
    ["events-off", "lost (--events-per-session 0)", false],
    ["refused", "lost (the session's transport refused it, so no resume has it)", false],
  ] as const)("the summary names what became of the answer: %s", (fate, text, resumable) => {
    const { view, parsed } = fileView();
    view.write(`${JSON.stringify(record(1, 0, { status: "succeeded", summary: "succeeded" } as Partial<RunRecord>))}\n`);
    view.unwritten(view.take("c1")!, "closed before the answer was written", fate);
    expect(parsed()[1]).toMatchObject({
      revision: 1,
      summary: `succeeded; the answer was not written to the client (its response stream closed first): ${text}`,
      answerUndelivered: { resumable },
    });
  });

  it("FrontRevisions: two front revisions count two, each change applied in order to the library's later revisions", () => {
    const front = new FrontRevisions();
    expect(front.empty).toBe(true);
    const first = front.revise(record(3, 0), (r) => Object.assign(r, { summary: `${r.summary}; a` }));
    expect(first).toMatchObject({ revision: 1, summary: "cancelled (timeout), outcome unverified; a" });
    const second = front.revise(first, (r) => Object.assign(r, { summary: `${r.summary}; b` }));
    // The front's second revision is made from its first (already carrying "a").
    expect(second).toMatchObject({ revision: 2, summary: "cancelled (timeout), outcome unverified; a; b" });
    // The library's revision 1 follows both: revision 3, both changes.
    expect(front.apply(record(3, 1))).toMatchObject({ revision: 3, summary: "cancelled (timeout), outcome unverified; a; b" });
    // Another call is left as it is (the same object).
    const other = record(4, 1);
    expect(front.apply(other)).toBe(other);
    expect(front.has(3)).toBe(true);
    expect(front.has(4)).toBe(false);
  });
});
