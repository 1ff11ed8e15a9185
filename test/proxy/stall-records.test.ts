import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { runProxyCommand } from "../../src/cli/proxy/command.js";
import { answersFrom, eventually, INITIALIZE, type ProxyRecord, sleep, tempDir } from "./helpers.js";

// The proxy's --records for a cancel line stuck behind a full pipe (an outside tester's finding,
// /tmp/reports/proxy-stall-resume.sh): the upstream server stops reading its stdin, a call with a
// 2 MB argument fills the pipe and times out. The record must follow the line on the wire as the
// library's stdio adapter does over the SDK's transport: `sentAt` null while the line waits, then
// a revision with the time it left (after the server read again); `undelivered` when the server
// exits without reading it. Before the fix the proxy's write queue never saw the child's stdin
// (the CLI's transport keeps it where the SDK's reader does not look): the line was taken as sent
// when the transport's `send` was called, `sentAt` the settle's time (1.5 s before the server even
// read again), never revised. The proxy runs in this process on in-memory streams; the server is a
// real child process whose log (every line it read, and when) goes to a file.
const STALL = new URL("../stdio/fixtures/stall-server.mjs", import.meta.url).pathname;
const STALL_MS = 1_500;
const TIMEOUT_MS = 300;

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

interface ServerLog {
  resumedAt: number | undefined;
  /** When the server read its first line of `method` (epoch ms). */
  readAt(method: string): number | undefined;
}

function serverLog(file: string): ServerLog {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    // not written yet
  }
  const lines = text.split("\n");
  const resume = lines.find((line) => line.startsWith("RESUME "));
  return {
    resumedAt: resume === undefined ? undefined : Number(resume.split(" ")[1]),
    readAt(method) {
      const line = lines.find((l) => l.startsWith("RECV ") && l.split(" ")[2] === method);
      return line === undefined ? undefined : Number(line.split(" ")[1]);
    },
  };
}

/** The revisions of the record of the client's request `id` in a `--records` file, in order. */
function revisionsOf(file: string, id: string): ProxyRecord[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as ProxyRecord)
    .filter((record) => record.clientRequestId === id);
}

/**
 * The proxy over the stall server (`serverFlags`), a 2 MB call timed out behind the full pipe;
 * waits (at most 10 s) until `waitFor` holds; resolves with the call's record revisions and the
 * server's log.
 */
async function stalledCall(serverFlags: string[], waitFor: (log: ServerLog, revisions: ProxyRecord[]) => boolean) {
  const { dir, cleanup } = tempDir();
  cleanups.push(cleanup);
  const log = join(dir, "server.log");
  const records = join(dir, "records.jsonl");
  const input = new PassThrough();
  const output = new PassThrough();
  const answers = answersFrom(output);
  const quiet = { stdout: () => {}, stderr: () => {} };
  const command = `exec "${process.execPath}" "${STALL}" ${serverFlags.join(" ")} 2>"${log}"`;
  const exit = runProxyCommand(["--records", records, "--timeout-ms", String(TIMEOUT_MS), "--", "sh", "-c", command], quiet, {
    input,
    output,
  });
  const write = (message: object): void => void input.write(`${JSON.stringify(message)}\n`);
  try {
    write(INITIALIZE());
    expect(await eventually(() => answers.has("init"), 10_000)).toBe(true);
    write({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect(await eventually(() => serverLog(log).readAt("notifications/initialized") !== undefined, 10_000)).toBe(true);
    write({ jsonrpc: "2.0", id: "big", method: "tools/call", params: { name: "big", arguments: { blob: "x".repeat(2_000_000) } } });
    // The call is released at its timeout (the cancel never holds it), long before the server reads again.
    expect(await eventually(() => answers.has("big"), 5_000)).toBe(true);
    expect(answers.get("big")!.error).toBeDefined();
    expect(await eventually(() => waitFor(serverLog(log), revisionsOf(records, "big")), 10_000)).toBe(true);
    await sleep(100); // the revision that follows the line's write reaches the records file
  } finally {
    input.end();
    await exit;
  }
  return { revisions: revisionsOf(records, "big"), log: serverLog(log) };
}

describe("proxy --records: a cancel line behind a full pipe to the stdio server", () => {
  it("the server reads again later: sentAt null at the settle, then revised to when the line left (after the server read again), never the settle's time", async () => {
    const { revisions, log } = await stalledCall(
      ["--stall-ms", String(STALL_MS)],
      (l) => l.readAt("notifications/cancelled") !== undefined,
    );
    expect(revisions.length).toBeGreaterThanOrEqual(2);
    const first = revisions[0]!;
    expect(first.revision).toBe(0);
    expect(first.cancel).toMatchObject({ trigger: "timeout", mechanism: "notification", sentAt: null, undelivered: null });
    const last = revisions.at(-1)!;
    expect(last.cancel).toMatchObject({ mechanism: "notification", undelivered: null });
    const sentAt = Date.parse(last.cancel!.sentAt!);
    // It left once the pipe drained, that is after the server read again, and before the server read it (ms).
    expect(log.resumedAt).toBeDefined();
    expect(sentAt).toBeGreaterThanOrEqual(log.resumedAt! - 1);
    expect(sentAt).toBeLessThanOrEqual(log.readAt("notifications/cancelled")! + 1);
    expect(Date.parse(last.settledAt)).toBeLessThan(log.resumedAt!);
  }, 30_000);

  it("the server exits without reading again: the line never left, and the record says it was not delivered", async () => {
    const { revisions, log } = await stalledCall(["--exit-ms", "800"], (_log, records) =>
      records.some((record) => record.cancel?.undelivered != null),
    );
    expect(log.readAt("notifications/cancelled")).toBeUndefined();
    expect(revisions[0]!.cancel).toMatchObject({ mechanism: "notification", sentAt: null });
    const last = revisions.at(-1)!;
    expect(last.cancel).toMatchObject({
      mechanism: "none",
      sentAt: null,
      undelivered: { mechanism: "notification", error: expect.any(String) },
    });
    expect(last.summary).toContain("cancel notification not delivered");
  }, 30_000);
});
