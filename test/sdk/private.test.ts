import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, vi } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport as InMemoryV1 } from "@modelcontextprotocol/sdk/inMemory.js";
import { Client as ClientV2, InMemoryTransport as InMemoryV2 } from "@modelcontextprotocol/client";
import { McpServer as McpServerV2 } from "@modelcontextprotocol/server";
import { CallCancelledError, CallTimeoutError, withCancellation } from "../../src/index.js";
import { sdkTimerDropper, sdkTimerSkipper, sdkWaitDropper } from "../../src/sdk/private.js";

// A settled call's SDK-side wait is ended by dropping the SDK's per-request state directly
// (no local error response through the SDK's zod checks); a client without that state gets
// `false`, and the wire falls back to the local error response.

type Internals = {
  _responseHandlers: Map<unknown, unknown>;
  _progressHandlers: Map<unknown, unknown>;
  _timeoutInfo: Map<unknown, unknown>;
  _onresponse: (response: unknown) => void;
};

function sizes(client: object) {
  const c = client as Internals;
  return { responses: c._responseHandlers.size, progress: c._progressHandlers.size, timeouts: c._timeoutInfo.size };
}

describe("sdkWaitDropper", () => {
  it("drops the handler, progress handler and timer the SDK keeps for the id (keyed by Number(id))", () => {
    const cleaned: number[] = [];
    const fake = {
      _responseHandlers: new Map([[7, () => {}]]),
      _progressHandlers: new Map([[7, () => {}]]),
      _cleanupTimeout(id: number) {
        cleaned.push(id);
      },
    };
    const drop = sdkWaitDropper(fake);
    expect(drop("7")).toBe(true);
    expect(fake._responseHandlers.size).toBe(0);
    expect(fake._progressHandlers.size).toBe(0);
    expect(cleaned).toEqual([7]);
    expect(drop(7)).toBe(false); // already gone: the wire falls back (and the SDK reports nothing)
  });

  it("answers false for a client without that state (another SDK version)", () => {
    expect(sdkWaitDropper({})("1")).toBe(false);
    expect(sdkWaitDropper({ _responseHandlers: {}, _progressHandlers: new Map(), _cleanupTimeout() {} })(1)).toBe(false);
  });
});

describe("sdkTimerDropper", () => {
  it("clears the SDK's timer for the id (keyed by Number(id)); undefined for a client without _cleanupTimeout", () => {
    const cleaned: number[] = [];
    const drop = sdkTimerDropper({
      _cleanupTimeout(id: number) {
        cleaned.push(id);
      },
    });
    drop!("7");
    drop!(8);
    expect(cleaned).toEqual([7, 8]);
    expect(sdkTimerDropper({})).toBeUndefined();
    expect(sdkTimerDropper({ _cleanupTimeout: 1 })).toBeUndefined();
  });
});

describe("sdkTimerSkipper", () => {
  it("sets up no timer for the marked delay, hands every other request to the SDK's _setupTimeout with its five arguments", () => {
    const setups: unknown[][] = [];
    const fake = {
      name: "fake",
      _setupTimeout(this: { name: string }, ...args: unknown[]) {
        setups.push([this.name, ...args]);
      },
    };
    expect(sdkTimerSkipper(fake, 1234)).toBe(true);
    const onTimeout = () => {};
    fake._setupTimeout(1, 1234, undefined, onTimeout, false);
    fake._setupTimeout(2, 60_000, 90_000, onTimeout, true);
    fake._setupTimeout(3, 1235, undefined, onTimeout);
    expect(setups).toEqual([
      ["fake", 2, 60_000, 90_000, onTimeout, true],
      ["fake", 3, 1235, undefined, onTimeout, undefined],
    ]);
    // Installed once: the same marker again is true (another wrapper of the client) and wraps nothing more.
    expect(sdkTimerSkipper(fake, 1234)).toBe(true);
    fake._setupTimeout(4, 60_000, undefined, onTimeout, false);
    expect(setups).toHaveLength(3);
    // Another marker on a client that skips one already: refused (its requests get the SDK's timer).
    expect(sdkTimerSkipper(fake, 99)).toBe(false);
  });

  it("answers false where it cannot: no _setupTimeout function (another SDK version), or a client that takes no property", () => {
    expect(sdkTimerSkipper({}, 1234)).toBe(false);
    expect(sdkTimerSkipper({ _setupTimeout: 1 }, 1234)).toBe(false);
    const frozen = Object.freeze({ _setupTimeout() {} });
    expect(sdkTimerSkipper(frozen, 1234)).toBe(false);
  });
});

