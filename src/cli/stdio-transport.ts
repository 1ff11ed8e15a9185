// A server as a child process, one JSON-RPC message per line on its stdin and stdout (rule 31):
// the stdio transport of both commands, the probe's target and the proxy's upstream.
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import type { Message } from "../wire/messages.js";
import { JsonLineReader, rawLineOf } from "./json-lines.js";
import type { TooLongLine } from "./json-lines.js";
import { STDOUT_END_GRACE_MS } from "../adapters/stdio/stdout-end.js";

/** How long `close()` waits after closing stdin before it sends SIGTERM to the process group, in ms. */
export const STDIN_CLOSE_GRACE_MS = 300;
/** How long `close()` waits after SIGTERM before it sends SIGKILL to the process group, in ms. */
export const SIGTERM_GRACE_MS = 1_000;
/** How long `close()` waits for the process to be reaped after SIGKILL, in ms. */
export const SIGKILL_WAIT_MS = 500;
/**
 * The bound on stopping the server, in ms, from `close()`: its stdin is ended, then its whole
 * process group gets SIGTERM after 300 ms and SIGKILL after 1,300 ms; `close()` resolves by
 * 1,800 ms at the latest (the OS reaping a SIGKILLed process takes no longer in practice).
 */
export const STOP_BOUND_MS = STDIN_CLOSE_GRACE_MS + SIGTERM_GRACE_MS + SIGKILL_WAIT_MS;
/** The most stderr kept for error messages, in characters (the tail is kept). */
export const STDERR_TAIL_CHARS = 4_000;

/**
 * How long, in ms, after the server's stdout ended the process may take to exit before the
 * connection counts as closed with the process still running (`closeOnStdoutEnd`): a process
 * that exits closes its stdout a moment before its exit is seen. The stdio adapter's own.
 */
export { STDOUT_END_GRACE_MS };

/** How the server process ended. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** What to run: a program, its arguments, extra environment variables, a working directory. */
export interface StdioTarget {
  command: string;
  args: readonly string[];
  /** Added to (and overriding) this process's own environment. */
  env?: Readonly<Record<string, string>> | undefined;
  cwd?: string | undefined;
}

/** What differs between the commands. */
export interface ChildStdioOptions {
  /**
   * The server's stderr: `"tail"` (the probe) keeps its last `STDERR_TAIL_CHARS` characters for
   * `stderrTail`; `"inherit"` (the proxy) lets the server write on this process's own stderr.
   * Default `"tail"`.
   */
  readonly stderr?: "tail" | "inherit";
  /** The longest line read from the server, in bytes (default `DEFAULT_MAX_MESSAGE_BYTES`); a longer one goes to `ontoolong`. */
  readonly maxMessageBytes?: number;
  /**
   * When true, the server's stdout ending (EOF) while its process still runs
   * `STDOUT_END_GRACE_MS` later closes the connection (`onclose`, and `send` rejects): nothing
   * it answers can arrive any more. `close()` still stops the process. Default `false`: the
   * connection closes only when the process exits.
   */
  readonly closeOnStdoutEnd?: boolean;
}

/**
 * A transport in the MCP SDK's `Transport` shape over a child process. Unlike the SDK's
 * `StdioClientTransport` it reports every stdout line that is not a JSON-RPC message
 * (`oninvalid`, with the text as it came) instead of failing, knows the exit code, inherits the
 * caller's environment, and runs the server in its own process group, so that `close()` also
 * ends what a wrapper (`npx`, a shell script) started; what is left of the group when the server
 * exits is killed, and so is the group if this process exits first.
 */
export class ChildStdioTransport {
  onmessage?: ((message: Message) => void) | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  /** A stdout line that is not a JSON-RPC message (dropped). */
  oninvalid?: ((line: string, why: string) => void) | undefined;
  /**
   * A stdout line longer than `maxMessageBytes` (dropped as it streams in): once when it passes
   * the bound, once when it ends (see `TooLongLine`). Without it, the first goes to `oninvalid`.
   */
  ontoolong?: ((line: TooLongLine) => void) | undefined;
  /**
   * A long stdout line (one that came in several chunks), before it is parsed: its bytes. A
   * promise returned defers its parse until it settles; stdout is paused meanwhile (see
   * `JsonLineSink.early`).
   */
  onlongline?: ((pieces: readonly Buffer[]) => Promise<void> | undefined) | undefined;
  /**
   * Runs each read of the server's output (`read`: one chunk, every message in it handed on):
   * the proxy holds its writes around it, so what one chunk brings about is written at once.
   */
  onread?: ((read: () => void) => void) | undefined;

  /** How the process ended, once it has. */
  exit: ExitInfo | undefined;
  /** Why the process could not be started (`spawn` error), if so. */
  spawnError: Error | undefined;
  /**
   * The pipe the server closed on its own, before `close()` was called: `"stdout"` (its stdout
   * ended) or `"stdin"` (a write to its stdin failed, EPIPE); the first seen. An exit closes both.
   */
  hungUp: "stdout" | "stdin" | undefined;

