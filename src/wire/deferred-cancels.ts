// Timer-fired cancels, sent after the settling under way. When a timer fires a cancel (an idle
// timeout, a maximum total timeout, a deadline shared by many calls), the server's answer may be
// waiting unread (timers run before input is read, and a busy event loop lets answers pile up),
// and the callers whose calls timed out together should all be released before any of their
// notifications is sent (each is a server's work). So the notification waits; an answer read
// meanwhile means the request is over, and nothing is sent (rule 7); a connection that closes
// first sends nothing, and the record says so.
//
// The one mechanism for both places a plain notification is the cancel, in two modes:
// - the bottom port of every pipeline (a transport no layer took the cancel for): the
//   notifications go in the settle slicer's after-queue (`Slicer.runAfter`: a step only while no
//   settle waits, nor one is a millisecond away: a burst of deadlines over several timer fires
//   is released whole first, holding its notifications at most `MAX_HOLD_MS`), one per step, in
//   slices;
// - the stdio write queue (`hop`): the turn's cancels wait for its check phase, so the input of the
//   turn is read first, and then go, all of them, in that check phase. Not in the slices: under a
//   steady stream of settles (200 calls in flight, a timeout every few ms) the after-queue waited
//   up to 130 ms for a turn, and the server answered meanwhile (the soak's crossings).
//
// A process that exits while such cancels wait (a bot's `catch` that calls `process.exit`, an
// uncaught rejection of the timeout's error) sends them from its `exit` event (`flushAtExit`,
// after the settle slicer's waiting work): the write to a child's stdin pipe is made at once, as
// the SDK's own timer makes it (an outside tester's: the server saw only its stdin end and ran the
// tool to its end, the record saying the line went).
import type { RequestId } from "../core/cancellable-call.js";
import type { CancelMechanism } from "../types/record.js";
import { Slicer, flushAtExit, keepFromExit, processClock, settleSlicer } from "../utils/slices.js";
import type { SliceWork } from "../utils/slices.js";
import { findAnswered } from "./messages.js";
import type { Message } from "./messages.js";
import type { CancelRequest } from "./types.js";
import { ANSWERED_FIRST } from "../core/record.js";

/** How a {@link DeferredCancels} sends and waits. */
export interface DeferredCancelsInit {
  /**
   * Sends one cancel now (its own mechanism, its own record of failures). `since`: when it could
   * have gone (`processClock`, ms); the sender tells the record when it really went, if that was
   * 1 ms or more later ({@link leftLate}), once its line or notification leaves.
   */
  readonly send: (request: CancelRequest, since: number) => CancelMechanism;
  /**
   * Runs `next` in a later phase, where the cancels then go, all of them (stdio: `setImmediate`,
   * the check phase, after this turn's input was read); returns what `unhop` takes. Default: none
   * (they join the slicer at once: a lone timeout's notification goes in the same task).
   */
  readonly hop?: ((next: () => void) => unknown) | undefined;
  readonly unhop?: ((handle: unknown) => void) | undefined;
}

/**
 * The time (`Date.now()`, ms) a cancel's notification about to be sent goes out at, when its
 * record must learn it: 1 ms or more after `since` (`processClock`, ms: when it could have gone,
 * its settle). `sentAt` is then the time it left, not the settle's (a mass timeout's
 * notifications go behind the settles; a stdio line waits for its turn's check phase). Read just
 * before the send (read after, a busy machine made it later than the server's read of the line:
 * an outside tester's), told to the record once the transport took it. Undefined otherwise: the
 * record's time stands. A stdio line that waits for a full pipe says so at once instead (`sentAt`
 * null), and its time when written (stdio/queue.ts).
 * @internal
 */
export function leftLate(since: number | undefined): number | undefined {
  return since !== undefined && processClock() - since >= 1 ? Date.now() : undefined;
}

/**
 * Timer-fired cancels waiting to be sent, in the order they came (see the file comment). Each is
 * sent with the time it could have gone, so the sender tells its record when it really went
 * ({@link leftLate}): `sentAt` stays true for a mass timeout.
 * @internal
 */
export class DeferredCancels {
  readonly #send: DeferredCancelsInit["send"];
  readonly #hop: DeferredCancelsInit["hop"];
  readonly #unhop: DeferredCancelsInit["unhop"];
  /** By request id; `since`: when the notification could have gone (`processClock`, ms; monotonic, so a wall-clock millisecond ticking over between the two is no delay). */
  readonly #waiting = new Map<RequestId, { request: CancelRequest; since: number }>();
  /** With a `hop`: the cancels that wait for it (`since` as in `#waiting`). */
  readonly #beforeHop = new Map<RequestId, { request: CancelRequest; since: number }>();
  /**
   * Where `#work` takes the next of `#waiting` from: one iterator kept across steps (it goes on
   * past entries deleted and takes those added meanwhile), dropped when it is done. An iterator
   * made afresh each step scans every deleted entry before the first live one (V8 keeps them as
   * holes until the table is rebuilt): a burst's drain was quadratic, 14 ms for 10,000 cancels and
   * 1.5 s for 100,000, where this is linear (2.7 ms and 34 ms).
   */
  #cursor: Iterator<[RequestId, { request: CancelRequest; since: number }]> | undefined = undefined;
  /** A hop under way (its handle), else `undefined`. */
  #hopping: unknown = undefined;
  /** The steps are in the settle slicer's after-queue. */
  #queued = false;

