import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { JsonLineReader, MAX_MESSAGE_BYTES_LIMIT } from "../../src/cli/json-lines.js";
import type { RunRecord } from "../../src/index.js";

// The proxy as a real process, the way bin.test.ts runs the executable: `node --import tsx
// src/cli/index.ts proxy ...` (dist/cli.js is the same module bundled).
export const ENTRY = join(process.cwd(), "src/cli/index.ts");

/** Absolute path of a fixture under test/fixtures. */
export const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

/** server-everything's stdio entry (a server nobody here wrote). */
export const EVERYTHING = resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

/** `{ command, args }` that runs `mcp-cancellable proxy <proxyArgs>`: for an SDK StdioClientTransport. */
export function proxyCommand(proxyArgs: string[]): { command: string; args: string[] } {
  return { command: process.execPath, args: ["--import", "tsx", ENTRY, "proxy", ...proxyArgs] };
}

/** `-- node <script> <flags>`: a stdio server run by the proxy. */
export const server = (script: string, ...flags: string[]): string[] => ["--", process.execPath, script, ...flags];

/** Waits for `test`, polling every 20 ms, at most `ms`; returns whether it became true. Bounded. */
export async function eventually(test: () => boolean, ms = 5_000): Promise<boolean> {
  for (const end = performance.now() + ms; performance.now() < end; ) {
    if (test()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return test();
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (exited, not yet reaped: an orphan whose new parent reaps late, or never) has run its course.
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true; // no /proc here: the signal reached it
  }
}

/** A run record of the proxy (a `--records` line, or an error's `data.record`): the library's record with the client's id of the request. */
export type ProxyRecord = RunRecord & { clientRequestId?: string | number };

/** The `data` of an error the proxy answers with (a timeout, a lost connection): the fields the tests read. */
export interface ProxyErrorData {
  code?: string;
  trigger?: string;
  limitMs?: number;
  summary?: string;
  record?: ProxyRecord | null;
}

/**
 * A parsed JSON-RPC message (a request, a notification or a response, from either side): the
 * fields the tests read, each present only in the messages that carry it.
 */
export interface RpcMessage {
  jsonrpc?: unknown;
  id?: string | number | null;
  method?: string;
  params?: {
    name?: string;
    requestId?: string | number;
    progressToken?: string | number;
    reason?: string;
    _meta?: { progressToken?: string | number; [key: string]: unknown };
    [key: string]: unknown;
  };
  result?: {
    content?: Array<{ type: string; text: string }>;
    tools?: Array<{ name: string }>;
    [key: string]: unknown;
  };
  error?: { code: number; message: string; data?: ProxyErrorData };
}

/** A span of `--otel` with `OTEL_TRACES_EXPORTER=console` (one `mcp-cancellable proxy: span <json>` line on stderr): the fields the tests read. */
export interface ConsoleSpan {
  name: string;
  /** SpanKind: 2 is CLIENT. */
  kind: number;
  /** In µs. */
  duration: number;
  attributes: Record<string, unknown>;
  /** SpanStatusCode: 2 is ERROR. */
  status: { code: number; message?: string };
  events: Array<{ name: string; attributes?: Record<string, unknown> }>;
  resource: { attributes: Record<string, unknown> };
}

/** The JSON-RPC lines the scripted server read (it echoes each as `RECV <json>` on stderr; the proxy passes its stderr through). */
export function received(stderr: string): RpcMessage[] {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("RECV "))
    .map((line) => JSON.parse(line.slice(5)) as RpcMessage);
}

/** A temporary folder removed by `cleanup`. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "mcp-proxy-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export const INITIALIZE = (id: string | number = "init") => ({
  jsonrpc: "2.0",
  id,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw-client", version: "1.0.0" } },
});

/**
 * A line-level client: the proxy as a child process, the test writing its stdin and reading each
 * stdout line as JSON (a line that is not JSON fails the test: stdout carries only protocol
 * messages).
 */
export class RawClient {
  readonly child: ChildProcessWithoutNullStreams;
  readonly messages: RpcMessage[] = [];
  readonly notJson: string[] = [];
  stderr = "";
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(proxyArgs: string[], env: Record<string, string> = {}) {
    const { command, args } = proxyCommand(proxyArgs);
    this.child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
    // The project's own line reader: linear in the bytes, so a 40 MB line costs the test nothing much.
    const reader = new JsonLineReader(
      {
        message: (message) => this.messages.push(message as RpcMessage),
        invalid: (line, why, value) => {
          if (value === undefined) this.notJson.push(line);
          else this.messages.push(value as RpcMessage);
          void why;
        },
      },
      MAX_MESSAGE_BYTES_LIMIT,
    );
    this.child.stdout.on("data", (chunk: Buffer) => reader.push(chunk));
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk: string) => (this.stderr += chunk));
    this.child.stdin.on("error", () => {});
    this.exited = new Promise((done) =>
      this.child.once("close", (code, signal) => {
        this.exit = { code, signal };
        done(this.exit);
      }),
    );
  }

  send(message: unknown): void {
    this.child.stdin.write(`${typeof message === "string" ? message : JSON.stringify(message)}\n`);
  }

  /** The first message answering `id`, waited for at most `ms`. */
  async answer(id: string | number, ms = 8_000): Promise<RpcMessage> {
    const found = await eventually(() => this.messages.some((m) => m.id === id && m.method === undefined), ms);
    if (!found)
      throw new Error(`no answer for ${JSON.stringify(id)} within ${ms} ms; got ${JSON.stringify(this.messages)}\n${this.stderr}`);
    return this.messages.find((m) => m.id === id && m.method === undefined)!;
  }

  /** initialize and notifications/initialized. */
  async initialize(): Promise<void> {
    this.send(INITIALIZE());
    const answer = await this.answer("init", 15_000);
    if (answer.result === undefined) throw new Error(`initialize failed: ${JSON.stringify(answer)}`);
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  }

  answersTo(id: string | number): RpcMessage[] {
    return this.messages.filter((m) => m.id === id && m.method === undefined);
  }

  /** Ends the proxy: closes its stdin (the client goes away), waits for the exit (bounded), kills it if it hangs. */
  async end(ms = 8_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), ms);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }
}

/** The messages with an id the proxy writes to `output` (its stdout in-process), by id, as they come: one JSON line each. */
export function answersFrom(output: NodeJS.ReadableStream): Map<unknown, RpcMessage> {
  const answers = new Map<unknown, RpcMessage>();
  let buffered = "";
  output.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const message = JSON.parse(buffered.slice(0, end)) as RpcMessage;
      buffered = buffered.slice(end + 1);
      if (message.id !== undefined) answers.set(message.id, message);
    }
  });
  return answers;
}
