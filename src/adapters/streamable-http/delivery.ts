// The 2025-era notification delivery: the layer of a Streamable HTTP connection's pipeline right
// above the stream tracker. On a 2025-era connection (2025-03-26 to 2025-11-25) a cancel is
// `notifications/cancelled` POSTed to the server (rule 40: a disconnect is not a cancel there),
// and the request's stream is closed too (a stateless server stops on that alone). On 2026-07-28
// the stream close is the whole cancel (rules 6, 28): this layer passes it down untouched.
import type { RequestId } from "../../core/cancellable-call.js";
import type { CancelMechanism } from "../../types/record.js";
import { ANSWERED_FIRST } from "../../core/record.js";
import { Slicer, processClock, settleSlicer, yieldTask } from "../../utils/slices.js";
import type { SliceWork } from "../../utils/slices.js";
import { Layer } from "../../wire/port.js";
import type { WireFact } from "../../wire/port.js";
import type { CancelRequest } from "../types.js";
import { isCancelSendNetworkFailure } from "./fetch.js";
import type { Stream, StreamTracker } from "./streams.js";
import { textOf } from "../../utils/hooks.js";
import { fetchQueuesOutOfSight } from "../../utils/runtime.js";

/** One 2025-era notification on its way: its current bounded wait, and its promise (for `close()`). */
interface Delivery {
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Ends the current wait at once (the transport closed). */
  wake: (() => void) | undefined;
  /** The notification went: the wait is for its answer (neither a close nor the transport's end wakes it: its fetch settles). */
  sending: boolean;
  /**
   * It waited before it could go (for its request to reach the server, or for what came with the
   * request's response head): the first record said it had not gone yet (`sentAt` null), so the
   * next one says when it went.
   */
  held: boolean;
  /**
   * Decided while a mass settle was under way (a shared signal's abort, settled in slices): its
   * notification goes after the settling, as a timer-fired one does (see `#deliver`).
   */
  inBurst: boolean;
  /** The delivery ended (its record written): a notification POST still on its way is not sent again. */
  over: boolean;
  done: Promise<void>;
}

const TIMED_OUT = Symbol("timed out");

/** What a cancel's record says of a notification not sent because the response came first (rule 7). */
const ANSWERED_FIRST_FAILURE = { mechanism: "notification", error: ANSWERED_FIRST } as const;

/**
 * How long a notification whose request's head came while it waited waits for the body's first
 * bytes, ms: bytes sent with the head (a held head and its first event) arrive within it; a
 * head sent alone as the server started is not followed by them, and the notification goes.
 */
const WITH_HEAD_MS = 5;

/**
 * The 2025-era delivery (see the file comment). When the notification goes, from the facts the
 * stream tracker observed of the request, so it never overtakes its request and never follows
 * its response:
 *
 * - at once when the server has the request: its response head arrived (the server is handling
 *   it: an SSE server sends the head as it starts; the notification then goes on a pooled
 *   connection), or its body was fully written on a server that answers in JSON (no head before
 *   the answer there; the notification then goes on a connection of its own, opened after the
 *   request's, so the server reads the request first);
 * - else as soon as one of those facts arrives, waiting at most `flushTimeoutMs` (a fetch that
 *   cannot tell when a body was written waits for the head, or the bound: the record cannot say
 *   more than that);
 * - never for a request whose body was not even written within that bound (it has not reached
 *   the server: the notification would reach it first), never when the request provably never
 *   reached the server, and never once its response arrived (rule 7); the record says which. A
 *   body written with no head yet (an SSE server may hold its head until its first event) gets
 *   the notification at the bound.
 *
 * The request's stream is closed once the server answered the notification (or its send failed),
 * at most flushTimeoutMs after it went: the server gets the cancel before the stream goes. A
 * notification not answered within notificationTimeoutMs is given up (its POST aborted) and
 * recorded as sent with no answer. A notification that fails is retried once after a
 * connection-level failure (a duplicate is harmless, rule 10) and then recorded on the call
 * (`cancel.undelivered`), never reported to `onerror`. The caller of the cancelled call never
 * waits for any of it.
 */
