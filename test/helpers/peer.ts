import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { withCancellation } from "../../src/index.js";
import type { Message } from "../../src/core.js";
import type { CancellationAdapter, CancellationOptions, RunRecord } from "../../src/index.js";

/** A server that takes task-augmented `tools/call` requests (2025-11-25 `tasks.requests.tools.call`) and `tasks/cancel`. */
export const TASK_PEER_CAPABILITIES = { tools: {}, tasks: { requests: { tools: { call: {} } }, cancel: {} } };

/**
 * An in-process JSON-RPC peer on the far side of the SDK's in-memory transport: it answers
 * `initialize` and records every message the client puts on the wire, and the test decides
 * what it sends back and when. With fake timers this fixes the order of every race. `adapt`: what
 * the client's transport is wrapped in for the library (default: the transport itself, plain).
 * `capabilities`: what the peer declares (default: tools, and task-augmented `tools/call`, since
 * tests script CreateTaskResults from it).
 */
export async function connectPeer(
  options: CancellationOptions = {},
  adapt: (transport: InMemoryTransport) => CancellationAdapter<InMemoryTransport> | InMemoryTransport = (transport) => transport,
  capabilities: Record<string, unknown> = TASK_PEER_CAPABILITIES,
) {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const received: Message[] = [];
  const records: RunRecord[] = [];
  const errors: Error[] = [];
  let onRequest: ((message: Message) => void) | undefined;
  serverTransport.onmessage = (raw) => {
    const message = raw as Message;
    received.push(message);
    if (message.method === "initialize") {
      void serverTransport.send({
        jsonrpc: "2.0",
        id: message.id as number,
        result: {
          protocolVersion: (message.params as { protocolVersion: string }).protocolVersion,
          capabilities,
          serverInfo: { name: "peer", version: "1.0.0" },
        },
      });
      return;
    }
    onRequest?.(message);
  };
  await serverTransport.start();
  const client = new Client({ name: "test-bot", version: "1.0.0" });
  client.onerror = (error) => errors.push(error);
  const mcp = withCancellation(client, adapt(clientTransport), {
    clock: () => Date.now(),
    ...options,
    onRecord: (record) => {
      records.push(record);
      // What the hook returns goes back to the library (an async hook's promise is the library's to handle).
      return options.onRecord?.(record);
    },
  });
  await client.connect(mcp.transport);
  const peer = {
    received,
    /** Every `notifications/cancelled` the client sent. */
    cancels: () => received.filter((m) => m.method === "notifications/cancelled"),
    /** Every request with this method the client sent. */
    requests: (method: string) => received.filter((m) => m.method === method && m.id !== undefined),
    /** Calls `handler` for every request after `initialize`. */
    onRequest(handler: (message: Message) => void) {
      onRequest = handler;
    },
    send: (message: object) => serverTransport.send(message as never),
    result: (id: unknown, result: object = { content: [{ type: "text", text: "done" }] }) =>
      serverTransport.send({ jsonrpc: "2.0", id: id as number, result } as never),
    error: (id: unknown, code: number, message: string) =>
      serverTransport.send({ jsonrpc: "2.0", id: id as number, error: { code, message } } as never),
    progress: (token: unknown, progress: number, total?: number) =>
      serverTransport.send({
        jsonrpc: "2.0",
        method: "notifications/progress",
        params: { progressToken: token as number, progress, ...(total === undefined ? {} : { total }) },
      } as never),
    close: () => serverTransport.close(),
  };
  return { client, mcp, peer, records, errors, transport: clientTransport };
}

/** Lets queued microtasks and in-memory deliveries run without moving fake time. */
export const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

/** Captures how a promise settled, without leaving a rejection unhandled. */
export function settleOf<T>(promise: Promise<T>) {
  const state: { status: "pending" | "fulfilled" | "rejected"; value?: T; error?: unknown } = { status: "pending" };
  promise.then(
    (value) => Object.assign(state, { status: "fulfilled", value }),
    (error: unknown) => Object.assign(state, { status: "rejected", error }),
  );
  return state;
}
