// A message relayed with only its id changed, written from the bytes it came in (its line, as the
// reader kept it) instead of serialising the parsed object again: for a large result that is one
// pass less over it (bench/proxy.ts, the large-result case).
import { findIdAtEnd } from "../json-lines.js";

type Id = string | number;

/** Below this many bytes a line is serialised again (cheap); above, its bytes are reused. */
export const REUSE_LINE_BYTES = 64 * 1024;

/** How far into a line the top-level `"id"` member is looked for from its start, in bytes. */
const HEAD_SCAN_BYTES = 4_096;

/**
 * The line of a message (its pieces) with its top-level `id` replaced: pieces to write in order
 * (slices of the line around the new value; the line is not copied), or `undefined` when the
 * id's value cannot be found where it is expected, written as `JSON.stringify(oldId)` writes it
 * (then serialise the message instead).
 *
 * Looked for first as the object's last member (where the MCP SDKs write it: `...,"id":7}`),
 * then among the leading members whose values are plain strings, numbers, `true`, `false` or
 * `null` (`{"jsonrpc":"2.0","id":7,...`, as the Python SDK writes it). Assumes the object has one
 * `"id"` member (RFC 8259 §4: names SHOULD be unique; a duplicate's first copy would be the one
 * changed, and `JSON.parse` keeps the last).
 */
export function replaceId(line: Buffer | readonly Buffer[], oldId: Id, newId: Id): Buffer[] | undefined {
  const pieces = Buffer.isBuffer(line) ? [line] : line;
  let total = 0;
  for (const piece of pieces) total += piece.length;
  const expected = Buffer.from(JSON.stringify(oldId), "utf8");
  const value = Buffer.from(JSON.stringify(newId), "utf8");
  // Only the line's last and first bytes are read: each joined from the pieces, small.
  const tailStart = Math.max(0, total - TAIL_SCAN_BYTES);
  const tail = slice(pieces, tailStart, total);
  const atEnd = findIdAtEnd(Buffer.concat(tail));
  let start: number | undefined;
  if (atEnd !== undefined && Buffer.concat(slice(pieces, tailStart + atEnd.start, tailStart + atEnd.end)).equals(expected)) {
    start = tailStart + atEnd.start;
  } else {
    start = findIdAtHead(Buffer.concat(slice(pieces, 0, Math.min(total, HEAD_SCAN_BYTES))), expected);
  }
  if (start === undefined) return undefined;
  return [...slice(pieces, 0, start), value, ...slice(pieces, start + expected.length, total)];
}

/** How far back from a line's end the top-level `"id"` member is looked for, in bytes. */
const TAIL_SCAN_BYTES = 512;

/** The pieces covering bytes `[from, to)` of a line given in pieces (slices, no copy). */
function slice(pieces: readonly Buffer[], from: number, to: number): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (const piece of pieces) {
    const end = at + piece.length;
    if (end > from && at < to) out.push(piece.subarray(Math.max(0, from - at), Math.min(piece.length, to - at)));
    at = end;
    if (at >= to) break;
  }
  return out;
}

/**
 * The id of a line that is an answer (a response): its top-level `"id"` is its last member (as
 * the MCP SDKs write it) and one of its leading members is `result` or `error` (before any
 * `method`, and before any other member whose value is an object or array). `undefined` for
 * anything else, or when that cannot be told from the line's first and last bytes.
 */
export function idOfAnswer(line: readonly Buffer[]): Id | undefined {
  let total = 0;
  for (const piece of line) total += piece.length;
  const tailStart = Math.max(0, total - TAIL_SCAN_BYTES);
  const tail = Buffer.concat(slice(line, tailStart, total));
  const found = findIdAtEnd(tail);
  if (found === undefined) return undefined;
  let id: unknown;
  try {
    id = JSON.parse(tail.subarray(found.start, found.end).toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof id !== "string" && !(typeof id === "number" && Number.isSafeInteger(id))) return undefined;
  const head = Buffer.concat(slice(line, 0, Math.min(total, HEAD_SCAN_BYTES)));
  return leadingKind(head) === "answer" ? id : undefined;
}

/** Whether the object's leading members show an answer (`result`, `error`) or something else (`method`); `undefined` when they do not tell. */
function leadingKind(line: Buffer): "answer" | "other" | undefined {
  let i = 0;
  while (isSpace(line[i])) i++;
  if (line[i] !== 0x7b) return undefined; // {
  i++;
  while (i < line.length) {
    while (isSpace(line[i])) i++;
    if (line[i] !== 0x22) return undefined;
    const keyEnd = stringEnd(line, i, line.length);
    if (keyEnd === undefined) return undefined;
    const key = line.subarray(i + 1, keyEnd - 1).toString("latin1");
    if (key === "result" || key === "error") return "answer";
    if (key === "method") return "other";
    i = keyEnd;
    while (isSpace(line[i])) i++;
    if (line[i] !== 0x3a) return undefined; // :
    i++;
    while (isSpace(line[i])) i++;
    if (line[i] === 0x22) {
      const end = stringEnd(line, i, line.length);
      if (end === undefined) return undefined;
      i = end;
    } else if (line[i] === 0x7b || line[i] === 0x5b) {
      return undefined;
    } else {
      while (i < line.length && line[i] !== 0x2c && line[i] !== 0x7d && !isSpace(line[i])) i++;
    }
    while (isSpace(line[i])) i++;
    if (line[i] !== 0x2c) return undefined;
    i++;
  }
  return undefined;
}

const isSpace = (b: number | undefined): boolean => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

/** Where the top-level `"id"` member's value starts, scanning its leading members; `undefined` if not found there. */
function findIdAtHead(line: Buffer, expected: Buffer): number | undefined {
  const limit = line.length;
  let i = 0;
  while (isSpace(line[i])) i++;
  if (line[i] !== 0x7b) return undefined; // {
  i++;
  while (i < limit) {
    while (isSpace(line[i])) i++;
    if (line[i] !== 0x22) return undefined;
    const keyEnd = stringEnd(line, i, limit);
    if (keyEnd === undefined) return undefined;
    const isId = keyEnd - i === 4 && line[i + 1] === 0x69 && line[i + 2] === 0x64; // "id"
    i = keyEnd;
    while (isSpace(line[i])) i++;
    if (line[i] !== 0x3a) return undefined; // :
    i++;
    while (isSpace(line[i])) i++;
    if (isId) {
      const after = line[i + expected.length];
      const ends = after === 0x2c || after === 0x7d || isSpace(after);
      return ends && line.subarray(i, i + expected.length).equals(expected) ? i : undefined;
    }
    // Skip a plain value; an object or an array ends the scan (the id is not looked for past one).
    if (line[i] === 0x22) {
      const end = stringEnd(line, i, limit);
      if (end === undefined) return undefined;
      i = end;
    } else if (line[i] === 0x7b || line[i] === 0x5b) {
      return undefined;
    } else {
      while (i < limit && line[i] !== 0x2c && line[i] !== 0x7d && !isSpace(line[i])) i++;
    }
    while (isSpace(line[i])) i++;
    if (line[i] !== 0x2c) return undefined; // , (a } here: the object ended without an id)
    i++;
  }
  return undefined;
}

/** The index just past the string that opens at `start` (a quote), or `undefined` if it does not end before `limit`. */
function stringEnd(line: Buffer, start: number, limit: number): number | undefined {
  for (let i = start + 1; i < limit; i++) {
    const b = line[i];
    if (b === 0x5c) i++;
    else if (b === 0x22) return i + 1;
  }
  return undefined;
}
