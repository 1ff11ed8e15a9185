// Canaries for the SDKs' private shapes (src/sdk/private.ts, issue 19 item 3). Each check runs
// the library's own accessor (`probeSdkShapes`) on real instances of one SDK line and fails
// naming the field, the package and its version when a release moves it. The fallback tests
// take the field away as the library sees it and check that the documented fallback runs and
// the call still settles. The suite takes the SDK modules as arguments, so the same tests run
// on the root's versions (test/sdk/canaries.test.ts) and on the newest published ones in the
// Node 22 leg (test/node22/frameworks/sdk-canaries.test.ts, its own node_modules).
import { existsSync, readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CallCancelledError, InvalidOptionError, withCancellation } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import {
  hasFetchSlot,
  probeSdkShapes,
  sdkTimerDropper,
  sdkTimerSkipper,
  sdkWaitDropper,
  stdioChildStdin,
  transportFetch,
} from "../../src/sdk/private.js";
import type { SdkLine } from "../../src/sdk/private.js";

type Ctor<T = object> = new (first?: unknown, second?: unknown) => T;
interface TransportObject {
  start(): Promise<void>;
  close(): Promise<void>;
  send(message: unknown, options?: unknown): Promise<void>;
  onmessage?: ((message: unknown) => void) | undefined;
}

/** One SDK line as the suite needs it: its package, version and the classes it makes. */
export interface SdkPackage {
  readonly line: SdkLine;
  /** `@modelcontextprotocol/sdk` or `@modelcontextprotocol/client`. */
  readonly name: string;
  /** The installed version (`versionAt`). */
  readonly version: string;
  readonly Client: Ctor;
  readonly StdioClientTransport: Ctor<TransportObject>;
  readonly StreamableHTTPClientTransport: Ctor<TransportObject>;
  /** v1 only: the server's `WebStandardStreamableHTTPServerTransport` (the proxy's HTTP front uses it). */
  readonly WebStandardServerTransport?: Ctor<TransportObject>;
}

