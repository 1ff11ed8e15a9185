// The HTTP front's 2026-07-28 exchange (src/cli/proxy/listen/exchange.ts) on a real node:http
// server on 127.0.0.1: the frames it writes, what it drops, and its one end.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { SseExchange } from "../../../src/cli/proxy/listen/exchange.js";

interface Served {
  exchange: SseExchange;
  ends: boolean[];
  /** The client's side: its raw body so far, its request. */
  body: () => string;
  done: Promise<void>;
  request: http.ClientRequest;
  response: Promise<http.IncomingMessage>;
}

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

async function serve(id: string | number): Promise<Served> {
  let made: ((exchange: SseExchange) => void) | undefined;
  const exchangeMade = new Promise<SseExchange>((resolve) => (made = resolve));
  const ends: boolean[] = [];
  server = http.createServer((_req, res) => {
    const exchange = new SseExchange(res, id);
    exchange.onend = (byClient) => ends.push(byClient);
    exchange.open();
    made?.(exchange);
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  let text = "";
  let finished: (() => void) | undefined;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const request = http.request({ host: "127.0.0.1", port, method: "POST", path: "/mcp" });
  const response = new Promise<http.IncomingMessage>((resolve) =>
    request.on("response", (res) => {
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => finished?.());
      res.on("close", () => finished?.());
      resolve(res);
    }),
  );
  request.on("error", () => finished?.());
  request.end("{}");
  const exchange = await exchangeMade;
  await response;
  return { exchange, ends, body: () => text, done, request, response };
}

/** Lets the sockets carry whatever is on its way (a check that nothing more came). */
const settle = (): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, 50));
/** Polls `check` every 5 ms, 10 s at most (a loaded machine); what follows asserts what it waited for. */
const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 2_000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe("SseExchange", () => {
  it("writes the SSE headers and a comment frame at once, its request's related messages as they come, and ends the stream with the answer", async () => {
    const s = await serve(7);
    const res = await s.response;
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/event-stream");
    expect(res.headers["cache-control"]).toBe("no-cache, no-transform");
    const progress = { jsonrpc: "2.0" as const, method: "notifications/progress", params: { progressToken: 1, progress: 1 } };
    s.exchange.send(progress, 7);
    // Another request's message, and another request's answer: not this stream's (dropped).
    s.exchange.send({ ...progress, params: { progressToken: 2, progress: 1 } }, 8);
    s.exchange.send({ jsonrpc: "2.0", id: 8, result: {} }, 8);
    s.exchange.send({ jsonrpc: "2.0", id: 7, result: { ok: true } }, 7);
    // After the answer: nothing more (a second answer, a keep-alive).
    s.exchange.send({ jsonrpc: "2.0", id: 7, result: { again: true } }, 7);
    s.exchange.keepAlive();
    await s.done;
    expect(s.body()).toBe(
      `: mcp-cancellable proxy\n\nevent: message\ndata: ${JSON.stringify(progress)}\n\nevent: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"ok":true}}\n\n`,
    );
    await settle();
    expect(s.ends).toEqual([false]);
  });

  it("an error answer ends the stream like a result; a string id is matched exactly", async () => {
    const s = await serve("a");
    s.exchange.send({ jsonrpc: "2.0", id: 0, error: { code: -32000, message: "not mine" } }, 0);
    s.exchange.send({ jsonrpc: "2.0", id: "a", error: { code: -32000, message: "mine" } }, "a");
    await s.done;
    expect(s.body()).toBe(
      ': mcp-cancellable proxy\n\nevent: message\ndata: {"jsonrpc":"2.0","id":"a","error":{"code":-32000,"message":"mine"}}\n\n',
    );
    expect(s.ends).toEqual([false]);
  });

  it("keep-alive comment frames go out while the stream is open", async () => {
    const s = await serve(1);
    s.exchange.keepAlive();
    s.exchange.keepAlive();
    await until(() => s.body().split(": keepalive").length === 3);
    expect(s.body()).toBe(": mcp-cancellable proxy\n\n: keepalive\n\n: keepalive\n\n");
    expect(s.ends).toEqual([]);
    s.exchange.send({ jsonrpc: "2.0", id: 1, result: {} }, 1);
    await s.done;
    expect(s.ends).toEqual([false]);
  });

  it("a client that closes its stream first ends the exchange once, as its own (its cancel); nothing is written after", async () => {
    const s = await serve(3);
    s.request.destroy();
    await until(() => s.ends.length > 0);
    expect(s.ends).toEqual([true]);
    s.exchange.send({ jsonrpc: "2.0", id: 3, result: {} }, 3);
    s.exchange.keepAlive();
    await settle();
    expect(s.ends).toEqual([true]);
  });
});
