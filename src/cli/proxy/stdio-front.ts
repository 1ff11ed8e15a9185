// The proxy's stdio front: the client's JSON-RPC lines on stdin (the shared line reader), the
// messages for the client on stdout, one per line, nothing else. A `ClientPort` of a
// `ProxySession`; the session logic knows nothing of stdio.
import type { Readable, Writable } from "node:stream";
import type { TransportLike } from "../../adapters/types.js";
import type { JsonRpcMessage } from "../../runner/message-transport.js";
import { JsonLineReader } from "../json-lines.js";
import { redactJsonText, redactMessage } from "./listen/guard.js";
import type { Redact } from "./listen/guard.js";
import type { TooLongLine } from "../json-lines.js";
import { INVALID_REQUEST_CODE, isObject, PARSE_ERROR_CODE } from "./session.js";
import type { ClientPort, Id, Outbound, ProxySession } from "./session.js";

/**
 * How much may wait unread for the client beyond the bound on one message, in bytes (16 MiB).
 * The front stops reading a stdio server while the client's stdout is full, so what waits is
 * at most about one message; an HTTP server cannot be paused, so a client that does not read
 * fills this, and then the proxy ends (exit 1) rather than hold its output in memory.
 */
export const CLIENT_BUFFER_SLACK_BYTES = 16 * 1024 * 1024;

/**
 * An answer written right after progress for the same request waits until the client has read
 * that progress: the MCP SDK clients handle a notification a microtask after a response read in
 * the same chunk, and drop the request's progress handler at the response, so progress read with
 * its result is lost (typescript-sdk #2580). The front sends the client a `ping` and writes the
 * answer once the client answered it (at most `PING_WAIT_MS`); to a client that has no ping
 * (2026-07-28), it waits this long, in ms, after the progress was handed to the OS instead.
 */
export const PROGRESS_GAP_MS = 20;

/** The ids of the front's own pings to the client (never an id of the server's requests, which pass through unchanged). */
export const PING_ID_PREFIX = "mcp-cancellable-proxy-ping-";
/** How long an answer waits for the client's answer to the ping after its progress, in ms, before it is written anyway. */
export const PING_WAIT_MS = 250;
const MAX_PINGS = 64;

/** Past `MAX_PROGRESS_REMEMBERED` requests with progress, those whose last progress is this old (ms) are forgotten (their answers then wait for none). */
const PROGRESS_FORGOTTEN_MS = 1_000;

/** A line for the client, and what the progress gap needs to know of it. */
interface Queued {
  readonly line: readonly (Buffer | string)[];
  readonly progress: boolean;
  /** An answer (a response) to the client's request `id`. */
  readonly answer: boolean;
  /** The client request it answers or reports progress on, if any. */
  readonly id: Id | undefined;
}

/** Past this many requests with progress remembered, those whose progress is old are forgotten (`PROGRESS_FORGOTTEN_MS`). */
const MAX_PROGRESS_REMEMBERED = 1_024;

/** Where the front reads and writes. */
export interface StdioFrontIo {
  /** The client's messages, one per line. */
  readonly input: Readable;
  /** Protocol messages for the client, one per line; nothing else. */
  readonly output: Writable;
}

export interface StdioFrontOptions {
  /** The longest line read from the client, in bytes (`--max-message-bytes`). */
  readonly maxMessageBytes: number;
  /** Takes the upstream's `--header` secrets out of every message for the client (an upstream may echo them). Default: none. */
  readonly redact?: Redact | undefined;
}

/**
 * The client on stdio. Reads lines (a too long one is answered -32600 naming
 * `--max-message-bytes`, a malformed one -32700 or -32600); writes each message as one line,
 * from the bytes it came in with when the session kept them; respects the client's reading
 * pace: while the output is full it stops reading a stdio server, and a client that does not
 * read more than `maxMessageBytes + CLIENT_BUFFER_SLACK_BYTES` ends the session (fatal, exit 1).
 */
