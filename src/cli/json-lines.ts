// Newline-delimited JSON-RPC (rule 31: one message per line, no embedded newlines), read from a
// stream of byte chunks. The one reader of the CLI: the probe's and the proxy's server stdout
// (`ChildStdioTransport`) and the proxy's client stdin.
//
// Linear in the bytes: each chunk is scanned for "\n" once (the byte 0x0A never occurs inside a
// UTF-8 multi-byte sequence, so bytes are split before they are decoded), the pieces of a line are
// kept in a list and joined once when its newline comes, then decoded and parsed once. A line
// longer than the bound is dropped as it streams in (nothing past the bound is kept).
import { constants } from "node:buffer";
import type { Message } from "../wire/messages.js";

/**
 * The default bound on one message (one line), in bytes: 256 MiB, room for a 120 MB result (a
 * knowledge graph's `read_graph`) and more. `--max-message-bytes` sets another.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

/** The largest bound accepted, in bytes: the longest string this Node.js can hold (a line is decoded to one). */
export const MAX_MESSAGE_BYTES_LIMIT = constants.MAX_STRING_LENGTH;

/** A line of more than the bound: what is known of it when it was dropped. */
export interface TooLongLine {
  /** Bytes read of the line when it was dropped (at least the bound plus one), or all of them once its newline came. */
  readonly bytes: number;
  /** The bound, in bytes. */
  readonly limit: number;
  /** Its first 200 characters. */
  readonly head: string;
  /**
   * The request id the line answers, when its last member is a top-level `"id"` (where the MCP
   * SDKs write it) and the line has ended; `undefined` otherwise.
   */
  readonly id?: string | number | undefined;
  /** True once its newline came (the whole line was seen and dropped). */
  readonly ended: boolean;
}

/** Where the reader hands what it read. */
export interface JsonLineSink {
  /**
   * One JSON-RPC message (each element of a batch in turn). While this call runs, its line's
   * bytes are `rawLineOf(message)` and its arrival `arrivedAt(message)` (not for a batch's elements).
   */
  message(message: Message): void;
  /**
   * A line, or one element of a batch, that is not a JSON-RPC message: `value` is what it parsed
   * to (the element), `undefined` when the line is not JSON.
   */
  invalid(line: string, why: string, value?: unknown): void;
  /**
   * A line longer than the bound: called once when it passes the bound (`ended: false`), and once
   * more when its newline comes (`ended: true`, with the id it answers if that could be read from
   * its end). Without this hook the first call goes to `invalid` (its head, and why).
   */
  tooLong?(line: TooLongLine): void;
  /**
   * A line that came in several chunks (a long one), before it is parsed: its bytes, in pieces.
   * A relay may write them on at once (the proxy does, for the answer of a request in progress)
   * and return a promise: the line is then parsed (and handed to `message`) once it settles, and
   * what came after it waits until then, in order (`held` is told, so its source can pause).
   */
  early?(pieces: readonly Buffer[]): Promise<void> | undefined;
  /** The reader holds what comes (true) behind a line `early` deferred, or goes on (false). */
  held?(holding: boolean): void;
}

// The message a reader is handing to its sink right now, with its line and arrival: a message is
// read, relayed and written in one synchronous pass (the proxy's path in both directions, the
// probe's recorder), so its line is known for as long as anyone asks, with no side table per
// message (two WeakMap entries a line cost 1.5 µs of a 2.5 µs read). Saved and restored around
// each hand-off, so a message handed over inside another's keeps the outer one's afterwards.
let deliveringMessage: object | undefined;
let deliveringRaw: readonly Buffer[] | undefined;
let deliveringArrived = 0;

/**
 * The bytes of the line `message` was parsed from by a `JsonLineReader` (a message alone on its
 * line), while the reader hands it over (`JsonLineSink.message`, and everything it calls): in
 * order, in the pieces it was read in (a long line is never joined). `undefined` afterwards, for
 * a batch's element, and once `forgetRawLine` was called: the message is then serialised again.
 */
export function rawLineOf(message: object): readonly Buffer[] | undefined {
  return message === deliveringMessage ? deliveringRaw : undefined;
}

