// The stdio write queue: the layer of a stdio connection's pipeline right on the transport. Every
// message (the SDK's requests, notifications and answers, and the library's own cancel lines) goes
// through the transport's own `send`, called only when the server's stdin can take the write; while
// it cannot, messages wait here, in order, behind one `drain` listener (the SDK's own `send` adds
// one listener per write that finds the pipe full: Node warns past 10). Node's stdin says when the
// pipe is full (`writableNeedDrain`); Bun's does not, and there the writes' own callbacks say it
// (`countsItsBuffer`, `StdioQueue.#watched`).
import type { RequestId } from "../../core/cancellable-call.js";
import type { CancelMechanism } from "../../types/record.js";
import type { ChildStdin } from "../../sdk/private.js";
import { ANSWERED_FIRST } from "../../core/record.js";
import { DeferredCancels, leftLate } from "../../wire/deferred-cancels.js";
import { Layer } from "../../wire/port.js";
import type { MessageExtra, Port, SendOptions } from "../../wire/port.js";
import { findAnswered, unserialisable } from "../../wire/messages.js";
import type { Message } from "../../wire/messages.js";
import type { CancelRequest } from "../types.js";
import { noop, textOf } from "../../utils/hooks.js";
import { flushAtExit, keepFromExit } from "../../utils/slices.js";
import { STDOUT_CLOSED_TEXT, StdoutWatch } from "./stdout-end.js";
import { WaitingLine } from "./waiting-line.js";
import type { Waiting } from "./waiting-line.js";
import type { StdoutSource } from "./stdout-end.js";

/** The part of the server's stdin the queue watches. */
export interface Stdin extends ChildStdin {
  once(event: "drain" | "close", listener: () => void): unknown;
  removeListener(event: "drain" | "close", listener: () => void): unknown;
}

/** How a {@link StdioQueue} treats the transport's other messages. */
export interface StdioQueueOptions {
  /**
   * Whether the SDK's messages (requests, notifications, answers) wait in the queue while the pipe
   * is full, or anything waits already. Default `true`: the SDK's `send` adds a `drain` listener
   * per write that finds the pipe full. `false` for a transport whose `send` waits on its write's
   * own callback and whose writes of one pass are corked into one system call (the CLI's, under
   * the proxy): its messages go to it at once, in order, and only the cancel lines wait here
   * (holding relayed requests would write the rest of a pass one system call each).
   */
  readonly holdMessages?: boolean | undefined;
  /**
   * Whether the transport's `send` settles at its line's own write callback: resolved once the
   * line was handed to the pipe, rejected with the error that kept it out (the CLI's transport).
   * A cancel line's record then follows its `send`, and no zero-length write goes behind a line
   * the pipe did not take whole at once. Default `false` (the SDK's `send` resolves as soon as
   * its write returned true).
   */
  readonly sendSettlesAtWrite?: boolean | undefined;
  /**
   * Where to watch the server's stdout end while its process runs on (stdout-end.ts): the SDK's
   * stdio transports. None for the CLI's transport, which sees that itself.
   */
  readonly stdout?: StdoutSource | undefined;
}

/** What became of the writes one `send` made to a stdin that does not count what it holds (`StdioQueue.#watched`). */
interface Writes {
  /** Writes made while the `send` ran. */
  made: number;
  /** Of them, those the runtime has not called back yet. */
  left: number;
  /** The first error one was called back with. */
  error: Error | undefined;
  /** True while the `send` runs (callbacks then are read when it returns). */
  during: boolean;
  /** Called once, after the `send` returned: when every write was called back, or at the first error. */
  done: ((error: Error | undefined) => void) | undefined;
}

/** Marks the write errors of cancel lines: the SDK echoes a stdin `error` to `onerror`; the record has it. */
const ownWriteErrors = new WeakSet<object>();

/**
 * The stdio write queue (see the file comment). Facts it reports: a request is `written` once the
 * transport's `send` resolved (the line was handed to the pipe), `ended` `refused` when that `send`
 * rejected (nothing was written), or `ended` `dropped` when
 * its call is cancelled while it still waits here (it never left: never sent). A cancel is one
 * `notifications/cancelled {requestId, reason}` line (rules 6, 31), never waited for: its record
 * follows the line's own write (a zero-length write queued right behind it calls back once the
 * line was handed to the pipe, or with the error that kept it from it; on a stdin that does not
 * count what it holds, Bun's, the line's own write callback: `#watched`).
 */
