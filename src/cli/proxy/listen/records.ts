// The records file of a replica, shared by its relay and every session: each JSON line gets the
// replica's name and the client's session (`--records`; the fleet reads one file per replica and
// sees which replica and which session each request was on). A session's shutdown ends its
// records stream: here that only stops its own lines, the file stays open for the others.
import type { WriteStream } from "node:fs";
import type { RunRecord } from "../../../types/record.js";
import { BoundedMap } from "../../../utils/bounded-map.js";

/** How many of a session's latest records are kept for `take` (a record is taken in the turn it is written: see `SessionRecords`). */
const KEPT_RECORDS = 256;

/** How many requests' front revisions `FrontRevisions` keeps for the library's later revisions of their records (these come within the request's cancel or late answers). */
const KEPT_FRONT_REVISIONS = 1_024;

/**
 * What the front learned of a request after the library wrote its record (its answer never
 * reached the client), carried into every later revision of that record: the library revises a
 * record from its own last revision (a cancel that left later, a late answer), which knows
 * nothing of the front's. Each of those is written with its `revision` counted after the
 * front's own and with what the front learned, so revisions only grow and the last line of a
 * `callId` is what is known (an outside tester's: a timed-out request's cancel, revised after the
 * front's `answerUndelivered` line, was written as a second revision 1 without it).
 */
export class FrontRevisions {
  /** By `callId`: how many revisions the front wrote, and what each later one gets. */
  readonly #told = new BoundedMap<number, { added: number; change: (record: RunRecord) => RunRecord }>(KEPT_FRONT_REVISIONS);

  /** True when no record has a front revision (nothing to look up). */
  get empty(): boolean {
    return this.#told.size === 0;
  }

  /** True when `callId`'s record has a front revision. */
  has(callId: number): boolean {
    return this.#told.has(callId);
  }

  /** `record` as the file gets it: after the front's revisions, with what the front learned. */
  apply(record: RunRecord): RunRecord {
    const told = this.#told.get(record.callId);
    return told === undefined ? record : told.change({ ...record, revision: record.revision + told.added });
  }

  /**
   * The front's next revision of `record` (the last written, as the file has it): `change` applied
   * and the revision counted up. `change` is applied to the library's later revisions too.
   */
  revise(record: RunRecord, change: (record: RunRecord) => RunRecord): RunRecord {
    const told = this.#told.get(record.callId);
    const added = (told?.added ?? 0) + 1;
    const both = told === undefined ? change : (r: RunRecord) => change(told.change(r));
    this.#told.set(record.callId, { added, change: both });
    return change({ ...record, revision: record.revision + 1 });
  }
}

/** Where a line names its call (the top-level key: inside a string its quotes would be escaped). */
const CALL_ID = /"callId":(\d+)/;

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
   * answer is kept for a resume (`fate` `resumable`, rule 40) or lost: the session keeps no events
   * (`events-off`: `--events-per-session 0`), or the transport refused the answer (`refused`: its
   * stream was gone, so it was not kept for a resume). The library's later revisions of that
   * record carry it too (`FrontRevisions`).
   */
  unwritten(line: string, error: string, fate: AnswerFate): void;
};

/** What became of an answer a 2025-era client's closed stream did not take (`SessionRecords.unwritten`). */
export type AnswerFate = "resumable" | "events-off" | "refused";

const FATES: Record<AnswerFate, string> = {
  resumable: "kept for a resume (Last-Event-ID)",
  "events-off": "lost (--events-per-session 0)",
  refused: "lost (the session's transport refused it, so no resume has it)",
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
  const front = new FrontRevisions();
  const view = {
    get writableEnded(): boolean {
      return ended || file.writableEnded;
    },
    write(line: string): boolean {
      if (ended || file.writableEnded) return false;
      // A record the front revised: parsed to carry that (rare; every other line goes as it is).
      if (!front.empty) {
        const callId = CALL_ID.exec(line)?.[1];
        if (callId !== undefined && front.has(Number(callId))) line = `${JSON.stringify(front.apply(JSON.parse(line) as RunRecord))}\n`;
      }
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
    unwritten(line: string, error: string, fate: AnswerFate): void {
      if (file.writableEnded) return;
      // Revised from the request's last line: the library may have revised it since it was taken
      // (its cancel left meanwhile), and a line taken earlier would repeat that revision's number.
      const taken = JSON.parse(line) as RunRecord & { clientRequestId?: unknown };
      const newer = latest.get(JSON.stringify(taken.clientRequestId));
      const last = newer !== undefined && CALL_ID.exec(newer)?.[1] === String(taken.callId) ? (JSON.parse(newer) as RunRecord) : taken;
      const said = `; the answer was not written to the client (its response stream closed first): ${FATES[fate]}`;
      const revised = front.revise(last, (record) =>
        Object.assign(record, { summary: `${record.summary}${said}`, answerUndelivered: { error, resumable: fate === "resumable" } }),
      );
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
