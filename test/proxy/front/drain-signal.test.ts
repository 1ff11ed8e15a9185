import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseProxyArgs } from "../../../src/cli/proxy/args.js";
import { splitListenArgs } from "../../../src/cli/proxy/listen/args.js";
import { frontUpstreams } from "../../../src/cli/proxy/listen/command.js";
import { startFront as startFrontHere } from "../../../src/cli/proxy/listen/front.js";
import type { Front } from "../../../src/cli/proxy/listen/front.js";
import { alive, eventually, fixture, proxyCommand, server, tempDir } from "../helpers.js";
import type { RpcMessage } from "../helpers.js";
import { messagesOf, openSession, post2026, startFront, stopFronts } from "./helpers.js";

// The signal that stopped the front, named in what its drain says (an outside tester's: SIGINT
// and SIGHUP were reported as SIGTERM in a 2025-era session's -32000 answer, its records' cancel
// reasons, its log line and the refusals while draining; only the replica's own "SIGINT:
// draining" line was right).
const V2_STDIO = fixture("http/v2-stdio-server.mjs");

const DRAIN_MS = 1_500;
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await stopFronts();
});
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "drain-signal", version: "1" } },
};
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** The error message of a refusal: 503, not sent. */
async function refusal(response: Response): Promise<string> {
  expect(response.status).toBe(503);
  const [message] = await messagesOf(response);
  expect(message?.error).toMatchObject({ code: -32000, data: { code: "NOT_SENT" } });
  return message!.error!.message;
}

/**
 * Opens a 2025-era session with a call in flight (`inFlight` says when it reached the server);
 * `stop` then sends the signal, and while the drain runs (`draining` says when it began) a request
 * in the session, a new session and a 2026-07-28 request are refused; the call is answered once
 * `--drain-ms` is over. Returns the refusals' messages and the call's answer.
 */
async function drainWithCall(url: URL, inFlight: () => boolean, stop: () => void, draining: () => boolean) {
  const session = await openSession(url, "2025-06-18", "drain-signal");
  const call = session.post({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "sleep", arguments: { ms: 20_000 } } });
  expect(await eventually(inFlight)).toBe(true);
  stop();
  expect(await eventually(draining)).toBe(true);
  const refusals = [
    await refusal(await session.post({ jsonrpc: "2.0", id: 3, method: "tools/list" })),
    await refusal(await fetch(url, { method: "POST", headers: HEADERS, body: JSON.stringify(INIT) })),
    await refusal(await post2026(url, { id: "m", method: "tools/list" })),
  ];
  const answered: RpcMessage[] = await messagesOf(await call);
  return { refusals, answer: answered.find((message) => message.id === 2) };
}

/** The `tools/call` records of the file (read once the drain is over: the file is ended by it). */
function callRecords(file: string): Array<{ cancel?: { reason: string } | null }> {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { method: string; cancel?: { reason: string } | null })
    .filter((record) => record.method === "tools/call");
}

function expectNamed(signal: string, seen: Awaited<ReturnType<typeof drainWithCall>>, calls: ReturnType<typeof callRecords>): void {
  expect(seen.refusals).toHaveLength(3);
  for (const text of seen.refusals) {
    expect(text).toContain(`this replica is draining (${signal})`);
    expect(text).not.toContain("SIGTERM");
  }
  expect(seen.answer?.error?.code).toBe(-32000);
  expect(seen.answer?.error?.message).toContain(`this replica is shutting down (${signal}; --drain-ms ${DRAIN_MS} ms)`);
  expect(seen.answer?.error?.message).not.toContain("SIGTERM");
  expect(calls).toHaveLength(1);
  expect(calls[0]!.cancel?.reason).toContain(`this replica is shutting down (${signal}; --drain-ms ${DRAIN_MS} ms)`);
  expect(calls[0]!.cancel?.reason).not.toContain("SIGTERM");
}