async function silentV1() {
  const [clientSide, serverSide] = InMemoryV1.createLinkedPair();
  serverSide.onmessage = (message) => {
    const m = message as { id?: number; method?: string; params?: { protocolVersion?: string } };
    if (m.method === "initialize") {
      void serverSide.send({
        jsonrpc: "2.0",
        id: m.id!,
        result: { protocolVersion: m.params!.protocolVersion!, capabilities: { tools: {} }, serverInfo: { name: "s", version: "1" } },
      });
    }
  };
  await serverSide.start();
  const client = new ClientV1({ name: "t", version: "1" });
  return { client, transport: clientSide };
}

async function silentV2() {
  const [clientSide, serverSide] = InMemoryV2.createLinkedPair();
  const server = new McpServerV2({ name: "s", version: "1" });
  server.registerTool("never", {}, async () => new Promise<never>(() => {}));
  await server.connect(serverSide);
  const client = new ClientV2({ name: "t", version: "1" });
  return { client, transport: clientSide };
}

describe("a cancelled or timed-out call ends the SDK's wait without a message through the SDK", () => {
  for (const [line, open] of [
    ["v1", silentV1],
    ["v2", silentV2],
  ] as const) {
    it(`${line}: the SDK's maps are empty and its _onresponse never ran`, async () => {
      const { client, transport } = await open();
      const errors: Error[] = [];
      client.onerror = (error) => void errors.push(error);
      const mcp = withCancellation(client as never, transport as never);
      await client.connect(mcp.transport as never);
      const onresponse = vi.spyOn(client as unknown as Internals, "_onresponse");
      const controller = new AbortController();
      const aborted = mcp.callTool({ name: "never", arguments: {} }, { signal: controller.signal });
      const timedOut = mcp.callTool({ name: "never", arguments: {} }, { timeoutMs: 20 });
      await new Promise((resolve) => setTimeout(resolve, 5));
      controller.abort();
      await expect(aborted).rejects.toBeInstanceOf(CallCancelledError);
      await expect(timedOut).rejects.toBeInstanceOf(CallTimeoutError);
      expect(sizes(client)).toEqual({ responses: 0, progress: 0, timeouts: 0 });
      expect(onresponse).not.toHaveBeenCalled();
      expect(errors).toEqual([]);
      expect(mcp.pendingCount).toBe(0);
      await client.close();
    });
  }
});

