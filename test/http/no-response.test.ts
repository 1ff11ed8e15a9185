// A request's stream that ends without its response, where nothing more can come for it: the
// call settles `connection-closed` at once, not at its timeout (docs/adapters.md, "Server drops
// settle the call"). A 202 Accepted with no body in any era (a request is answered in JSON or SSE,
// rule 24), and on 2026-07-28 a broken stream, which that revision never resumes (rule 27): the v2
// SDK's own resume (a GET with Last-Event-ID about 1 s later) must not go out. Both were an
// outside tester's findings. A raw server on 127.0.0.1 logs every request it gets.
import { afterEach, describe, expect, it } from "vitest";
import { ConnectionClosedError } from "../../src/index.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import type { RawHttpServer } from "../fixtures/reliability/raw-http-server.js";
import { connectV1, connectV2 } from "./clients.js";
import { sleep, timed } from "../helpers/reliability.js";

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await Promise.race([step().catch(() => {}), sleep(2_000)]);
});

const gets = (server: RawHttpServer) => server.events.filter((e) => e.kind === "request" && e.http === "GET");

describe("a request's stream that ends without its response, nothing more to come: settled at once", () => {
  for (const [name, era, connect] of [
    ["v2 pinned to 2026-07-28", "2026-07-28", (url: URL) => connectV2(url, { pin: true })],
    ["v2 (2025 era)", "2025-11-25", (url: URL) => connectV2(url)],
    ["v1", "2025-11-25", (url: URL) => connectV1(url)],
  ] as const) {
    it(`${name}: a tools/call answered 200 JSON with an empty body, or with \`null\`, is connection-closed at once (no response in it), not the SDK's bare SyntaxError or ZodError`, async () => {
      const server = await startRawHttp({ era });
      cleanup.push(() => server.stop());
      const { mcp, close } = await connect(server.url);
      cleanup.push(close);
      for (const tool of ["json-empty", "json-null"]) {
        const outcome = await timed(mcp.callTool({ name: tool }, { timeoutMs: 5_000 }));
        expect(outcome.error, tool).toBeInstanceOf(ConnectionClosedError);
        expect(outcome.at).toBeLessThan(2_000);
        expect(mcp.records().at(-1)).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed", mechanism: "none" } });
      }
    });

    it(`${name}: a tools/call answered 202 Accepted with no body is connection-closed at once, mechanism none`, async () => {
      const server = await startRawHttp({ era });
      cleanup.push(() => server.stop());
      const { mcp, close, errors } = await connect(server.url);
      cleanup.push(close);
      const outcome = await timed(mcp.callTool({ name: "accepted" }, { timeoutMs: 5_000 }));
      expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
      // The connection lived on: the error says what ended, not that the connection was lost.
      expect((outcome.error as Error).message).toMatch(
        /was pending when its response stream ended without its response \(The server answered the request 202 Accepted, with no response\) and was not retried/,
      );
      expect(outcome.at).toBeLessThan(2_000); // not its 5 s timeout
      expect(mcp.records().at(-1)).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed", mechanism: "none" } });
      expect(errors).toEqual([]);
    });
  }

  it("v2 pinned to 2026-07-28: a stream broken after an event with an id is connection-closed at once, and never resumed (no GET)", async () => {
    const server = await startRawHttp({ era: "2026-07-28" });
    cleanup.push(() => server.stop());
    const { mcp, close } = await connectV2(server.url, { pin: true });
    cleanup.push(close);
    const outcome = await timed(mcp.callTool({ name: "reset-resumable" }, { timeoutMs: 5_000 }));
    expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
    expect(outcome.at).toBeLessThan(800); // dropped at 50 ms; the SDK's resume would come about 1 s later
    await sleep(1_500);
    expect(gets(server)).toEqual([]);
  });

  it("v2 pinned to 2026-07-28: a stream that ends cleanly without its response after an event with an id is connection-closed when the SDK would resume it, and the GET never goes out", async () => {
    const server = await startRawHttp({ era: "2026-07-28" });
    cleanup.push(() => server.stop());
    const { mcp, close, adapter } = await connectV2(server.url, { pin: true });
    cleanup.push(close);
    const outcome = await timed(mcp.callTool({ name: "end-resumable" }, { timeoutMs: 5_000 }));
    expect(outcome.error).toBeInstanceOf(ConnectionClosedError);
    expect(outcome.at).toBeLessThan(2_000); // ended at 50 ms, the SDK's resume 100 ms later: not the 5 s timeout
    expect(mcp.records().at(-1)).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed", mechanism: "none" } });
    await sleep(500);
    expect(gets(server)).toEqual([]);
    expect(adapter.stats().resumesRefused).toBe(1);
  });

  it("v2 pinned to 2026-07-28: the refused resume is the ended stream's, not another's that carries the same event id: that call gets its answer", async () => {
    const server = await startRawHttp({ era: "2026-07-28" });
    cleanup.push(() => server.stop());
    const { mcp, close } = await connectV2(server.url, { pin: true });
    cleanup.push(close);
    const healthy = timed(mcp.callTool({ name: "slow-resumable", arguments: { ms: 600 } }, { timeoutMs: 5_000 }));
    await sleep(30);
    const ended = await timed(mcp.callTool({ name: "end-resumable" }, { timeoutMs: 5_000 }));
    expect(ended.error).toBeInstanceOf(ConnectionClosedError);
    const answered = await healthy;
    expect(answered.error).toBeUndefined();
    expect(answered.value).toMatchObject({ content: [{ type: "text", text: expect.stringMatching(/^slow-resumable /) }] });
    expect(gets(server)).toEqual([]);
  });
});