describe("proxy --listen: the drain names the signal that stopped the replica", () => {
  for (const signal of ["SIGINT", "SIGHUP"] as const) {
    it(`${signal} to the process: the 2025-era call's -32000, its record's cancel reason, the session's log line, the server's cancel and the refusals say ${signal}; exit 0`, async () => {
      const dir = tempDir();
      cleanups.push(dir.cleanup);
      const records = join(dir.dir, "records.jsonl");
      const front = await startFront(["--drain-ms", String(DRAIN_MS), "--records", records, ...server(V2_STDIO)]);
      const seen = await drainWithCall(
        front.url,
        () => front.stderr().includes("STARTED"),
        () => front.child.kill(signal),
        () => front.stderr().includes(`${signal}: draining`),
      );
      expect((await front.exited).code).toBe(0);
      expectNamed(signal, seen, callRecords(records));
      const stderr = front.stderr();
      // The session's own line, and the cancel as the server's handler read it.
      expect(stderr).toContain(`this replica is shutting down (${signal}; --drain-ms ${DRAIN_MS} ms)`);
      expect(stderr).toMatch(new RegExp(`ABORTED \\S+ reason=".*this replica is shutting down \\(${signal}; --drain-ms`));
      expect(stderr).not.toContain("shutting down (SIGTERM)");
      expect(stderr).not.toContain("draining (SIGTERM)");
    });
  }

  it("SIGTERM the moment the \"listening on\" line is out: the front drains and exits 0, and its shared stdio server is gone (an outside tester's: the signal's default action killed the process, 10 runs of 10, and the server outlived it)", async () => {
    const { command, args } = proxyCommand(["--listen", "127.0.0.1:0", ...server(V2_STDIO, "--print-pid")]);
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
    cleanups.push(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });
    let stderr = "";
    child.stdout.resume();
    child.stderr.setEncoding("utf8");
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("close", (code, signal) => resolve({ code, signal })),
    );
    child.stderr.on("data", (chunk: string) => {
      const before = stderr;
      stderr += chunk;
      if (!before.includes("listening on") && stderr.includes("listening on")) child.kill("SIGTERM"); // in the same turn
    });
    const exit = await exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(stderr).toContain("SIGTERM: draining");
    const pid = Number(/PID (\d+)/.exec(stderr)?.[1]);
    expect(pid).toBeGreaterThan(0); // the shared 2026-07-28 server had started before the line
    expect(await eventually(() => !alive(pid), 5_000)).toBe(true);
  });

  it("a drain while a 2025-era session is still opening (its server starting): the session and its server go with the drain, its initialize is refused, not sent (an audit's: the drain did not see it, and it outlived the drain with its server)", async () => {
    const dir = tempDir();
    cleanups.push(dir.cleanup);
    const pidLog = join(dir.dir, "pids");
    process.env.V2_STDIO_PID_LOG = pidLog;
    cleanups.push(() => delete process.env.V2_STDIO_PID_LOG);
    const { listen, rest } = splitListenArgs(["--listen", "127.0.0.1:0", "--drain-ms", "200", ...server(V2_STDIO)], {});
    const options = parseProxyArgs(rest);
    if (options === "help" || listen === undefined) throw new Error("bad front arguments");
    let log = "";
    const write = (text: string): void => void (log += text);
    const upstreams = frontUpstreams(options, write);
    // The session's upstream is made 300 ms late (as the first import of an HTTP upstream's module can be): the drain comes meanwhile.
    let making = false;
    const makeUpstream = (era: "legacy" | "2026-07-28") => {
      if (era === "2026-07-28") return upstreams(era);
      making = true;
      return new Promise((resolve) => setTimeout(resolve, 300)).then(() => upstreams(era)!);
    };
    const front: Front = await startFrontHere(options, listen, { log: write, makeUpstream });
    cleanups.push(() => front.drain());
    const init = fetch(front.url, { method: "POST", headers: HEADERS, body: JSON.stringify(INIT) });
    expect(await eventually(() => making)).toBe(true);
    await front.drain("SIGTERM");
    const answer = await init;
    expect(answer.status).toBe(503);
    const [message] = await messagesOf(answer);
    expect(message?.error?.message).toContain("initialize refused, not sent: this replica is draining (SIGTERM)");
    expect(front.stats().sessions).toBe(0);
    const pids = readFileSync(pidLog, "utf8").trim().split("\n").map(Number);
    expect(pids).toHaveLength(2); // the 2026-07-28 server and the session's
    for (const pid of pids) expect(await eventually(() => !alive(pid), 5_000)).toBe(true);
  });

  it("drain(signal) on a front run in this process says that signal; drain() without one says SIGTERM", async () => {
    for (const signal of ["SIGINT", undefined] as const) {
      const dir = tempDir();
      cleanups.push(dir.cleanup);
      const records = join(dir.dir, "records.jsonl");
      const { listen, rest } = splitListenArgs(
        ["--listen", "127.0.0.1:0", "--drain-ms", String(DRAIN_MS), "--records", records, ...server(V2_STDIO)],
        {},
      );
      const options = parseProxyArgs(rest);
      if (options === "help" || listen === undefined) throw new Error("bad front arguments");
      let log = "";
      const write = (text: string): void => void (log += text);
      const front: Front = await startFrontHere(options, listen, { log: write, makeUpstream: frontUpstreams(options, write) });
      cleanups.push(() => front.drain());
      const seen = await drainWithCall(
        front.url,
        () => front.stats().inFlight === 1,
        () => void front.drain(signal),
        () => log.includes("draining:"),
      );
      await front.drain();
      const calls = callRecords(records);
      const name = signal ?? "SIGTERM";
      expect(seen.refusals).toHaveLength(3);
      for (const text of seen.refusals) expect(text).toContain(`this replica is draining (${name})`);
      expect(seen.answer?.error?.message).toContain(`this replica is shutting down (${name}; --drain-ms ${DRAIN_MS} ms)`);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.cancel?.reason).toContain(`this replica is shutting down (${name}; --drain-ms ${DRAIN_MS} ms)`);
      expect(log).toContain(`this replica is shutting down (${name}; --drain-ms ${DRAIN_MS} ms)`);
      if (signal !== undefined) expectNamed(signal, seen, calls);
    }
  });
});