  constructor(init: DeferredCancelsInit) {
    this.#send = init.send;
    this.#hop = init.hop;
    this.#unhop = init.unhop;
  }

  /** Cancels waiting (0 when none). */
  get size(): number {
    return this.#waiting.size + this.#beforeHop.size;
  }

  /** Takes a timer-fired cancel; it goes out later (see the class comment). Returns its mechanism. */
  defer(request: CancelRequest): CancelMechanism {
    if (this.size === 0) flushAtExit(this);
    if (this.#hop === undefined) {
      this.#ready(request, processClock());
      return "notification";
    }
    this.#beforeHop.set(request.requestId, { request, since: processClock() });
    this.#hopping ??= this.#hop(this.#hopped) ?? true;
    return "notification";
  }

  readonly #hopped = (): void => {
    this.#hopping = undefined;
    this.#afterHop();
    this.#emptied();
  };

  /** Nothing waits any more: off the exit's list. */
  #emptied(): void {
    if (this.size === 0) keepFromExit(this);
  }

  /** The hop is over (or cut short by a close): its cancels go now, in the order they came. */
  #afterHop(): void {
    for (const [id, { request, since }] of this.#beforeHop) {
      this.#beforeHop.delete(id);
      this.#send(request, since);
    }
  }

  #ready(request: CancelRequest, since: number): void {
    this.#waiting.set(request.requestId, { request, since });
    if (this.#queued) return;
    this.#queued = true;
    // Joined on the slicer that is draining (a settle's step is on the stack; an injected clock's
    // queue orders it too), else the process's own.
    (Slicer.draining ?? settleSlicer).runAfter(this.#work);
  }

  /** One notification per step, callers first (see the class comment). */
  readonly #work: SliceWork = {
    step: (): boolean => {
      const next = (this.#cursor ??= this.#waiting.entries()).next();
      if (next.done === true) {
        this.#cursor = undefined;
        this.#queued = false;
        return false;
      }
      const [id, { request, since }] = next.value;
      this.#waiting.delete(id);
      this.#send(request, since);
      if (this.#waiting.size > 0) return true;
      this.#cursor = undefined;
      this.#queued = false;
      this.#emptied();
      return false;
    },
  };

  /**
   * A message from the server: an answer to a request whose cancel waits ends it, unsent (rule 7).
   * Matched as the wire matches it: "1" answers request 1.
   */
  answered(message: Message): void {
    if (this.size === 0 || message.method !== undefined) return;
    const request = findAnswered(
      (message as { id?: unknown }).id,
      (requestId) => (this.#waiting.get(requestId) ?? this.#beforeHop.get(requestId))?.request,
    );
    if (request === undefined) return;
    this.#waiting.delete(request.requestId);
    this.#beforeHop.delete(request.requestId);
    this.#emptied();
    request.delivery({ sent: "none", failed: { mechanism: "notification", error: ANSWERED_FIRST } });
  }

  /** The connection closed: nothing waiting is sent, and each record says so with `error`. */
  drop(error: string): void {
    this.#stopHop();
    for (const { request } of this.#beforeHop.values()) request.delivery({ sent: "none", failed: { mechanism: "notification", error } });
    for (const { request } of this.#waiting.values()) request.delivery({ sent: "none", failed: { mechanism: "notification", error } });
    this.#beforeHop.clear();
    this.#waiting.clear();
    this.#cursor = undefined;
    keepFromExit(this);
  }

  /**
   * A message is about to go out after these cancels were decided (the caller's retry in the
   * timeout's own continuation, a framework's next tool call, the cancel of a caller's own abort
   * of another call): they go first, now, so the server learns of each cancel before anything the
   * client sent after it (an outside tester's: the retry reached the server before the timed-out
   * call's notification, every time). What waited for the turn's input gives that up: order on
   * the wire comes first.
   */
  beforeSend(): void {
    if (this.#waiting.size > 0 || this.#beforeHop.size > 0) this.flush();
  }

  /** The client is closing (or the process exiting): everything waiting goes now, before the transport ends. */
  flush(): void {
    this.#stopHop();
    this.#afterHop();
    while (this.#waiting.size > 0) this.#work.step();
    keepFromExit(this);
  }

  #stopHop(): void {
    if (this.#hopping === undefined) return;
    this.#unhop?.(this.#hopping);
    this.#hopping = undefined;
  }
}
