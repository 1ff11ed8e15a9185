// A close right after a cancel, the pipe still full: the queue writes the waiting cancel line
// straight to stdin before the transport ends it. The line is then still behind the full pipe:
// its record must not be stamped at the close, only when its own write calls back (the pipe took
// it), or say undelivered with the pipe's error. Before the fix the record said `sentAt` = the
// close's time at once.
import { describe, expect, it, vi } from "vitest";
import { StdioQueue } from "../../src/adapters/stdio/queue.js";
import type { Stdin } from "../../src/adapters/stdio/queue.js";
import type { CancelRequest } from "../../src/adapters/types.js";
import type { Port } from "../../src/wire/port.js";

type Callback = (error?: Error | null) => void;

/** A stdin as Node's (its `write` is its class's: it counts what it holds), its pipe full. */
class FullStdin {
  writable = true;
  destroyed = false;
  errored: Error | null = null;
  writableNeedDrain = true;
  writableLength = 70_000;
  readonly held: Array<{ chunk: string; callback: Callback | undefined }> = [];
  write(chunk: string, callback?: Callback): boolean {
    this.held.push({ chunk, callback });
    return false;
  }
  once(): void {}
  removeListener(): void {}
  /** The server reads again: what was held is handed to the pipe, each write calls back in order. */
  release(error: Error | null = null): void {
    for (const { callback } of this.held.splice(0)) callback?.(error);
  }
}

function setup() {
  const stdin = new FullStdin();
  const below: Port = {
    send: async () => {},
    start: async () => {},
    close: async () => {},
    cancel: () => "none",
    setProtocolVersion: () => {},
    connect: () => {},
  };
  const queue = new StdioQueue(below, () => stdin as unknown as Stdin);
  queue.connect({ message: vi.fn(), fact: vi.fn(), closed: vi.fn(), error: vi.fn() });
  const delivery = vi.fn();
  const request: CancelRequest = {
    requestId: 4,
    reason: "Cancelled by the client",
    notification: { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 4, reason: "Cancelled by the client" } },
    send: async () => {},
    reportError: () => {},
    delivery,
  };
  return { stdin, queue, request, delivery };
}

const reports = (delivery: ReturnType<typeof vi.fn>) => delivery.mock.calls.map(([report]) => report);
const NOT_OUT = { sent: "notification", failed: null, sentWall: null };

describe("stdio queue: the close writes a waiting cancel line behind the full pipe", () => {
  it("its record says when the pipe took the line, not the close's time", async () => {
    const { stdin, queue, request, delivery } = setup();
    expect(queue.cancel(request)).toBe("notification");
    await queue.close();
    expect(stdin.held.map(({ chunk }) => chunk)).toEqual([`${JSON.stringify(request.notification)}\n`]);
    expect(reports(delivery)).toEqual([NOT_OUT]); // written, still behind the full pipe
    const beforeRelease = Date.now();
    stdin.release();
    expect(reports(delivery)).toEqual([NOT_OUT, { sent: "notification", failed: null, sentWall: expect.any(Number) }]);
    expect(delivery.mock.calls[1]![0].sentWall).toBeGreaterThanOrEqual(beforeRelease);
  });

  it("the server dies before it reads the line: undelivered, with the pipe's error, never a time", async () => {
    const { stdin, queue, request, delivery } = setup();
    queue.cancel(request);
    await queue.close();
    stdin.release(new Error("write EPIPE"));
    expect(reports(delivery)).toEqual([NOT_OUT, { sent: "none", failed: { mechanism: "notification", error: "write EPIPE" } }]);
  });
});
