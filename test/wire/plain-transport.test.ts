import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { ConnectionClosedError, withCancellation } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { eventually } from "../helpers/timing.js";

// A transport of the bot's own (not the SDK's stdio or Streamable HTTP), given to withCancellation
// as it is: its cancel is `notifications/cancelled` through its own `send`, and the record says
// what that send did. Found from outside (a tester bringing their own transports): a send that
// never completed was recorded as a delivered cancel, a close did not wait for a cancel whose send
// was under way, a send that threw was first recorded as sent, a request the transport refused
// was a failed call rather than one never sent, and a wrapper transport with `cancel` and
// `transport` members was taken for an adapter. A real v1 SDK server on the other end.

type Mode = "ok" | "slow" | "hang" | "throw" | "reject";

/** The SDK's in-memory transport under a `send` whose behaviour is set per kind of message. */
class OwnTransport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  cancelMode: Mode = "ok";
  callMode: Mode = "ok";
  readonly inner: InMemoryTransport;

  constructor(inner: InMemoryTransport) {
    this.inner = inner;
    inner.onmessage = (message) => this.onmessage?.(message);
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }
  start(): Promise<void> {
    return this.inner.start();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  send(message: JSONRPCMessage): Promise<void> {
    const mode =
      "method" in message && message.method === "notifications/cancelled"
        ? this.cancelMode
        : "method" in message && message.method === "tools/call"
          ? this.callMode
          : "ok";
    switch (mode) {
      case "throw":
        throw new Error("send threw synchronously");
      case "reject":
        return Promise.reject(new Error("send refused"));
      case "hang":
        return new Promise<void>(() => {});
      case "slow":
        return new Promise<void>((resolve, reject) => setTimeout(() => this.inner.send(message).then(resolve, reject), 50));
      default:
        return this.inner.send(message);
    }
  }
}

/** The same with the members an adapter also has (a wrapper that stops its own reconnects, say). */
class WrapperTransport extends OwnTransport {
  cancelCalls = 0;
  get transport(): InMemoryTransport {
    return this.inner;
  }
  cancel(): void {
    this.cancelCalls++;
  }
}

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

async function connect(wrapper = false) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = new McpServer({ name: "own-transport", version: "1.0.0" });
  server.registerTool("wait", {}, async (extra) => {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 10_000);
      extra.signal.addEventListener("abort", () => (clearTimeout(timer), resolve(undefined)));
    });
    return { content: [{ type: "text", text: "done" }] };
  });
  await server.connect(serverSide);
  const received: JSONRPCMessage[] = [];
  const serverOnMessage = serverSide.onmessage!;
  serverSide.onmessage = (message, extra) => {
    received.push(message);
    serverOnMessage(message, extra);
  };
  const transport = wrapper ? new WrapperTransport(clientSide) : new OwnTransport(clientSide);
  const client = new Client({ name: "own-transport-bot", version: "1.0.0" });
  const records: RunRecord[] = [];
  const mcp = withCancellation(client, transport, { onRecord: (record) => records.push(record) });
  await client.connect(mcp.transport);
  cleanup.push(
    () => client.close(),
    () => server.close(),
  );
  const cancels = () => received.filter((m) => "method" in m && m.method === "notifications/cancelled");
  const last = (name: string) => records.filter((r) => r.name === name).at(-1);
  return { transport, client, mcp, records, received, cancels, last };
}

