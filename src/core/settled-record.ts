import { ANSWERED_FIRST, OUTCOME_RANK, summarize } from "./record.js";
import type {
  CallOutcome,
  CallStatus,
  CancelDelivery,
  CancelMechanism,
  CancelTrigger,
  CancelUndelivered,
  CancelInfo,
  CancelledOutcome,
  CancelledRunRecord,
  RunRecord,
  TaskInfo,
} from "../types/record.js";
import type { Progress } from "../types/options.js";
import { MAX_REASON_LENGTH } from "../options/defaults.js";
import { isoTime } from "../utils/iso.js";

/** The late counts with one more message of this kind (a new object: records are never mutated). */
export function countLate(late: RunRecord["late"], kind: "result" | "error" | "progress"): RunRecord["late"] {
  return {
    results: late.results + (kind === "result" ? 1 : 0),
    errors: late.errors + (kind === "error" ? 1 : 0),
    progress: late.progress + (kind === "progress" ? 1 : 0),
  };
}

/** Where messages for a request that already settled go (rules 8, 11). */
export interface LateSink {
  /**
   * A message for this request arrived after it settled and was dropped before the SDK saw it.
   * `ran`: a result that says the work was done (not a tool result with `isError: true`).
   * `afterItsClose`: a response that did not come with what its own stream held when the cancel
   * closed it (see `AFTER_ITS_CLOSE`): it says nothing of whether the close reached the server.
   */
  late(kind: "result" | "error" | "progress", ran?: boolean, afterItsClose?: boolean): void;
  /** The server answered the request: its response was read as the answer (a second one is then the server's fault, not a late one). */
  readonly answered: boolean;
}

/**
 * What a call knew when it settled, as it knew it: times as numbers (wall-clock ms), the cancel's
 * parts, references to what the call already held. No string is formatted and no record built
 * until someone reads the record.
 */
export interface SettledFacts {
  readonly callId: number;
  readonly connectionId: number;
  readonly sessionId: string | null;
  readonly requestId: string | number | null;
  readonly method: string;
  readonly name: string | null;
  /** `Date.now()` at the send and at the settle. */
  readonly startedWall: number;
  readonly settledWall: number;
  readonly elapsedMs: number;
  readonly status: CallStatus;
  readonly outcome: CallOutcome;
  readonly error: RunRecord["error"];
  /** `null` unless cancelled; then the cancel's trigger, reason, mechanism and when it went out (`Date.now()`, or `null`). */
  readonly trigger: CancelTrigger | null;
  readonly reason: string;
  readonly mechanism: CancelMechanism;
  readonly sentWall: number | null;
  /** `null` for no late message before the settle. */
  readonly late: RunRecord["late"] | null;
  readonly progressCount: number;
  readonly lastProgress: Progress | null;
  readonly task: TaskInfo | undefined;
  /** What of the cancel did not reach the server, when that was known at the settle (absent: nothing known). */
  readonly undelivered?: CancelUndelivered | null;
  /** The record's revision when it is built from these facts (absent: 0, the settle's). */
  readonly revision?: number;
}

/** The run record these facts make: the same content, field for field and in the same order, as it was built at the settle. */
export function buildRecord(facts: SettledFacts): RunRecord {
  const base = {
    status: facts.status,
    cancel:
      facts.trigger === null
        ? null
        : {
            trigger: facts.trigger,
            reason: facts.reason,
            mechanism: facts.mechanism,
            sentAt: facts.sentWall === null ? null : isoTime(facts.sentWall),
            undelivered: facts.undelivered ?? null,
          },
    outcome: facts.outcome,
    error: facts.error,
  };
  // `status`, `cancel`, `outcome` and `error` agree by construction (`CancellableCall.#finish`).
  const record = {
    callId: facts.callId,
    connectionId: facts.connectionId,
    sessionId: facts.sessionId,
    requestId: facts.requestId,
    method: facts.method,
    name: facts.name,
    startedAt: isoTime(facts.startedWall),
    settledAt: isoTime(facts.settledWall),
    elapsedMs: facts.elapsedMs,
    ...base,
    late: facts.late ?? { results: 0, errors: 0, progress: 0 },
    progress: { count: facts.progressCount, last: facts.lastProgress },
    verification: null,
    revision: facts.revision ?? 0,
    summary: summarize(base),
  } as RunRecord;
  if (facts.task !== undefined) record.task = facts.task;
  // A later revision's summary reads the whole record, as `update` makes it.
  if (facts.revision !== undefined) record.summary = summarize(record);
  return frozenRecord(record);
}

