// The stdio write queue over a stdin that does not count what it holds, as Bun's child stdin does
// not (Bun 1.4.5, /tmp/t3/bun-pipe.mjs of an outside tester): its `write` is an own property (a
// fast path past the Writable's buffer), `writableLength` stays 0 and `writableNeedDrain` false
// while 2 MB wait for a server that stopped reading, a zero-length write calls back at once
// (before the writes ahead of it), and each write's own callback comes in order: at once, during
// the write, when the pipe took it whole, else when the pipe took it, or with the pipe's error.
// Before the fix the queue took the cancel line as handed to the pipe (nothing counted, no error):
// the record said delivered at the settle though the line never left the client.
import { describe, expect, it, vi } from "vitest";
import { StdioQueue } from "../../src/adapters/stdio/queue.js";
import type { Stdin } from "../../src/adapters/stdio/queue.js";
import type { CancelRequest } from "../../src/adapters/types.js";
import type { Message } from "../../src/wire/messages.js";
import type { Port } from "../../src/wire/port.js";

type Callback = (error?: Error | null) => void;

/**
 * A stdin as Bun's: while `full` (the server does not read) a write is held and returns false;
 * `release()` hands what is held to the pipe (its `drain`, then the callbacks, in order, as Bun
 * does); `fail()` breaks the pipe (every held callback gets EPIPE, then the stream is destroyed).
 */
function bunLikeStdin() {
  const held: Array<{ chunk: string; callback: Callback | undefined }> = [];
  const piped: string[] = [];
  const listeners = new Map<string, Set<() => void>>();
  const emit = (event: string) => {
    for (const listener of [...(listeners.get(event) ?? [])]) listener();
  };
  const stdin = {
    full: false,
    writable: true,
    destroyed: false,
    errored: null as Error | null,
    // What Bun reports whatever it holds.
    writableLength: 0,
    writableNeedDrain: false,
    write(chunk: string, callback?: Callback): boolean {
      if (chunk.length === 0) {
        // Bun: a zero-length write calls back at once, ahead of the writes it holds.
        queueMicrotask(() => callback?.(null));
        return true;
      }
      if (stdin.full || held.length > 0) {
        held.push({ chunk, callback });
        return false;
      }
      piped.push(chunk);
      callback?.(null); // during the write: the pipe took it whole
      return true;
    },
    once(event: string, listener: () => void) {
      const wrapped = () => {
        listeners.get(event)?.delete(wrapped);
        listener();
      };
      (wrapped as { inner?: () => void }).inner = listener;
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)!.add(wrapped);
    },
    removeListener(event: string, listener: () => void) {
      for (const wrapped of listeners.get(event) ?? []) {
        if ((wrapped as { inner?: () => void }).inner === listener) listeners.get(event)!.delete(wrapped);
      }
    },
    listenerCount: (event: string) => listeners.get(event)?.size ?? 0,
  };
  const errors: Error[] = [];
  return {
    stdin,
    piped,
    held,
    /** The errors `fail()` called back with (the SDK echoes a stdin error to onerror). */
    errors,
    release() {
      stdin.full = false;
      const batch = held.splice(0);
      for (const { chunk } of batch) piped.push(chunk);
      emit("drain");
      for (const { callback } of batch) callback?.(null);
    },
    fail() {
      const batch = held.splice(0);
      stdin.writable = false;
      stdin.destroyed = true;
      for (const { callback } of batch) {
        const error = Object.assign(new Error("EPIPE: broken pipe, write"), { code: "EPIPE" });
        errors.push(error);
        callback?.(error);
      }
      emit("close");
    },
  };
}

/** The queue over the fake stdin, with a transport below whose `send` writes as the SDK's does (resolves at once, or at the `drain`). */
function queueOver(fake: ReturnType<typeof bunLikeStdin>) {
  const stdin = fake.stdin;
  const below: Port = {
    send: (message) =>
      new Promise<void>((resolve) => {
        if (stdin.write(`${JSON.stringify(message)}\n`)) resolve();
        else stdin.once("drain", resolve);
      }),
    start: async () => {},
    close: async () => {},
    cancel: () => "none",
    setProtocolVersion: () => {},
    connect: () => {},
  };
  const queue = new StdioQueue(below, () => stdin as unknown as Stdin);
  const up = { message: vi.fn(), fact: vi.fn(), closed: vi.fn(), error: vi.fn() };
  queue.connect(up);
  return { queue, up };
}

function cancelRequest(requestId: number) {
  const delivery = vi.fn();
  const request: CancelRequest = {
    requestId,
    reason: "Request timed out after 500 ms",
    notification: { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason: "Request timed out after 500 ms" } },
    send: async () => {},
    reportError: () => {},
    delivery,
  };
  return { request, delivery };
}

const request = (id: number, pad = 0): Message =>
  ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "big", arguments: { blob: "x".repeat(pad) } } }) as Message;
const checkPhase = () => new Promise((resolve) => setImmediate(resolve));
const reports = (delivery: ReturnType<typeof vi.fn>) => delivery.mock.calls.map(([report]) => report);
const cancelLines = (piped: string[]) => piped.filter((line) => line.includes("notifications/cancelled"));
const NOT_OUT = { sent: "notification", failed: null, sentWall: null };