export class StdioFront implements ClientPort {
  readonly acceptsLines = true;
  readonly #redact: Redact | undefined;
  readonly #io: StdioFrontIo;
  readonly #bufferBytes: number;
  #session: ProxySession<TransportLike> | undefined;
  readonly #reader: JsonLineReader;
  /** Lines waiting behind a progress gap, in order. */
  readonly #queue: Queued[] = [];
  /** How many lines of each client request wait in `#queue`: what comes for one of them waits behind them. */
  readonly #queuedFor = new Map<Id, number>();
  #gap = false;
  /** When each request's last progress was handed to the output (`performance.now()`), until its answer is written. */
  readonly #progressAt = new Map<Id, number>();
  /** `#progressAt` is swept of old progress once it holds more than this many requests (`#progressWritten`). */
  #sweepAt = MAX_PROGRESS_REMEMBERED;
  /** Progress handed to the output before this time has been read by the client (a gap ended: its ping answered, or waited out). */
  #readBefore = Number.NEGATIVE_INFINITY;
  #paused = false;
  #overflowed = false;
  /** The ping the current gap waits for, and its timer. */
  #barrier: { id: string; timer: ReturnType<typeof setTimeout> } | undefined;
  #release: (() => void) | undefined;
  #pingSeq = 0;
  /** The front's pings not answered yet (the newest `MAX_PINGS`): their answers are the front's, never the server's. */
  readonly #pings = new Set<string>();
  /** The ids of the server's requests to the client that look like the front's pings', until the client answers them (a proxy in front of another). */
  readonly #serverAsked = new Set<string>();
  /** The client left a ping unanswered past `PING_WAIT_MS` (and has answered none since): gaps are timed, not pinged. */
  #pingsGoUnanswered = false;