export class LegacyDelivery extends Layer {
  readonly #tracker: StreamTracker;
  readonly #flushTimeoutMs: number;
  /** How long a notification waits for its answer before it is given up, ms. */
  readonly #notificationTimeoutMs: number;
  /** The fetch reports each request's body fully written (else `written` is unknown); read at each decision. */
  readonly #observesBody: () => boolean;
  /** Notifications on their way, each with its current `flushTimeoutMs` timer. */
  readonly #deliveries = new Set<Delivery>();
  /** The server has answered a POST with an SSE stream: its response head comes as it starts a request. */
  #sse = false;
  /** `close()` was called: no notification waits any more for its request to reach the server. */
  #closing = false;
  /** Timer-fired notifications waiting for the settling under way (`#afterSettles`). */
  #afterSettling = 0;

  constructor(below: StreamTracker, init: { flushTimeoutMs: number; notificationTimeoutMs: number; observesBody: () => boolean }) {
    super(below);
    this.#tracker = below;
    this.#flushTimeoutMs = init.flushTimeoutMs;
    this.#notificationTimeoutMs = init.notificationTimeoutMs;
    this.#observesBody = init.observesBody;
  }

  /** 2025-era cancels whose notification is not delivered yet. */
  get flushing(): number {
    return this.#deliveries.size;
  }

  override fact(requestId: RequestId, fact: WireFact): void {
    if (fact.kind === "answered" && fact.contentType?.startsWith("text/event-stream") === true) this.#sse = true;
    this.up.fact(requestId, fact);
  }

  override cancel(request: CancelRequest): CancelMechanism {
    // 2026-07-28 (the close is the cancel), and a task-augmented request awaiting its
    // CreateTaskResult (never a notification, rules 2, 35, 36: its stream is kept open for it).
    if (this.#tracker.era === "modern" || request.awaitsTask !== undefined) return this.below.cancel(request);
    // Rule 40: the notification (the transport adds the session and protocol-version headers),
    // once the request reached the server, and the stream closes. Nothing here holds the caller.
    const stream = this.#tracker.stream(request.requestId);
    // Still in this process: it never leaves, and nothing is POSTed for it.
    if (stream !== undefined && this.#tracker.stopUndispatched(stream, request)) return "none";
    if (stream !== undefined) stream.cancelled = true;
    // A browser may hold a request with no response head yet in its own connection queue (six per
    // origin), out of sight: waiting for its head would let it go out after the cancel, and run (an
    // outside tester's, in Chromium). Its stream is closed at once (a queued request is dropped,
    // one on the wire disconnected) and the notification goes at once, in case the server has it.
    const closedFirst =
      stream !== undefined && stream.status === undefined && !stream.responded && stream.settled === "pending" && fetchQueuesOutOfSight();
    if (closedFirst) this.#tracker.closeStream(stream);
    const delivery: Delivery = {
      timer: undefined,
      wake: undefined,
      sending: false,
      held: false,
      inBurst: Slicer.draining !== undefined,
      over: false,
      done: Promise.resolve(),
    };
    this.#deliveries.add(delivery);
    delivery.done = this.#deliver(request, closedFirst ? undefined : stream, delivery, processClock(), closedFirst).finally(() => {
      clearTimeout(delivery.timer);
      this.#deliveries.delete(delivery);
      // What the tracker kept of this cancel goes with it, on every path (an audit's: a request
      // whose cancel took no fetch that consults it kept its pooled-connection mark for the
      // connection's life, one a cancel).
      delivery.over = true;
      this.#tracker.cancelOver(request.requestId);
    });
    const mechanism = stream === undefined ? "notification" : "notification+stream-close";
    // Waiting (its request has not reached the server yet, or its head came without a body): the
    // first record says it has not gone (`sentAt` null, as a stdio line still queued), never that it went.
    if (delivery.held) request.delivery({ sent: mechanism, failed: null, sentWall: null });
    return mechanism;
  }