/** The version of the package `name` that the module at `resolved` (a path or file URL) belongs to. */
export function versionAt(resolved: string, name: string): string {
  let dir = dirname(resolved.startsWith("file:") ? fileURLToPath(resolved) : resolved);
  for (;;) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.name === name && typeof pkg.version === "string") return pkg.version;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json of ${name} above ${resolved}`);
    dir = up;
  }
}

const scripted = fileURLToPath(new URL("../fixtures/scripted-server.mjs", import.meta.url));
const CLIENT_INFO = { name: "sdk-canary", version: "1.0.0" };

/**
 * A view of a real instance in which `field` is missing as the library sees it (`get` answers
 * `undefined`, `in` answers false), while the SDK's own methods keep running on the instance
 * itself (they are bound to it), as they would in a release that keeps the field elsewhere.
 */
function without<T extends object>(instance: T, field: string): T {
  return new Proxy(instance, {
    get(target, key) {
      if (key === field) return undefined;
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
    has: (target, key) => key !== field && Reflect.has(target, key),
    set: (target, key, value) => Reflect.set(target, key, value, target),
  });
}

/** The scripted stdio server's stderr `RECV` lines, parsed. */
function recorded(transport: object) {
  const lines: string[] = [];
  let buffer = "";
  (transport as { stderr?: NodeJS.ReadableStream | null }).stderr?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    lines.push(...parts);
  });
  return () =>
    lines
      .filter((line) => line.startsWith("RECV "))
      .map((line) => JSON.parse(line.slice(5)) as { method?: string; id?: number; params?: { requestId?: unknown } });
}

async function until(predicate: () => boolean, withinMs = 3_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (predicate()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return predicate();
}

/**
 * A raw Streamable HTTP server on 127.0.0.1 for the fallback tests (no SDK server package, so it
 * runs in the Node 22 folder too): answers `initialize` with JSON, `tools/call` "silent" with an
 * SSE stream that never sends the response, every notification with 202, GET/DELETE with 405.
 * Counts the `tools/call` streams that closed before they ended.
 */
async function rawHttpServer() {
  const seen = { calls: 0, closedEarly: 0, cancels: 0 };
  const server = http.createServer((req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      const message = JSON.parse(body) as { id?: number; method?: string; params?: { protocolVersion?: string } };
      if (message.method === "initialize") {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: message.id,
            result: {
              protocolVersion: message.params?.protocolVersion,
              capabilities: { tools: {} },
              serverInfo: { name: "raw", version: "1" },
            },
          }),
        );
      } else if (message.method === "tools/call") {
        seen.calls++;
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        res.write(": open\n\n");
        res.on("close", () => {
          if (!res.writableFinished) seen.closedEarly++;
        });
      } else {
        if (message.method === "notifications/cancelled") seen.cancels++;
        res
          .writeHead(message.id === undefined ? 202 : 200, { "content-type": "application/json" })
          .end(message.id === undefined ? undefined : JSON.stringify({ jsonrpc: "2.0", id: message.id, result: {} }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
  return {
    url,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Defines the canaries and fallback tests for each SDK line given. */
export function defineSdkCanaries(packages: readonly SdkPackage[]): void {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  for (const sdk of packages) {
    const label = `${sdk.line} ${sdk.name}@${sdk.version}`;
    const expectShapes = (report: ReturnType<typeof probeSdkShapes>) => {
      expect(report.checks.length, `${label}: the probe made no check`).toBeGreaterThan(0);
      for (const check of report.checks) {
        expect
          .soft(
            check.found,
            `${label}: ${check.field} ${check.expected ? "moved or changed" : "appeared"} (src/sdk/private.ts; fallback: ${check.fallback})`,
          )
          .toBe(check.expected);
      }
      expect(report.moved, `${label}: shapes not where src/sdk/private.ts expects them`).toEqual([]);
    };
    const stdio = (): TransportObject =>
      new sdk.StdioClientTransport({ command: process.execPath, args: [scripted], stderr: "pipe" } as never);

    describe(`canaries: ${label}`, () => {
      it("Client: the Protocol's per-request maps and timer clean-up, and the line marker", () => {
        expectShapes(probeSdkShapes(sdk.line, { client: new sdk.Client(CLIENT_INFO as never) }));
      });

      it("StdioClientTransport: the child's stdin once started, none before", async () => {
        const transport = stdio();
        expect(stdioChildStdin(transport), `${label}: StdioClientTransport._process is set before start()`).toBeUndefined();
        await transport.start();
        cleanups.push(() => transport.close());
        expectShapes(probeSdkShapes(sdk.line, { stdio: transport }));
      });

      it("StreamableHTTPClientTransport: the fetch slot, the URL and the line marker", () => {
        const fetch: typeof globalThis.fetch = (input, init) => globalThis.fetch(input, init);
        const url = new URL("http://127.0.0.1:9/mcp");
        expectShapes(
          probeSdkShapes(sdk.line, {
            http: new sdk.StreamableHTTPClientTransport(url, { fetch } as never),
            httpFetch: fetch,
            httpUrl: url,
          }),
        );
        // Without a fetch option the slot is still there, empty (the SDK then uses the global fetch).
        const plain = new sdk.StreamableHTTPClientTransport(url);
        expect(hasFetchSlot(plain), `${label}: StreamableHTTPClientTransport._fetch is not assigned without a fetch option`).toBe(true);
        expect(transportFetch(plain)).toBeUndefined();
      });

      if (sdk.WebStandardServerTransport !== undefined) {
        const Server = sdk.WebStandardServerTransport;
        it("WebStandardStreamableHTTPServerTransport: the map of request id to response stream", () => {
          expectShapes(probeSdkShapes(sdk.line, { legacyServer: new Server({ sessionIdGenerator: () => "s" } as never) }));
        });
      }

      it("Client: a request in flight is under Number(id) in _responseHandlers, and the dropper removes it once", async () => {
        const transport = stdio();
        const sent: unknown[] = [];
        const send = transport.send.bind(transport);
        transport.send = (message, options) => {
          sent.push((message as { id?: unknown }).id);
          return send(message, options);
        };
        const client = new sdk.Client(CLIENT_INFO as never) as {
          connect(t: unknown): Promise<void>;
          callTool(...args: unknown[]): Promise<unknown>;
          close(): Promise<void>;
        };
        await client.connect(transport);
        cleanups.push(() => client.close());
        const before = sent.length;
        const pending = client.callTool({ name: "silent", arguments: {} });
        pending.catch(() => undefined); // never settles once dropped; closing the client forgets it
        expect(await until(() => sent.length > before), `${label}: tools/call was not sent`).toBe(true);
        const id = sent.at(-1) as number;
        expect(typeof id, `${label}: no request id was sent`).toBe("number");
        const drop = sdkWaitDropper(client);
        expect(drop(String(id)), `${label}: Client._responseHandlers has no entry under Number(id) for a request in flight`).toBe(true);
        expect(drop(id), `${label}: the dropper removed nothing the first time`).toBe(false);
      });

      /** A connected client over stdio whose sends note whether the SDK's timer for the request was set up by then. */
      const timerWatched = async () => {
        const transport = stdio();
        const client = new sdk.Client(CLIENT_INFO as never) as {
          connect(t: unknown): Promise<void>;
          callTool(...args: unknown[]): Promise<unknown>;
          close(): Promise<void>;
          _timeoutInfo?: Map<unknown, unknown>;
        };
        const atSend: Array<{ id: unknown; timer: boolean }> = [];
        const send = transport.send.bind(transport);
        transport.send = (message, options) => {
          const id = (message as { id?: unknown }).id;
          atSend.push({ id, timer: client._timeoutInfo?.has(id) === true });
          return send(message, options);
        };
        await client.connect(transport);
        cleanups.push(() => client.close());
        return { client, atSend };
      };

      it("Client: a request's timer is set up by the time it is sent, and _cleanupTimeout(Number(id)) clears it (sdkTimerDropper)", async () => {
        const { client, atSend } = await timerWatched();
        const before = atSend.length;
        client.callTool({ name: "silent", arguments: {} }).catch(() => undefined);
        expect(await until(() => atSend.length > before), `${label}: tools/call was not sent`).toBe(true);
        const { id, timer } = atSend.at(-1)!;
        expect(timer, `${label}: Client._timeoutInfo had no timer under the id when the request was sent`).toBe(true);
        sdkTimerDropper(client)!(String(id));
        expect(client._timeoutInfo?.has(id), `${label}: _cleanupTimeout(Number(id)) left the timer`).toBe(false);
      });

      it("Client: request() sets its timer up through _setupTimeout(id, timeout, ...), so a request of the marked timeout gets none (sdkTimerSkipper)", async () => {
        const { client, atSend } = await timerWatched();
        expect(sdkTimerSkipper(client, 2_147_483_646), `${label}: Client._setupTimeout is not a function`).toBe(true);
        // v1 takes (params, resultSchema, options), v2 (params, options).
        const call = (timeout: number) =>
          (label.startsWith("v1")
            ? client.callTool({ name: "silent", arguments: {} }, undefined, { timeout })
            : client.callTool({ name: "silent", arguments: {} }, { timeout })
          ).catch(() => undefined);
        for (const [timeout, expected] of [
          [2_147_483_646, false],
          [60_000, true],
        ] as const) {
          const before = atSend.length;
          void call(timeout);
          expect(await until(() => atSend.length > before), `${label}: tools/call was not sent`).toBe(true);
          expect(atSend.at(-1)!.timer, `${label}: a request of timeout ${timeout} had ${expected ? "no" : "a"} timer when sent`).toBe(
            expected,
          );
        }
      });
    });

    describe(`fallbacks: ${label}`, () => {
      it("Client without its Protocol maps: the wait ends through the SDK's _onresponse, and the call settles as cancelled", async () => {
        for (const hidden of [undefined, "_responseHandlers"] as const) {
          const transport = stdio();
          const received = recorded(transport);
          const client = new sdk.Client(CLIENT_INFO as never) as {
            connect(t: unknown): Promise<void>;
            close(): Promise<void>;
            onerror?: (e: Error) => void;
          };
          const errors: Error[] = [];
          client.onerror = (error) => void errors.push(error);
          const mcp = withCancellation(
            (hidden === undefined ? client : without(client, hidden)) as never,
            stdioCancellation(transport as never),
          );
          await client.connect(mcp.transport);
          cleanups.push(() => client.close());
          const onresponse = vi.spyOn(client as unknown as { _onresponse: (r: unknown) => void }, "_onresponse");
          const controller = new AbortController();
          const call = mcp.callTool({ name: "silent", arguments: {} }, { signal: controller.signal });
          expect(await until(() => received().some((m) => m.method === "tools/call"))).toBe(true);
          controller.abort();
          await expect(call).rejects.toBeInstanceOf(CallCancelledError);
          // The drop path never hands the SDK a message; the fallback hands it exactly one.
          expect(onresponse, `${label}: hidden=${hidden}`).toHaveBeenCalledTimes(hidden === undefined ? 0 : 1);
          expect(errors).toEqual([]);
          expect(mcp.pendingCount).toBe(0);
          expect(await until(() => received().filter((m) => m.method === "notifications/cancelled").length === 1)).toBe(true);
          await client.close();
        }
      });

      it("StdioClientTransport without _process: the cancel goes through the transport's send, once", async () => {
        for (const hidden of [undefined, "_process"] as const) {
          const transport = stdio();
          const received = recorded(transport);
          const sends: string[] = [];
          const send = transport.send.bind(transport);
          transport.send = (message, options) => {
            sends.push(String((message as { method?: unknown }).method));
            return send(message, options);
          };
          const client = new sdk.Client(CLIENT_INFO as never) as { connect(t: unknown): Promise<void>; close(): Promise<void> };
          const view = hidden === undefined ? transport : without(transport, hidden);
          expect(stdioChildStdin(view)).toBeUndefined(); // not started yet, either way
          const mcp = withCancellation(client as never, stdioCancellation(view as never));
          await client.connect(mcp.transport);
          cleanups.push(() => client.close());
          expect(stdioChildStdin(view) === undefined, `${label}: hidden=${hidden}`).toBe(hidden !== undefined);
          const controller = new AbortController();
          const call = mcp.callTool({ name: "silent", arguments: {} }, { signal: controller.signal });
          expect(await until(() => received().some((m) => m.method === "tools/call"))).toBe(true);
          controller.abort();
          await expect(call).rejects.toBeInstanceOf(CallCancelledError);
          expect(await until(() => received().filter((m) => m.method === "notifications/cancelled").length === 1)).toBe(true);
          // Either way the line goes through the transport's own send (a wrapper on it sees every
          // message); with the stdin the adapter also follows the line's write.
          expect(sends.filter((m) => m === "notifications/cancelled").length, `${label}: hidden=${hidden}`).toBe(1);
          expect(mcp.records()[0]?.cancel?.mechanism).toBe("notification");
          await client.close();
        }
      });

      if (sdk.line === "v1") {
        it("StreamableHTTPClientTransport without _fetch: the adapter asks for the fetch, and takes the one passed", () => {
          const url = new URL("http://127.0.0.1:9/mcp");
          const transport = new sdk.StreamableHTTPClientTransport(url, { fetch: cancellableFetch() } as never);
          expect(() => streamableHttpCancellation(transport as never)).not.toThrow();
          delete (transport as { _fetch?: unknown })._fetch;
          expect(hasFetchSlot(transport)).toBe(false);
          let refused: unknown;
          try {
            streamableHttpCancellation(transport as never);
          } catch (error) {
            refused = error;
          }
          expect(refused).toBeInstanceOf(InvalidOptionError);
          expect((refused as InvalidOptionError).option).toBe("transport");
          expect(() => streamableHttpCancellation(transport as never, { fetch: cancellableFetch() })).not.toThrow();
        });
      } else {
        it("StreamableHTTPClientTransport without _fetch: nothing is written, and a cancelled call still settles", async () => {
          const server = await rawHttpServer();
          cleanups.push(() => server.close());
          for (const hidden of [false, true]) {
            const transport = new sdk.StreamableHTTPClientTransport(server.url);
            if (hidden) delete (transport as { _fetch?: unknown })._fetch; // a real delete: the SDK falls back to the global fetch
            const client = new sdk.Client(CLIENT_INFO as never) as { connect(t: unknown): Promise<void>; close(): Promise<void> };
            const mcp = withCancellation(client as never, streamableHttpCancellation(transport as never));
            // The v2 write (marking the failures of the library's notification POSTs) happens only where the slot is.
            expect(hasFetchSlot(transport), `${label}: hidden=${hidden}`).toBe(!hidden);
            if (!hidden) expect(typeof transportFetch(transport)).toBe("function");
            await client.connect(mcp.transport);
            cleanups.push(() => client.close());
            const calls = server.seen.calls;
            const controller = new AbortController();
            const call = mcp.callTool({ name: "silent", arguments: {} }, { signal: controller.signal });
            expect(await until(() => server.seen.calls === calls + 1)).toBe(true);
            controller.abort();
            await expect(call).rejects.toBeInstanceOf(CallCancelledError);
            expect(mcp.pendingCount).toBe(0);
            await client.close();
          }
        });
      }
    });
  }
}