/**
 * When the line of `message` had come in whole (`performance.now()`), read before the line was
 * decoded and parsed, while the reader hands it over (as `rawLineOf`): a message that follows a
 * long one is timed by its arrival, not by how long the reader took over the long one.
 */
export function arrivedAt(message: object): number | undefined {
  return message === deliveringMessage ? deliveringArrived : undefined;
}

/** The total length of a line's pieces, in bytes. */
export function lineLength(pieces: readonly Buffer[]): number {
  let length = 0;
  for (const piece of pieces) length += piece.length;
  return length;
}

/** Forgets the line of `message` (it is about to be changed, so its line no longer says what it says). */
export function forgetRawLine(message: object): void {
  if (message === deliveringMessage) deliveringRaw = undefined;
}

/** The bytes kept of a dropped line's end, to read the id it answers. */
const TAIL_BYTES = 256;
const NEWLINE = 0x0a;

/**
 * Splits chunks into lines (a trailing `\r` dropped, blank lines skipped), parses each, and
 * hands each JSON-RPC message to the sink; anything else is reported with why (`not JSON`, not a
 * JSON-RPC object, an empty batch, a line too long). Never throws on input.
 */
export class JsonLineReader {
  readonly #sink: JsonLineSink;
  readonly #limit: number;
  /** The pieces of the line being read, and their total length in bytes. */
  #pieces: Buffer[] = [];
  #bytes = 0;
  /** When the chunk being read came in. */
  #arrived = 0;
  /** While a line is deferred: what came after it, to read once it is parsed. */
  #waiting: Buffer[] | undefined;
  /** `end()` was called while a line was deferred. */
  #ended = false;
  /** Set while a line longer than the bound is being skipped: its bytes so far, head and tail. */
  #skipping: { bytes: number; head: string; tail: Buffer } | undefined;

  /**
   * @param maxMessageBytes the longest line kept, in bytes (default `DEFAULT_MAX_MESSAGE_BYTES`);
   *   a longer one is dropped and reported (`tooLong`, else `invalid`).
   */
  constructor(sink: JsonLineSink, maxMessageBytes: number = DEFAULT_MAX_MESSAGE_BYTES) {
    this.#sink = sink;
    this.#limit = maxMessageBytes;
  }

  /** Bytes of the line in progress kept in memory (at most the bound). */
  get bufferedBytes(): number {
    return this.#bytes;
  }

  /** Reads a chunk: every complete line in it now, the rest once its newline comes. */
  push(chunk: Buffer | string): void {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    if (this.#waiting !== undefined) {
      this.#waiting.push(bytes);
      return;
    }
    this.#arrived = performance.now();
    let start = 0;
    for (let newline = bytes.indexOf(NEWLINE); newline !== -1; newline = bytes.indexOf(NEWLINE, start)) {
      this.#end(bytes.subarray(start, newline));
      start = newline + 1;
      const waiting = this.#held();
      if (waiting !== undefined) {
        // A line is deferred (see `early`): the rest waits for it, in order.
        if (start < bytes.length) waiting.push(bytes.subarray(start));
        return;
      }
    }
    if (start < bytes.length) this.#add(bytes.subarray(start));
  }

  /** The input ended: what is left without a newline is read as a last line. */
  end(): void {
    if (this.#waiting !== undefined) {
      this.#ended = true;
      return;
    }
    if (this.#skipping !== undefined || this.#bytes > 0) this.#end(Buffer.alloc(0));
  }

  /** A piece of the current line, its newline not come yet. */
  #add(piece: Buffer): void {
    const skipping = this.#skipping;
    if (skipping !== undefined) {
      skipping.bytes += piece.length;
      skipping.tail = tailOf(skipping.tail, piece);
      return;
    }
    if (this.#bytes + piece.length > this.#limit) {
      this.#startSkipping(piece);
      return;
    }
    this.#pieces.push(piece);
    this.#bytes += piece.length;
  }

