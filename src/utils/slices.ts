// Mass settles in slices. A deadline queue whose timer finds 100,000 calls due, or a signal shared
// by 100,000 pending calls aborting, used to settle them all in one task: the event loop was held
// for as long as that took (1.3 to 1.5 s on the gateway bench; the raw SDK holds it as long).
// Here such work runs in slices of at most `budgetMs` of the process's time, and the rest goes on
// after a yield (setImmediate where it exists, else a MessageChannel, else setTimeout 0), so other
// tasks (I/O, timers, the answers of other connections) run in between. No `node:` import: the
// core stays runtime-neutral.

/** Work made of items, done one at a time. */
export interface SliceWork {
  /** Does the next item, if any is left. Returns true while items may be left after it. */
  step(): boolean;
}

/** What a {@link Slicer} measures its slices with and yields through. */
export interface SlicerInit {
  /** Monotonic clock, ms: the time the process spends on the work. */
  readonly clock: () => number;
  /** Runs `next` in a later task (a yield to the event loop). */
  readonly defer: (next: () => void) => void;
  /** The most time of the work done in one task before it yields, ms. */
  readonly budgetMs: number;
  /**
   * Runs `next` once `ms` have passed (where held `runAfter` work goes on, see `Slicer.hold`).
   * Default: the global `setTimeout`, read when called (so fake timers drive it).
   */
  readonly later?: ((next: () => void, ms: number) => unknown) | undefined;
  /** Cancels what `later` scheduled (its handle). Default: the global `clearTimeout`, read when called. */
  readonly cancelLater?: ((handle: unknown) => void) | undefined;
}

/**
 * Does work in slices of at most `budgetMs`, counted across every piece of work of one task: a
 * timer that finds thousands of calls due and the abort of a signal that links thousands of
 * calls share the budget with whatever other work the same task brought. Work is done in the
 * order it came (first in, first out), and each piece's items in its own order: nothing is done
 * out of turn, so a piece that comes while others wait for the next slice waits behind them.
 *
 * A piece that comes while nothing waits is started at once, in the caller's task, and its first
 * item is done whatever the budget: a single abort or a single due call settles synchronously, as
 * before, however much work the task did before it (a caller's own loop of aborts holds the event
 * loop by itself; yielding would not free it). The time spent is counted until the next yield;
 * after `budgetMs / 2` of it a yield is scheduled only to start the count anew.
 * @internal
 */
export class Slicer {
  readonly #clock: () => number;
  readonly #defer: (next: () => void) => void;
  readonly #budgetMs: number;
  #queue: (SliceWork | undefined)[] = [];
  #head = 0;
  /** Work done only while `#queue` is empty (see `runAfter`), and the next of it. */
  #after: (SliceWork | undefined)[] = [];
  #afterHead = 0;
  /** Time spent on work since the last yield, ms. */
  #spent = 0;
  /** When the last slice ended (clock, ms). */
  #drainEnd = 0;
  #running = false;
  /** Work waits for the next slice (the budget ran out). */
  #waiting = false;
  /** A yield is scheduled (to go on with waiting work, or only to start the count anew). */
  #scheduled = false;
  /** When the yield was scheduled (clock, ms), and its number: a yield lost with its timers (fake timers swapped in tests) is noticed and replaced. */
  #scheduledAt = 0;
  #generation = 0;
  /** How many times waiting work went on after a yield, since the slicer was made (tests, benchmarks). */
  #yields = 0;
  readonly #later: (next: () => void, ms: number) => unknown;
  /** `runAfter` work waits until this time (clock, ms; see `hold`). */
  #holdUntil = Number.NEGATIVE_INFINITY;
  /** When the oldest `runAfter` work waiting came (clock, ms). */
  #afterSince = 0;
  /** The wake-up scheduled for held work (its handle), if any. */
  #holdTimer: unknown = undefined;
  readonly #cancelLater: (handle: unknown) => void;
  /** The streams a slice under way corked (`corkDuringSlice`): uncorked when it ends. */
  #corked: Set<Corkable> | undefined = undefined;

  constructor(init: SlicerInit) {
    this.#clock = init.clock;
    this.#defer = init.defer;
    this.#budgetMs = init.budgetMs;
    this.#later = init.later ?? laterTask;
    this.#cancelLater = init.cancelLater ?? cancelLaterTask;
  }

