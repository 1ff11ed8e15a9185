import { afterEach, describe, expect, it, vi } from "vitest";
import { arrivedAt, forgetRawLine, JsonLineReader, rawLineOf } from "../../src/cli/json-lines.js";
import type { TooLongLine } from "../../src/cli/json-lines.js";

// The CLI's one line reader (the proxy's stdin, a stdio server's stdout for the proxy and the
// probe): linear in the bytes, a bound on one line, the line's own bytes kept for a relay.
function collect(limit?: number) {
  const messages: unknown[] = [];
  const invalid: Array<{ line: string; why: string }> = [];
  const tooLong: TooLongLine[] = [];
  const reader = new JsonLineReader(
    {
      message: (message) => messages.push(message),
      invalid: (line, why) => invalid.push({ line, why }),
      tooLong: (line) => tooLong.push(line),
    },
    limit,
  );
  return { reader, messages, invalid, tooLong };
}

const line = (message: unknown): string => `${JSON.stringify(message)}\n`;

afterEach(() => vi.restoreAllMocks());

describe("JsonLineReader", () => {
  it("lines split anywhere, a multi-byte character split between chunks, \\r\\n and blank lines", () => {
    const { reader, messages, invalid } = collect();
    const text = `${line({ jsonrpc: "2.0", method: "a", params: { s: "héllo ✓ 😀" } })}\r\n  \n${line({ jsonrpc: "2.0", id: 1, result: {} })}`;
    const bytes = Buffer.from(text.replace('"}}\n', '"}}\r\n'), "utf8");
    for (let i = 0; i < bytes.length; i += 3) reader.push(bytes.subarray(i, i + 3));
    expect(messages).toEqual([
      { jsonrpc: "2.0", method: "a", params: { s: "héllo ✓ 😀" } },
      { jsonrpc: "2.0", id: 1, result: {} },
    ]);
    expect(invalid).toEqual([]);
  });

  it("scans each byte for the newline once: a 4 MB line in 64 KB chunks costs about 4 MB of scanning, not the square", () => {
    const { reader, messages } = collect();
    const message = { jsonrpc: "2.0", id: 7, result: { text: "x".repeat(4 * 1024 * 1024) } };
    const bytes = Buffer.from(line(message), "utf8");
    let scanned = 0;
    const indexOf = Buffer.prototype.indexOf;
    vi.spyOn(Buffer.prototype, "indexOf").mockImplementation(function (this: Buffer, value: unknown, from?: unknown) {
      scanned += this.length - (typeof from === "number" ? from : 0);
      return indexOf.call(this, value as number, from as number);
    });
    for (let i = 0; i < bytes.length; i += 65_536) reader.push(bytes.subarray(i, i + 65_536));
    vi.restoreAllMocks();
    expect(messages).toHaveLength(1);
    expect(scanned).toBeLessThanOrEqual(bytes.length);
    expect(scanned).toBeGreaterThanOrEqual(bytes.length - 1);
  });

  it("keeps each message's own bytes while it is handed over (not a batch's elements), and forgets them after, or when told", () => {
    const seen: { raw: string | undefined; arrived: number | undefined }[] = [];
    const messages: object[] = [];
    const reader = new JsonLineReader({
      message: (message) => {
        messages.push(message as object);
        const raw = rawLineOf(message as object);
        seen.push({ raw: raw === undefined ? undefined : Buffer.concat(raw).toString("utf8"), arrived: arrivedAt(message as object) });
        if (messages.length === 3) {
          forgetRawLine(message as object);
          seen.push({ raw: rawLineOf(message as object) === undefined ? undefined : "kept", arrived: undefined });
        }
      },
      invalid: () => {},
    });
    const text = '{"jsonrpc":"2.0", "id":3,"result":{"a" : 1}}';
    const before = performance.now();
    reader.push(`${text}\n[{"jsonrpc":"2.0","method":"x"}]\n{"jsonrpc":"2.0","method":"y"}\n`);
    expect(seen[0]!.raw).toBe(text);
    expect(seen[0]!.arrived).toBeGreaterThanOrEqual(before);
    expect(seen[1]).toEqual({ raw: undefined, arrived: undefined }); // a batch's element
    expect(seen[2]!.raw).toBe('{"jsonrpc":"2.0","method":"y"}');
    expect(seen[3]!.raw).toBeUndefined(); // forgotten
    // Once handed over, a message's line is not kept.
    expect(rawLineOf(messages[0]!)).toBeUndefined();
    expect(arrivedAt(messages[0]!)).toBeUndefined();
  });

  it("a line past the bound: reported when it passes it and when it ends (with the id from its end); nothing past the bound is kept; the next line is read", () => {
    const { reader, messages, tooLong } = collect(1_024);
    const big = Buffer.from(line({ jsonrpc: "2.0", result: { text: "y".repeat(10_000) }, id: 42 }), "utf8");
    let kept = 0;
    for (let i = 0; i < big.length; i += 100) {
      reader.push(big.subarray(i, i + 100));
      kept = Math.max(kept, reader.bufferedBytes);
    }
    reader.push(line({ jsonrpc: "2.0", id: 43, result: {} }));
    expect(tooLong).toHaveLength(2);
    expect(tooLong[0]).toMatchObject({ ended: false, limit: 1_024 });
    expect(tooLong[0]!.bytes).toBeGreaterThan(1_024);
    expect(tooLong[0]!.head).toMatch(/^\{"jsonrpc":"2.0","result":\{"text":"yyy/);
    expect(tooLong[1]).toMatchObject({ ended: true, bytes: big.length - 1, id: 42 });
    expect(kept).toBeLessThanOrEqual(1_024);
    expect(messages).toEqual([{ jsonrpc: "2.0", id: 43, result: {} }]);
  });

  it("without a tooLong hook, a line past the bound is reported invalid once, naming the bound", () => {
    const invalid: string[] = [];
    const reader = new JsonLineReader({ message: () => {}, invalid: (_line, why) => invalid.push(why) }, 2_048);
    reader.push(`${"z".repeat(5_000)}\n`);
    expect(invalid).toEqual(["a line longer than 2048 bytes (the bound on one message)"]);
  });

  it("not JSON, not JSON-RPC, an empty batch: each reported with why; end() reads a last line without its newline", () => {
    const { reader, messages, invalid } = collect();
    reader.push('nope\n{"id":1}\n[]\n{"jsonrpc":"2.0","method":"last"}');
    expect(invalid.map((i) => i.why)).toEqual(["not JSON", 'JSON without "jsonrpc": "2.0"', "an empty batch"]);
    expect(messages).toEqual([]);
    reader.end();
    expect(messages).toEqual([{ jsonrpc: "2.0", method: "last" }]);
  });

  it("a long line deferred by early(): parsed once the promise settles; what came after it waits, in order; held() told both ways", async () => {
    const order: string[] = [];
    let release!: () => void;
    const reader = new JsonLineReader({
      message: (message) => order.push(`message ${String((message as { id?: unknown }).id ?? (message as { method?: string }).method)}`),
      invalid: () => {},
      early: (pieces) => {
        order.push(`early ${pieces.length} pieces`);
        return new Promise<void>((resolve) => (release = resolve));
      },
      held: (holding) => order.push(`held ${holding}`),
    });
    const long = Buffer.from(line({ jsonrpc: "2.0", result: { text: "z".repeat(5_000) }, id: 1 }), "utf8");
    reader.push(long.subarray(0, 2_000));
    reader.push(Buffer.concat([long.subarray(2_000), Buffer.from(line({ jsonrpc: "2.0", method: "after" }))]));
    reader.push(line({ jsonrpc: "2.0", id: 2, result: {} }));
    expect(order).toEqual(["early 2 pieces", "held true"]);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(["early 2 pieces", "held true", "message 1", "held false", "message after", "message 2"]);
  });
});
