import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { runProxyCommand } from "../../src/cli/proxy/command.js";
import { answersFrom, eventually, INITIALIZE, type ProxyRecord, received, tempDir } from "./helpers.js";

// What a pending request costs the proxy (issue 29: heap per pending call ≤ 1 KB): no
// AbortController per request. The client's cancel ends its call by id
// (`MessageTransport.cancel`), which still sends the upstream's notifications/cancelled under the
// id the server knows. The proxy runs in this process on in-memory streams; the scripted server
// is a real child process whose log (every line it read) goes to a file.
const LINE = new URL("./fixtures/line-server.mjs", import.meta.url).pathname;
const REQUESTS = 100;

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

/** Counts the AbortControllers made while `count.on`, by a subclass put in the global's place. */
function countControllers(): { made: number; on: boolean } {
  const Original = globalThis.AbortController;
  const count = { made: 0, on: false };
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      if (count.on) count.made++;
    }
  };
  cleanups.push(() => {
    globalThis.AbortController = Original;
  });
  return count;
}

describe("proxy: the cost of a pending request", () => {
  it("makes no AbortController per request; the client's cancel still reaches the server under the upstream's id (rule 5), recorded cancelled (aborted)", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const log = join(dir, "server.log");
    const records = join(dir, "records.jsonl");
    const controllers = countControllers();
    const input = new PassThrough();
    const output = new PassThrough();
    const answers = answersFrom(output);
    const quiet = { stdout: () => {}, stderr: () => {} };
    const exit = runProxyCommand(
      [
        "--records",
        records,
        "--timeout-ms",
        "none",
        "--max-total-timeout-ms",
        "none",
        "--",
        "sh",
        "-c",
        `exec "${process.execPath}" "${LINE}" 2>"${log}"`,
      ],
      quiet,
      { input, output },
    );
    const write = (message: object): void => void input.write(`${JSON.stringify(message)}\n`);
    write(INITIALIZE());
    expect(await eventually(() => answers.has("init"), 10_000)).toBe(true);
    write({ jsonrpc: "2.0", method: "notifications/initialized" });

    controllers.on = true;
    for (let i = 0; i < REQUESTS; i++) {
      write({ jsonrpc: "2.0", id: `c${i}`, method: "tools/call", params: { name: "silent", arguments: { tag: `c${i}` } } });
    }
    write({ jsonrpc: "2.0", id: "ping1", method: "ping" });
    expect(await eventually(() => answers.has("ping1"), 10_000)).toBe(true);
    for (let i = 0; i < REQUESTS / 2; i++) {
      write({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: `c${i}`, reason: "enough" } });
    }
    write({ jsonrpc: "2.0", id: "ping2", method: "ping" });
    expect(await eventually(() => answers.has("ping2"), 10_000)).toBe(true);
    controllers.on = false;
    // The old path made one per request (and its signal a listener per call).
    expect(controllers.made).toBe(0);

    // The server got each cancel once, under the id it knows for that request.
    const seen = received(readFileSync(log, "utf8"));
    const upstreamIdOf = new Map(
      seen.filter((m) => m.method === "tools/call").map((m) => [(m.params!.arguments as { tag: string }).tag, m.id]),
    );
    expect(upstreamIdOf.size).toBe(REQUESTS);
    const cancelled = seen.filter((m) => m.method === "notifications/cancelled").map((m) => m.params!.requestId);
    const expected = Array.from({ length: REQUESTS / 2 }, (_, i) => upstreamIdOf.get(`c${i}`));
    expect(cancelled).toEqual(expected);
    // No answer goes to the client for a request it cancelled itself.
    for (let i = 0; i < REQUESTS / 2; i++) expect(answers.has(`c${i}`)).toBe(false);

    input.end();
    expect(await exit).toBe(0);
    const byClient = new Map(
      readFileSync(records, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as ProxyRecord)
        .map((record) => [record.clientRequestId, record]),
    );
    expect(byClient.size).toBe(REQUESTS + 2); // and the two pings
    for (let i = 0; i < REQUESTS / 2; i++) {
      expect(byClient.get(`c${i}`)).toMatchObject({ status: "cancelled", cancel: { trigger: "aborted" } });
    }
  });
});
