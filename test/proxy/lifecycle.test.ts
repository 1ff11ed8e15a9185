import { execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { STOP_BOUND_MS } from "../../src/cli/stdio-transport.js";
import { alive, eventually, fixture, INITIALIZE, RawClient, received, server, sleep, tempDir } from "./helpers.js";
import type { ProxyRecord } from "./helpers.js";

// The proxy between a line-level client (the test, so every id and every line is visible) and
// real stdio servers: the scripted one (echoes each line it reads as RECV on stderr, which the
// proxy passes through) and the probe's raw one. Client ids are strings here, so a message that
// reaches the server under the client's id instead of the upstream's is caught.
const SCRIPTED = fixture("scripted-server.mjs");
const { dir, cleanup } = tempDir();
afterAll(cleanup);

const running: RawClient[] = [];
afterEach(async () => {
  for (const client of running.splice(0)) if (client.exit === undefined) await client.end();
});
function start(args: string[], env?: Record<string, string>): RawClient {
  const client = new RawClient(args, env);
  running.push(client);
  return client;
}

const call = (id: string, name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) },
});
const cancel = (requestId: string | number, reason?: string) => ({
  jsonrpc: "2.0",
  method: "notifications/cancelled",
  params: { requestId, ...(reason === undefined ? {} : { reason }) },
});