  /** The last piece of the current line (its newline came): the line is read. */
  #end(last: Buffer): void {
    const skipping = this.#skipping;
    if (skipping !== undefined) {
      this.#skipping = undefined;
      skipping.bytes += last.length;
      const tail = tailOf(skipping.tail, last);
      this.#sink.tooLong?.({ bytes: skipping.bytes, limit: this.#limit, head: skipping.head, id: idAtEnd(tail), ended: true });
      return;
    }
    if (this.#bytes + last.length > this.#limit) {
      this.#startSkipping(last);
      this.#end(Buffer.alloc(0));
      return;
    }
    const pieces = this.#pieces;
    if (pieces.length === 0) {
      this.#line([last]);
      return;
    }
    if (last.length > 0) pieces.push(last);
    this.#pieces = [];
    this.#bytes = 0;
    this.#line(pieces);
  }

  #startSkipping(piece: Buffer): void {
    // Its first 800 bytes (200 characters at most 4 bytes each), without joining what was read.
    const first: Buffer[] = [];
    let kept = 0;
    for (const part of [...this.#pieces, piece]) {
      if (kept >= 800) break;
      first.push(part.subarray(0, 800 - kept));
      kept += Math.min(part.length, 800 - kept);
    }
    const head = Buffer.concat(first).toString("utf8").slice(0, 200);
    this.#skipping = { bytes: this.#bytes + piece.length, head, tail: tailOf(Buffer.alloc(0), piece) };
    this.#pieces = [];
    this.#bytes = 0;
    const report: TooLongLine = { bytes: this.#skipping.bytes, limit: this.#limit, head, ended: false };
    if (this.#sink.tooLong !== undefined) this.#sink.tooLong(report);
    else this.#sink.invalid(head, `a line longer than ${this.#limit} bytes (the bound on one message)`);
  }

  /**
   * One line, in the pieces it came in. It is decoded only now, when it is parsed: a long line
   * that `early` writes on is decoded after its bytes left, not while they come in.
   */
  #line(pieces: Buffer[]): void {
    // A trailing "\r" is not part of the message.
    const end = pieces[pieces.length - 1]!;
    if (end.length > 0 && end[end.length - 1] === 13) pieces[pieces.length - 1] = end.subarray(0, -1);
    const later = pieces.length > 1 ? this.#sink.early?.(pieces) : undefined;
    if (later !== undefined) {
      this.#waiting = [];
      this.#sink.held?.(true);
      const arrived = this.#arrived;
      void later.then(() => this.#resume(pieces, arrived));
      return;
    }
    this.#parse(pieces);
  }

  /** What waits behind a deferred line, if one is. */
  #held(): Buffer[] | undefined {
    return this.#waiting;
  }

  /** A deferred line is parsed now; then what came after it is read. */
  #resume(raw: Buffer[], arrived: number): void {
    const waiting = this.#waiting ?? [];
    this.#waiting = undefined;
    const now = this.#arrived;
    this.#arrived = arrived;
    this.#parse(raw);
    this.#arrived = now;
    this.#sink.held?.(false);
    for (let i = 0; i < waiting.length; i++) {
      this.push(waiting[i]!);
      const again = this.#held();
      if (again !== undefined) {
        // Deferred again: the rest stays behind that line.
        again.push(...waiting.slice(i + 1));
        return;
      }
    }
    if (this.#ended) this.end();
  }

  #parse(raw: Buffer[]): void {
    const text = raw.length === 1 ? raw[0]!.toString("utf8") : Buffer.concat(raw).toString("utf8");
    // A message starts with "{" (or "[" for a batch): only anything else may be a blank line.
    const first = raw[0]![0];
    if (first !== 123 && first !== 91 && text.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.#sink.invalid(text, "not JSON");
      return;
    }
    if (!Array.isArray(value)) {
      const why = notJsonRpc(value);
      if (why !== null) {
        this.#sink.invalid(text, why, value);
        return;
      }
      const message = deliveringMessage;
      const line = deliveringRaw;
      const arrived = deliveringArrived;
      deliveringMessage = value as object;
      deliveringRaw = raw;
      deliveringArrived = this.#arrived;
      try {
        this.#sink.message(value as Message);
      } finally {
        deliveringMessage = message;
        deliveringRaw = line;
        deliveringArrived = arrived;
      }
      return;
    }
    if (value.length === 0) this.#sink.invalid(text, "an empty batch", value);
    for (const message of value) this.#one(text, message);
  }

  #one(line: string, value: unknown): void {
    const why = notJsonRpc(value);
    if (why === null) this.#sink.message(value as Message);
    else this.#sink.invalid(line, why, value);
  }
}