export class StdioQueue extends Layer {
  readonly #stdin: () => Stdin | undefined;
  readonly #waiting = new WaitingLine();
  /**
   * Timer-fired cancels: the server's answer may be waiting unread in the pipe (timers run before
   * input is read, and a busy event loop lets answers pile up). Their lines wait for the check
   * phase of this turn (input is read before it), then go, all of that turn's together
   * (deferred-cancels.ts); an answer read meanwhile means the request is over, and nothing is
   * sent (rule 7).
   */
  readonly #deferred = new DeferredCancels({
    send: (request, since) => this.#cancel(request, since),
    hop: (next) => setImmediate(next),
    unhop: (handle) => clearImmediate(handle as ReturnType<typeof setImmediate>),
  });
  /** The stdin whose `drain` and `close` the queue listens to, while anything waits. */
  #listening: Stdin | undefined = undefined;
  /** The check-phase hop between a `drain` (or `close`) and the writes of what waits (see `#drain`). */
  #flushing: ReturnType<typeof setImmediate> | undefined = undefined;
  /**
   * On a stdin that does not count what it holds (`countsItsBuffer`): the writes the transport's
   * `send` made to it (`#unwrittenOn`) whose own callbacks have not come yet, the runtime still
   * holding them (0 on Node: its `writableNeedDrain` says when the pipe is full).
   */
  #unwritten = 0;
  #unwrittenOn: Stdin | undefined = undefined;
  /** The last stdin found to count what it holds (`countsItsBuffer`, looked up once per stdin). */
  #counting: Stdin | undefined = undefined;
  /** The server's stdout watched for an end while its process runs on (`StdioQueueOptions.stdout`). */
  readonly #stdoutWatch: StdoutWatch | undefined;
  /** The layers above were told the connection closed (once per start: the watch may tell first). */
  #toldClosed = false;
  /** `close()` was called: the client is closing. */
  #closing = false;

  /** `StdioQueueOptions.holdMessages`. */
  readonly #holdMessages: boolean;
  /** `StdioQueueOptions.sendSettlesAtWrite`. */
  readonly #sendSettlesAtWrite: boolean;

  /** @param stdin the server's stdin now (it changes when the transport is started again). */
  constructor(below: Port, stdin: () => Stdin | undefined, options?: StdioQueueOptions) {
    super(below);
    this.#stdin = stdin;
    this.#holdMessages = options?.holdMessages ?? true;
    this.#sendSettlesAtWrite = options?.sendSettlesAtWrite ?? false;
    const stdout = options?.stdout;
    this.#stdoutWatch = stdout === undefined ? undefined : new StdoutWatch(stdout, this.#stdoutLost);
    // A transport started before the pipeline was made (a client attached once connected): watched from now.
    this.#stdoutWatch?.watch();
  }

  override start(): Promise<void> {
    this.#toldClosed = false;
    this.#closing = false;
    const started = this.below.start();
    const watch = this.#stdoutWatch;
    return watch === undefined ? started : started.then(() => watch.watch());
  }

  /**
   * The server's stdout ended and the grace is over (stdout-end.ts): the connection counts as
   * closed, the SDK client told why when the process runs on, and the transport is closed.
   */
  readonly #stdoutLost = (exited: boolean): void => {
    if (this.#toldClosed || this.#closing) return;
    if (!exited) this.up.error(new Error(STDOUT_CLOSED_TEXT));
    this.closed();
    this.below.close().catch(noop);
  };

  /** Messages waiting for the pipe (0 when it takes writes). */
  get waiting(): number {
    return this.#waiting.size;
  }

  override send(message: Message, options?: SendOptions): Promise<void> {
    // Timer-fired cancel lines still waiting for the check phase go before it (deferred-cancels.ts).
    this.#deferred.beforeSend();
    const stdin = this.#stdin();
    const id = message.method !== undefined ? message.id : undefined;
    if (stdin === undefined || !this.#busy(stdin) || !this.#holdMessages) return this.#write(message, options, id ?? undefined, stdin);
    return new Promise<void>((resolve, reject) => {
      this.#waiting.push({ message, options, id: id ?? undefined, cancel: undefined, resolve, reject });
      this.#listen(stdin);
    });
  }

  override cancel(request: CancelRequest): CancelMechanism {
    // A user's own abort goes at once, after the timer-fired lines still waiting (decided first).
    if (request.byTimer !== true) this.#deferred.beforeSend();
    return this.#cancel(request, undefined);
  }

  /**
   * @param since a line that could have gone before now (a timer-fired cancel after its check
   * phase): when (`performance.now()`, ms). A line that leaves 1 ms or more after it tells its
   * record when it went (`leftLate`). A line that must wait behind a full pipe tells its record
   * it has not gone (`sentAt` null), then when it went.
   */
  #cancel(request: CancelRequest, since: number | undefined): CancelMechanism {
    const stdin = this.#stdin();
    // A transport without a child's stdin (not started, or not the SDK's): its own send, not waited for.
    if (stdin === undefined) return request.awaitsTask !== undefined ? "none" : this.#line(request, undefined, since);
    if (!stdin.writable) {
      queueMicrotask(() => request.delivery({ sent: "none", failed: { mechanism: "notification", error: goneText(stdin) } }));
      return "none";
    }
    // Still waiting here: it never left, so there is nothing to cancel on the wire.
    const queued = this.#waiting.size === 0 ? undefined : this.#waiting.takeRequest(request.requestId);
    if (queued !== undefined) {
      // The SDK's wait is ended by the wire; its send resolves, nothing was written.
      queued.resolve();
      this.up.fact(request.requestId, { kind: "ended", how: "dropped", cause: undefined, at: performance.now() });
      // Told now, during the cancel: the first record (the one on the caller's error) says `never
      // sent`, not `whether it ran is unknown` (an outside tester's: it said so until a revision).
      request.delivery({ sent: "none", failed: null });
      return "none";
    }
    // A task-augmented request awaiting its CreateTaskResult gets no notification (rules 2, 35, 36).
    if (request.awaitsTask !== undefined) return "none";
    if (this.#busy(stdin)) {
      const entry: Waiting = {
        message: request.notification,
        options: undefined,
        id: undefined,
        cancel: request,
        resolve: noop,
        reject: noop,
      };
      this.#waiting.push(entry);
      this.#listen(stdin);
      // Not out yet: the record's sentAt is null (from the first record on) until the line is
      // written (then its time), unless it is settled otherwise first (its answer read, the
      // connection closed).
      request.delivery({ sent: "notification", failed: null, sentWall: null });
      return "notification";
    }
    if (request.byTimer === true && since === undefined) return this.#deferred.defer(request);
    return this.#line(request, stdin, since);
  }

  override message(message: Message, extra?: MessageExtra): void {
    this.#deferred.answered(message);
    if (this.#waiting.cancels > 0 && message.method === undefined) this.#answeredWhileWaiting(message.id);
    this.up.message(message, extra);
  }

  /**
   * An answer read while its request's cancel line still waits for the pipe: the request is over,
   * so the line is never written (rule 7), and its record says why. Matched as the wire matches
   * it: "1" answers request 1.
   */
  #answeredWhileWaiting(id: RequestId | null | undefined): void {
    const entry = findAnswered(id, (requestId) => this.#waiting.cancelOf(requestId));
    if (entry === undefined) return;
    this.#waiting.take(entry);
    entry.cancel!.delivery({ sent: "none", failed: { mechanism: "notification", error: ANSWERED_FIRST } });
  }

  override closed(): void {
    // Their lines were never written: the records say so (the 120 s soak found one that claimed a
    // notification the dying server never got).
    const gone = "not sent: the connection closed before the line was written";
    this.#deferred.drop(gone);
    keepFromExit(this.#atExit);
    // So do the cancel lines waiting for the pipe, now: the pipe's own close (whose flush would
    // report them) may come after the connection's, when the records are ended already (a proxy
    // that exits with its server: its records file missed the revision, now and then).
    for (const entry of this.#waiting.takeCancels())
      entry.cancel!.delivery({ sent: "none", failed: { mechanism: "notification", error: gone } });
    this.#stdoutWatch?.stop();
    if (this.#toldClosed) return; // the transport's own close, after the watch told it
    this.#toldClosed = true;
    this.up.closed();
  }

  /**
   * Writes everything waiting now (the transport is about to end stdin: it goes before the end).
   * Through the transport's `send` while the pipe takes writes; once it is full, straight to stdin
   * as the same JSON line (the SDK's `send` would add a `drain` listener per message, on a pipe
   * about to end).
   */
  override close(): Promise<void> {
    this.#closing = true;
    keepFromExit(this.#atExit);
    this.#stdoutWatch?.stop();
    this.#deferred.flush();
    this.#unlisten();
    if (this.#flushing !== undefined) clearImmediate(this.#flushing);
    this.#flushing = undefined;
    const stdin = this.#stdin();
    for (const entry of this.#waiting.takeAll()) {
      if (stdin === undefined || !stdin.writable || !this.#full(stdin)) this.#put(entry);
      else this.#direct(stdin, entry);
    }
    return this.below.close();
  }

  /**
   * Writes a waiting entry's line to stdin itself (closing, the pipe full). A cancel line's record
   * (`sentAt` null while it waited) follows the line's own write: when it was handed to the pipe,
   * or the error that kept it out (never the close's time, while the line still sits behind the
   * full pipe).
   */
  #direct(stdin: Stdin, entry: Waiting): void {
    const cancel = entry.cancel;
    stdin.write(`${JSON.stringify(entry.message)}\n`, (error) => {
      if (error === null || error === undefined) {
        cancel?.delivery({ sent: "notification", failed: null, sentWall: Date.now() });
        return;
      }
      if (typeof error === "object") ownWriteErrors.add(error);
      cancel?.delivery({ sent: "none", failed: { mechanism: "notification", error: error.message } });
    });
    if (entry.id !== undefined) this.up.fact(entry.id, { kind: "written", at: performance.now() });
    entry.resolve();
  }

  override error(error: Error): void {
    if (ownWriteErrors.has(error)) return;
    this.up.error(error);
  }

  /** True while a message must wait: the pipe is full, or something waits already (order). */
  #busy(stdin: Stdin): boolean {
    return this.#waiting.size > 0 || this.#full(stdin);
  }

  /** `countsItsBuffer`, once per stdin: on Node's path one comparison. */
  #counts(stdin: Stdin): boolean {
    if (stdin === this.#counting) return true;
    if (!countsItsBuffer(stdin)) return false;
    this.#counting = stdin;
    return true;
  }

  /**
   * True while the pipe is full: Node's `writableNeedDrain`; on a stdin that does not count what it
   * holds, a write whose own callback has not come yet.
   */
  #full(stdin: Stdin): boolean {
    return stdin.writableNeedDrain || (this.#unwritten > 0 && this.#unwrittenOn === stdin);
  }

  /**
   * Hands one message to the transport's `send` (which writes it at once). Not to a stdin that is
   * gone: the SDK's `send` would wait for a `drain` that never comes (a listener per message).
   */
  #write(message: Message, options: SendOptions | undefined, id: RequestId | undefined, stdin: Stdin | undefined): Promise<void> {
    const sending =
      stdin !== undefined && !stdin.writable
        ? Promise.reject(new Error(`Not connected: ${goneText(stdin)}`))
        : stdin === undefined || this.#counts(stdin)
          ? this.below.send(message, options)
          : this.#watched(stdin, message, options, undefined);
    if (id !== undefined) {
      sending.then(
        () => this.up.fact(id, { kind: "written", at: performance.now() }),
        // Refused before the write (not connected): it never left. A message that cannot be
        // serialised (a BigInt, a cycle, a `toJSON` that throws in its params) is its own fault, not
        // the connection's: the SDK fails the call with the serialiser's error (an outside
        // tester's: it said the connection had failed).
        (error: unknown) =>
          this.up.fact(
            id,
            unserialisable(message) ? { kind: "unsendable" } : { kind: "ended", how: "refused", cause: error, at: performance.now() },
          ),
      );
    }
    return sending;
  }

  /**
   * Puts one cancel line out through the transport's `send`; its record follows the line's own
   * write (and learns when it went, for a line that could have gone 1 ms or more before: `since`;
   * `waited`: its record says it has not gone yet, `sentAt` null, and learns when it goes).
   */
  #line(request: CancelRequest, stdin: Stdin | undefined, since: number | undefined, waited = false): CancelMechanism {
    if (stdin !== undefined && !this.#counts(stdin)) return this.#watchedLine(request, stdin, since, waited);
    const undelivered = (error: unknown): void =>
      request.delivery({
        sent: "none",
        failed: { mechanism: "notification", error: textOf(error) },
      });
    // When it left, read before the send writes it: read after, it could be later than the
    // server's read of the line on a busy machine (an outside tester's, by 1 to 6 ms).
    const leftAt = waited ? Date.now() : leftLate(since);
    let sending: Promise<void>;
    try {
      sending = this.below.send(request.notification);
    } catch (error) {
      queueMicrotask(() => undelivered(error));
      return "none";
    }
    if (leftAt !== undefined) request.delivery({ sent: "notification", failed: null, sentWall: leftAt });
    // No child's stdin: the transport's own `send`. Or a `send` that settles at the line's own
    // write (the CLI's transport): a failed write rejects it.
    if (stdin === undefined || this.#sendSettlesAtWrite) {
      sending.catch(undelivered);
      return "notification";
    }
    sending.catch(noop); // the SDK echoes a failed write to onerror; the record has it
    // Handed to the pipe already (the transport's send wrote it at once, and the pipe took all of
    // it): nothing is left that could fail. A zero-length write costs about 10 µs on this path.
    if (stdin.writableLength === 0 && stdin.errored === null && !stdin.destroyed) return "notification";
    // Its write's own callback: a zero-length write right behind the line calls back once the
    // line was handed to the pipe (writes complete in order), or with what kept it from it.
    stdin.write("", (error) => {
      if (error === null || error === undefined) return;
      if (typeof error === "object") ownWriteErrors.add(error);
      undelivered(error);
    });
    return "notification";
  }

  /**
   * `#line` on a stdin that does not count what it holds (`countsItsBuffer`): the record follows
   * the line's own write, made by the transport's `send` (`#watched`), whose callback comes in
   * order after the writes before it: once the line was handed to the pipe (during the `send`
   * itself when the pipe took it at once: out at once), or with the error that kept it out. Until
   * then the record says it has not gone (`sentAt` null). A `send` that wrote nothing to stdin
   * while it ran (a transport of its own) is taken at its word, as on a transport without a
   * child's stdin: sent, unless it fails.
   */
  #watchedLine(request: CancelRequest, stdin: Stdin, since: number | undefined, waited: boolean): CancelMechanism {
    const undelivered = (error: unknown): void =>
      request.delivery({ sent: "none", failed: { mechanism: "notification", error: textOf(error) } });
    const leftAt = waited ? Date.now() : leftLate(since); // read before the send writes it (see `#line`)
    const out = (): void => {
      if (leftAt !== undefined) request.delivery({ sent: "notification", failed: null, sentWall: leftAt });
    };
    let sending: Promise<void>;
    const writes: Writes = { made: 0, left: 0, error: undefined, during: true, done: undefined };
    try {
      sending = this.#watched(stdin, request.notification, undefined, writes);
    } catch (error) {
      queueMicrotask(() => undelivered(error));
      return "none";
    }
    if (writes.made === 0) {
      out();
      sending.catch(undelivered);
      return "notification";
    }
    sending.catch(noop); // the SDK echoes a failed write to onerror; the record has it
    if (writes.error !== undefined) {
      undelivered(writes.error);
      return "none";
    }
    if (writes.left === 0) {
      out();
      return "notification";
    }
    // Still held by the runtime: not out yet; its callback tells when it goes, or why it did not.
    if (!waited) request.delivery({ sent: "notification", failed: null, sentWall: null });
    writes.done = (error) => {
      if (error === undefined) request.delivery({ sent: "notification", failed: null, sentWall: Date.now() });
      else undelivered(error);
    };
    return "notification";
  }

  /**
   * Calls the transport's `send` with the writes it makes to stdin watched (a stdin that does not
   * count what it holds): each gets a callback of the queue's besides its own, so the queue knows
   * what the runtime still holds (`#unwritten`: the pipe is full while it is not 0) and, with
   * `writes`, what became of this message's own writes. The stdin's `write` is wrapped only while
   * `send` runs (it writes at once: both SDK lines, the CLI's transport) and put back before it
   * returns. Throws what `send` throws.
   */
  #watched(stdin: Stdin, message: Message, options: SendOptions | undefined, writes: Writes | undefined): Promise<void> {
    if (this.#unwrittenOn !== stdin) {
      this.#unwrittenOn = stdin;
      this.#unwritten = 0;
    }
    const slot = stdin as { write: (...args: unknown[]) => boolean };
    const write = slot.write;
    const calledBack = (error: Error | null | undefined): void => {
      // The last write the runtime held went: what waits goes (as at a `drain`).
      if (this.#unwrittenOn === stdin && this.#unwritten > 0 && --this.#unwritten === 0 && this.#listening === stdin) this.#drain();
      if (writes === undefined) return;
      writes.left--;
      if (error !== null && error !== undefined) {
        if (typeof error === "object") ownWriteErrors.add(error);
        writes.error ??= error;
      }
      if (writes.during || writes.done === undefined || (writes.left > 0 && writes.error === undefined)) return;
      const done = writes.done;
      writes.done = undefined;
      done(writes.error);
    };
    // Called as `stdin.write(...)`: bound to stdin. Counted before the write: a runtime may call back during it.
    slot.write = (...args: unknown[]): boolean => {
      const last = args.length > 1 ? args[args.length - 1] : undefined;
      const theirs = typeof last === "function" ? (last as (error?: Error | null) => void) : undefined;
      if (theirs !== undefined) args.pop();
      args.push((error?: Error | null): void => {
        theirs?.(error);
        calledBack(error);
      });
      this.#unwritten++;
      if (writes !== undefined) {
        writes.made++;
        writes.left++;
      }
      return write.apply(stdin, args);
    };
    try {
      return this.below.send(message, options);
    } finally {
      slot.write = write;
      if (writes !== undefined) writes.during = false;
    }
  }

  /** Writes one waiting entry (the pipe took the one before it). */
  #put(entry: Waiting): void {
    const stdin = this.#stdin();
    if (entry.cancel !== undefined) {
      if (stdin !== undefined && !stdin.writable) {
        entry.cancel.delivery({ sent: "none", failed: { mechanism: "notification", error: goneText(stdin) } });
        return;
      }
      // It waited: its record's sentAt (null meanwhile) is when it left.
      this.#line(entry.cancel, stdin, undefined, true);
      return;
    }
    this.#write(entry.message, entry.options, entry.id, stdin).then(entry.resolve, entry.reject);
  }

  #listen(stdin: Stdin): void {
    // What waits goes at the process's exit all the same (`#atExit`).
    flushAtExit(this.#atExit);
    if (this.#listening !== undefined || this.#flushing !== undefined) return;
    this.#listening = stdin;
    stdin.once("drain", this.#drain);
    // A pipe that closes (the server died) never drains: what waits is settled then.
    stdin.once("close", this.#drain);
  }

  #unlisten(): void {
    this.#listening?.removeListener("drain", this.#drain);
    this.#listening?.removeListener("close", this.#drain);
    this.#listening = undefined;
  }

  /**
   * The pipe drained (or closed): what waits is written at the check phase of this turn, not in
   * the `drain` callback. The server's answers read by the same poll come first, so a cancel line
   * whose request was answered meanwhile is dropped, not written after its response (rule 7): a
   * server that stops reading stdin while it works lets both pile up, and its answer and the
   * `drain` arrive together.
   */
  readonly #drain = (): void => {
    const stdin = this.#listening;
    if (stdin === undefined) return;
    this.#unlisten();
    this.#flushing = setImmediate(this.#flush, stdin);
  };

  readonly #flush = (stdin: Stdin): void => {
    this.#flushing = undefined;
    while (this.#waiting.size > 0 && (!stdin.writable || !this.#full(stdin))) this.#put(this.#waiting.shift()!);
    if (this.#waiting.size > 0) this.#listen(stdin);
    else keepFromExit(this.#atExit);
  };

  /**
   * At the process's exit (slices.ts, `hookExit`): everything waiting for the pipe is written to
   * stdin now, as the close writes it (`#direct`): no `drain` comes for a process that exits. The
   * exit's writes to the stdin are corked (`writeTogetherAtExit`) and go in one write after it; a
   * corked stdin soon reads as full (past its 16 KB mark), and without this the lines behind it
   * stayed here (test/delivery/exit-after-timeout.test.ts: the last 155 of 300 cancels).
   */
  readonly #atExit = {
    flush: (): void => {
      keepFromExit(this.#atExit);
      const stdin = this.#stdin();
      if (stdin === undefined || !stdin.writable || this.#waiting.size === 0) return;
      this.#unlisten();
      for (const entry of this.#waiting.takeAll()) this.#direct(stdin, entry);
    },
  };
}

/**
 * Whether the stdin counts what it holds: its `write` is its class's (Node's and Deno's child
 * stdin inherit `Writable.prototype.write`, which keeps `writableLength` and `writableNeedDrain`).
 * Bun's child stdin has a `write` of its own, a fast path past the Writable's buffer: while 2 MB
 * wait for a server that stopped reading, `writableLength` is 0 and `writableNeedDrain` false, and
 * a zero-length write calls back at once, before the writes ahead of it (whose callbacks come in
 * order, when the pipe took them). So has a stdin whose `write` someone wrapped, and a stand-in.
 */
function countsItsBuffer(stdin: Stdin): boolean {
  return !Object.hasOwn(stdin, "write");
}

/** The record's text for a cancel line that could not be written to a stdin that is gone. */
function goneText(stdin: Stdin): string {
  return stdin.destroyed ? "the server's stdin was destroyed" : "write after end: the server's stdin has ended";
}
