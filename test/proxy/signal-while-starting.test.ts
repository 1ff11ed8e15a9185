import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { parseProxyArgs } from "../../src/cli/proxy/args.js";
import { runProxy } from "../../src/cli/proxy/proxy.js";
import type { EndSignal } from "../../src/cli/proxy/proxy.js";
import { stdioUpstream } from "../../src/cli/proxy/upstream.js";
import { alive, eventually, server, tempDir } from "./helpers.js";

// A signal that comes while the proxy starts its stdio server (spawned, not yet started as far as
// the proxy knows) is the proxy's, not the signal's default action: the default action ends the
// process and leaves the server's process group running, since no exit handler runs (an outside
// tester's, on the HTTP front: 10 runs of 10 killed by a SIGTERM right after its "listening on"
// line, the server alive after it; test/proxy/front/drain-signal.test.ts). Here the plain stdio
// proxy, run in this process with the signal handed in while its server starts.
const LINE = new URL("./fixtures/line-server.mjs", import.meta.url).pathname;
const { dir, cleanup } = tempDir();
afterAll(cleanup);

describe("mcp-cancellable proxy: a signal while the server starts", () => {
  it("SIGTERM between the server's spawn and the proxy's start: the proxy ends as for any SIGTERM, and the server is gone", async () => {
    const pidfile = join(dir, "starting.pid");
    const options = parseProxyArgs(["--env", `LINE_SERVER_PIDFILE=${pidfile}`, ...server(LINE)]);
    if (options === "help") throw new Error("bad proxy arguments");
    let log = "";
    let handler: ((signal: EndSignal) => void) | undefined;
    let signalledWhileStarting = false;
    let startOver = false;
    const input = new PassThrough();
    const output = new PassThrough();
    output.resume();
    const done = runProxy(
      options,
      {
        input,
        output,
        log: (text) => void (log += text),
        onSignal: (on) => {
          handler = on;
          return () => {
            handler = undefined;
          };
        },
      },
      () => {
        const upstream = stdioUpstream(
          options.upstream as Parameters<typeof stdioUpstream>[0],
          options.maxMessageBytes,
          (text) => void (log += text),
        );
        const transport = upstream.adapter.transport as { start(): Promise<void> };
        const start = transport.start.bind(transport);
        transport.start = async () => {
          await start(); // spawned
          // The signal comes now, before the proxy's start is over.
          signalledWhileStarting = handler !== undefined;
          handler?.("SIGTERM");
          startOver = true;
        };
        return upstream;
      },
    );
    expect(await eventually(() => startOver)).toBe(true);
    if (!signalledWhileStarting) input.end(); // the proxy ends as its client goes, for the next test
    expect(signalledWhileStarting).toBe(true); // before: no handler yet, so the default action would have run
    expect(await done).toBe(143);
    expect(await eventually(() => existsSync(pidfile))).toBe(true); // it wrote its pid as it started
    const pid = Number(readFileSync(pidfile, "utf8"));
    expect(await eventually(() => !alive(pid), 3_000)).toBe(true);
  });
});
