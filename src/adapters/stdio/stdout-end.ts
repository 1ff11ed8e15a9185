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
  /** The stdout listened to, while the connection is open. */
  #watched: Stdout | undefined = undefined;
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** The layers above were told the connection closed (once per start). */
  #told = false;
  /** `close()` was called: the client is closing, nothing to report. */
  #closing = false;

  constructor(below: Port, stdout: () => Stdout | undefined) {
    super(below);
    this.#stdout = stdout;
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
    this.#timer = setTimeout(this.#lost, STDOUT_END_GRACE_MS);
    (this.#timer as { unref?: () => void }).unref?.();
  };

  readonly #lost = (): void => {
    this.#timer = undefined;
    if (this.#told || this.#closing) return;
    this.up.error(
      new Error(
        `the server closed its stdout and kept running (${STDOUT_END_GRACE_MS} ms): nothing it answers can arrive, so the connection is closed and the server stopped`,
      ),
    );
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
    this.#timer = undefined;
    this.#watched?.removeListener("end", this.#ended);
    this.#watched = undefined;
  }
}