  /**
   * The decorated `close()`: a cancel made just before it still reaches the server. The
   * notifications on their way are given at most flushTimeoutMs, then the transport closes
   * (aborting whatever is left, which is then recorded as undelivered: the close resolves after
   * those records' revisions, at most flushTimeoutMs more).
   */
  override async close(): Promise<void> {
    if (this.#deliveries.size > 0) {
      // A notification still waiting for its request to reach the server (a server that holds its
      // head until its first event makes it wait up to flushTimeoutMs) goes now, if its request's
      // body was written, or is given up, if not: else its own wait would take the whole bound
      // given here, and the close would abort it as it starts.
      this.#closing = true;
      for (const delivery of this.#deliveries) if (!delivery.sending) delivery.wake?.();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.all([...this.#deliveries].map((delivery) => delivery.done)),
        new Promise((resolve) => (timer = setTimeout(resolve, this.#flushTimeoutMs))),
      ]);
      clearTimeout(timer);
      // Their streams close on the turn after the answers were read (see `#deliver`): the close
      // of the transport waits for that turn too, so a result written with a 202 is read first
      // (an outside tester's: closing the client cut it off, where an abort read it).
      await new Promise<void>((resolve) => yieldTask(resolve));
    }
    await this.below.close();
    // The transport's close aborted what was still unanswered: each such notification's record
    // says so (undelivered) before the close resolves (an outside tester's: a bot reading its
    // records right after `await client.close()` got them unrevised). Their fetches reject at
    // once; bounded all the same.
    if (this.#deliveries.size > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.all([...this.#deliveries].map((delivery) => delivery.done)),
        new Promise((resolve) => (timer = setTimeout(resolve, this.#flushTimeoutMs))),
      ]);
      clearTimeout(timer);
    }
  }

  override closed(): void {
    // The transport aborted every fetch: no delivery waits any more (their sends reject).
    // A notification waiting for its answer keeps its bound: its aborted fetch settles it.
    for (const delivery of this.#deliveries) {
      if (delivery.sending) continue;
      clearTimeout(delivery.timer);
      delivery.wake?.();
    }
    this.up.closed();
  }

  /**
   * Waits until what arrived with a request's response head has reached the SDK: its body's
   * first bytes (if they come within {@link WITH_HEAD_MS}: sent with the head, not later), then
   * the task they are parsed in. Ends early on the response itself, or the stream's end.
   */
  async #withHead(stream: Stream): Promise<void> {
    if (!stream.bodyStarted) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        stream.onFact = () => {
          if (stream.bodyStarted || stream.responded || stream.settled === "failed" || this.#tracker.closedDown) resolve();
        };
        timer = setTimeout(resolve, WITH_HEAD_MS);
      });
      clearTimeout(timer);
      stream.onFact = undefined;
    }
    if (stream.bodyStarted && !stream.responded) await new Promise<void>((resolve) => yieldTask(resolve));
  }

  /** The server has the request (see the class comment), or nothing more can be learned of it. */
  #decided(stream: Stream): boolean {
    if (stream.responded || stream.settled !== "pending" || stream.status !== undefined || this.#tracker.closedDown) return true;
    return stream.written && !this.#sse;
  }