describe("mcp-cancellable proxy: ids, cancels and limits, seen line by line", () => {
  it("a call is answered under the client's id; the server saw the proxy's own id; initialize is relayed as it is", async () => {
    const client = start(server(SCRIPTED, "--list-all"));
    await client.initialize();
    client.send(call("c-1", "echo"));
    const answer = await client.answer("c-1");
    const seen = received(client.stderr);
    const upstream = seen.find((m) => m.method === "tools/call")!;
    expect(upstream.id).not.toBe("c-1");
    expect(answer.result!.content![0]!.text).toBe(`echo ${upstream.id}`);
    expect(seen.find((m) => m.method === "initialize")!.params).toEqual(INITIALIZE().params);
    expect(client.notJson).toEqual([]);
  });

  it("the client's cancel: one notifications/cancelled upstream with the upstream id and the client's reason; the late result dropped; nothing re-sent", async () => {
    const client = start(server(SCRIPTED, "--list-all"));
    await client.initialize();
    client.send(call("slow", "late", { ms: 600 }));
    expect(await eventually(() => received(client.stderr).some((m) => m.method === "tools/call"))).toBe(true);
    client.send(cancel("slow", "user pressed stop"));
    await sleep(900); // the late result (at 600 ms) has come and gone
    client.send(call("after", "echo"));
    await client.answer("after");
    const seen = received(client.stderr);
    const calls = seen.filter((m) => m.method === "tools/call" && m.params!.name === "late");
    expect(calls).toHaveLength(1);
    const cancels = seen.filter((m) => m.method === "notifications/cancelled");
    expect(cancels).toEqual([
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: calls[0]!.id, reason: "user pressed stop" } },
    ]);
    expect(client.answersTo("slow")).toEqual([]); // the late result never reached the client
  });

  it("a cancel for nothing in progress, and one for initialize, are ignored (rules 10, 39): nothing goes upstream", async () => {
    const client = start(server(SCRIPTED, "--list-all"));
    client.send(INITIALIZE());
    client.send(cancel("init"));
    await client.answer("init", 15_000);
    client.send(cancel("never-sent"));
    client.send(call("e", "echo"));
    await client.answer("e");
    client.send(cancel("e")); // answered already
    client.send(call("e2", "echo"));
    await client.answer("e2");
    expect(received(client.stderr).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
    expect(client.stderr).toMatch(/cancelled initialize: ignored/);
  });

  it("the proxy's idle timeout: the client gets -32001 naming the limit, with the trigger and the summary; the upstream gets one cancel", async () => {
    const client = start(["--timeout-ms", "300", ...server(SCRIPTED, "--list-all")]);
    await client.initialize();
    client.send(call("quiet", "silent"));
    const answer = await client.answer("quiet");
    expect(answer.error!.code).toBe(-32001);
    expect(answer.error!.message).toMatch(/tools\/call "silent" timed out after 300 ms/);
    expect(answer.error!.data).toMatchObject({
      code: "REQUEST_TIMEOUT",
      trigger: "timeout",
      limitMs: 300,
      summary: "cancelled (timeout), outcome unverified",
    });
    expect(answer.error!.data!.record).toMatchObject({
      clientRequestId: "quiet",
      status: "cancelled",
      cancel: { mechanism: "notification" },
    });
    const seen = received(client.stderr);
    const upstreamId = seen.find((m) => m.method === "tools/call")!.id;
    expect(await eventually(() => received(client.stderr).some((m) => m.method === "notifications/cancelled"))).toBe(true);
    expect(
      received(client.stderr)
        .filter((m) => m.method === "notifications/cancelled")
        .map((m) => m.params!.requestId),
    ).toEqual([upstreamId]);
    expect(answer.error!.data!.record!.requestId).toBe(upstreamId);
  });

  it("C04 max total timeout holds while progress arrives: progress relayed under the client's token until then, none after", async () => {
    const client = start(["--timeout-ms", "250", "--max-total-timeout-ms", "900", ...server(SCRIPTED, "--list-all")]);
    await client.initialize();
    const sentAt = performance.now();
    client.send(call("p", "progress", { every: 50 }, { progressToken: "client-token" }));
    const answer = await client.answer("p");
    const elapsed = performance.now() - sentAt;
    expect(answer.error!.code).toBe(-32001);
    expect(answer.error!.data).toMatchObject({ code: "MAX_TOTAL_TIMEOUT", trigger: "max-total-timeout", limitMs: 900 });
    expect(answer.error!.message).toMatch(/maximum total timeout of 900 ms/);
    expect(elapsed).toBeGreaterThanOrEqual(850); // the idle timeout (250) never fired: progress kept resetting it
    const progress = () => client.messages.filter((m) => m.method === "notifications/progress");
    expect(progress().length).toBeGreaterThan(2);
    expect(new Set(progress().map((m) => m.params!.progressToken))).toEqual(new Set(["client-token"]));
    const atAnswer = progress().length;
    await sleep(400); // the server keeps sending progress after the cancel
    expect(progress().length).toBe(atAnswer);
    const upstreamToken = received(client.stderr).find((m) => m.method === "tools/call")!.params!._meta!.progressToken;
    expect(upstreamToken).not.toBe("client-token");
  });

  it("--verbose logs each progress notification relayed to the client, under the client's request id", async () => {
    const client = start(["--verbose", "--timeout-ms", "250", "--max-total-timeout-ms", "400", ...server(SCRIPTED, "--list-all")]);
    await client.initialize();
    client.send(call("p", "progress", { every: 50 }, { progressToken: "client-token" }));
    await client.answer("p");
    const relayed = client.messages.filter((m) => m.method === "notifications/progress").length;
    expect(relayed).toBeGreaterThan(2);
    const logged = client.stderr.split("\n").filter((line) => /server->client notifications\/progress: \d+(\/\d+)? for "p"$/.test(line));
    expect(logged).toHaveLength(relayed);
  });

  it("--verbose logs the proxy's own timeout as its answer, with the cancel it sent upstream (not as the server's error)", async () => {
    const client = start(["--verbose", "--timeout-ms", "250", ...server(SCRIPTED, "--list-all")]);
    await client.initialize();
    client.send(call("quiet", "silent"));
    expect((await client.answer("quiet")).error!.code).toBe(-32001);
    const lines = client.stderr.split("\n");
    expect(lines.filter((l) => l.includes('error id "quiet"'))).toEqual([
      expect.stringMatching(
        /proxy->client error id "quiet" \(upstream \d+\): the proxy's own answer \(REQUEST_TIMEOUT\); cancelled upstream \(notification\): Request timed out after 250 ms$/,
      ),
    ]);
  });

  it("a malformed line from the client gets the spec's error and from the server is dropped and counted; the proxy stays up", async () => {
    const client = start(server(fixture("probe/raw-server.mjs"), "--banner"));
    await client.initialize();
    client.send("this is not json");
    client.send({ jsonrpc: "2.0", id: "no-method" });
    client.send({ id: 9, method: "tools/list" }); // no "jsonrpc"
    client.send({ jsonrpc: "2.0", id: "list", method: "tools/list" });
    const list = await client.answer("list");
    expect(list.result!.tools!.map((t: { name: string }) => t.name)).toContain("count");
    expect(client.messages.filter((m) => m.error?.code === -32700)).toEqual([
      { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error: not JSON" } },
    ]);
    expect(client.answersTo("no-method")[0]?.error?.code).toBe(-32600);
    expect(client.answersTo(9)[0]?.error?.code).toBe(-32600);
    expect(client.notJson).toEqual([]);
    expect(client.stderr).toMatch(/the server wrote a malformed line \(not JSON\), dropped: raw-server starting/);
    const exit = await client.end();
    expect(exit.code).toBe(0);
    expect(client.stderr).toMatch(/3 malformed lines from the client and 1 from the server dropped/);
  });

  it("server crash: every pending request is answered -32000 at once, and the proxy exits 1", async () => {
    const client = start(server(SCRIPTED, "--list-all"));
    await client.initialize();
    client.send(call("waiting", "silent"));
    client.send(call("boom", "crash", { ms: 200 }));
    const [waiting, boom] = await Promise.all([client.answer("waiting"), client.answer("boom")]);
    for (const answer of [waiting, boom]) {
      expect(answer.error!.code).toBe(-32000);
      expect(answer.error!.message).toMatch(/connection to the server was lost/);
      expect(answer.error!.data!.trigger).toBe("connection-closed");
    }
    const exit = await client.exited;
    expect(exit.code).toBe(1);
    expect(client.stderr).toMatch(/the server exited with code 1/);
  });

  it("a server that closes its stdout but keeps running: pending requests are answered -32000 (not left to their timeouts), the server is stopped, the proxy exits 1", async () => {
    const client = start(server(SCRIPTED, "--list-all"));
    await client.initialize();
    const sent = performance.now();
    client.send(call("waiting", "silent"));
    client.send(call("hangup", "close-stdout", { ms: 100 }));
    const [waiting, hangup] = await Promise.all([client.answer("waiting"), client.answer("hangup")]);
    const answeredAfter = performance.now() - sent;
    for (const answer of [waiting, hangup]) {
      expect(answer.error!.code).toBe(-32000);
      expect(answer.error!.message).toMatch(/connection to the server was lost/);
      expect(answer.error!.data!.trigger).toBe("connection-closed");
    }
    // The proxy's default idle timeout is 60 s: an answer this soon came from the closed stdout.
    expect(answeredAfter).toBeLessThan(10_000);
    const exit = await client.exited;
    expect(exit.code).toBe(1);
    expect(client.stderr).toMatch(/the server closed its stdout while still running/);
    const pid = Number(/STDOUT-CLOSED (\d+)/.exec(client.stderr)![1]);
    expect(await eventually(() => !alive(pid), 3_000)).toBe(true);
  });

  it("the client goes away: every call in flight is cancelled upstream, the server is stopped, the proxy exits 0", async () => {
    const client = start(server(SCRIPTED, "--list-all"));
    await client.initialize();
    client.send(call("a", "silent"));
    client.send(call("b", "silent"));
    expect(await eventually(() => received(client.stderr).filter((m) => m.method === "tools/call").length === 2)).toBe(true);
    const exit = await client.end();
    expect(exit.code).toBe(0);
    const seen = received(client.stderr);
    const ids = seen.filter((m) => m.method === "tools/call").map((m) => m.id);
    const cancelled = seen.filter((m) => m.method === "notifications/cancelled").map((m) => m.params!.requestId);
    expect(cancelled.sort()).toEqual(ids.sort());
  });

  it(`the client goes away from a server that ignores stdin EOF and SIGTERM: its process group is gone within the bound (${STOP_BOUND_MS} ms)`, async () => {
    const pidfile = join(dir, "stubborn.pid");
    const client = start(["--env", `PROBE_PIDFILE=${pidfile}`, ...server(fixture("probe/raw-server.mjs"), "--stubborn")]);
    await client.initialize();
    expect(existsSync(pidfile)).toBe(true);
    const pid = Number(readFileSync(pidfile, "utf8"));
    expect(alive(pid)).toBe(true);
    const endedAt = performance.now();
    const exit = await client.end();
    const took = performance.now() - endedAt;
    expect(exit.code).toBe(0);
    expect(alive(pid)).toBe(false);
    // The bound plus slack for a loaded machine; the stdin grace and SIGTERM grace were both spent.
    expect(took).toBeGreaterThanOrEqual(1_200);
    expect(took).toBeLessThan(STOP_BOUND_MS + 2_500);
  });

  it("a client reusing the id of a request in progress gets -32600 for the second one (rule 1); the first goes on", async () => {
    const client = start(server(SCRIPTED, "--list-all"));
    await client.initialize();
    client.send(call("dup", "late", { ms: 300 }));
    client.send(call("dup", "echo"));
    await eventually(() => client.answersTo("dup").length === 2);
    const answers = client.answersTo("dup");
    expect(answers[0]!.error!.code).toBe(-32600);
    expect(answers[1]!.result!.content![0]!.text).toMatch(/^late /);
    expect(received(client.stderr).filter((m) => m.method === "tools/call")).toHaveLength(1);
  });
});

