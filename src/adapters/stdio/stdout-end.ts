// A stdio server that closes its stdout but keeps running: nothing it answers can arrive any more,
// yet the SDK's stdio transport closes only when the process exits, so every pending call waited
// out its own timeout and was recorded a timeout (an outside tester's). The stdio write queue
// (queue.ts) watches the child's stdout with a `StdoutWatch`: once it ended and the process has not
// exited within STDOUT_END_GRACE_MS (an exiting process closes its stdout a moment before its exit
// is seen), the connection counts as closed: the layers above are told (calls pending settle
// `connection-closed`, as on an exit; the SDK client's `onclose` runs), the SDK client's `onerror`
// gets why, and the transport is closed (its process stopped). Owned by the queue, not a layer of
// its own: one hop less on every message and cancel. The proxy and the probe treat the same event
// the same way (src/cli/stdio-transport.ts `closeOnStdoutEnd`).

/** How long, in ms, a process whose stdout ended may take to exit before the connection counts as closed. */
export const STDOUT_END_GRACE_MS = 200;

/** The part of the child's stdout the watch listens to. */
export interface Stdout {
  once(event: "end", listener: () => void): unknown;
  removeListener(event: "end", listener: () => void): unknown;
  /** Node's: true once `end` was emitted (before the watch began: a client attached, or a call made, after it). */
  readonly readableEnded?: boolean | undefined;
}

/** Where the watch reads the server's process (both change when the transport is started again). */
export interface StdoutSource {
  /** The server's stdout now. */
  readonly stdout: () => Stdout | undefined;
  /** Whether the server's process has exited (its exit seen, though a process it started may still hold its pipes). */
  readonly exited: () => boolean;
}

/** The error the SDK client's `onerror` gets when a server closed its stdout and kept running. */
export const STDOUT_CLOSED_TEXT = `the server closed its stdout and kept running (${STDOUT_END_GRACE_MS} ms): nothing it answers can arrive, so the connection is closed and the server is being stopped (its stdin ended, then a signal if it does not exit)`;

/** @internal */
export class StdoutWatch {
  readonly #source: StdoutSource;
  /** Called once the grace is over with the process still there (`exited` false) or gone with its pipes held (true). */
  readonly #lost: (exited: boolean) => void;
  /** The stdout listened to, while the connection is open. */
  #watched: Stdout | undefined = undefined;
  /** The grace's timer, then the check-phase hop after it (see `#graceOver`). */
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #hop: ReturnType<typeof setImmediate> | undefined = undefined;

  constructor(source: StdoutSource, lost: (exited: boolean) => void) {
    this.#source = source;
    this.#lost = lost;
  }

  /** The transport started: listens for its server's stdout to end. */
  watch(): void {
    this.stop();
    const stdout = this.#source.stdout();
    if (stdout === undefined || typeof stdout.once !== "function") return;
    // Ended already, before the watch began (a client attached, or reconnected and first called,
    // after its server closed its stdout: an outside tester's): the grace starts now.
    if (stdout.readableEnded === true) {
      this.#ended();
      return;
    }
    this.#watched = stdout;
    stdout.once("end", this.#ended);
  }

  /** The connection closed, or the client is closing it: nothing to watch, nothing left scheduled. */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#hop !== undefined) clearImmediate(this.#hop);
    this.#timer = undefined;
    this.#hop = undefined;
    this.#watched?.removeListener("end", this.#ended);
    this.#watched = undefined;
  }

  readonly #ended = (): void => {
    this.#watched = undefined;
    const timer = setTimeout(this.#graceOver, STDOUT_END_GRACE_MS);
    (timer as { unref?: () => void }).unref?.();
    this.#timer = timer;
  };

  // The grace is over; one check phase more, so an exit the poll phase is about to deliver (a
  // loop busy past the grace) is seen first (an outside tester's: "kept running" was said of a
  // server whose exit was queued).
  readonly #graceOver = (): void => {
    this.#timer = undefined;
    this.#hop = setImmediate(this.#done);
  };

  readonly #done = (): void => {
    this.#hop = undefined;
    this.#lost(this.#source.exited());
  };
}
