// Newline-delimited JSON-RPC (rule 31: one message per line, no embedded newlines), read from a
// stream of text chunks. The one reader of the CLI: the probe's and the proxy's server stdout
// (`ChildStdioTransport`) and the proxy's client stdin.
import type { Message } from "../wire/messages.js";

/** The longest line read, in characters; a longer one is reported as invalid (its first 200 characters) and dropped. */
export const MAX_LINE_CHARS = 64 * 1024 * 1024;

/** Where the reader hands what it read. */
export interface JsonLineSink {
  /** One JSON-RPC message (each element of a batch in turn). */
  message(message: Message): void;
  /**
   * A line, or one element of a batch, that is not a JSON-RPC message: `value` is what it parsed
   * to (the element), `undefined` when the line is not JSON or is longer than `MAX_LINE_CHARS`.
   */
  invalid(line: string, why: string, value?: unknown): void;
}

/**
 * Splits chunks into lines (a trailing `\r` dropped, blank lines skipped), parses each, and
 * hands each JSON-RPC message to the sink; anything else is reported with why (`not JSON`, not a
 * JSON-RPC object, an empty batch, a line too long). Never throws on input.
 */
export class JsonLineReader {
  readonly #sink: JsonLineSink;
  #buffer = "";

  constructor(sink: JsonLineSink) {
    this.#sink = sink;
  }

  /** Reads a chunk: every complete line in it now, the rest once its newline comes. */
  push(chunk: string): void {
    const text = this.#buffer === "" ? chunk : this.#buffer + chunk;
    let start = 0;
    for (let newline = text.indexOf("\n"); newline !== -1; newline = text.indexOf("\n", start)) {
      this.#line(text.slice(start, newline));
      start = newline + 1;
    }
    this.#buffer = start === 0 ? text : text.slice(start);
    if (this.#buffer.length > MAX_LINE_CHARS) {
      const head = this.#buffer.slice(0, 200);
      this.#buffer = "";
      this.#sink.invalid(head, `a line longer than ${MAX_LINE_CHARS} characters`);
    }
  }

  /** The input ended: what is left without a newline is read as a last line. */
  end(): void {
    const rest = this.#buffer;
    this.#buffer = "";
    if (rest !== "") this.#line(rest);
  }

  #line(raw: string): void {
    const line = raw.charCodeAt(raw.length - 1) === 13 ? raw.slice(0, -1) : raw;
    // A message starts with "{" (or "[" for a batch): only anything else may be a blank line.
    const first = line.charCodeAt(0);
    if (first !== 123 && first !== 91 && line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.#sink.invalid(line, "not JSON");
      return;
    }
    if (!Array.isArray(value)) {
      this.#one(line, value);
      return;
    }
    if (value.length === 0) this.#sink.invalid(line, "an empty batch", value);
    for (const message of value) this.#one(line, message);
  }

  #one(line: string, value: unknown): void {
    const why = notJsonRpc(value);
    if (why === null) this.#sink.message(value as Message);
    else this.#sink.invalid(line, why, value);
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
