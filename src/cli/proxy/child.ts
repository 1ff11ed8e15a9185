// The proxy's stdio upstream: the server as a child process in its own process group, one
// JSON-RPC message per line on its stdin and stdout (rule 31). Its stderr is the proxy's own
// stderr (diagnostics never reach the client's stdout).
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { Message } from "../../wire/messages.js";
import { notJsonRpc } from "../stdio-transport.js";

/** How long `close()` waits after ending the server's stdin before SIGTERM to its process group, in ms. */
export const CHILD_STDIN_GRACE_MS = 300;
/** How long `close()` waits after SIGTERM before SIGKILL to the process group, in ms. */
export const CHILD_SIGTERM_GRACE_MS = 1_000;
/** How long `close()` waits for the process to be reaped after SIGKILL, in ms. */
export const CHILD_SIGKILL_WAIT_MS = 500;
/**
 * The bound on stopping the server, in ms, from `close()`: its stdin is ended, then its whole
 * process group gets SIGTERM after 300 ms and SIGKILL after 1,300 ms; `close()` resolves by
 * 1,800 ms at the latest (the OS reaping a SIGKILLed process takes no longer in practice).
 */
export const CHILD_STOP_BOUND_MS = CHILD_STDIN_GRACE_MS + CHILD_SIGTERM_GRACE_MS + CHILD_SIGKILL_WAIT_MS;
/** The longest line read from the server's stdout, in characters; a longer one is dropped as malformed. */
export const MAX_LINE_CHARS = 64 * 1024 * 1024;

/** What to run. */
export interface ChildTarget {
  command: string;
  args: readonly string[];
  env?: Readonly<Record<string, string>> | undefined;
  cwd?: string | undefined;
}

/** How the server ended. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * A transport in the MCP SDK's `Transport` shape over a child process. Unlike the SDK's
 * `StdioClientTransport` it starts the server in its own process group (so `close()` also ends
 * what a wrapper such as `npx` or a shell started), passes the server's stderr through, reports
 * each stdout line that is not a JSON-RPC message (`oninvalid`) instead of failing, and kills the
 * group if the proxy itself exits.
 */
export class ChildTransport {
  onmessage?: ((message: Message) => void) | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  /** A stdout line that is not a JSON-RPC message (dropped). */
  oninvalid?: ((line: string, why: string) => void) | undefined;

  /** How the server ended, once it has. */
  exit: ChildExit | undefined;

  readonly #target: ChildTarget;
  #child: ChildProcess | undefined;
  #buffer = "";
  #closed = false;
  #exited: Promise<void> = Promise.resolve();
  readonly #killOnExit = (): void => this.#kill("SIGKILL");

  constructor(target: ChildTarget) {
    this.#target = target;
  }

  /** The server's process id (the leader of its process group), once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Spawns the server; rejects when it cannot be started (ENOENT, EACCES, ...). */
  start(): Promise<void> {
    if (this.#child !== undefined) return Promise.reject(new Error("the server was already started"));
    const { command, args, env, cwd } = this.#target;
    return new Promise((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = spawn(command, [...args], {
          cwd,
          env: { ...process.env, ...env },
          stdio: ["pipe", "pipe", "inherit"],
          detached: process.platform !== "win32",
          windowsHide: true,
        });
      } catch (error) {
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
        if (child.pid === undefined) reject(error);
        else this.onerror?.(error);
      });
      child.once("close", (code, signal) => {
        this.exit = { code, signal };
        process.removeListener("exit", this.#killOnExit);
        // What a wrapper left behind in the group goes with it.
        this.#kill("SIGKILL", true);
        this.#finish();
      });
      child.stdin!.on("error", (error) => this.onerror?.(error)); // EPIPE once the server is gone
      child.stdout!.setEncoding("utf8");
      child.stdout!.on("data", (chunk: string) => this.#read(chunk));
    });
  }

  /** Writes one message as one line; rejects when the server's stdin is closed. */
  send(message: Message): Promise<void> {
    const stdin = this.#child?.stdin;
    if (this.#closed || stdin == null || stdin.destroyed || !stdin.writable) {
      return Promise.reject(new Error("not connected: the server process is not running"));
    }
    return new Promise((resolve, reject) => {
      stdin.write(`${JSON.stringify(message)}\n`, (error) => (error ? reject(error) : resolve()));
    });
  }

  /**
   * Stops the server: ends its stdin, then SIGTERM to its process group after
   * `CHILD_STDIN_GRACE_MS`, then SIGKILL after `CHILD_SIGTERM_GRACE_MS` more. Resolves once it
   * exited, within `CHILD_STOP_BOUND_MS`.
   */
  async close(): Promise<void> {
    const child = this.#child;
    if (child === undefined || this.exit !== undefined) {
      this.#finish();
      return;
    }
    child.stdin?.end();
    const exited = this.#exited;
    if (!(await settlesWithin(exited, CHILD_STDIN_GRACE_MS))) {
      this.#kill("SIGTERM");
      if (!(await settlesWithin(exited, CHILD_SIGTERM_GRACE_MS))) {
        this.#kill("SIGKILL");
        await settlesWithin(exited, CHILD_SIGKILL_WAIT_MS);
      }
    }
    this.#kill("SIGKILL", true);
    this.#finish();
  }

  /** Signals the server's process group (`afterExit`: the leader is gone, only the rest of its group). */
  #kill(signal: NodeJS.Signals, afterExit = false): void {
    const child = this.#child;
    const pid = child?.pid;
    if (pid === undefined || (!afterExit && this.exit !== undefined)) return;
    try {
      if (process.platform === "win32") {
        if (!afterExit) child!.kill(signal);
      } else process.kill(-pid, signal);
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
    if (this.#buffer.trim() !== "") this.#line(this.#buffer);
    this.#buffer = "";
    this.onclose?.();
  }

  #read(chunk: string): void {
    this.#buffer += chunk;
    let newline = this.#buffer.indexOf("\n");
    while (newline !== -1) {
      const line = this.#buffer.slice(0, newline);
      this.#buffer = this.#buffer.slice(newline + 1);
      this.#line(line);
      newline = this.#buffer.indexOf("\n");
    }
    if (this.#buffer.length > MAX_LINE_CHARS) {
      this.oninvalid?.(this.#buffer.slice(0, 200), `a line longer than ${MAX_LINE_CHARS} characters`);
      this.#buffer = "";
    }
  }

  #line(raw: string): void {
    const line = raw.replace(/\r$/, "");
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.oninvalid?.(line, "not JSON");
      return;
    }
    for (const message of Array.isArray(value) ? value : [value]) {
      const why = notJsonRpc(message);
      if (why !== null) this.oninvalid?.(line, why);
      else this.onmessage?.(message as Message);
    }
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