describe("mcp-cancellable proxy: the server's cancel of a request of its own", () => {
  it("under the number of a client's call in flight upstream: relayed to the client as it is (rule 39), the call untouched (an outside tester's: it was read as the call's, and dropped)", async () => {
    const client = start(server(SCRIPTED));
    await client.initialize();
    client.send(call("w", "withdraw"));
    const asked = await eventually(() => client.messages.some((m) => m.method === "sampling/createMessage"));
    expect(asked).toBe(true);
    const sampling = client.messages.find((m) => m.method === "sampling/createMessage")!;
    const upstreamId = received(client.stderr).find((m) => m.method === "tools/call")!.id;
    expect(sampling.id).toBe(upstreamId); // the server's own numbering, as it is
    expect(await eventually(() => client.messages.some((m) => m.method === "notifications/cancelled"))).toBe(true);
    expect(client.messages.filter((m) => m.method === "notifications/cancelled")).toEqual([
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: upstreamId, reason: "no longer needed" } },
    ]);
    expect((await client.answer("w")).result!.content![0]!.text).toBe(`withdrew ${upstreamId}`);
  });

  it("answered by the client already: a later cancel naming its number is no withdrawal, and the client's call under that number goes on (rule 12)", async () => {
    const client = start(server(SCRIPTED));
    await client.initialize();
    client.send(call("w", "withdraw", { cancelMs: 400, answerMs: 600 }));
    expect(await eventually(() => client.messages.some((m) => m.method === "sampling/createMessage"))).toBe(true);
    const sampling = client.messages.find((m) => m.method === "sampling/createMessage")!;
    client.send({ jsonrpc: "2.0", id: sampling.id, error: { code: -32601, message: "no sampling here" } }); // answered before the withdrawal
    await client.answer("w");
    expect((await client.answer("w")).result!.content![0]!.text).toMatch(/^withdrew /); // after the cancel
    expect(client.messages.filter((m) => m.method === "notifications/cancelled")).toEqual([]);
  });
});