describe("stdio queue, a stdin that does not count what it holds (Bun's child stdin)", () => {
  it("a cancel line behind a 2 MB request the runtime still holds: not out (sentAt null) until the pipe took it, then when it did", async () => {
    const fake = bunLikeStdin();
    const { queue } = queueOver(fake);
    fake.stdin.full = true; // the server stopped reading
    void queue.send(request(2, 2_000_000));
    expect(fake.held).toHaveLength(1);
    const cancel = cancelRequest(2);
    expect(queue.cancel(cancel.request)).toBe("notification");
    // Told during the cancel, so the first record says it: not out yet.
    expect(reports(cancel.delivery)).toEqual([NOT_OUT]);
    await checkPhase();
    expect(reports(cancel.delivery)).toEqual([NOT_OUT]);
    expect(cancelLines(fake.piped)).toEqual([]);
    const beforeRelease = Date.now();
    fake.release(); // the server reads again
    await checkPhase();
    expect(cancelLines(fake.piped)).toHaveLength(1);
    expect(reports(cancel.delivery)).toEqual([NOT_OUT, { sent: "notification", failed: null, sentWall: expect.any(Number) }]);
    expect(cancel.delivery.mock.calls[1]![0].sentWall).toBeGreaterThanOrEqual(beforeRelease);
  });

  it("the server exits without reading again: the record says the line was not delivered, never that it went", async () => {
    const fake = bunLikeStdin();
    const { queue, up } = queueOver(fake);
    fake.stdin.full = true;
    void queue.send(request(2, 2_000_000));
    const cancel = cancelRequest(2);
    queue.cancel(cancel.request);
    fake.fail();
    await checkPhase();
    expect(cancelLines(fake.piped)).toEqual([]);
    expect(reports(cancel.delivery)).toEqual([
      NOT_OUT,
      { sent: "none", failed: { mechanism: "notification", error: "the server's stdin was destroyed" } },
    ]);
    expect(up.error).not.toHaveBeenCalled();
  });

  it("a line the runtime holds itself (the pipe full at its own write): its own callback decides, not a zero-length write", async () => {
    const fake = bunLikeStdin();
    const { queue } = queueOver(fake);
    void queue.send(request(2)); // taken whole
    fake.stdin.full = true; // the pipe fills between the request and its cancel
    const cancel = cancelRequest(2);
    expect(queue.cancel(cancel.request)).toBe("notification");
    expect(fake.held).toHaveLength(1); // the line itself
    expect(reports(cancel.delivery)).toEqual([NOT_OUT]);
    await new Promise((resolve) => setTimeout(resolve, 5)); // a zero-length write would have called back by now
    expect(reports(cancel.delivery)).toEqual([NOT_OUT]);
    fake.release();
    expect(reports(cancel.delivery)).toEqual([NOT_OUT, { sent: "notification", failed: null, sentWall: expect.any(Number) }]);
  });

  it("a held line whose pipe breaks: undelivered, with the pipe's error; the error is the record's, not onerror's", async () => {
    const fake = bunLikeStdin();
    const { queue, up } = queueOver(fake);
    void queue.send(request(2));
    fake.stdin.full = true;
    const cancel = cancelRequest(2);
    queue.cancel(cancel.request);
    fake.fail();
    expect(reports(cancel.delivery)).toEqual([
      NOT_OUT,
      { sent: "none", failed: { mechanism: "notification", error: "EPIPE: broken pipe, write" } },
    ]);
    // The SDK echoes the stdin's error to onerror: the cancel line's is the record's; any other goes on.
    queue.error(fake.errors[0]!);
    expect(up.error).not.toHaveBeenCalled();
    const other = new Error("something else");
    queue.error(other);
    expect(up.error).toHaveBeenCalledExactlyOnceWith(other);
  });

  it("a line the pipe takes whole during its write: out at the settle, no revision; the stdin's own write is put back", async () => {
    const fake = bunLikeStdin();
    const { queue } = queueOver(fake);
    const write = fake.stdin.write;
    void queue.send(request(2));
    const cancel = cancelRequest(2);
    expect(queue.cancel(cancel.request)).toBe("notification");
    expect(cancelLines(fake.piped)).toHaveLength(1);
    expect(cancel.delivery).not.toHaveBeenCalled();
    expect(fake.stdin.write).toBe(write);
    expect(Object.keys(fake.stdin)).toContain("write");
  });

  it("requests behind a write the runtime holds wait in the queue (one drain listener), and one cancelled there is never written", async () => {
    const fake = bunLikeStdin();
    const { queue, up } = queueOver(fake);
    fake.stdin.full = true;
    const sends = [queue.send(request(1, 100_000))];
    for (let id = 2; id <= 20; id++) sends.push(queue.send(request(id)));
    expect(fake.held).toHaveLength(1); // the rest wait in the queue, not in the runtime
    expect(queue.waiting).toBe(19);
    expect(fake.stdin.listenerCount("drain")).toBeLessThanOrEqual(2); // the SDK's one blocked write, and the queue's
    const cancel = cancelRequest(7);
    expect(queue.cancel(cancel.request)).toBe("none");
    expect(reports(cancel.delivery)).toEqual([{ sent: "none", failed: null }]); // never sent
    fake.release();
    await checkPhase();
    await Promise.all(sends);
    const ids = fake.piped.map((line) => (JSON.parse(line) as { id?: number }).id);
    expect(ids).toEqual([1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    expect(up.fact).toHaveBeenCalledWith(7, expect.objectContaining({ kind: "ended", how: "dropped" }));
  });
});