/** The last `TAIL_BYTES` bytes of `kept` followed by `piece`. */
function tailOf(kept: Buffer, piece: Buffer): Buffer {
  if (piece.length >= TAIL_BYTES) return Buffer.from(piece.subarray(piece.length - TAIL_BYTES));
  const joined = Buffer.concat([kept, piece]);
  return joined.length > TAIL_BYTES ? joined.subarray(joined.length - TAIL_BYTES) : joined;
}

/** The id of a message whose last top-level member is `"id"` (`...,"id":7}`), read from its last bytes; `undefined` if it is not there. */
function idAtEnd(tail: Buffer): string | number | undefined {
  const found = findIdAtEnd(tail);
  if (found === undefined) return undefined;
  try {
    const id = JSON.parse(tail.subarray(found.start, found.end).toString("utf8")) as unknown;
    return typeof id === "string" || (typeof id === "number" && Number.isInteger(id)) ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `b` is JSON whitespace. */
const isSpace = (b: number | undefined): boolean => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

/**
 * Where the value of the top-level `"id"` member is, when it is the object's last member:
 * `[start, end)` of its bytes. Read backwards from the closing brace: value (a number, or a
 * string without escapes), `:`, the key `"id"` (its opening quote not escaped), then `,` or `{`.
 * Sound for valid JSON: the last `}` closes the top-level object, so the member before it is
 * the top-level object's own, and the last of its name (the one `JSON.parse` keeps).
 */
export function findIdAtEnd(bytes: Buffer): { start: number; end: number } | undefined {
  let i = bytes.length - 1;
  while (isSpace(bytes[i])) i--;
  if (bytes[i] !== 0x7d) return undefined; // }
  i--;
  while (isSpace(bytes[i])) i--;
  const end = i + 1;
  let start: number;
  if (bytes[i] === 0x22) {
    // a string id: back to its opening quote; an escape inside makes it too hard to be sure
    let j = i - 1;
    while (j >= 0 && bytes[j] !== 0x22 && bytes[j] !== 0x5c) j--;
    if (j < 0 || bytes[j] !== 0x22) return undefined;
    start = j;
    i = j - 1;
  } else {
    let j = i;
    while (j >= 0 && ((bytes[j]! >= 0x30 && bytes[j]! <= 0x39) || bytes[j] === 0x2d)) j--;
    if (j === i) return undefined;
    start = j + 1;
    i = j;
  }
  while (isSpace(bytes[i])) i--;
  if (bytes[i] !== 0x3a) return undefined; // :
  i--;
  while (isSpace(bytes[i])) i--;
  // "id": the closing quote, d, i, the opening quote (not escaped: no backslash before it)
  if (bytes[i] !== 0x22 || bytes[i - 1] !== 0x64 || bytes[i - 2] !== 0x69 || bytes[i - 3] !== 0x22) return undefined;
  i -= 4;
  if (bytes[i] === 0x5c) return undefined;
  while (isSpace(bytes[i])) i--;
  if (bytes[i] !== 0x2c && bytes[i] !== 0x7b) return undefined; // , or {
  return { start, end };
}

/** Why a parsed value is not a JSON-RPC 2.0 message, or `null` if it is one. */
export function notJsonRpc(value: unknown): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "JSON but not a JSON-RPC object";
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== "2.0") return 'JSON without "jsonrpc": "2.0"';
  if (typeof message.method === "string") return null;
  if ("id" in message && ("result" in message || "error" in message)) return null;
  // A method that is there but no string is said as it is (an outside tester's: "method": 5 read "without a method").
  if ("method" in message) return `JSON-RPC whose "method" is not a string (${JSON.stringify(message.method) ?? typeof message.method})`;
  return "JSON-RPC without a method, a result or an error";
}
