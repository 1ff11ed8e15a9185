import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { Message } from "../wire/messages.js";

/** How long `close()` waits after closing stdin before it sends SIGTERM, in ms. */
export const STDIN_CLOSE_GRACE_MS = 300;
/** How long `close()` waits after SIGTERM before it sends SIGKILL, in ms. */
export const SIGTERM_GRACE_MS = 1_000;
/** The most stderr kept for error messages, in characters (the tail is kept). */
export const STDERR_TAIL_CHARS = 4_000;
/** The longest line read from stdout, in characters; a longer line is reported as not JSON-RPC. */
export const MAX_LINE_CHARS = 64 * 1024 * 1024;

/** How the server process ended. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** What to run: a program, its arguments, extra environment variables, a working directory. */
export interface StdioTarget {
  command: string;
  args: string[];
  /** Added to (and overriding) the probe's own environment. */
  env: Record<string, string>;
  cwd?: string;
}

/**
 * A minimal MCP stdio client transport for the probe: one JSON-RPC message per line on the
 * child's stdin and stdout (rule 31). Unlike the SDK's, it reports every stdout line that is not
 * a JSON-RPC message (`oninvalid`, with the text as it came), keeps the tail of stderr, knows the exit
 * code, inherits the caller's environment, and runs the child in its own process group so that
 * `close()` also ends what a wrapper (`npx`, a shell script) started.
 */
export class ProbeStdioTransport {
  onmessage?: ((message: Message) => void) | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  /** A stdout line that is not a JSON-RPC message. */
  oninvalid?: ((line: string, why: string) => void) | undefined;

  /** How the process ended, once it has. */
  exit: ExitInfo | undefined;
  /** Why the process could not be started (`spawn` error), if so. */
  spawnError: Error | undefined;

  readonly #target: StdioTarget;
  #child: ChildProcess | undefined;
  #buffer = "";
  #stderr = "";
  #closed = false;
  #exited: Promise<void> | undefined;
  readonly #killOnExit = (): void => this.#kill("SIGKILL");

  constructor(target: StdioTarget) {
    this.#target = target;
  }

  /** The server's process id (the leader of its own process group), once it started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The last `STDERR_TAIL_CHARS` characters the server wrote to stderr. */
  get stderrTail(): string {
    return this.#stderr;
  }

  /** Spawns the server. Rejects when the program cannot be started (ENOENT, EACCES, ...). */
  start(): Promise<void> {
    if (this.#child !== undefined) return Promise.reject(new Error("ProbeStdioTransport already started"));
    const { command, args, env, cwd } = this.#target;
    return new Promise((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = spawn(command, args, {
          cwd,
          env: { ...process.env, ...env },
          stdio: ["pipe", "pipe", "pipe"],
          detached: process.platform !== "win32",
          windowsHide: true,
        });
      } catch (error) {
        this.spawnError = error as Error;
        this.#closed = true;
        reject(error);
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
        this.#finish();
      });
      child.stdin!.on("error", (error) => this.onerror?.(error)); // EPIPE when the server is gone
      child.stdout!.setEncoding("utf8");
      child.stdout!.on("data", (chunk: string) => this.#read(chunk));
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (chunk: string) => {
        this.#stderr = (this.#stderr + chunk).slice(-STDERR_TAIL_CHARS);
      });
    });
  }

  /** Writes one message as one line. Rejects when the server's stdin is closed. */
  send(message: Message): Promise<void> {
    const stdin = this.#child?.stdin;
    if (this.#closed || stdin == null || stdin.destroyed || !stdin.writable) {
      return Promise.reject(new Error("not connected: the server process is not running"));
    }
    return new Promise((resolve, reject) => {
      stdin.write(JSON.stringify(message) + "\n", (error) => (error ? reject(error) : resolve()));
    });
  }

  /**
   * Ends the server: closes its stdin, then after `STDIN_CLOSE_GRACE_MS` sends SIGTERM to its
   * process group, then after `SIGTERM_GRACE_MS` SIGKILL. Resolves once it has exited (at most
   * about 1.3 s plus the time the OS takes to reap it).
   */
  async close(): Promise<void> {
    const child = this.#child;
    if (child === undefined || this.exit !== undefined) {
      this.#finish();
      return;
    }
    child.stdin?.end();
    const exited = this.#exited!;
    if (await settlesWithin(exited, STDIN_CLOSE_GRACE_MS)) return;
    this.#kill("SIGTERM");
    if (await settlesWithin(exited, SIGTERM_GRACE_MS)) return;
    this.#kill("SIGKILL");
    await settlesWithin(exited, SIGTERM_GRACE_MS);
    this.#finish();
  }

  #kill(signal: NodeJS.Signals): void {
    const pid = this.#child?.pid;
    if (pid === undefined || this.exit !== undefined) return;
    try {
      if (process.platform === "win32") this.#child!.kill(signal);
      else process.kill(-pid, signal); // the whole group: npx and the server it started
    } catch {
      try {
        this.#child!.kill(signal);
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
    const messages = Array.isArray(value) ? value : [value];
    for (const message of messages) {
      const why = notJsonRpc(message);
      if (why !== null) this.oninvalid?.(line, why);
      else this.onmessage?.(message as Message);
    }
  }
}

/** Why a parsed value is not a JSON-RPC 2.0 message, or `null` if it is one. */
export function notJsonRpc(value: unknown): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "JSON but not a JSON-RPC object";
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== "2.0") return 'JSON without "jsonrpc": "2.0"';
  if (typeof message.method === "string") return null;
  if ("id" in message && ("result" in message || "error" in message)) return null;
  return "JSON-RPC without a method, a result or an error";
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
