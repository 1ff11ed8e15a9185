import { afterEach, describe, expect, it } from "vitest";
import { CallCancelledError } from "../../src/index.js";
import { connectV1, connectV2 } from "./clients.js";
import { eventually, sleep, startEverything } from "./servers.js";
import type { TestServer } from "./servers.js";
import { SLACK_MS } from "../helpers/timing.js";

// server-everything (a server nobody here wrote) in streamableHttp mode, as a child process on
// 127.0.0.1: stateful sessions and an event store (every SSE event has an id, so the SDK would
// resume a broken stream). Its long-running tool ignores cancellation and keeps sending progress,
// so the only thing a cancel can show on the server is the connection closing: a preload reports
// each response 'close' from inside the server process.

let server: TestServer | undefined;
const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0)) await close().catch(() => {});
  await server?.stop();
  server = undefined;
});

/** POST responses the server closed before they ended (the cancelled tools/call streams). */
const cutPosts = (s: TestServer) => s.events.filter((e) => e.kind === "close" && e.http === "POST" && !e.writableFinished);

describe("server-everything over Streamable HTTP", () => {
  for (const sdk of ["v1", "v2"] as const) {
    it(`${sdk} client: the cancelled call's stream closes on the server, its resume is refused, late progress never surfaces`, async () => {
      server = await startEverything();
      const { mcp, adapter, errors, close } = sdk === "v1" ? await connectV1(server.url) : await connectV2(server.url);
      open.push(close);
      const controller = new AbortController();
      let progress = 0;
      const call = mcp.callTool(
        { name: "trigger-long-running-operation", arguments: { duration: 5, steps: 25 } },
        { signal: controller.signal, onprogress: () => void progress++ },
      );
      call.catch(() => {});
      expect(await eventually(() => progress >= 2, 3_000)).toBe(true);
      const abortedAt = performance.now();
      controller.abort();
      await expect(call).rejects.toBeInstanceOf(CallCancelledError);
      expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
      // The server saw the POST carrying the call close before the response ended (the tool runs 5 s).
      expect(await eventually(() => cutPosts(server!).length === 1, 5_000)).toBe(true);
      // Past the v1 SDK's resume delay (1 s): no GET Last-Event-ID reached the server, nothing surfaced.
      await sleep(1_000 + SLACK_MS);
      expect(cutPosts(server).length).toBe(1);
      expect(server.events.filter((e) => e.kind === "http" && e.lastEventId !== undefined)).toEqual([]);
      if (sdk === "v1") expect(adapter.stats().resumesRefused).toBe(1);
      const record = mcp.records()[0]!;
      expect(record.cancel!.mechanism).toBe("notification+stream-close");
      expect(record.late.progress).toBeLessThanOrEqual(1); // at most what the flush window let through, dropped
      expect(adapter.stats()).toMatchObject({ streams: 0, flushing: 0, checks: 0, blockedTokens: 0 });
      expect(errors).toEqual([]);
      // The session is still usable.
      await expect(mcp.callTool({ name: "echo", arguments: { message: "still here" } })).resolves.toMatchObject({
        content: [{ text: "Echo: still here" }],
      });
    });
  }
});