// Issue 30 (heap per pending call): the SDK's own timer of a call's request, set to the longest
// delay so that it never decides, is dropped as the request goes out; the call's deadlines are
// its limits. The SDK's progress and response handling find no entry, as for any id without one.
describe("a pending call holds no SDK timer: its own deadlines are its limits", () => {
  for (const [line, open] of [
    ["v1", silentV1],
    ["v2", silentV2],
  ] as const) {
    it(`${line}: the SDK's timer map is empty while calls are pending, its handlers are not, and the calls still time out`, async () => {
      const { client, transport } = await open();
      const errors: Error[] = [];
      client.onerror = (error) => void errors.push(error);
      // The SDK's own _setupTimeout, watched: the library's calls with a limit never get as far as setting a timer up.
      const setups: unknown[] = [];
      const own = client as unknown as { _setupTimeout(...args: unknown[]): unknown };
      const sdkSetup = own._setupTimeout;
      own._setupTimeout = function (this: unknown, ...args: unknown[]) {
        setups.push(args[1]);
        return sdkSetup.apply(this, args);
      };
      const mcp = withCancellation(client as never, transport as never);
      await client.connect(mcp.transport as never);
      const before = sizes(client).timeouts; // what the SDK's own requests (initialize) left: none
      expect(before).toBe(0);
      const setupsBefore = setups.length; // initialize's
      const calls = Array.from({ length: 5 }, (_, i) =>
        mcp.callTool({ name: "never", arguments: {} }, { timeoutMs: 400 + i }).then(
          () => null,
          (error: unknown) => error,
        ),
      );
      await vi.waitFor(() => expect(sizes(client).responses).toBe(5), { interval: 5 });
      expect(sizes(client).timeouts).toBe(before);
      for (const call of calls) expect(await call).toBeInstanceOf(CallTimeoutError);
      expect(sizes(client)).toEqual({ responses: 0, progress: 0, timeouts: 0 });
      expect(mcp.pendingCount).toBe(0);
      expect(setups.length).toBe(setupsBefore);
      // A call with no limit of its own (both Infinity, asked for) keeps the SDK's timer as the last word.
      const unlimited = mcp
        .callTool({ name: "never", arguments: {} }, { timeoutMs: Number.POSITIVE_INFINITY, maxTotalTimeoutMs: Number.POSITIVE_INFINITY })
        .catch(() => undefined);
      await vi.waitFor(() => expect(sizes(client).responses).toBe(1), { interval: 5 });
      expect(sizes(client).timeouts).toBe(1);
      expect(setups.slice(setupsBefore)).toEqual([2_147_483_647]); // the longest delay Node allows
      const cancelled = new AbortController();
      const limited = mcp.callTool({ name: "never", arguments: {} }, { signal: cancelled.signal }).catch(() => undefined);
      await vi.waitFor(() => expect(sizes(client).responses).toBe(2), { interval: 5 });
      expect(sizes(client).timeouts).toBe(1); // the default timeoutMs is a limit: never set up
      expect(setups.length).toBe(setupsBefore + 1);
      cancelled.abort();
      await limited;
      if (line === "v1") {
        // A request made on the SDK directly (the silent peer never answers it) keeps its timer: the library drops only its calls'.
        const direct = (client as unknown as ClientV1).listTools(undefined, { timeout: 60_000 }).catch(() => undefined);
        await vi.waitFor(() => expect(sizes(client).timeouts).toBe(2), { interval: 5 });
        await client.close();
        await direct;
      } else await client.close();
      await unlimited;
      expect(errors).toEqual([]);
    });
  }
});

// Issue 19, item 3: src/sdk/private.ts is the one module that reads an SDK's private shape.
describe("no file in src/ but src/sdk/private.ts reads an SDK's private field or sniffs its line", () => {
  const root = fileURLToPath(new URL("../../src/", import.meta.url));
  // `x._field`, `{ _field?: ... }` (a cast's shape), and the markers of the SDK lines.
  const PRIVATE =
    /\._(?!meta\b)[a-z]\w*|[{;,]\s*_(?!meta\b)[a-z]\w*\??\s*:|getProtocolEra|isToolTaskRequired|hasPerRequestStream\s*===|"stderr"\s+in\b/g;
  const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
    );

  it("finds such reads where they are (the check can fail)", () => {
    expect(code(`const a = (t as { _process?: unknown })._process; // _url\nb.getProtocolEra;`).match(PRIVATE)).toEqual([
      "{ _process?:",
      "._process",
      "getProtocolEra",
    ]);
    expect(readFileSync(join(root, "sdk/private.ts"), "utf8").match(PRIVATE)?.length).toBeGreaterThan(5);
  });

  it("finds none elsewhere", () => {
    const found = sources(root)
      .filter((file) => relative(root, file) !== join("sdk", "private.ts"))
      .flatMap((file) => (code(readFileSync(file, "utf8")).match(PRIVATE) ?? []).map((hit) => `${relative(root, file)}: ${hit}`));
    expect(found).toEqual([]);
  });
});