describe("a transport of the bot's own, given to withCancellation as it is", () => {
  it("a wrapper with cancel() and transport members is still a transport: its own send carries the cancel", async () => {
    const t = await connect(true);
    const controller = new AbortController();
    const call = t.mcp.callTool({ name: "wait", arguments: {} }, { signal: controller.signal });
    call.catch(() => {});
    expect(await eventually(() => t.received.some((m) => "method" in m && m.method === "tools/call"))).toBe(true);
    controller.abort();
    expect(await eventually(() => t.cancels().length === 1)).toBe(true);
    expect((t.transport as WrapperTransport).cancelCalls).toBe(0);
    expect(t.last("wait")!.cancel).toMatchObject({ mechanism: "notification", undelivered: null });
  });

  it("a cancel whose send never completes: recorded as not sent once the client closes, and the close does not wait past its bound", async () => {
    const t = await connect();
    t.transport.cancelMode = "hang";
    const call = t.mcp.callTool({ name: "wait", arguments: {} }, { timeoutMs: 100 });
    call.catch(() => {});
    await expect(call).rejects.toThrow();
    const started = performance.now();
    await t.client.close();
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(t.cancels()).toHaveLength(0);
    const record = t.last("wait")!;
    expect(record.cancel!.mechanism).toBe("none");
    expect(record.cancel!.sentAt).toBeNull();
    expect(record.cancel!.undelivered?.error).toMatch(/had not completed when the client closed the connection/);
  });

  it("a cancel whose send takes 50 ms, then client.close() at once: the close waits for it, and the server gets it", async () => {
    const t = await connect();
    t.transport.cancelMode = "slow";
    const controller = new AbortController();
    const call = t.mcp.callTool({ name: "wait", arguments: {} }, { signal: controller.signal });
    call.catch(() => {});
    expect(await eventually(() => t.received.some((m) => "method" in m && m.method === "tools/call"))).toBe(true);
    controller.abort();
    await t.client.close();
    expect(t.cancels()).toHaveLength(1);
    const record = t.last("wait")!;
    expect(record.cancel).toMatchObject({ mechanism: "notification", undelivered: null });
    expect(record.cancel!.sentAt).not.toBeNull();
  });

  it("a cancel whose send throws: an abort's first record says not sent; a timeout's (its notification goes after the settle) is corrected by the next, and no revision claims a later send", async () => {
    const t = await connect();
    t.transport.cancelMode = "throw";
    for (const limit of ["signal", "timeoutMs"] as const) {
      const controller = new AbortController();
      const call = t.mcp.callTool(
        { name: "wait", arguments: { limit } },
        limit === "signal" ? { signal: controller.signal } : { timeoutMs: 100 },
      );
      call.catch(() => {});
      expect(
        await eventually(
          () => t.received.filter((m) => "method" in m && m.method === "tools/call").length === (limit === "signal" ? 1 : 2),
        ),
      ).toBe(true);
      if (limit === "signal") controller.abort();
      await expect(call).rejects.toThrow();
      await new Promise((resolve) => setTimeout(resolve, 20));
      const id = t.records.at(-1)!.requestId;
      const revisions = t.records.filter((r) => r.name === "wait" && r.requestId === id);
      if (limit === "signal") expect(revisions).toHaveLength(1);
      else expect(revisions.map((r) => r.cancel!.mechanism)).toEqual(["notification", "none"]);
      // No revision claims a send after the settle (the cancel is stamped a moment before the
      // settle's own time: the wall clock may tick over between the two, so not "equal").
      for (const record of revisions) {
        const { sentAt } = record.cancel!;
        expect(
          sentAt === null || Date.parse(sentAt) <= Date.parse(record.settledAt),
          `sentAt ${sentAt}, settledAt ${record.settledAt}`,
        ).toBe(true);
      }
      expect(revisions.at(-1)!.cancel).toMatchObject({
        mechanism: "none",
        sentAt: null,
        undelivered: { mechanism: "notification", error: "send threw synchronously" },
      });
    }
    expect(t.cancels()).toHaveLength(0);
  });

  it("the transport reports its close in the same tick its cancel's send completed: the record still says the notification went", async () => {
    const t = await connect();
    const controller = new AbortController();
    const call = t.mcp.callTool({ name: "wait", arguments: {} }, { signal: controller.signal });
    call.catch(() => {});
    expect(await eventually(() => t.received.some((m) => "method" in m && m.method === "tools/call"))).toBe(true);
    controller.abort();
    t.transport.onclose?.(); // the transport reports its close at once, in the same tick
    await expect(call).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(t.cancels()).toHaveLength(1);
    expect(t.last("wait")!.cancel).toMatchObject({ mechanism: "notification", undelivered: null });
  });

  it("a request the transport refuses (its send throws or rejects) never left: ConnectionClosedError, outcome not-sent", async () => {
    const t = await connect();
    for (const mode of ["throw", "reject"] as const) {
      t.transport.callMode = mode;
      const error = await t.mcp.callTool({ name: "wait", arguments: { mode } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, mode).toBeInstanceOf(ConnectionClosedError);
      expect((error as ConnectionClosedError).record).toMatchObject({ status: "cancelled", outcome: "not-sent" });
    }
    expect(t.received.filter((m) => "method" in m && m.method === "tools/call")).toHaveLength(0);
    expect(t.cancels()).toHaveLength(0);
    expect(t.mcp.pendingCount).toBe(0);
  });
});
