// A stdio server that closes its stdout but keeps running: nothing it answers can arrive any more,
// yet the SDK's stdio transport closes only when the process exits, so every pending call waited
// out its own timeout and was recorded a timeout (an outside tester's). This layer watches the
// child's stdout: once it ended and the process has not exited within STDOUT_END_GRACE_MS (an
// exiting process closes its stdout a moment before its exit is seen), the connection counts as
// closed: the layers above are told (calls pending settle `connection-closed`, as on an exit; the
// SDK client's `onclose` runs), the SDK client's `onerror` gets why, and the transport is closed
// (its process stopped). The proxy and the probe treat the same event the same way
// (src/cli/stdio-transport.ts `closeOnStdoutEnd`).
import { Layer } from "../../wire/port.js";
import type { Port } from "../../wire/port.js";
import { noop } from "../../utils/hooks.js";

/** How long, in ms, a process whose stdout ended may take to exit before the connection counts as closed. */
export const STDOUT_END_GRACE_MS = 200;

/** The part of the child's stdout the layer watches. */
export interface Stdout {
  once(event: "end", listener: () => void): unknown;
  removeListener(event: "end", listener: () => void): unknown;
}

/** @internal */
export class StdoutEnd extends Layer {
  readonly #stdout: () => Stdout | undefined;
  readonly #exited: () => boolean;
  /** The stdout listened to, while the connection is open. */
  #watched: Stdout | undefined = undefined;
  /** The grace's timer, then the check-phase hop after it (see `#graceOver`). */
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #hop: ReturnType<typeof setImmediate> | undefined = undefined;
  /** The layers above were told the connection closed (once per start). */
  #told = false;
  /** `close()` was called: the client is closing, nothing to report. */
  #closing = false;

  /**
   * @param stdout the server's stdout now (it changes when the transport is started again).
   * @param exited whether the server's process has exited (its exit seen, though its pipes may
   *   still be open: a process it started holds them).
   */
  constructor(below: Port, stdout: () => Stdout | undefined, exited: () => boolean) {
    super(below);
    this.#stdout = stdout;
    this.#exited = exited;
  }

  override start(): Promise<void> {
    this.#told = false;
    this.#closing = false;
    return this.below.start().then(() => {
      const stdout = this.#stdout();
      if (stdout === undefined || typeof stdout.once !== "function") return;
      this.#watched = stdout;
      stdout.once("end", this.#ended);
    });
  }

  readonly #ended = (): void => {
    this.#watched = undefined;
    if (this.#told || this.#closing) return;
    const timer = setTimeout(this.#graceOver, STDOUT_END_GRACE_MS);
    (timer as { unref?: () => void }).unref?.();
    this.#timer = timer;
  };

  // The grace is over; one check phase more, so an exit the poll phase is about to deliver (a
  // loop busy past the grace) is seen first (an outside tester's: "kept running" was said of a
  // server whose exit was queued).
  readonly #graceOver = (): void => {
    this.#timer = undefined;
    this.#hop = setImmediate(this.#lost);
  };

  readonly #lost = (): void => {
    this.#hop = undefined;
    if (this.#told || this.#closing) return;
    // Exited, its pipes still held open by a process it started (the SDK waits for them all before
    // its `onclose`): an exit, closed as such, with no word of a running server. Else it runs on.
    if (!this.#exited()) {
      this.up.error(
        new Error(
          `the server closed its stdout and kept running (${STDOUT_END_GRACE_MS} ms): nothing it answers can arrive, so the connection is closed and the server stopped (stdin ended, then signalled if it does not exit)`,
        ),
      );
    }
    this.closed();
    this.below.close().catch(noop);
  };

  override close(): Promise<void> {
    this.#closing = true;
    this.#release();
    return this.below.close();
  }

  override closed(): void {
    this.#release();
    if (this.#told) return; // the transport's own close, after the layer reported it
    this.#told = true;
    this.up.closed();
  }

  #release(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#hop !== undefined) clearImmediate(this.#hop);
    this.#timer = undefined;
    this.#hop = undefined;
    this.#watched?.removeListener("end", this.#ended);
    this.#watched = undefined;
  }
}
