import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/index.js";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import { connectV2 } from "./clients.js";
import { eventually, sleep } from "./servers.js";
import type { RawHttpServer } from "../fixtures/reliability/raw-http-server.js";

// A request cancelled while its POST is still in this process (the library's default fetch
// loads undici on its first use, tens of ms) is stopped there: found from outside, the first
// call after attachCancellation timed out, and its POST then left anyway and ran at the server
// (2025-era), or was recorded as a stream close, outcome unverified, though nothing had left
// (2026-07-28). A fresh child process (undici not loaded), a raw server on 127.0.0.1.

const FIRST_CALL = fileURLToPath(new URL("../fixtures/http/attach-first-call.ts", import.meta.url));
/** Holds the child's undici 500 ms: the window in which a request waits in the fetch, deterministic on any machine and Node. */
const SLOW_UNDICI = fileURLToPath(new URL("../fixtures/http/slow-undici.mjs", import.meta.url));
const servers: RawHttpServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

describe("a request cancelled before its POST left the process", () => {
  for (const era of ["2025-11-25", "2026-07-28"] as const) {
    it(`${era}: the first attached call, aborted while its POST waits in the fetch (undici loading), never reaches the server and is recorded not-sent (mechanism none)`, async () => {
      const server = await startRawHttp({ era });
      servers.push(server);
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ["--import", "tsx", "--import", SLOW_UNDICI, FIRST_CALL, server.url.href, ...(era === "2026-07-28" ? ["2026"] : [])],
        { timeout: 20_000 },
      );
      const { error, record, loadingAtAbort } = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
        error: string;
        record: RunRecord;
        loadingAtAbort: boolean;
      };
      expect(error).toBe("CallCancelledError");
      const seen = server.events.filter((event) => event.kind === "request").map((event) => event.rpc);
      if (loadingAtAbort) {
        // The POST waited in the fetch: it never left.
        expect(record).toMatchObject({
          status: "cancelled",
          outcome: "not-sent",
          cancel: { trigger: "aborted", mechanism: "none", sentAt: null, undelivered: null },
        });
        expect(seen).not.toContain("tools/call");
        expect(seen).not.toContain("notifications/cancelled");
      } else {
        // Where the hook did not hold undici, the request may have left: the record says what the server saw.
        expect(record.outcome === "not-sent").toBe(!seen.includes("tools/call"));
      }
    });
  }

  it("2026-07-28: a request whose body was not yet written when its stream closed (a server behind on reading) is revised to not-sent once its POST fails", async () => {
    const server = await startRawHttp({ era: "2026-07-28" });
    servers.push(server);
    const { mcp, adapter, close } = await connectV2(server.url, { pin: true });
    server.control.holdLargeBodiesMs = 2_000; // the server reads no large body for 2 s
    const error = await mcp.callTool({ name: "hang", arguments: { pad: "x".repeat(8 * 1024 * 1024) } }, { timeoutMs: 30 }).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect((error as Error).name).toBe("CallTimeoutError");
    expect(await eventually(() => mcp.records().at(-1)?.outcome === "not-sent", 2_000)).toBe(true);
    expect(mcp.records().at(-1)!.cancel).toMatchObject({ mechanism: "none", sentAt: null, undelivered: null });
    expect(adapter.stats()).toMatchObject({ streams: 0, checks: 0 });
    await sleep(2_200); // past the hold: the server reads what it got
    expect(server.events.filter((event) => event.kind === "request" && event.rpc === "tools/call")).toEqual([]);
    await close();
  }, 10_000);
});