  readonly #target: StdioTarget;
  readonly #stderrMode: "tail" | "inherit";
  readonly #closeOnStdoutEnd: boolean;
  /** `close()` was called: what ends after that, the caller ended. */
  #closing = false;
  readonly #reader: JsonLineReader;
  #child: ChildProcess | undefined;
  #stderr = "";
  #closed = false;
  #exited: Promise<void> = Promise.resolve();
  readonly #killOnExit = (): void => this.#kill("SIGKILL");

  constructor(target: StdioTarget, options: ChildStdioOptions = {}) {
    this.#target = target;
    this.#stderrMode = options.stderr ?? "tail";
    this.#closeOnStdoutEnd = options.closeOnStdoutEnd ?? false;
    this.#reader = new JsonLineReader(
      {
        message: (message) => this.onmessage?.(message),
        invalid: (line, why) => this.oninvalid?.(line, why),
        early: (pieces) => this.onlongline?.(pieces),
        held: (holding) => this.#pause("reader", holding),
        tooLong: (line) => {
          if (this.ontoolong !== undefined) this.ontoolong(line);
          else if (!line.ended) this.oninvalid?.(line.head, `a line longer than ${line.limit} bytes (the bound on one message)`);
        },
      },
      options.maxMessageBytes,
    );
  }

  /** The server's process id (the leader of its own process group), once it started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * The server's stderr stream (`stderr: "tail"`), else `null`: the SDK's `StdioClientTransport`
   * has it too, and the OpenTelemetry recorder reads it as the stdio marker (`network.transport`
   * `pipe`).
   */
  get stderr(): Readable | null {
    return this.#child?.stderr ?? null;
  }

  /**
   * The server's stdin, once it started: the stdio adapter's write queue reads from it whether a
   * line was handed to the pipe or still waits behind a full one (`stdioAdapter`; the SDK's
   * transports keep theirs where `stdioChildStdin` reads it).
   */
  get stdin(): Writable | undefined {
    return this.#child?.stdin ?? undefined;
  }

  /** The last `STDERR_TAIL_CHARS` characters the server wrote to stderr (`stderr: "tail"`). */
  get stderrTail(): string {
    return this.#stderr;
  }

  /** Spawns the server. Rejects when the program cannot be started (ENOENT, EACCES, ...). */
  start(): Promise<void> {
    if (this.#child !== undefined) return Promise.reject(new Error("the server was already started"));
    const { command, args, env, cwd } = this.#target;
    return new Promise((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = spawn(command, [...args], {
          cwd,
          env: { ...process.env, ...env },
          stdio: ["pipe", "pipe", this.#stderrMode === "inherit" ? "inherit" : "pipe"],
          detached: process.platform !== "win32",
          windowsHide: true,
        });
      } catch (error) {
        this.spawnError = error as Error;
        this.#closed = true;
        reject(error as Error);
        return;
      }
      this.#child = child;
      this.#exited = new Promise((done) => child.once("close", () => done()));
      child.once("spawn", () => {
        process.once("exit", this.#killOnExit);
        resolve();
      });
      child.once("error", (error) => {
        if (child.pid === undefined) {
          this.spawnError = error;
          reject(error);
        } else {
          this.onerror?.(error);
        }
      });
      child.once("close", (code, signal) => {
        this.exit = { code, signal };
        process.removeListener("exit", this.#killOnExit);
        // What a wrapper left behind in the group goes with it.
        this.#kill("SIGKILL", true);
        this.#finish();
      });
      child.stdin!.on("error", (error) => {
        this.#brokePipe("stdin");
        this.onerror?.(error); // EPIPE when the server is gone
      });
      // Its exit, seen before its pipes close (a process it started may hold them open for long).
      let exited: ExitInfo | undefined;
      child.once("exit", (code, signal) => void (exited = { code, signal }));
      child.stdout!.once("end", () => {
        this.#brokePipe("stdout");
        if (!this.#closeOnStdoutEnd) return;
        setTimeout(() => {
          if (this.exit !== undefined) return;
          // Exited, its pipes still held (an outside tester's, in the library's stdio adapter): an
          // exit, told as one, not a server that closed its stdout and ran on; what holds its pipes
          // goes with it, as at its pipes' close.
          if (exited !== undefined) {
            this.exit = exited;
            this.#kill("SIGKILL", true);
          }
          this.#finish();
        }, STDOUT_END_GRACE_MS).unref();
      });
      child.stdout!.on("data", (chunk: Buffer) => {
        const around = this.onread;
        if (around === undefined) this.#reader.push(chunk);
        else around(() => this.#reader.push(chunk));
      });
      if (child.stderr !== null) {
        child.stderr.setEncoding("utf8");
        child.stderr.on("data", (chunk: string) => {
          this.#stderr = (this.#stderr + chunk).slice(-STDERR_TAIL_CHARS);
        });
      }
    });
  }

  /**
   * Writes one message as one line: the bytes it was read from when it was read by a
   * `JsonLineReader` and not changed since (`rawLineOf`), else `JSON.stringify`. Rejects when the
   * server's stdin is closed.
   */
  send(message: Message): Promise<void> {
    const stdin = this.#child?.stdin;
    if (this.#closed || stdin == null || stdin.destroyed || !stdin.writable) {
      return Promise.reject(new Error("not connected: the server process is not running, or its stdout closed"));
    }
    const raw = rawLineOf(message);
    return new Promise((resolve, reject) => {
      const done = (error: Error | null | undefined): void => {
        if (!error) return resolve();
        this.#brokePipe("stdin");
        reject(error);
      };
      if (raw === undefined) {
        stdin.write(`${JSON.stringify(message)}\n`, done);
        return;
      }
      stdin.cork();
      for (const piece of raw) stdin.write(piece);
      stdin.write("\n", done);
      process.nextTick(() => stdin.uncork());
    });
  }

  /**
   * Holds what is written to the server's stdin until `uncork` (nested: the last `uncork`
   * writes), so the lines of one pass go out in one system call. No-op before the start.
   */
  cork(): void {
    this.#child?.stdin?.cork();
  }

  uncork(): void {
    this.#child?.stdin?.uncork();
  }

  /** True while the server's stdin holds more than its buffer's mark unwritten (a writer should wait for `"drain"`). */
  get congested(): boolean {
    return this.#child?.stdin?.writableNeedDrain === true;
  }

  /** Calls `listener` once the server's stdin drained (at once when it is not congested). */
  onceDrained(listener: () => void): void {
    const stdin = this.#child?.stdin;
    if (stdin == null || !stdin.writableNeedDrain) listener();
    else stdin.once("drain", listener);
  }

  /** Stops reading the server's stdout (backpressure: the reader of what it writes is behind); `resumeReading` goes on. */
  pauseReading(): void {
    this.#pause("caller", true);
  }

  resumeReading(): void {
    this.#pause("caller", false);
  }

  /** Why stdout is paused: the caller's backpressure, the reader holding a deferred line; read again once neither. */
  readonly #pausedBy = new Set<"caller" | "reader">();

  #pause(by: "caller" | "reader", paused: boolean): void {
    if (paused) this.#pausedBy.add(by);
    else this.#pausedBy.delete(by);
    if (this.#pausedBy.size > 0) this.#child?.stdout?.pause();
    else this.#child?.stdout?.resume();
  }

  /**
   * Ends the server: closes its stdin, then after `STDIN_CLOSE_GRACE_MS` sends SIGTERM to its
   * process group, then after `SIGTERM_GRACE_MS` SIGKILL. Resolves once it has exited, within
   * `STOP_BOUND_MS`.
   */
  async close(): Promise<void> {
    this.#closing = true;
    const child = this.#child;
    if (child === undefined || this.exit !== undefined) {
      this.#finish();
      return;
    }
    child.stdin?.end();
    const exited = this.#exited;
    if (!(await settlesWithin(exited, STDIN_CLOSE_GRACE_MS))) {
      this.#kill("SIGTERM");
      if (!(await settlesWithin(exited, SIGTERM_GRACE_MS))) {
        this.#kill("SIGKILL");
        await settlesWithin(exited, SIGKILL_WAIT_MS);
      }
    }
    this.#kill("SIGKILL", true);
    this.#finish();
  }

  /**
   * Resolves once the process has exited, or after `ms` (true when it exited). Resolves at once
   * when it never started.
   */
  exitedWithin(ms: number): Promise<boolean> {
    if (this.#child === undefined || this.exit !== undefined) return Promise.resolve(this.exit !== undefined);
    return settlesWithin(this.#exited, ms);
  }

  #brokePipe(pipe: "stdout" | "stdin"): void {
    if (!this.#closing) this.hungUp ??= pipe;
  }

  /** Signals the server's process group (`afterExit`: the leader is gone, only the rest of its group). */
  #kill(signal: NodeJS.Signals, afterExit = false): void {
    const child = this.#child;
    const pid = child?.pid;
    if (pid === undefined || (!afterExit && this.exit !== undefined)) return;
    try {
      if (process.platform === "win32") {
        if (!afterExit) child!.kill(signal);
      } else process.kill(-pid, signal); // the whole group: npx and the server it started
    } catch {
      if (afterExit) return;
      try {
        child!.kill(signal);
      } catch {
        // already gone
      }
    }
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#reader.end();
    this.onclose?.();
  }
}

function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void promise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
