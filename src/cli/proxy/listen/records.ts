// The records file of a replica, shared by its relay and every session: each JSON line gets the
// replica's name and the client's session (`--records`; the fleet reads one file per replica and
// sees which replica and which session each request was on). A session's shutdown ends its
// records stream: here that only stops its own lines, the file stays open for the others.
import type { WriteStream } from "node:fs";
import type { RunRecord } from "../../../types/record.js";

/** How many of a session's latest records are kept for `take` (a record is taken in the turn it is written: see `SessionRecords`). */
const KEPT_RECORDS = 256;

/**
 * A session's records (`recordsFor`): a `WriteStream`, for its `ProxySession`, and what the front
 * needs to revise a record when an answer did not reach its client.
 */
export type SessionRecords = WriteStream & {
  /**
   * The line last written for the client's request `clientRequestId`, taken (once): the session
   * writes a request's record when the upstream answers, in the same turn as it hands the front
   * that answer.
   */
  take(clientRequestId: string | number): string | undefined;
  /**
   * Writes the next revision of `line`'s record: its answer was not written whole to the client
   * (`error`: why); on a 2025-era session that is no cancel (rule 40), so the status stays, and the
   * answer is kept for a resume (`resumable`, rule 40) or lost.
   */
  unwritten(line: string, error: string, resumable: boolean): void;
};

/** Where a line names the client's request id (the top-level key: inside a string its quotes would be escaped). */
const CLIENT_REQUEST_ID = /"clientRequestId":("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*)/;

/**
 * A `WriteStream`-shaped view of `file` for one session: `write(line)` appends the line with
 * `replica` and `clientSessionId` added, `end()` ends only this view.
 */
export function recordsFor(
  file: WriteStream | undefined,
  replica: string,
  facts: { readonly session: string | null },
): SessionRecords | undefined {
  if (file === undefined) return undefined;
  let ended = false;
  /** The latest lines by the JSON text of their client request id. */
  const latest = new Map<string, string>();
  const view = {
    get writableEnded(): boolean {
      return ended || file.writableEnded;
    },
    write(line: string): boolean {
      if (ended || file.writableEnded) return false;
      const full = withFields(line, replica, facts.session);
      const id = CLIENT_REQUEST_ID.exec(full)?.[1];
      if (id !== undefined) {
        latest.delete(id);
        latest.set(id, full);
        if (latest.size > KEPT_RECORDS) latest.delete(latest.keys().next().value!);
      }
      return file.write(full);
    },
    take(clientRequestId: string | number): string | undefined {
      const key = JSON.stringify(clientRequestId);
      const line = latest.get(key);
      latest.delete(key);
      return line;
    },
    unwritten(line: string, error: string, resumable: boolean): void {
      if (file.writableEnded) return;
      const record = JSON.parse(line) as RunRecord;
      const fate = resumable ? "kept for a resume (Last-Event-ID)" : "lost (--events-per-session 0)";
      const revised = {
        ...record,
        revision: record.revision + 1,
        summary: `${record.summary}; the answer was not written to the client (its response stream closed first): ${fate}`,
        answerUndelivered: { error, resumable },
      };
      file.write(`${JSON.stringify(revised)}\n`);
    },
    end(done?: () => void): void {
      ended = true;
      done?.();
    },
  };
  return view as unknown as SessionRecords;
}

/** A JSON Lines record (`{...}\n`) with `replica` and `clientSessionId` added. */
export function withFields(line: string, replica: string, session: string | null): string {
  const body = line.trimEnd();
  if (!body.endsWith("}")) return line;
  const more = `${JSON.stringify(replica)},"clientSessionId":${JSON.stringify(session)}`;
  return `${body.slice(0, -1)}${body === "{}" ? "" : ","}"replica":${more}}\n`;
}
