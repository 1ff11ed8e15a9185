import net from "node:net";
import { PassThrough, Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { runProxyCommand } from "../../src/cli/proxy/command.js";
import { eventually, INITIALIZE, type RpcMessage } from "./helpers.js";

// What one chunk brings about goes out together (ProxySession.batch): the requests of one read
// of the client reach the server's stdin in one write, and the answers of one read of the
// server reach the client in one write, instead of one system call per message (a third of the
// proxy's CPU at 1,000 calls in flight). The proxy runs in this process on in-memory streams
// (the client's side) and a real child process (the server: test/proxy/fixtures/line-server.mjs).
const LINE = new URL("./fixtures/line-server.mjs", import.meta.url).pathname;
const REQUESTS = 200;

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

/** Counts the socket writes (one `_writeGeneric` per write or writev) whose data holds `needle`, and the messages in them. */
function countSocketWrites(needle: string): { writes: number; lines: number } {
  const proto = net.Socket.prototype as unknown as { _writeGeneric: (writev: boolean, data: unknown, ...rest: unknown[]) => unknown };
  const original = proto._writeGeneric;
  const count = { writes: 0, lines: 0 };
  proto._writeGeneric = function (this: unknown, writev: boolean, data: unknown, ...rest: unknown[]) {
    const chunks = writev ? (data as { chunk: unknown }[]).map((entry) => entry.chunk) : [data];
    const text = chunks.map((chunk) => (typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8"))).join("");
    if (text.includes(needle)) {
      count.writes++;
      count.lines += text.split(needle).length - 1;
    }
    return original.call(this, writev, data, ...rest);
  };
  cleanups.push(() => {
    proto._writeGeneric = original;
  });
  return count;
}

describe("proxy: the writes of one read go out together", () => {
  it("the requests of one chunk from the client reach the server in one write; the answers of one chunk from the server reach the client in one write; every answer once, in order", async () => {
    const input = new PassThrough();
    const answers: RpcMessage[] = [];
    const clientWrites: number[] = [];
    let buffered = "";
    const take = (text: string): void => {
      buffered += text;
      for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
        answers.push(JSON.parse(buffered.slice(0, end)) as RpcMessage);
        buffered = buffered.slice(end + 1);
      }
    };
    const output = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        clientWrites.push(1);
        take(chunk.toString("utf8"));
        callback();
      },
      writev(chunks, callback) {
        clientWrites.push(chunks.length);
        for (const { chunk } of chunks) take((chunk as Buffer).toString("utf8"));
        callback();
      },
    });
    const exit = runProxyCommand(["--", process.execPath, LINE], { stdout: () => {}, stderr: () => {} }, { input, output });
    input.write(`${JSON.stringify(INITIALIZE())}\n`);
    expect(await eventually(() => answers.some((m) => m.id === "init"), 10_000)).toBe(true);
    input.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));

    const upstream = countSocketWrites('"method":"tools/call"');
    const before = answers.length;
    const writesBefore = clientWrites.length;
    let burst = "";
    for (let i = 0; i < REQUESTS; i++) {
      burst += `${JSON.stringify({ jsonrpc: "2.0", id: `c${i}`, method: "tools/call", params: { name: "echo", arguments: {} } })}\n`;
    }
    input.write(burst); // one chunk
    expect(await eventually(() => answers.length - before >= REQUESTS, 10_000)).toBe(true);

    // Upstream: the 200 requests of that one chunk in one write (one per message before).
    expect(upstream.lines).toBe(REQUESTS);
    expect(upstream.writes).toBe(1);
    // To the client: every answer once, in order, in fewer writes than answers (the server's own
    // writes, one per answer, come in as few chunks as the pipe makes of them; each chunk's answers
    // go out in one write).
    const got = answers.slice(before).map((m) => m.id);
    expect(got).toEqual(Array.from({ length: REQUESTS }, (_, i) => `c${i}`));
    const writes = clientWrites.slice(writesBefore);
    expect(writes.reduce((a, b) => a + b, 0)).toBe(REQUESTS);
    expect(writes.length).toBeLessThan(REQUESTS);
    expect(Math.max(...writes)).toBeGreaterThan(1);

    input.end();
    expect(await exit).toBe(0);
  });
});
