import { afterEach, describe, expect, it } from "vitest";
import { CallCancelledError, CallTimeoutError } from "../../src/index.js";
import { alive, eventually, spawnServer } from "../helpers/stdio.js";
import { sleep } from "../helpers/reliability.js";
import { SLACK_MS } from "../helpers/timing.js";

// Real child processes over stdio, real timers: assertions are orders, counts and bounds.
// Bounds carry generous slack (SLACK_MS) for a loaded 2-core CI machine.

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});
async function spawn(...args: Parameters<typeof spawnServer>) {
  const server = await spawnServer(...args);
  open.push(server.client);
  return server;
}

describe("stdio adapter against a scripted server", () => {
  it("C01 over stdio: released at the abort, one cancel sent, the late result dropped, the transport still usable", async () => {
    const { mcp, cancelsReceived, errors } = await spawn("scripted-server.mjs");
    const controller = new AbortController();
    const started = performance.now();
    const call = mcp.callTool({ name: "late", arguments: { ms: 300 } }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    const released = performance.now() - started;
    expect(released).toBeGreaterThanOrEqual(45);
    expect(released).toBeLessThan(50 + SLACK_MS);
    expect(await eventually(() => mcp.records()[0]?.outcome === "late-result-discarded", 300 + SLACK_MS * 2)).toBe(true);
    expect(cancelsReceived()).toEqual([
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: "Cancelled by the client" } },
    ]);
    expect(errors).toEqual([]);
    await expect(mcp.callTool({ name: "echo" })).resolves.toMatchObject({ content: [{ text: "echo 2" }] });
  });

  it("a verification that found the work not applied, then a successful late result: the record says it ran after all", async () => {
    const { mcp } = await spawn("scripted-server.mjs");
    const verify = (): "not-applied" => "not-applied"; // read at once: before the work ended
    const error = await mcp.callTool({ name: "late", arguments: { ms: 250 } }, { timeoutMs: 40, verify }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect((await (error as CallTimeoutError).verification).outcome).toBe("verified-not-applied");
    expect(await eventually(() => mcp.records()[0]!.late.results === 1, 250 + SLACK_MS * 2)).toBe(true);
    expect(mcp.records()[0]).toMatchObject({
      outcome: "late-result-discarded",
      summary: "cancelled (timeout), late result discarded: it ran after all (a verification had found it not applied)",
    });
  });

  it('a "*" verifier that reads back through the same client with its signal: the read takes no verifier (no read of a read), while a call of the bot made meanwhile still does', async () => {
    const verified: string[] = [];
    let botCall: Promise<unknown> | undefined;
    const { mcp, received } = await spawn("scripted-server.mjs", {
      timeoutMs: 60,
      verifiers: {
        "*": async ({ arguments: args, signal }) => {
          verified.push(String(args.who));
          // The bot goes on meanwhile: its own call, made while this read runs, is the bot's.
          botCall ??= mcp.callTool({ name: "late", arguments: { ms: 250, who: "bot" } }).catch(() => {});
          // The read is as slow as the work: it times out too.
          await mcp.callTool({ name: "late", arguments: { ms: 250, who: "read" } }, { signal }).catch(() => {});
          return "not-applied" as const;
        },
      },
    });
    const error = await mcp.callTool({ name: "late", arguments: { ms: 250, who: "work" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    const record = await (error as CallTimeoutError).verification;
    expect(record.outcome).toBe("verified-not-applied");
    await botCall;
    await sleep(60 * 5); // five more timeouts' worth: a read verified by a read would have gone on
    // The work and the bot's call were verified (one read each); no read was.
    expect(verified.sort()).toEqual(["bot", "work"]);
    const calls = received().filter((m) => m.method === "tools/call");
    expect(calls).toHaveLength(4); // the work, its read, the bot's call, its read
    const reads = mcp.records().filter((r) => r.status === "cancelled" && r.verification === null);
    expect(reads).toHaveLength(2);
  });

  it("records are frozen: an onRecord hook that edits one changes nothing the caller or a later revision reads, and crashes nothing", async () => {
    const attempts: string[] = [];
    const { mcp, errors } = await spawn("scripted-server.mjs", {
      onRecord: (record) => {
        const r = record as unknown as Record<string, unknown>;
        try {
          r.status = "succeeded";
        } catch {
          attempts.push("status");
        }
        try {
          delete r.cancel;
        } catch {
          attempts.push("cancel");
        }
        try {
          (r.late as Record<string, unknown>).results = 99;
        } catch {
          attempts.push("late.results");
        }
      },
    });
    const error = (await mcp
      .callTool({ name: "late", arguments: { ms: 150 } }, { timeoutMs: 40 })
      .catch((e: unknown) => e)) as CallTimeoutError;
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(error.record).toMatchObject({ status: "cancelled", cancel: { trigger: "timeout" } });
    // The late result comes: a revision, built from the library's own facts.
    expect(await eventually(() => mcp.records()[0]!.late.results === 1, 150 + SLACK_MS * 2)).toBe(true);
    const [record] = mcp.records();
    expect(record).toMatchObject({
      status: "cancelled",
      outcome: "late-result-discarded",
      late: { results: 1 },
      cancel: { trigger: "timeout" },
    });
    expect(Object.isFrozen(record) && Object.isFrozen(record!.cancel) && Object.isFrozen(record!.late)).toBe(true);
    expect(attempts.slice(0, 3)).toEqual(["status", "cancel", "late.results"]); // each edit refused, on revision 0 and on 1
    expect(attempts.length).toBeGreaterThanOrEqual(6);
    expect(errors).toEqual([]);
  });

  it("the progress onprogress gets is the caller's own: changed after the settle it throws nothing and changes nothing in the record", async () => {
    const { mcp } = await spawn("scripted-server.mjs");
    const seen: Array<Record<string, unknown>> = [];
    const error = (await mcp
      .callTool({ name: "progress", arguments: { every: 10, steps: 3 } }, { timeoutMs: 150, onprogress: (p) => seen.push(p as never) })
      .catch((e: unknown) => e)) as CallTimeoutError;
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(seen).toHaveLength(3);
    expect(error.record.progress.last).toMatchObject({ progress: 3 }); // the record is built (and frozen) now
    seen[2]!.seenByUi = true;
    seen[2]!.progress = 99;
    expect(mcp.records()[0]!.progress.last).toEqual({ progress: 3 });
  });

  it("a resource URI shows in the record without its credentials, query and fragment, and cut at 1,000 characters", async () => {
    const { mcp } = await spawn("scripted-server.mjs", {}, ["--sdk-methods"]);
    const read = (uri: string) => mcp.request({ method: "resources/read", params: { uri } }).catch(() => undefined);
    await read("https://bot:hunter2@example.com/reports/q3?access_token=sk-live-123#section-2");
    await read(`data:text/plain,${"x".repeat(100_000)}`);
    await read("file:///srv/reports/q3.txt");
    // Schemes with no authority (`//`) have queries and fragments too (RFC 3986).
    await read("myapp:reports/q3?access_token=sk-live-456");
    await read("urn:doc:1#sk-live-789");
    const names = mcp.records().map((r) => r.name);
    expect(names[0]).toBe("https://…@example.com/reports/q3?…");
    expect(names[1]!.length).toBe(1_000);
    expect(names[1]!.endsWith("…")).toBe(true);
    expect(names[2]).toBe("file:///srv/reports/q3.txt");
    expect(names.slice(3)).toEqual(["myapp:reports/q3?…", "urn:doc:1#…"]);
    expect(JSON.stringify(mcp.records())).not.toMatch(/hunter2|sk-live-|section-2/);
  });

  it("C02 over stdio: an error with code 0 after the cancel is discarded, nothing reaches onerror", async () => {
    const { mcp, errors } = await spawn("scripted-server.mjs");
    await expect(mcp.callTool({ name: "late-error", arguments: { ms: 200 } }, { timeoutMs: 50 })).rejects.toBeInstanceOf(CallTimeoutError);
    expect(await eventually(() => mcp.records()[0]?.late.errors === 1, 200 + SLACK_MS * 2)).toBe(true);
    expect(mcp.records()[0]!.summary).toBe("cancelled (timeout), late result discarded");
    expect(errors).toEqual([]);
  });

  it("C03 over stdio: each timed-out call sends exactly one cancel naming its own id", async () => {
    const { mcp, cancelsReceived } = await spawn("scripted-server.mjs");
    const results = await Promise.allSettled([60, 80, 100].map((timeoutMs) => mcp.callTool({ name: "silent" }, { timeoutMs })));
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(await eventually(() => cancelsReceived().length === 3)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200)); // nothing more arrives later
    expect(cancelsReceived().map((m) => m.params!.requestId)).toEqual([1, 2, 3]);
    expect(cancelsReceived().every((m) => typeof m.params!.reason === "string")).toBe(true);
  });

  it("C13 over stdio: a blocked serial server; A's late result is dropped, tools/list gets its own answer, the child lives", async () => {
    const { mcp, client, pid, errors } = await spawn("scripted-server.mjs");
    const a = mcp.callTool({ name: "block", arguments: { ms: 600 } }, { timeoutMs: 100 });
    await expect(a).rejects.toBeInstanceOf(CallTimeoutError);
    const list = await mcp.request({ method: "tools/list" }, { timeoutMs: 5_000 });
    expect(list).toMatchObject({ tools: [{ name: "echo" }] });
    expect(mcp.records()[0]!.summary).toBe("cancelled (timeout), late result discarded");
    expect(alive(pid)).toBe(true);
    expect(errors).toEqual([]);
    await expect(client.listTools()).resolves.toMatchObject({ tools: [{ name: "echo" }] });
  });

  it("the caller is released at its deadline even when the server has stopped reading stdin", async () => {
    const { mcp, transport } = await spawn("scripted-server.mjs");
    await expect(mcp.callTool({ name: "stop-reading" }, { timeoutMs: 100 })).rejects.toBeInstanceOf(CallTimeoutError);
    const big = "x".repeat(4 * 1024 * 1024); // far more than a pipe buffer: the write cannot finish
    const started = performance.now();
    await expect(mcp.callTool({ name: "echo", arguments: { big } }, { timeoutMs: 200 })).rejects.toMatchObject({
      code: "REQUEST_TIMEOUT",
    });
    const released = performance.now() - started;
    expect(released).toBeGreaterThanOrEqual(195);
    expect(released).toBeLessThan(200 + SLACK_MS);
    expect(mcp.pendingCount).toBe(0);
    // the SDK's close() waits 2 s then SIGTERMs a server that does not exit; end it now
    process.kill(transport.pid!, "SIGKILL");
  });
});

describe("stdio adapter against the real SDK server", () => {
  it("a timeout's notifications/cancelled reaches the tool handler, whose signal aborts, with the readable reason", async () => {
    const { mcp, stderrLines } = await spawn("sdk-stdio-server.mjs");
    await expect(mcp.callTool({ name: "sleep", arguments: { ms: 5_000 } }, { timeoutMs: 100 })).rejects.toMatchObject({
      code: "REQUEST_TIMEOUT",
    });
    expect(await eventually(() => stderrLines.some((l) => l.startsWith("ABORTED 1 ")), 5_000)).toBe(true);
    expect(stderrLines.find((l) => l.startsWith("ABORTED 1 "))).toContain('reason="Request timed out after 100 ms"');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(mcp.records()[0]).toMatchObject({
      cancel: { mechanism: "notification", trigger: "timeout" },
      outcome: "unverified", // the SDK server stops and sends nothing: silence, not proof
      late: { results: 0, errors: 0, progress: 0 },
    });
  });

  it("C04 over stdio: progress every 30 ms keeps the idle timeout alive, the maximum total timeout still ends the call", async () => {
    const { mcp, stderrLines } = await spawn("sdk-stdio-server.mjs");
    const seen: number[] = [];
    const started = performance.now();
    const call = mcp.callTool(
      { name: "ticker", arguments: { every: 30 } },
      { timeoutMs: 150, resetTimeoutOnProgress: true, maxTotalTimeoutMs: 600, onprogress: (p) => seen.push(p.progress) },
    );
    await expect(call).rejects.toMatchObject({ code: "MAX_TOTAL_TIMEOUT" });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(595);
    expect(elapsed).toBeLessThan(600 + SLACK_MS);
    expect(seen.length).toBeGreaterThan(3);
    expect(seen).toEqual([...seen].sort((x, y) => x - y));
    expect(await eventually(() => stderrLines.some((l) => l.startsWith("TICKER-STOPPED 1 ")))).toBe(true);
  });

  it("a follow-up call after a cancel succeeds on the same process", async () => {
    const { mcp } = await spawn("sdk-stdio-server.mjs");
    await expect(mcp.callTool({ name: "sleep", arguments: { ms: 5_000 } }, { timeoutMs: 50 })).rejects.toBeInstanceOf(CallTimeoutError);
    await expect(mcp.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({
      content: [{ text: "slept 1" }],
    });
    expect(mcp.records().map((r) => r.status)).toEqual(["cancelled", "succeeded"]);
  });

  it("the server exiting settles pending calls as connection-closed", async () => {
    const { mcp, transport } = await spawn("sdk-stdio-server.mjs");
    const call = mcp.callTool({ name: "sleep", arguments: { ms: 10_000 } }, { timeoutMs: 5_000 });
    setTimeout(() => process.kill(transport.pid!, "SIGKILL"), 50);
    await expect(call).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });
    expect(mcp.records()[0]).toMatchObject({ cancel: { trigger: "connection-closed", mechanism: "none" }, outcome: "unverified" });
    expect(mcp.pendingCount).toBe(0);
  });
});

describe("stdio: params that cannot be serialised (a second pass of an outside tester's)", () => {
  it("a BigInt, a cycle, a toJSON that throws: the call fails with the serialiser's own error, as on the raw SDK, not as a lost connection; nothing reaches the server, and the next call is answered", async () => {
    const { mcp, received } = await spawn("scripted-server.mjs");
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const throwing = {
      toJSON() {
        throw new Error("toJSON refused");
      },
    };
    for (const value of [1n, cycle, throwing]) {
      const error = await mcp.callTool({ name: "echo", arguments: { value } }).then(
        () => undefined,
        (failure: unknown) => failure as Error,
      );
      expect(error?.name).toMatch(/^(TypeError|Error)$/);
      expect(error?.message).not.toMatch(/connection|not connected/i);
    }
    // Failed, never sent (it kept its request id): no server saw it.
    expect(mcp.records().map((r) => [r.status, r.outcome, typeof r.requestId])).toEqual(
      Array.from({ length: 3 }, () => ["failed", "not-sent", "number"]),
    );
    expect((await mcp.callTool({ name: "echo", arguments: {} })).content).toEqual([
      { type: "text", text: expect.stringContaining("echo") },
    ]);
    // The server logs each line it reads on stderr, read here a moment after its answer.
    expect(await eventually(() => received().some((m) => m.method === "tools/call"))).toBe(true);
    expect(received().filter((m) => m.method === "tools/call")).toHaveLength(1);
    expect(mcp.pendingCount).toBe(0);
  });
});
