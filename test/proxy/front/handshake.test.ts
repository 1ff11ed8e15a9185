// The 2026-07-28 handshake through the HTTP front: a client's server/discover is bounded as
// initialize is (its maximum total timeout only: it may include starting the server) and never
// cancelled upstream (rule 39, and the library's own choice for server/discover). An outside tester's finding: the front cut it at --timeout-ms,
// so a pinned client could not connect while the server was starting. The scripted stdio server
// never answers server/discover and logs every line it reads.
import { afterEach, describe, expect, it } from "vitest";
import { fixture, received, server, sleep } from "../helpers.js";
import { messagesOf, post2026, startFront, stopFronts } from "./helpers.js";

const SCRIPTED = fixture("scripted-server.mjs");
afterEach(async () => {
  await stopFronts();
});

describe("proxy --listen: server/discover is a handshake", () => {
  it("not cut by --timeout-ms; -32001 at the maximum total timeout, saying it was not cancelled; nothing sent upstream for it", async () => {
    const front = await startFront(["--timeout-ms", "200", "--max-total-timeout-ms", "1000", ...server(SCRIPTED)]);
    const sentAt = performance.now();
    const response = await post2026(front.url, { id: "d", method: "server/discover", params: {} });
    const [answer] = (await messagesOf(response)) as Array<{ error?: { code: number; message: string; data?: { code?: string } } }>;
    expect(performance.now() - sentAt).toBeGreaterThanOrEqual(950); // not the 200 ms idle timeout
    expect(answer?.error).toMatchObject({ code: -32001, data: { code: "MAX_TOTAL_TIMEOUT" } });
    expect(answer!.error!.message).toMatch(
      /not cancelled \(server\/discover never is, as initialize: "Never cancelled" in docs\/spec-rules.md\)/,
    );
    await sleep(200);
    expect(received(front.stderr()).some((m) => m.method === "server/discover")).toBe(true);
    expect(received(front.stderr()).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
  });
});

describe("proxy --listen: a stdio server's start is not its silence", () => {
  it("a 2026-07-28 tools/call that starts the shared server (1,200 ms to start) under --timeout-ms 400: answered, not -32001", async () => {
    const front = await startFront(["--timeout-ms", "400", ...server(SCRIPTED, "--start-delay-ms", "1200")]);
    const response = await post2026(front.url, { id: 1, method: "tools/call", params: { name: "echo", arguments: {} } });
    const [answer] = (await messagesOf(response)) as Array<{ result?: unknown; error?: unknown }>;
    expect(answer?.error).toBeUndefined();
    expect(answer?.result).toBeDefined();
    expect(received(front.stderr()).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
  }, 20_000);
});