  /** Pieces of work waiting for a slice, and the one being done. */
  get pending(): number {
    return this.#queue.length - this.#head + this.#after.length - this.#afterHead;
  }

  /** How many times work yielded and went on in a later task. */
  get yields(): number {
    return this.#yields;
  }

  /** Does `work`: now, in this task, when nothing waits and the budget allows; else in a later slice. */
  run(work: SliceWork): void {
    // Before any of it is done: a step's own callbacks (a record's onRecord) may exit the process.
    hookExit();
    this.#queue.push(work);
    this.#start();
  }

  /**
   * Does `work` after every piece given to `run`, including those given while it is under way: a
   * step of it is taken only while no other work waits (the sends that follow a mass settle go
   * once every caller is released, and a later settle goes before the sends still left).
   */
  runAfter(work: SliceWork): void {
    hookExit();
    if (this.#afterHead === this.#after.length) this.#afterSince = this.#clock();
    this.#after.push(work);
    this.#start();
  }

  /**
   * Holds `runAfter` work until `untilMs` (clock, ms): more `run` work is about to come (a deadline
   * queue whose next deadline is a millisecond away), and it goes first. A later hold extends it;
   * but `runAfter` work never waits longer than {@link MAX_HOLD_MS} for holds, counted from when
   * the oldest of it came, however long a burst of settles lasts. Held work goes on by itself
   * when the hold ends.
   */
  hold(untilMs: number): void {
    // A hold further off than any could be is from a clock that has since gone back: replaced.
    if (untilMs > this.#holdUntil || this.#holdUntil > this.#clock() + MAX_HOLD_MS) this.#holdUntil = untilMs;
  }

  /**
   * `runAfter` work is held now; if so, a wake-up for the hold's end is scheduled, in place of
   * any earlier one: a wake-up lost with the timers it was scheduled on (a test swapped fake
   * timers out) is replaced by the next settle's, and a clock that went back (the same swap) is
   * not waited for.
   */
  #held(): boolean {
    const now = this.#clock();
    if (this.#afterSince > now) this.#afterSince = now;
    if (this.#holdUntil > now + MAX_HOLD_MS) this.#holdUntil = now;
    const left = Math.min(this.#holdUntil, this.#afterSince + MAX_HOLD_MS) - now;
    if (this.#holdTimer !== undefined) this.#cancelLater(this.#holdTimer);
    this.#holdTimer = undefined;
    if (left <= 0) return false;
    this.#holdTimer = this.#later(() => {
      this.#holdTimer = undefined;
      this.#start();
    }, left);
    return true;
  }

  #start(): void {
    if (this.#running) return; // the loop that is running takes it in turn
    if (this.#waiting) {
      // A yield lost with the timers it was scheduled on (a test swapped fake timers out) would
      // leave the work waiting for ever: after a second, schedule it again.
      if (this.#clock() - this.#scheduledAt > LOST_YIELD_MS) this.#schedule();
      return;
    }
    this.#drain(true);
  }

  #schedule(): void {
    this.#scheduled = true;
    this.#scheduledAt = this.#clock();
    const generation = ++this.#generation;
    this.#defer(() => {
      if (generation !== this.#generation) return; // replaced
      this.#scheduled = false;
      this.#spent = 0;
      if (this.#waiting) {
        // What ran in the last slice's task after it (the callers' reactions to what it settled,
        // a server in the same process answering the cancels) held the loop too: it counts
        // against this slice, so a slice and what it brings stay within the budget together.
        this.#spent = Math.min(Math.max(this.#clock() - this.#drainEnd, 0), this.#budgetMs * 0.8);
        this.#waiting = false;
        this.#yields++;
        this.#drain(false);
      }
    });
  }

  /**
   * The slicer whose work is being done right now (its `step` is on the stack), if any: work that
   * a step brings about and that must come after the rest of that settling (a timer-fired cancel's
   * notification, see `TransportPort`) joins this slicer's queue, whichever clock it runs on.
   */
  static get draining(): Slicer | undefined {
    return draining;
  }

  /**
   * Does all the work waiting now, whatever the budget and any hold: the process is exiting, and
   * no later task will come (the calls a shared signal's abort has yet to settle would never send
   * their cancels: an outside tester's, 35 of 300 reached the server where the raw SDK sent all).
   * Bounded: at most 10,000,000 steps.
   */
  finish(): void {
    const outer = draining;
    draining = this;
    try {
      for (let steps = 0; steps < 10_000_000; steps++) {
        const first = this.#head < this.#queue.length;
        if (!first && this.#afterHead >= this.#after.length) break;
        const work = first ? this.#queue[this.#head]! : this.#after[this.#afterHead]!;
        let more = false;
        try {
          more = work.step();
        } catch {
          // The process is going: one item's failure must not keep the others from their step.
        }
        if (more) continue;
        if (first) this.#queue[this.#head++] = undefined;
        else this.#after[this.#afterHead++] = undefined;
      }
    } finally {
      draining = outer;
      this.#uncorkSlice();
    }
  }

  /**
   * Corks `stream` for the rest of the slice under way (see `corkDuringSlice`); a stream corked
   * already by it is uncorked and corked again once it holds half its high-water mark, so no
   * write of the slice asks its writer to wait for `drain` (the SDK's `send` adds a listener per
   * such write).
   */
  #cork(stream: Corkable): void {
    const corked = (this.#corked ??= new Set());
    if (!corked.has(stream)) {
      stream.cork();
      corked.add(stream);
    } else if (stream.writableLength >= stream.writableHighWaterMark / 2) {
      stream.uncork();
      stream.cork();
    }
  }

  #uncorkSlice(): void {
    const corked = this.#corked;
    if (corked === undefined) return;
    this.#corked = undefined;
    for (const stream of corked) {
      try {
        stream.uncork();
      } catch {
        // A stream that cannot be uncorked any more (destroyed): what it held is lost with it.
      }
    }
  }

  /** @internal See `corkDuringSlice`. */
  static cork(stream: Corkable): void {
    if (draining !== undefined) draining.#cork(stream);
  }

  /** @param first the first item goes whatever the budget (see the class comment). */
  #drain(first: boolean): void {
    const outer = draining;
    draining = this;
    this.#running = true;
    const clock = this.#clock;
    const start = clock();
    const end = start + this.#budgetMs - this.#spent;
    let now = first ? Number.NEGATIVE_INFINITY : start;
    const queue = this.#queue;
    const after = this.#after;
    try {
      while (this.#head < queue.length || this.#afterHead < after.length) {
        if (now >= end) {
          this.#waiting = true;
          break;
        }
        const first = this.#head < queue.length;
        if (!first && this.#held()) break; // goes on when the hold ends
        const work = first ? queue[this.#head]! : after[this.#afterHead]!;
        let more: boolean;
        try {
          more = work.step();
        } catch (error) {
          // One item must not stop the others; the error is not lost either.
          more = true;
          queueMicrotask(() => {
            throw error;
          });
        }
        if (!more) {
          if (first) queue[this.#head++] = undefined;
          else after[this.#afterHead++] = undefined;
        }
        now = clock();
      }
    } finally {
      draining = outer;
      this.#uncorkSlice();
      this.#running = false;
      this.#drainEnd = clock();
      this.#spent += this.#drainEnd - start;
      [this.#queue, this.#head] = compacted(queue, this.#head);
      [this.#after, this.#afterHead] = compacted(after, this.#afterHead);
      if (
        this.#waiting
          ? !this.#scheduled || this.#clock() - this.#scheduledAt > LOST_YIELD_MS
          : !this.#scheduled && this.#spent >= this.#budgetMs / 2
      ) {
        this.#schedule();
      }
    }
  }
}

/** A queue and its head, with what is done dropped: emptied when all is done, sliced when more than half is. */
function compacted(queue: (SliceWork | undefined)[], head: number): [(SliceWork | undefined)[], number] {
  if (head === queue.length) {
    queue.length = 0;
    return [queue, 0];
  }
  return head > 1_024 && head * 2 > queue.length ? [queue.slice(head), 0] : [queue, head];
}

/** See `Slicer.draining`. */
let draining: Slicer | undefined;

/** What else the process's exit sends (`flushAtExit`): the deferred cancels of each connection. */
const flushedAtExit = new Set<{ flush(): void }>();
/** The server's stdin of each stdio connection (`writeTogetherAtExit`), read at the exit. */
const corkedAtExit = new Set<() => unknown>();
let exitHooked = false;

/**
 * Hooks the process's `exit` event, once (one listener for the process, never removed: it holds
 * nothing open). At the exit: the settle slicer's waiting work is done (`Slicer.finish`: the calls
 * an abort or a deadline has yet to settle, their cancels with them), then each `flushAtExit`
 * target sends what it holds. Not on a runtime without `process.on` (a browser): nothing exits there.
 */
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  const proc = (globalThis as { process?: { on?: (event: "exit", listener: () => void) => unknown; exit?: unknown } }).process;
  if (typeof proc?.on !== "function") return;
  proc.on("exit", () => {
    // The bot's own callbacks run meanwhile (each settled call's onRecord): one that exits again,
    // as it did to get here, would end the process at once, the rest unsent (an outside tester's:
    // 2 of 300). The process is exiting already: its exit() does nothing until this is done.
    const exit = proc.exit;
    const held = replaceExit(proc, () => {});
    const corked = corkAll();
    try {
      settleSlicer.finish();
      // Until none is left: a target's flush can hand lines to another that was not on the list
      // yet (the deferred cancels of a mass timeout, written to a corked stdin that reads as full
      // past 16 KB, wait in the stdio queue, which joins the list then: 165 of 300 were left
      // unwritten). Each target leaves the list as it flushes (and joins it again with new work); the rounds are bounded.
      for (let round = 0; round < 8 && flushedAtExit.size > 0; round++) {
        for (const target of [...flushedAtExit]) {
          try {
            target.flush();
          } catch {
            // Best effort (rule 10): the process is going either way.
          }
        }
      }
    } finally {
      uncorkAll(corked);
      if (held) replaceExit(proc, exit);
    }
  });
}

/**
 * The stdins of `writeTogetherAtExit`, corked: the lines the exit writes (a cancel per call still
 * to settle) wait in each, then go in one write when uncorked. Each line written on its own is a
 * buffer of the socket's (Node's child stdin is a socket pair, which counts a buffer's overhead,
 * not its bytes): a few hundred small lines fill it though the server keeps reading, a write then
 * waits for the event loop, which an exiting process no longer runs, and every line behind it is
 * lost (an outside tester's and CI's: 111 of 300 cancels on Node 24 under load; the raw SDK loses
 * them too). One write of them all is taken at once.
 */
function corkAll(): Array<{ uncork(): void }> {
  const corked: Array<{ uncork(): void }> = [];
  for (const source of corkedAtExit) {
    try {
      const stream = source() as { cork?: unknown; uncork?: unknown; writable?: unknown } | undefined;
      if (stream?.writable !== true || typeof stream.cork !== "function" || typeof stream.uncork !== "function") continue;
      (stream.cork as () => void).call(stream);
      corked.push(stream as { uncork(): void });
    } catch {
      // Best effort: the process is going either way.
    }
  }
  return corked;
}

function uncorkAll(corked: Array<{ uncork(): void }>): void {
  for (const stream of corked) {
    try {
      // Every cork, a slice's too (the exit can come inside a slice, which would uncork it after).
      // A stream without a numeric `writableCorked` gets the one `uncork()` for the exit's cork.
      for (let i = 0; i < 64; i++) {
        const count = (stream as { writableCorked?: unknown }).writableCorked;
        if (typeof count === "number" ? count <= 0 : i > 0) break;
        stream.uncork();
      }
    } catch {
      // Best effort: the process is going either way.
    }
  }
}

/**
 * `source()` (the server's stdin of a stdio connection, or `undefined`) is corked while the
 * process's exit settles what is left and sends the cancels that waited, and written in one
 * write after (see `corkAll`), until `keepFromCork`. @internal
 */
export function writeTogetherAtExit(source: () => unknown): void {
  hookExit();
  corkedAtExit.add(source);
}

/** A writable stream that can be corked (a child's stdin). */
interface Corkable {
  cork(): void;
  uncork(): void;
  readonly writableLength: number;
  readonly writableHighWaterMark: number;
}

function corkable(stream: unknown): stream is Corkable {
  const s = stream as Partial<Record<keyof Corkable | "writable", unknown>> | null | undefined;
  return (
    typeof s === "object" &&
    s !== null &&
    s.writable === true &&
    typeof s.cork === "function" &&
    typeof s.uncork === "function" &&
    typeof s.writableLength === "number" &&
    typeof s.writableHighWaterMark === "number"
  );
}

/**
 * Corks the stream `source` gives (a stdio server's stdin) for the rest of the settle slice under
 * way, if any: the cancel lines a mass abort writes in one slice go in one system call, not one
 * each. Written one by one, each line is a buffer of the child stdin's socket pair, which counts a
 * buffer's overhead, not its bytes: about 170 small lines fill it while the server reads none (a
 * starved or stopped server; Node 24), the next write waits for the event loop, and a bot that
 * exits in that turn loses every line behind it (CI: 175 of 300). Outside a slice (a lone abort,
 * the call's own signal), nothing: the line goes at once. @internal
 */
export function corkDuringSlice(source: () => unknown): void {
  if (draining === undefined) return;
  let stream: unknown;
  try {
    stream = source();
  } catch {
    return;
  }
  if (corkable(stream)) Slicer.cork(stream);
}

/** See `writeTogetherAtExit`. @internal */
export function keepFromCork(source: () => unknown): void {
  corkedAtExit.delete(source);
}

/** How many connections' stdins the process's exit would cork now (for tests). @internal */
export function corkedAtExitCount(): number {
  return corkedAtExit.size;
}

/** Sets `process.exit`; false where it cannot be set (a runtime that freezes it): the exit's sends then run as they can. */
function replaceExit(proc: { exit?: unknown }, exit: unknown): boolean {
  try {
    proc.exit = exit;
    return proc.exit === exit;
  } catch {
    return false;
  }
}

/** `target.flush()` runs at the process's exit, after the settle slicer's waiting work, until `keepFromExit`. @internal */
export function flushAtExit(target: { flush(): void }): void {
  hookExit();
  flushedAtExit.add(target);
}

/** See `flushAtExit`. @internal */
export function keepFromExit(target: { flush(): void }): void {
  flushedAtExit.delete(target);
}

/**
 * The longest `runAfter` work is held behind a burst of settles (ms, see `Slicer.hold`): the
 * notifications of 10,000 calls timing out over 100 ms wait for their callers' release, within
 * this bound, and the server's work on them (in the same process: the in-memory transport) no
 * longer delays the settles still due.
 */
export const MAX_HOLD_MS = 250;

/** A yield not run after this long (ms) is taken as lost (see `Slicer.run`). */
const LOST_YIELD_MS = 1_000;

/**
 * The most time (ms) the library's mass settles hold the event loop in one task. 5 ms leaves room
 * under a 50 ms bound for what runs between slices (the callers' own reactions, a scavenge of the
 * young generation); a yield costs tens of µs, about 1 % of a slice.
 */
export const SLICE_BUDGET_MS = 5;

/**
 * Runs `next` in a later task: `setImmediate` where the runtime has it (Node, Bun; read when
 * called, so fake timers drive it), else a `MessageChannel` message (browsers, Deno; the channel
 * is closed once used, so it keeps nothing alive), else `setTimeout(next, 0)`.
 */
export function yieldTask(next: () => void): void {
  const immediate = (globalThis as { setImmediate?: (callback: () => void) => unknown }).setImmediate;
  if (typeof immediate === "function") {
    immediate(next);
    return;
  }
  if (typeof MessageChannel === "function") {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      next();
    };
    channel.port2.postMessage(undefined);
    return;
  }
  setTimeout(next, 0);
}

/** `setTimeout(next, ms)` on the global timers, read when called. */
function laterTask(next: () => void, ms: number): unknown {
  return setTimeout(next, ms);
}

/** `clearTimeout(handle)` on the global timers, read when called (a handle of timers swapped out since is ignored). */
function cancelLaterTask(handle: unknown): void {
  clearTimeout(handle as ReturnType<typeof setTimeout>);
}

/** The process's monotonic clock, ms (`performance.now()`, read when called, so fake timers drive it). */
export function processClock(): number {
  return performance.now();
}

/**
 * The slicer every deadline queue and abort fan-out of the process shares by default: one budget
 * for all of them, so 100 connections timing out together hold the loop no longer than one.
 * @internal
 */
export const settleSlicer = new Slicer({ clock: processClock, defer: yieldTask, budgetMs: SLICE_BUDGET_MS });
