// A stdio write queue over a fake port and a fake stdin, for the tests that drive it by hand: what
// matters there is the order of sends, answers, drains and closes.
import { vi } from "vitest";
import { StdioQueue } from "../../src/adapters/stdio/queue.js";
import type { Stdin } from "../../src/adapters/stdio/queue.js";
import type { Message } from "../../src/wire/messages.js";
import type { Port, Up } from "../../src/wire/port.js";

/**
 * The queue, what it sent below, `answer(id)` (a response from the server with `id` as written:
 * `"1"` is the string) and `drain()` (the pipe takes writes again: its `drain` listener runs).
 * `full`: the pipe starts full. `onSend`: called as each message is sent, before it is taken (a
 * send that holds the thread, as a busy machine's does).
 */
export function fakeStdioQueue({ full = false, onSend }: { full?: boolean; onSend?: (message: Message) => void } = {}) {
  const sent: Message[] = [];
  let up: Up | undefined;
  const below: Port = {
    send: async (message) => {
      onSend?.(message);
      sent.push(message);
    },
    start: async () => {},
    close: async () => {},
    cancel: () => "none",
    setProtocolVersion: () => {},
    connect: (layer) => void (up = layer),
  };
  const listeners = new Map<string, () => void>();
  const stdin = {
    writable: true,
    writableNeedDrain: full,
    destroyed: false,
    write: (_chunk: string, callback?: (error?: Error | null) => void) => {
      queueMicrotask(() => callback?.(null));
      return true;
    },
    once: (event: string, listener: () => void) => void listeners.set(event, listener),
    removeListener: (event: string) => void listeners.delete(event),
  } as unknown as Stdin;
  const queue = new StdioQueue(below, () => stdin);
  queue.connect({ message: vi.fn(), fact: vi.fn(), closed: vi.fn(), error: vi.fn() });
  return {
    queue,
    sent,
    answer: (id: number | string) => up!.message({ jsonrpc: "2.0", id, result: {} } as Message),
    drain: () => {
      (stdin as { writableNeedDrain: boolean }).writableNeedDrain = false;
      listeners.get("drain")?.();
    },
  };
}