  constructor(io: StdioFrontIo, options: StdioFrontOptions) {
    this.#io = io;
    this.#redact = options.redact;
    this.#bufferBytes = options.maxMessageBytes + CLIENT_BUFFER_SLACK_BYTES;
    this.#reader = new JsonLineReader(
      {
        message: (message) => {
          if (this.#pong(message as JsonRpcMessage)) return;
          this.#session?.receive(message as JsonRpcMessage);
        },
        invalid: (_line, why, value) => {
          if (value === undefined) {
            this.#session?.malformed(null, why, PARSE_ERROR_CODE, "Parse error");
            return;
          }
          const id = isObject(value) ? value.id : undefined;
          this.#session?.malformed(
            typeof id === "string" || typeof id === "number" ? id : null,
            why,
            INVALID_REQUEST_CODE,
            "Invalid Request",
          );
        },
        tooLong: (line) => this.#tooLong(line),
      },
      options.maxMessageBytes,
    );
  }

  /** Starts relaying the client's lines to `session`, and ends it when the client goes away. */
  attach(session: ProxySession<TransportLike>): void {
    this.#session = session;
    const { input, output } = this.#io;
    output.on("error", this.#outputError);
    output.on("drain", this.#drained);
    input.on("data", this.#read);
    input.once("end", this.#inputEnded);
    input.once("error", this.#inputEnded);
  }

  readonly #read = (chunk: Buffer | string): void => {
    const session = this.#session;
    if (session === undefined) this.#reader.push(chunk);
    else session.batch(() => this.#reader.push(chunk));
  };

  cork(): void {
    this.#io.output.cork();
  }

  /** Writes what was held (the last of nested corks), then stops reading the server if the client does not keep up. */
  uncork(): void {
    const output = this.#io.output;
    output.uncork();
    if (output.writableCorked === 0 && output.writableLength > output.writableHighWaterMark) this.#pauseUpstream();
  }

  readonly #inputEnded = (): void => {
    this.#reader.end();
    void this.#session?.end({ kind: "client-closed" });
  };

  readonly #outputError = (error: Error): void => {
    void this.#session?.end({ kind: "client-gone", why: (error as NodeJS.ErrnoException).code ?? error.message });
  };

  /** A line longer than `--max-message-bytes`: answered once it ended (with its id when its end names one). */
  #tooLong(line: TooLongLine): void {
    if (!line.ended) return;
    this.#session?.malformed(
      line.id ?? null,
      `a message of ${line.bytes} bytes, more than --max-message-bytes (${line.limit}); raise --max-message-bytes to relay it`,
      INVALID_REQUEST_CODE,
      "Invalid Request",
    );
  }

  send(outbound: Outbound): void {
    const output = this.#io.output;
    if (output.destroyed || output.writableEnded) return;
    if (this.#redact?.active === true) outbound = redacted(outbound, this.#redact);
    const id = outbound.clientRequestId;
    const method = outbound.message.method;
    const progress = method === "notifications/progress";
    const asked = (outbound.message as { id?: unknown }).id;
    // A server's request under an id like the front's pings' (a proxy in front of another): the
    // client's answer to it is the server's (see `#pong`).
    if (method !== undefined && typeof asked === "string" && asked.startsWith(PING_ID_PREFIX)) this.#serverAsked.add(asked);
    const answer = id !== undefined && method === undefined;
    if (!progress && (id === undefined || (!this.#queuedFor.has(id) && !(answer && this.#progressRecent(id))))) {
      // Most messages: written now, a gap open or not. Only a request's own lines wait: its answer
      // right after its own progress, and whatever comes for it behind a line of it that waits
      // (so its progress never comes after its answer, whoever made the answer). Other answers,
      // and the answer to the client's own ping, do not (an outside tester's saw them wait 2.4 s
      // behind ten answers held for their progress).
      if (outbound.line === undefined) this.#write1(`${safeStringify(outbound.message)}\n`);
      else this.#write([...outbound.line, "\n"]);
      if (answer) this.#progressAt.delete(id);
      return;
    }
    const line = outbound.line !== undefined ? [...outbound.line, "\n"] : [`${safeStringify(outbound.message)}\n`];
    const queued: Queued = { line, progress, answer, id };
    // Behind its request's own lines; an answer that needs a gap while one is open, behind it (a
    // ping answered proves read only what was written before it). Progress of a request with
    // nothing waiting goes now: its answer, if it comes soon, waits for a gap of its own.
    if ((id !== undefined && this.#queuedFor.has(id)) || (this.#gap && answer)) this.#enqueue(queued, false);
    else this.#put(queued);
  }

  /**
   * True when progress of request `id` was handed to the output and is not known to be read: no
   * gap has ended since (its ping answered, or waited out). However long ago it was written: a
   * client busy for longer than any window would read it with the answer (an outside tester's:
   * with a 100 ms window, a client busy 400 ms lost it).
   */
  #progressRecent(id: Id | undefined): boolean {
    const at = id === undefined ? undefined : this.#progressAt.get(id);
    return at !== undefined && at > this.#readBefore;
  }

  /** Writes a line now, unless it is an answer right after its own progress: then it opens a gap and waits first. */
  #put(queued: Queued): void {
    if (queued.answer && this.#progressRecent(queued.id)) {
      this.#enqueue(queued, true);
      this.#startGap();
      return;
    }
    this.#write(queued.line);
    const id = queued.id;
    if (id === undefined) return;
    if (queued.answer) this.#progressAt.delete(id);
    else if (queued.progress) this.#progressWritten(id);
  }

  #progressWritten(id: Id): void {
    const now = performance.now();
    this.#progressAt.set(id, now);
    if (this.#progressAt.size <= this.#sweepAt) return;
    // Requests whose answer never came through here (a listen, a task): their old progress goes.
    for (const [key, at] of this.#progressAt) if (now - at >= PROGRESS_FORGOTTEN_MS || at <= this.#readBefore) this.#progressAt.delete(key);
    // What is left is recent and unread: swept again once it has doubled, not at the next progress
    // (a sweep per progress line cost 40 µs each with 10,000 calls reporting progress).
    this.#sweepAt = Math.max(MAX_PROGRESS_REMEMBERED, 2 * this.#progressAt.size);
  }

  #enqueue(queued: Queued, first: boolean): void {
    if (first) this.#queue.unshift(queued);
    else this.#queue.push(queued);
    if (queued.id !== undefined) this.#queuedFor.set(queued.id, (this.#queuedFor.get(queued.id) ?? 0) + 1);
  }

  #dequeue(): Queued {
    const queued = this.#queue.shift()!;
    const id = queued.id;
    if (id !== undefined) {
      const left = (this.#queuedFor.get(id) ?? 1) - 1;
      if (left > 0) this.#queuedFor.set(id, left);
      else this.#queuedFor.delete(id);
    }
    return queued;
  }

  #write(line: readonly (Buffer | string)[]): void {
    if (line.length === 1) {
      this.#write1(line[0]!);
      return;
    }
    const output = this.#io.output;
    let ok = true;
    try {
      if (line.length > 2) output.cork();
      for (const piece of line) ok = output.write(piece);
      if (line.length > 2) output.uncork();
    } catch {
      return; // the 'error' event ends the session
    }
    this.#afterWrite(ok);
  }

  /** Writes one piece (a whole line, with its newline). */
  #write1(piece: Buffer | string): void {
    let ok: boolean;
    try {
      ok = this.#io.output.write(piece);
    } catch {
      return; // the 'error' event ends the session
    }
    this.#afterWrite(ok);
  }

  /** After a write: a client that does not read is ended past the bound, and the server paused while it catches up. */
  #afterWrite(ok: boolean): void {
    const output = this.#io.output;
    if (output.writableLength > this.#bufferBytes && !this.#overflowed) {
      this.#overflowed = true;
      void this.#session?.end({
        kind: "fatal",
        why: `the client has not read ${output.writableLength} bytes of its stdout (the bound is --max-message-bytes plus ${CLIENT_BUFFER_SLACK_BYTES} bytes, ${this.#bufferBytes})`,
      });
      return;
    }
    // Held (corked) for the pass: whether the client keeps up is known once it is written (`uncork`).
    if (!ok && output.writableCorked === 0) this.#pauseUpstream();
  }

  #pauseUpstream(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#session?.pauseUpstream();
  }

  readonly #drained = (): void => {
    if (!this.#paused) return;
    this.#paused = false;
    this.#session?.resumeUpstream();
  };

  /** An answer right after its progress: it waits until the progress left for the client, then `PROGRESS_GAP_MS`. */
  #startGap(): void {
    this.#gap = true;
    const output = this.#io.output;
    // What was written before the gap opened is read once it ends (its ping answered, or waited out).
    const opened = performance.now();
    const release = (): void => {
      clearTimeout(this.#barrier?.timer);
      this.#barrier = undefined;
      this.#gap = false;
      this.#readBefore = opened;
      while (this.#queue.length > 0 && !this.#gap) this.#put(this.#dequeue());
    };
    if (this.#session?.clientAnswersPing === true && !this.#pingsGoUnanswered) {
      // A ping after the progress: the client answers it only after it has read the progress and
      // queued its handlers (its ping handler runs after them), so the answer is the proof.
      let id = `${PING_ID_PREFIX}${++this.#pingSeq}`;
      while (this.#serverAsked.has(id)) id = `${PING_ID_PREFIX}${++this.#pingSeq}`; // never a server request's id
      const unanswered = (): void => {
        // A client that leaves the ping unanswered (it ignores requests it does not know): the
        // next gaps are timed, as for a client with no ping, rather than 250 ms each.
        this.#pingsGoUnanswered = true;
        release();
      };
      this.#barrier = { id, timer: setTimeout(unanswered, PING_WAIT_MS) };
      this.#pings.add(id);
      if (this.#pings.size > MAX_PINGS) this.#pings.delete(this.#pings.values().next().value!);
      this.#write([`${JSON.stringify({ jsonrpc: "2.0", id, method: "ping" })}\n`]);
      this.#release = release;
      return;
    }
    const resume = (): void => void setTimeout(release, PROGRESS_GAP_MS);
    if (output.writableLength === 0) resume();
    else output.write("", resume);
  }

  /** The client's answer to one of the front's own pings: it releases the gap (if it is the current one) and goes no further. */
  #pong(message: JsonRpcMessage): boolean {
    const id = (message as { id?: unknown }).id;
    if (message.method !== undefined || typeof id !== "string") return false;
    if (this.#serverAsked.delete(id) || !this.#ownPing(id)) return false; // the server's request's answer
    // Answered after all (late): the client does answer pings.
    if (this.#pings.delete(id)) this.#pingsGoUnanswered = false;
    if (this.#barrier?.id === id) this.#release?.();
    return true;
  }

  /**
   * An id of one of the front's own pings, answered or not: an answer to it, the second one too,
   * or one to a ping older than the newest `MAX_PINGS`, is the front's and goes no further (an
   * outside tester's: a second answer reached the server, which had sent no such request).
   */
  #ownPing(id: string): boolean {
    if (this.#pings.has(id)) return true;
    if (!id.startsWith(PING_ID_PREFIX)) return false;
    const seq = Number(id.slice(PING_ID_PREFIX.length));
    return Number.isInteger(seq) && seq >= 1 && seq <= this.#pingSeq && id === `${PING_ID_PREFIX}${seq}`;
  }

  /** Resolves once everything sent so far has left for the client (what waits behind a progress gap included). Never rejects. */
  async written(): Promise<void> {
    const output = this.#io.output;
    while (this.#gap || this.#queue.length > 0) await new Promise((resolve) => setTimeout(resolve, PROGRESS_GAP_MS));
    if (output.destroyed || output.writableLength === 0) return;
    await new Promise<void>((resolve) => {
      const failed = (): void => resolve();
      output.once("error", failed);
      output.write("", () => {
        output.removeListener("error", failed);
        resolve();
      });
    });
  }

  stopReading(): void {
    const input = this.#io.input;
    input.removeListener("data", this.#read);
    input.pause();
  }

  async flush(deadline: number): Promise<void> {
    const output = this.#io.output;
    const left = (): number => Math.max(0, deadline - performance.now());
    // What waits behind a progress gap first, each answer after its own progress's gap (the
    // proxy's own -32000s at the end too), within the deadline; then whatever is left at once.
    while ((this.#gap || this.#queue.length > 0) && left() > 0) {
      if (this.#gap) await new Promise((resolve) => setTimeout(resolve, Math.min(5, left())));
      else while (this.#queue.length > 0 && !this.#gap) this.#put(this.#dequeue());
    }
    for (const queued of this.#queue.splice(0)) this.#write(queued.line);
    this.#queuedFor.clear();
    if (output.destroyed || output.writableLength === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, left());
      output.write("", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** `JSON.stringify` of a message (a value it cannot serialise is reported as an internal error for its id). */
function safeStringify(message: JsonRpcMessage): string {
  try {
    return JSON.stringify(message);
  } catch (error) {
    const id = (message as { id?: unknown }).id;
    return JSON.stringify({
      jsonrpc: "2.0",
      id: typeof id === "string" || typeof id === "number" ? id : null,
      error: { code: -32603, message: `mcp-cancellable proxy: could not serialise a message (${(error as Error).message})` },
    });
  }
}

/** A message for the client without the secrets: its kept line as text, or its message. */
function redacted(outbound: Outbound, redact: Redact): Outbound {
  if (outbound.line === undefined) {
    const message = redactMessage(outbound.message, redact);
    return message === outbound.message ? outbound : { ...outbound, message };
  }
  const text = Buffer.concat(outbound.line).toString("utf8");
  const clean = redactJsonText(text, redact);
  return clean === text ? outbound : { ...outbound, line: [Buffer.from(clean, "utf8")] };
}