  /**
   * @param since when the cancel was made (`processClock`, ms): a notification POSTed 1 ms or more later revises the record's `sentAt`.
   * @param closedFirst the request's stream was closed already, at the cancel (`stream` is then undefined).
   */
  async #deliver(
    request: CancelRequest,
    stream: Stream | undefined,
    delivery: Delivery,
    since: number,
    closedFirst = false,
  ): Promise<void> {
    const closes = stream !== undefined || closedFirst;
    // Its response arriving while the notification is held: the record learns at once that
    // nothing goes (rule 7), before the response's late revision (an outside tester's: that
    // revision named the notification as the cancel; the next one took it back).
    let toldAnswered = false;
    if (stream !== undefined) {
      stream.onAnswered = () => {
        stream.onAnswered = undefined;
        toldAnswered = true;
        request.delivery({ sent: "none", failed: ANSWERED_FIRST_FAILURE });
      };
    }
    if (stream !== undefined && !this.#decided(stream)) {
      delivery.held = true;
      await this.#bounded(
        delivery,
        new Promise<void>((resolve) => {
          stream.onFact = () => {
            if (this.#decided(stream)) resolve();
          };
        }),
      );
      stream.onFact = undefined;
      // Its head came while the notification waited: a server that holds its head until its
      // first event sends that event with it, and it may be the answer (rule 7). What came with
      // the head is read first.
      if (stream.status !== undefined && !stream.responded && !stream.answeredInJson && !this.#closing) await this.#withHead(stream);
    }
    // A JSON head with no body yet: the v1 SDK server sends both together, but a server that
    // flushes its head first (to keep a proxy from timing out) is still working on the request.
    // A body sent with the head arrives within WITH_HEAD_MS; a head that came alone is no answer
    // (rule 7 does not apply), and the notification goes (rule 40: the stream close alone is no cancel).
    if (stream?.answeredInJson === true && !stream.responded && !stream.bodyStarted && stream.settled === "pending" && !this.#closing) {
      delivery.held = true;
      await this.#withHead(stream);
    }
    if (stream !== undefined) {
      stream.onAnswered = undefined;
      // A request that provably never reached the server: nothing to cancel. Its body was never
      // fully written (a fetch that reports it), or its connection was never made.
      if (stream.settled === "failed" && this.#tracker.provedUnsent(stream, stream.failure)) {
        this.#tracker.closeStream(stream);
        request.delivery({ sent: "none", failed: null });
        return;
      }
      // Rule 7: its response arrived while the notification waited (or its head says the answer
      // follows in JSON); the request is no longer in progress, so nothing is POSTed (the wire
      // discards the response as late).
      // Neither a head nor (a fetch that reports it) the body fully written within the bound: the
      // request has not reached the server (its connection not yet accepted: a server that is
      // behind). A notification now would reach it first, be ignored as unknown (rule 10), and
      // leave the request to run once it arrives: it is not sent; the stream is closed (the
      // request goes with it), and the record says what was not done.
      if (this.#observesBody() && !stream.written && stream.status === undefined && stream.settled === "pending" && !stream.responded) {
        // Its POST then fails with the body never written: it never reached the server (not-sent).
        stream.onUnsent = () => request.delivery({ sent: "none", failed: null });
        this.#tracker.closeStream(stream);
        request.delivery({
          sent: "stream-close",
          failed: {
            mechanism: "notification",
            error: `not sent: the request had not reached the server (its body not written) ${
              this.#closing || this.#tracker.closedDown
                ? "before the client closed the connection"
                : `within flushTimeoutMs (${this.#flushTimeoutMs} ms)`
            }`,
          },
        });
        return;
      }
      // A JSON head alone is no answer (its body may never come), at a client's close too: there the
      // notification goes at once (an outside tester's: the record said "the response arrived
      // first" and no notification went, for a server that had written nothing but the head).
      if (this.#answeredFirst(stream, request, toldAnswered)) return;
    }
    if (stream?.status !== undefined) this.#tracker.allowPooled(request.requestId);
    // The notification goes first; the stream closes once the server answered it (or its send
    // failed), at most flushTimeoutMs later (rule 40: the POSTed cancel, then the close). The
    // caller settled long ago; a result on the stream meanwhile is late and dropped.
    // A notification whose answer does not come within that bound is given up (its POST aborted,
    // its socket released), and the record says so: no wait, and no record, stays open on it.
    const attempt: { at: number; wall: number; onWritten?: (() => void) | undefined } = { at: since, wall: 0 };
    // A timer-fired notification that would go at once goes after the settling under way: in the
    // next task (the callers whose calls timed out together, and their continuations, are all
    // released before any POST of theirs runs), from the settle slicer's after-queue (no settle
    // waiting or due within a millisecond; sent in slices, so the POSTs, each a fetch and a
    // connection, do not hold the timers of the calls due next). An outside tester's: 200 calls
    // timing out together were released up to 0.8 s after their limit, the raw SDK's within 0.3 s.
    // What was decided above is in the first record already; a response that arrives meanwhile
    // ends it unsent (rule 7). So does one decided in a mass settle (a shared signal's abort,
    // settled in slices): an outside tester's 600 calls on one aborted signal were released up to
    // 1.3 s after the abort, each slice's POSTs started between it and the next (the raw SDK's 0.15 s).
    let sending: Promise<unknown>;
    if ((request.byTimer === true || delivery.inBurst) && !closedFirst && !delivery.held) {
      const sent = await this.#afterSettles(request, stream, attempt, delivery);
      if (sent === undefined) return;
      sending = sent.sending;
    } else {
      sending = this.#sendNotification(request, attempt, delivery);
    }
    // Held until now, its first record said it had not gone (`sentAt` null): it goes now, and the
    // record says so at once, not when its answer comes (an outside tester's: a revision in between
    // still said not gone, after the server had it).
    if (delivery.held)
      request.delivery({ sent: closes ? "notification+stream-close" : "notification", failed: null, sentWall: attempt.wall });
    if (stream !== undefined) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const close = (): void => {
        clearTimeout(timer);
        attempt.onWritten = undefined;
        this.#tracker.closeStream(stream);
      };
      // In a browser the notification may wait for a connection in the runtime's own queue behind
      // this very stream (six per origin): the stream closes as soon as the notification is handed
      // to fetch, else both would wait out flushTimeoutMs and the server see the close first all the same.
      if (fetchQueuesOutOfSight()) timer = setTimeout(close, 0);
      // A fetch that reports the notification's body written: the bound runs from then, so the server
      // has the cancel before it sees the stream go (rule 40). Timed from the send, a burst's
      // notifications, each a fetch queued behind the others', reached the server after their
      // streams closed (an outside tester's: 300 cancels on one connection, every stream closed
      // first, by up to 0.8 s). One never written closes when its send is given up
      // (notificationTimeoutMs) or fails.
      else if (this.#observesBody()) {
        attempt.onWritten = () => {
          if (timer === undefined) timer = setTimeout(close, this.#flushTimeoutMs);
        };
      } else timer = setTimeout(close, this.#flushTimeoutMs);
      // Closed on the turn after the answer to the notification was read, not in its microtasks:
      // a server that answers the notification and writes the result in the same tick sends both
      // at once, and the result, read with the 202 from the same poll of the sockets, is then read
      // (a late result: rule 8, the record's outcome) before the close instead of cut off unread.
      void sending.then(() => {
        clearTimeout(timer);
        yieldTask(close);
      });
    }
    let failure = await this.#bounded(delivery, sending, this.#notificationTimeoutMs);
    let unanswered: string | undefined;
    if (failure === TIMED_OUT) {
      unanswered = this.#tracker.closedDown
        ? "before the client closed the connection"
        : `within notificationTimeoutMs (${this.#notificationTimeoutMs} ms)`;
      const giveUp = new Error(`no answer came ${unanswered}`);
      // A fetch of ours aborts the POST, which then settles; any other fetch's goes on unheard. The
      // wait for that settle is bounded too (flushTimeoutMs): past the abort the SDK's send may do
      // what no abort reaches (an audit's: its auth flow on a 401), and the delivery would stay open.
      if (this.#tracker.giveUpCancel(request.requestId, giveUp)) {
        const after = await this.#bounded(delivery, sending, this.#flushTimeoutMs);
        failure = after === TIMED_OUT ? giveUp : after;
      } else {
        failure = giveUp;
      }
    }
    // The stream ended on its own while the notification was on its way (the server reset it): the
    // close that follows closes nothing, and the record names only the notification.
    const closed = closes && stream?.endedFirst !== true;
    if (failure === undefined) {
      // It went 1 ms or more after the cancel (it waited for the request to reach the server: the
      // v2 SDK server holds its head until its first event, up to flushTimeoutMs; or it was sent
      // again after a dropped connection): the record's sentAt says when the one delivered went.
      if (delivery.held || attempt.at - since >= 1 || closed !== closes) {
        request.delivery({
          sent: closed ? "notification+stream-close" : "notification",
          failed: null,
          sentWall: attempt.wall,
        });
      }
      return;
    }
    // Recorded once, on the call; never reported to onerror (the SDK's echo of it is swallowed too).
    const error = failure instanceof Error ? failure : new Error(textOf(failure));
    if (this.#tracker.cancelWritten(request.requestId)) {
      // Its body was written (the server may well have it): it went out, its answer did not come
      // (the close cut it short, most often). The record says so, not that it never left.
      request.delivery({
        sent: closed ? "notification+stream-close" : "notification",
        failed: {
          mechanism: "notification",
          error: `sent (its body written), but no answer came${unanswered === undefined ? `: ${error.message}` : ` ${unanswered}`}`,
          written: true,
        },
      });
      return;
    }
    request.delivery({
      sent: closed ? "stream-close" : "none",
      failed: { mechanism: "notification", error: unanswered === undefined ? error.message : `no answer came ${unanswered}` },
    });
  }

  /**
   * Rule 7: the request's response arrived (or its JSON head came with the body that answers it),
   * so the request is no longer in progress and nothing is POSTed; true when so. The stream is not
   * closed at once when the answer is in its body: it is read (dropped as late, and counted), at
   * most flushTimeoutMs. `told`: the record knows already.
   */
  #answeredFirst(stream: Stream, request: CancelRequest, told: boolean): boolean {
    if (!stream.responded && !(stream.answeredInJson && (stream.bodyStarted || stream.settled !== "pending"))) return false;
    if (stream.responded) this.#tracker.closeStream(stream);
    else
      this.#tracker.drain(stream, this.#flushTimeoutMs, () => request.delivery({ sent: "stream-close", failed: ANSWERED_FIRST_FAILURE }));
    if (!told) request.delivery({ sent: "none", failed: ANSWERED_FIRST_FAILURE });
    return true;
  }

  /**
   * `#sendNotification` from a step of the settle slicer's after-queue, entered in the next task
   * (see `#deliver`); `undefined`, nothing sent, when the request's response arrived meanwhile
   * (rule 7: the record says so).
   */
  #afterSettles(
    request: CancelRequest,
    stream: Stream | undefined,
    attempt: { at: number; wall: number },
    delivery: Delivery,
  ): Promise<{ sending: Promise<unknown> } | undefined> {
    this.#afterSettling++;
    return new Promise((resolve) => {
      const send: SliceWork = {
        step: () => {
          this.#afterSettling--;
          if (stream !== undefined && this.#answeredFirst(stream, request, false)) {
            resolve(undefined);
          } else {
            // In a box: a promise given to `resolve` would be waited for, not handed over.
            resolve({ sending: this.#sendNotification(request, attempt, delivery) });
          }
          return false;
        },
      };
      (Slicer.draining ?? settleSlicer).runAfter({
        step: () => {
          // A lone timeout's goes in the check phase of this turn, after the turn's input was read
          // (timers run before it: an answer waiting unread in the socket means the request is
          // over, rule 7; an outside tester's: a client whose loop was busy POSTed the cancel of a
          // request it had been answered for, and read the answer a moment later), as stdio's
          // timer-fired lines do; a burst's in the next task too, then in slices.
          if (this.#afterSettling === 1) yieldTask(send.step);
          else yieldTask(() => (Slicer.draining ?? settleSlicer).runAfter(send));
          return false;
        },
      });
    });
  }

  /**
   * Sends the notification; resolves `undefined` once the server answered it, else the failure.
   * Never rejects. `last` gets when the last attempt started (`processClock` and `Date.now()`).
   * Not sent again once the delivery is over (it gave up waiting for the answer: its record is written).
   */
  async #sendNotification(
    request: CancelRequest,
    last: { at: number; wall: number; onWritten?: (() => void) | undefined },
    delivery: Delivery,
  ): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        last.at = processClock();
        last.wall = Date.now();
        this.#tracker.refusal(request.requestId);
        this.#tracker.expectCancel(request.requestId, () => {
          // Written 1 ms or more after its send began (a fetch queued behind a burst's others):
          // it went out then, and the record's `sentAt` says so (an outside tester's: up to 1.1 s
          // before the POST reached the server).
          const now = processClock();
          if (now - last.at >= 1) {
            last.at = now;
            last.wall = Date.now();
          }
          last.onWritten?.();
        });
        await this.below.send(request.notification);
        // Answered: whether its body was seen written no longer matters (read, so forgotten).
        this.#tracker.cancelWritten(request.requestId);
        const status = this.#tracker.refusal(request.requestId);
        if (status === undefined) return undefined;
        // The server read it and said no: not retried (a duplicate would be refused too).
        return new Error(`the server refused the notification: HTTP ${status}`);
      } catch (error) {
        // Retry once when its fetch failed (a network failure, in whatever words the runtime or the
        // caller's fetch says it: an outside tester's, Bun's and a browser's were not retried),
        // never an abort (the delivery given up, the transport closing), never after the close.
        if (attempt === 1 && !delivery.over && isCancelSendNetworkFailure(error) && !this.#tracker.closedDown) continue;
        return error ?? new Error("the notification could not be sent");
      }
    }
  }

  /**
   * Waits for `promise`, at most `boundMs` (the timer is the delivery's, cleared with it); ends at
   * once when the transport closes. Without `boundMs`: the wait for the request to reach the
   * server, flushTimeoutMs, over at once once a close began. With it: the wait for the
   * notification's answer, which a close gives its own bound, then ends by aborting every fetch.
   */
  #bounded<T>(delivery: Delivery, promise: Promise<T>, boundMs?: number): Promise<T | typeof TIMED_OUT> {
    const answer = boundMs !== undefined;
    if (!answer && (this.#tracker.closedDown || this.#closing)) return Promise.resolve(TIMED_OUT);
    delivery.sending = answer;
    return new Promise<T | typeof TIMED_OUT>((resolve) => {
      delivery.timer = setTimeout(resolve, boundMs ?? this.#flushTimeoutMs, TIMED_OUT);
      delivery.wake = () => resolve(TIMED_OUT);
      promise.then(resolve, resolve);
    }).finally(() => {
      clearTimeout(delivery.timer);
      delivery.timer = undefined;
      delivery.wake = undefined;
    });
  }
}
