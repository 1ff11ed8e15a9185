// A stdio server is started with the proxy, and a 2026-07-28 client sends no `initialize` (the
// handshake, exempt from the idle timeout because it includes the server's start): its first
// request met a server still starting, and `--timeout-ms` counted the start as the server's
// silence (an outside tester's: a server that took 1.5 s to start failed the first call under
// --timeout-ms 1000, -32001, cancelled upstream). Until the server's first message, a request's
// idle timeout is held (bounded by the handshake's maximum total timeout); from that message it
// runs as usual. The scripted server here starts in 1,200 ms (it reads nothing until then).
import { afterEach, describe, expect, it } from "vitest";
import { RawClient, fixture, server } from "./helpers.js";

const clients: RawClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.end();
});

const call = (id: number, name: string) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: {} } });

describe("the proxy's idle timeout does not count a stdio server's start", () => {
  it("a first request (no initialize) to a server that starts in 1,200 ms, under --timeout-ms 400: answered, not -32001", async () => {
    const client = new RawClient(["--timeout-ms", "400", ...server(fixture("scripted-server.mjs"), "--start-delay-ms", "1200")]);
    clients.push(client);
    client.send(call(1, "echo"));
    const answer = await client.answer(1, 10_000);
    expect(answer.error).toBeUndefined();
    expect(answer.result).toBeDefined();
    // Nothing was cancelled upstream: the request ran to its answer.
    expect(client.stderr).not.toMatch(/notifications\/cancelled/);
  }, 20_000);

  it("requests sent while it starts are all held, and once it has spoken the idle timeout runs again: a silent tool gets -32001 at its bound", async () => {
    const client = new RawClient(["--timeout-ms", "400", ...server(fixture("scripted-server.mjs"), "--start-delay-ms", "1200")]);
    clients.push(client);
    const sentAt = performance.now();
    client.send(call(1, "silent")); // held while the server starts, then idle from its first message
    client.send(call(2, "echo")); // the first message: the server is up
    expect((await client.answer(2, 10_000)).result).toBeDefined();
    const silent = await client.answer(1, 10_000);
    const settledAfter = performance.now() - sentAt;
    expect(silent.error?.code).toBe(-32001);
    // Not before the start (1,200 ms) plus its idle timeout (400 ms) from the server's first
    // message; and nowhere near the handshake's bound (600,000 ms): the hold ended at that message.
    expect(settledAfter).toBeGreaterThanOrEqual(1_500);
    expect(settledAfter).toBeLessThan(9_000);
    // After the server is up, a silent request is timed as ever: -32001 at its idle timeout.
    const again = performance.now();
    client.send(call(3, "silent"));
    expect((await client.answer(3, 5_000)).error?.code).toBe(-32001);
    expect(performance.now() - again).toBeLessThan(4_000);
  }, 30_000);
});