describe("mcp-cancellable proxy: --config and --records", () => {
  it("--config errors name the file and the key; exit 2", async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ tools: { slow: { timeoutMs: 0 } } }, /"tools\.slow\.timeoutMs" must be an integer from 1 to 2147483647/],
      [{ defaults: { timeoutMS: 10 } }, /unknown key "defaults\.timeoutMS"/],
      [{ method: {} }, /unknown key "method"/],
      [
        { methods: { "tools/list": { resetTimeoutOnProgress: "yes" } } },
        /"methods\.tools\/list\.resetTimeoutOnProgress" must be true or false, got "yes"/,
      ],
    ];
    for (const [config, message] of cases) {
      const file = join(dir, "bad.json");
      writeFileSync(file, JSON.stringify(config));
      const client = start(["--config", file, ...server(SCRIPTED)]);
      const exit = await client.exited;
      expect(exit.code).toBe(2);
      expect(client.stderr).toContain(`--config ${file}:`);
      expect(client.stderr).toMatch(message);
      expect(client.messages).toEqual([]);
    }
    const notJson = join(dir, "not.json");
    writeFileSync(notJson, "{ timeoutMs: 1 }");
    const client = start(["--config", notJson, ...server(SCRIPTED)]);
    expect((await client.exited).code).toBe(2);
    expect(client.stderr).toMatch(/not\.json: not valid JSON/);
  });

  it("--config: a tool's entry wins over its method's, which wins over the defaults and the command line", async () => {
    const file = join(dir, "limits.json");
    writeFileSync(
      file,
      JSON.stringify({
        defaults: { timeoutMs: 5_000 },
        methods: { "tools/call": { timeoutMs: 4_000 } },
        tools: { silent: { timeoutMs: 200 } },
      }),
    );
    const client = start(["--config", file, "--timeout-ms", "3000", ...server(SCRIPTED, "--list-all")]);
    await client.initialize();
    client.send(call("s", "silent"));
    client.send(call("l", "late", { ms: 600 }));
    const [silent, late] = await Promise.all([client.answer("s"), client.answer("l")]);
    expect(silent.error!.data!.limitMs).toBe(200);
    expect(late.result!.content![0]!.text).toMatch(/^late /); // 600 ms < the method's 4,000 ms
  });

  it("--records: progress a server goes on sending after a timeout is on the call's record (late.progress), never passed to the client", async () => {
    // An outside tester's (server-everything's trigger-long-running-operation): the file said
    // late.progress 0 while the --otel spans counted 5, since a late progress wrote no line.
    const file = join(dir, "late-progress.jsonl");
    const client = start(["--records", file, "--max-total-timeout-ms", "350", ...server(SCRIPTED, "--list-all")]);
    await client.initialize();
    client.send(call("p", "progress", { every: 100, steps: 9 }, { progressToken: "tok" }));
    expect((await client.answer("p")).error).toMatchObject({ code: -32001 });
    const answeredAt = client.messages.length;
    await sleep(700); // the server's last progress goes at 900 ms
    expect(client.messages.slice(answeredAt)).toEqual([]); // nothing after the answer
    expect((await client.end()).code).toBe(0);
    const lines = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as ProxyRecord);
    expect(lines.at(-1)!.late.progress).toBeGreaterThan(0);
    // The settle, the cancel's sentAt when the timer-fired line left, the first late progress:
    // not one line per late notification (the server sent five or more).
    expect(lines.map((r) => r.late.progress)).toEqual([0, 0, 1]);
  });

  it("--records: one JSON Lines record per request (initialize excepted), the library's record with the client's id", async () => {
    const file = join(dir, "records.jsonl");
    const client = start(["--records", file, "--timeout-ms", "300", ...server(SCRIPTED, "--list-all")]);
    await client.initialize();
    client.send(call("ok", "echo"));
    await client.answer("ok");
    client.send(call("cancelled", "late", { ms: 400 }));
    await eventually(() => received(client.stderr).some((m) => m.params?.name === "late"));
    client.send(cancel("cancelled"));
    client.send(call("timeout", "silent"));
    await client.answer("timeout");
    // The late result of "cancelled" arrives and is discarded: the records file says so (a fixed
    // 400 ms could end first on a loaded machine, and the proxy be ended before it came).
    expect(await eventually(() => existsSync(file) && readFileSync(file, "utf8").includes("late result discarded"), 10_000)).toBe(true);
    expect((await client.end()).code).toBe(0);
    const lines = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as ProxyRecord);
    const last = new Map<number, ProxyRecord>();
    for (const line of lines) last.set(line.callId, line);
    expect(last.size).toBe(3);
    const byClient = Object.fromEntries([...last.values()].map((r) => [r.clientRequestId, r.summary]));
    expect(byClient).toEqual({
      ok: "succeeded",
      cancelled: "cancelled (aborted), late result discarded",
      timeout: "cancelled (timeout), outcome unverified",
    });
    expect(lines.every((r) => r.method === "tools/call")).toBe(true);
    // Each line names the proxy process that wrote it (callId is unique within one process), the same on every line here.
    const pids = new Set(lines.map((r) => (r as ProxyRecord & { proxyPid?: unknown }).proxyPid));
    expect(pids.size).toBe(1);
    expect(Number.isInteger([...pids][0])).toBe(true);
    expect([...pids][0]).not.toBe(process.pid);
  });

  // An outside tester's: `--records /dev/stdout` wrote record lines into the client's protocol
  // stream. Whatever its name, the proxy's own stdout is refused (the same device and inode).
  it("--records naming the proxy's own stdout (/dev/stdout, /proc/self/fd/1): exit 2 naming --records, nothing on stdout", async () => {
    for (const file of ["/dev/stdout", "/proc/self/fd/1"]) {
      if (!existsSync(file)) continue;
      const client = start(["--records", file, ...server(SCRIPTED)]);
      client.send(INITIALIZE());
      expect(await eventually(() => client.exit !== undefined, 5_000), file).toBe(true);
      expect(client.exit?.code).toBe(2);
      expect(client.stderr).toContain(`--records ${file}: that is the proxy's own stdout`);
      expect(client.messages).toEqual([]);
      expect(client.notJson).toEqual([]);
    }
  });

  // An outside tester's: a FIFO nobody read blocked the proxy at its open, before the server
  // started: it never answered nor exited. Refused at once now; with a reader, the records reach it.
  it.skipIf(process.platform === "win32")(
    "--records naming a FIFO: with no reader, exit 2 at once saying so; with one, the records reach it",
    async () => {
      const fifo = join(dir, "records.fifo");
      execFileSync("mkfifo", [fifo]);
      const alone = start(["--records", fifo, ...server(SCRIPTED)]);
      alone.send(INITIALIZE());
      expect(await eventually(() => alone.exit !== undefined, 5_000)).toBe(true);
      expect(alone.exit?.code).toBe(2);
      expect(alone.stderr).toContain(`--records ${fifo}: a FIFO with no reader`);
      expect(alone.messages).toEqual([]);

      const reader = spawn("cat", [fifo], { stdio: ["ignore", "pipe", "ignore"] });
      let read = "";
      reader.stdout.setEncoding("utf8").on("data", (chunk: string) => (read += chunk));
      const readerDone = new Promise((resolve) => reader.once("close", resolve));
      try {
        // cat opens the FIFO once it runs: the proxy is started when it has.
        await sleep(300);
        const client = start(["--records", fifo, "--timeout-ms", "300", ...server(SCRIPTED, "--list-all")]);
        await client.initialize();
        client.send(call("timeout", "silent"));
        await client.answer("timeout");
        expect((await client.end()).code).toBe(0);
        await readerDone;
        expect(read).toContain('"clientRequestId":"timeout"');
      } finally {
        if (reader.exitCode === null) reader.kill();
      }
    },
  );
});

describe("mcp-cancellable proxy: its stderr's reader goes away", () => {
  it("the next diagnostic does not end it (an unhandled EPIPE did): it goes on answering, and ends as usual (an outside tester's)", async () => {
    const client = new RawClient(server(SCRIPTED));
    running.push(client);
    await client.initialize();
    // The server shares that stderr: nothing more may reach it once it is gone (it would die of it).
    expect(await eventually(() => received(client.stderr).some((m) => m.method === "notifications/initialized"))).toBe(true);
    client.child.stderr.destroy(); // a log shipper restarted
    // Answered by the proxy itself (nothing reaches the server, which shares that stderr), and logged.
    client.child.stdin.write("not json\n");
    expect(await eventually(() => client.messages.some((m) => (m.error as { code?: number } | undefined)?.code === -32700))).toBe(true);
    client.child.stdin.write("still not json\n");
    expect(
      await eventually(() => client.messages.filter((m) => (m.error as { code?: number } | undefined)?.code === -32700).length === 2),
    ).toBe(true);
    await sleep(200);
    expect(client.exit).toBeUndefined();
    expect((await client.end()).code).toBe(0);
  });
});