/**
 * A record as every reader gets it (`onRecord`, `records()`, an error's `record`, a revision):
 * frozen, with what it holds. They all share one object, so a hook that edited it changed what
 * the caller and later revisions read (an outside tester's: a cancelled call then read
 * `succeeded`, and a hook that deleted `cancel` crashed the next revision). A reader that wants
 * to change one copies it (`structuredClone(record)`: a spread leaves what it holds frozen). @internal
 */
export function frozenRecord<R extends RunRecord>(record: R): R {
  for (const key in record) {
    const value = record[key];
    if (typeof value === "object" && value !== null) freezeAll(value);
  }
  return Object.freeze(record);
}

function freezeAll(value: object): void {
  if (Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const key in value) {
    const inner = (value as Record<string, unknown>)[key];
    if (typeof inner === "object" && inner !== null) freezeAll(inner);
  }
}

/** What a revision may change: what arrived after the settle (late messages, the cancel's delivery, a verification, the task's fate). */
export interface RecordUpdate {
  late?: RunRecord["late"];
  /** A cancelled call's only (see `SettledRecord.update`). */
  outcome?: CancelledOutcome;
  cancel?: CancelInfo;
  verification?: RunRecord["verification"];
  task?: TaskInfo;
}

/**
 * What stays of a call once it settled: its facts, the run record built from them when someone
 * reads it (and kept once built), updated by late messages and by verification, and the callback
 * that reports each revision. A settled call that nobody reads (no `onRecord`, no observer, no
 * `records()`, no error's `record`) never builds its record. Tombstones and the in-memory ledger
 * hold only this, never the call with its options, hooks and result.
 */
export class SettledRecord implements LateSink {
  #facts: SettledFacts;
  /** The facts at the settle, kept when a later fact replaced them before any record was built (see `delivery`). */
  #settledFacts: SettledFacts | null = null;
  /** The latest revision, once built (read, emitted, or updated). */
  #record: RunRecord | null = null;
  /** Revision 0, kept when the first update replaces it (an error's `record` is the record at the settle). */
  #initial: RunRecord | null = null;
  readonly #emit: ((record: RunRecord) => void) | undefined;
  /** Its response was read after the settle (a late result or error): a stream close after it stopped nothing (see `closedAfterItsResponse`). */
  #answered = false;
  /**
   * How many times the server said the work ran after the settle (a late result that is not
   * `isError`, or its task completed anyway): a verify read that was under way when one came
   * (`CancellableCall`'s verification) cannot overrule it, whatever it found.
   */
  ranCount = 0;
  /**
   * "Not sent: the response arrived first", reported as that response is read, just before it is
   * counted late (`late`): held for that count, so one revision says both (an outside tester's:
   * one said "the response arrived first" beside "outcome unverified", the next took it back).
   * Reported alone at the end of the turn if no count comes.
   */
  #answeredFirst: CancelDelivery | undefined = undefined;

  /**
   * @param emit receives each revision, built: revision 0 at `report()`, then each update (none
   *   when undefined: then nothing is built until read).
   */
  constructor(facts: SettledFacts, emit?: ((record: RunRecord) => void) | undefined) {
    this.#facts = facts;
    this.#emit = emit;
  }

  /**
   * True when only the ledger (`records()`) can read this record's revisions: nothing is told of
   * them (no `emit`: no `onRecord`, no observer), and the call was not cancelled (a cancel's
   * delivery and its verification revise the record through this object). The wire's tombstone
   * of such a call may hold its call number instead of it (`Wire.lateRecords`).
   */
  get readByLedgerOnly(): boolean {
    return this.#emit === undefined && this.#facts.trigger === null;
  }

  /** Hands revision 0 to `emit` (built for it), if there is one. Called once, when the call settles. */
  report(): void {
    if (this.#emit !== undefined) this.#emit(this.record);
  }

  /** The latest revision of the run record. */
  get record(): RunRecord {
    return (this.#record ??= buildRecord(this.#facts));
  }

  /** The run record as it was when the call settled (revision 0). */
  get initial(): RunRecord {
    if (this.#initial !== null) return this.#initial;
    return this.#settledFacts === null ? this.record : (this.#initial = buildRecord(this.#settledFacts));
  }

  get callId(): number {
    return this.#facts.callId;
  }

  get requestId(): string | number | null {
    return this.#facts.requestId;
  }

  get method(): string {
    return this.#facts.method;
  }

  get elapsedMs(): number {
    return this.#facts.elapsedMs;
  }

  /** See `LateSink.answered`. */
  get answered(): boolean {
    return this.#facts.status === "succeeded";
  }

  /** How the call ended (never changed by an update). */
  get status(): CallStatus {
    return this.#facts.status;
  }

  /** The outcome at the settle (revision 0). */
  get outcome(): CallOutcome {
    return this.#facts.outcome;
  }

  /**
   * Counts a late message; a late result or error of a cancelled call is `late-result-discarded`.
   * A late result that says the work was done (`ran`) overrides a verification that found it not
   * applied (the read came before the work ended): the latest evidence is that it ran. A response
   * read before its stream's close, or with what the stream held at it, shows the close stopped
   * nothing (`closedAfterItsResponse`); one that came otherwise, later (`afterItsClose`), shows nothing of it.
   */
  late(kind: "result" | "error" | "progress", ran = false, afterItsClose = false): void {
    const late = countLate(this.record.late, kind);
    const answered = kind !== "progress" && !afterItsClose;
    if (answered) this.#answered = true;
    let cancel = answered ? closedAfterItsResponse(this.record.cancel) : null;
    const held = kind === "progress" ? undefined : this.#answeredFirst;
    if (held !== undefined) {
      this.#answeredFirst = undefined;
      const current = cancel ?? this.record.cancel;
      if (current !== null && held.failed !== null)
        cancel = { ...current, mechanism: "none", sentAt: null, undelivered: undeliveredOf(held.failed) };
    }
    const changes: RecordUpdate = cancel === null ? { late } : { late, cancel };
    if (ran && kind === "result") this.ranCount++;
    if (ran && kind === "result" && this.record.outcome === "verified-not-applied") {
      this.update({ ...changes, outcome: "late-result-discarded" });
      return;
    }
    this.update(changes, kind === "progress" ? undefined : "late-result-discarded");
  }

  /**
   * What the adapter learned after the settle about the cancel's delivery: the record then names
   * only what went out, and the part that failed; a request that never reached the server is
   * `not-sent` (nothing to cancel).
   */
  delivery(report: CancelDelivery): void {
    if (this.#facts.trigger === null) return;
    if (!this.#answered && report.sent === "none" && report.failed?.error === ANSWERED_FIRST) {
      if (this.#answeredFirst === undefined) queueMicrotask(() => this.#flushAnsweredFirst());
      this.#answeredFirst = report;
      return;
    }
    this.#deliver(report);
  }

  /** An "arrived first" report no late count took (see `#answeredFirst`): a revision of its own. */
  #flushAnsweredFirst(): void {
    const held = this.#answeredFirst;
    this.#answeredFirst = undefined;
    if (held !== undefined) this.#deliver(held);
  }

  #deliver(report: CancelDelivery): void {
    const { sent, failed, sentWall } = this.#answered ? answeredBeforeClose(report) : report;
    // Against what the record says now (a late response may have revised the mechanism since the settle).
    const mechanism = this.#record === null ? this.#facts.mechanism : this.#record.cancel?.mechanism;
    const onlyTimeIsNew = failed === null && sent !== "none" && sent === mechanism && sentWall !== undefined;
    // A time no later than the one recorded is no news: a revision says a cancel went 1 ms or more
    // after the settle, never earlier (an outside tester's: a 2025-era POST attempted while the
    // call settled moved `sentAt` before `settledAt`, in a revision of its own).
    if (onlyTimeIsNew && sentWall !== null && sentWall <= (this.#recordedSentWall() ?? Number.NEGATIVE_INFINITY)) return;
    if (onlyTimeIsNew && this.#record === null && this.#emit === undefined) {
      // Only the time it went out is new, and nobody has seen the record: the facts say it, as the
      // next revision, and nothing is built (100,000 timed-out calls of a gateway would otherwise
      // build as many records nobody reads). Read late, it equals what an `onRecord` saw last.
      this.#settledFacts ??= this.#facts;
      this.#facts = { ...this.#facts, sentWall, revision: (this.#facts.revision ?? 0) + 1 };
      return;
    }
    const cancel = this.record.cancel;
    if (cancel === null) return;
    // A task-augmented request's note that its task may exist uncancelled (rules 35, 36) stays.
    const kept = cancel.undelivered?.mechanism === "tasks/cancel" ? cancel.undelivered : null;
    const undelivered = failed === null ? kept : undeliveredOf(failed);
    // Something went out with no time given: when the record said it had not gone yet, it went now
    // (the adapter reports as it learns: a stream closed at the end of its wait, say).
    const sentAt =
      sent === "none" || sentWall === null ? null : sentWall === undefined ? (cancel.sentAt ?? isoTime(Date.now())) : isoTime(sentWall);
    const next = { ...cancel, mechanism: sent, sentAt, undelivered };
    this.update(sent === "none" && failed === null ? { cancel: next, outcome: "not-sent" } : { cancel: next });
  }

  /** When the latest revision says the cancel went out (`Date.now()` ms), or null when it says it has not. */
  #recordedSentWall(): number | null {
    if (this.#record === null) return this.#facts.sentWall;
    const sentAt = this.#record.cancel?.sentAt;
    return sentAt === null || sentAt === undefined ? null : Date.parse(sentAt);
  }

  /** Replaces the record with an updated copy (a cancelled call's outcome only ever rises) and reports it. */
  update(changes: RecordUpdate, outcome?: CancelledOutcome): RunRecord {
    const current = this.record;
    // A revision says something new: an update that changes nothing (a task watch that learned
    // nothing more, say) is not one (an outside tester saw identical revisions but for the number).
    if (!changesSomething(current, changes) && !raises(current, outcome)) return current;
    this.#initial ??= this.#settledFacts === null ? current : buildRecord(this.#settledFacts);
    // What changes after the settle never changes `status` (the union's key): only a cancelled call's `cancel` and `outcome` do.
    const next = { ...current, ...changes, revision: current.revision + 1 } as RunRecord;
    if (raises(current, outcome)) (next as CancelledRunRecord).outcome = outcome!;
    next.summary = summarize(next);
    frozenRecord(next);
    this.#record = next;
    this.#emit?.(next);
    return next;
  }
}

/**
 * A response read for a request whose cancel closed its stream, before the close or with what the
 * stream held at it: the response travels on that stream (rules 24, 27), so the server had written
 * it before the close could reach it, and the close stopped nothing. (One that came later another
 * way, a misbehaving server's, is not read so: `AFTER_ITS_CLOSE`.) The record then names only what did reach the server (`answeredBeforeClose`).
 * Null when the record names no stream close (an outside tester's: a 2026-07-28 record said the
 * stream was closed while the server saw its response end normally).
 */
function closedAfterItsResponse(cancel: RunRecord["cancel"]): RunRecord["cancel"] {
  if (cancel === null) return null;
  const { sent, failed } = answeredBeforeClose({ sent: cancel.mechanism, failed: cancel.undelivered });
  if (sent === cancel.mechanism) return null;
  return { ...cancel, mechanism: sent, sentAt: sent === "none" ? null : cancel.sentAt, undelivered: failed };
}

/**
 * What reached the server of a cancel whose stream close came after its response was read:
 * `notification+stream-close` is `notification`; `stream-close` is `none` (on 2026-07-28 with the
 * undelivered entry saying the stream close was not done, the response came first, as when it was
 * read before the close). Also
 * for the delivery reports that come after such a response (an outside tester's second pass: a
 * refused 2025-era notification, reported after the late result, said `stream-close` again).
 */
function answeredBeforeClose(report: CancelDelivery): CancelDelivery {
  if (report.sent === "notification+stream-close") return { ...report, sent: "notification" };
  if (report.sent !== "stream-close") return report;
  return { sent: "none", failed: report.failed ?? { mechanism: "stream-close", error: ANSWERED_FIRST } };
}

/** Whether `outcome` raises a cancelled record's outcome (an update only ever raises it: OUTCOME_RANK). */
function raises(current: RunRecord, outcome: CancelledOutcome | undefined): boolean {
  return (
    outcome !== undefined &&
    current.status === "cancelled" &&
    (OUTCOME_RANK[outcome] ?? -1) > (OUTCOME_RANK[current.outcome] ?? Number.POSITIVE_INFINITY)
  );
}

/** Whether `changes` holds a value the record does not have already (values compared as JSON: records are plain data). */
function changesSomething(current: RunRecord, changes: RecordUpdate): boolean {
  for (const key of Object.keys(changes) as Array<keyof RecordUpdate>) {
    const before = (current as unknown as Record<string, unknown>)[key];
    const after = changes[key];
    if (before !== after && JSON.stringify(before) !== JSON.stringify(after)) return true;
  }
  return false;
}

/** What of a cancel did not get through, as the record keeps it (its error cut to `MAX_REASON_LENGTH`). */
export function undeliveredOf(failed: CancelUndelivered): CancelUndelivered {
  const kept: CancelUndelivered = { mechanism: failed.mechanism, error: failed.error.slice(0, MAX_REASON_LENGTH) };
  if (failed.written === true) kept.written = true;
  return kept;
}
