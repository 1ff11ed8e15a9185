import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CallTimeoutError, InvalidOptionError } from "../../src/index.js";
import { connectPeer, settleOf } from "../helpers/peer.js";

// A call's options are read once, as the SDKs read theirs (property access: a getter's value,
// an inherited one), and what is validated is what the call uses, through callTool, callTool with
// `task` and request alike. An outside tester's: a class instance with a getter `timeoutMs` and a
// field left undefined was validated on a copy without the getter and ran with -5, 1.5 or NaN;
// request() copied its options with a spread and ran such a call with the defaults.

class Budget {
  // A field a TypeScript class often declares and leaves unset.
  signal: AbortSignal | undefined = undefined;
  readonly #ms: number;
  constructor(ms: number) {
    this.#ms = ms;
  }
  get timeoutMs(): number {
    return this.#ms;
  }
}

const TOOL = { name: "slow", arguments: {} };

describe("call options read once", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a getter's invalid value is refused naming the option, nothing sent, through callTool and request alike", async () => {
    const { mcp, peer } = await connectPeer();
    for (const ms of [-5, 1.5, Number.NaN]) {
      await expect(mcp.callTool(TOOL, new Budget(ms) as never)).rejects.toMatchObject({ name: "InvalidOptionError", option: "timeoutMs" });
      await expect(mcp.request({ method: "tools/call", params: TOOL }, new Budget(ms) as never)).rejects.toBeInstanceOf(InvalidOptionError);
    }
    expect(peer.requests("tools/call")).toHaveLength(0);
    expect(mcp.pendingCount).toBe(0);
  });

  it("a getter's valid value is the call's limit, through callTool, callTool with task: undefined, and request", async () => {
    const { mcp, peer } = await connectPeer();
    const withTask = Object.assign(new Budget(150), { task: undefined });
    const calls = [
      settleOf(mcp.callTool(TOOL, new Budget(150) as never)),
      settleOf(mcp.callTool(TOOL, withTask as never)),
      settleOf(mcp.request({ method: "tools/call", params: TOOL }, new Budget(150) as never)),
      // Inherited, as the SDK's own `options?.timeout` would read it.
      settleOf(mcp.callTool(TOOL, Object.create({ timeoutMs: 150 }) as never)),
    ];
    await vi.advanceTimersByTimeAsync(149);
    expect(calls.map((c) => c.status)).toEqual(["pending", "pending", "pending", "pending"]);
    await vi.advanceTimersByTimeAsync(2);
    for (const call of calls) {
      expect(call.status).toBe("rejected");
      expect(call.error).toBeInstanceOf(CallTimeoutError);
      expect((call.error as CallTimeoutError).timeoutMs).toBe(150);
    }
    expect(peer.cancels()).toHaveLength(4);
    expect(mcp.pendingCount).toBe(0);
  });

  it("the SDK's names and unknown keys are refused however they are given: a getter, inherited, own", async () => {
    const { mcp, peer } = await connectPeer();
    class SdkStyle {
      get timeout(): number {
        return 150;
      }
    }
    for (const options of [new SdkStyle(), Object.create({ timeout: 150 }), { timeout: 150 }]) {
      await expect(mcp.callTool(TOOL, options as never)).rejects.toThrow(/"timeoutMs" instead of the SDK's "timeout"/);
      await expect(mcp.request({ method: "tools/call", params: TOOL }, options as never)).rejects.toThrow(
        /"timeoutMs" instead of the SDK's "timeout"/,
      );
    }
    await expect(mcp.callTool(TOOL, Object.create({ timeoutMS: 150 }) as never)).rejects.toThrow(
      /unknown option "timeoutMS"; use "timeoutMs"/,
    );
    expect(peer.requests("tools/call")).toHaveLength(0);
  });

  it("a getter is read once: the value validated is the value used", async () => {
    const { mcp } = await connectPeer();
    let reads = 0;
    const options = {
      get timeoutMs() {
        reads++;
        return reads === 1 ? 150 : -1;
      },
    };
    const call = settleOf(mcp.callTool(TOOL, options));
    await vi.advanceTimersByTimeAsync(151);
    expect(call.status).toBe("rejected");
    expect((call.error as CallTimeoutError).timeoutMs).toBe(150);
    expect(reads).toBe(1);
  });

  it("a signal getter answering a new signal on each read is read once, alone or beside other options, with awaitVerification on or off: the signal read is the one that cancels", async () => {
    for (const awaitVerification of [false, true]) {
      const { mcp } = await connectPeer({ awaitVerification });
      for (const extra of [{}, { timeoutMs: 5_000 }]) {
        const controllers: AbortController[] = [];
        const options = {
          get signal() {
            controllers.push(new AbortController());
            return controllers.at(-1)!.signal;
          },
          ...extra,
        };
        const call = settleOf(mcp.callTool(TOOL, options));
        await vi.advanceTimersByTimeAsync(10);
        expect(controllers).toHaveLength(1);
        controllers[0]!.abort(new Error("stop"));
        await vi.advanceTimersByTimeAsync(10);
        // The caller's own abort is never waited for (awaitVerification too): it is that signal's.
        expect(call.status).toBe("rejected");
        expect(call.error).toMatchObject({ name: "CallCancelledError" });
        expect(controllers).toHaveLength(1);
      }
    }
  });

  it("an option for...in does not list (non-enumerable, a Proxy's get) is read as the SDK reads it, with or without a signal beside it", async () => {
    const { mcp, peer } = await connectPeer();
    const signal = new AbortController().signal;
    const hidden = (extra: object) => Object.defineProperty({ ...extra }, "timeoutMs", { value: 150, enumerable: false });
    const hiddenGetter = Object.defineProperty({}, "timeoutMs", { get: () => 150, enumerable: false });
    const proxied = new Proxy({}, { get: (_target, key) => (key === "timeoutMs" ? 150 : undefined) });
    const calls = [hidden({}), hidden({ signal }), hiddenGetter, proxied].map((options) => settleOf(mcp.callTool(TOOL, options as never)));
    calls.push(settleOf(mcp.request({ method: "tools/call", params: TOOL }, hidden({ signal }) as never)));
    await vi.advanceTimersByTimeAsync(149);
    expect(calls.map((c) => c.status)).toEqual(["pending", "pending", "pending", "pending", "pending"]);
    await vi.advanceTimersByTimeAsync(2);
    for (const call of calls) expect((call.error as CallTimeoutError).timeoutMs).toBe(150);
    expect(peer.cancels()).toHaveLength(5);
    // An invalid value given so is refused naming it, nothing sent.
    const invalid = Object.defineProperty({ signal }, "timeoutMs", { value: -1, enumerable: false });
    await expect(mcp.callTool(TOOL, invalid as never)).rejects.toMatchObject({ name: "InvalidOptionError", option: "timeoutMs" });
    // So is the SDK's name, and any other option: each one read, none left to the defaults.
    const sdkName = Object.defineProperty({ signal }, "timeout", { value: 150, enumerable: false });
    await expect(mcp.callTool(TOOL, sdkName as never)).rejects.toThrow(/"timeoutMs" instead of the SDK's "timeout"/);
    expect(peer.requests("tools/call")).toHaveLength(5);
    expect(mcp.pendingCount).toBe(0);
  });

  it("params whose name getter (or a request whose method getter) throws: the call rejects with that error, never throws, nothing sent", async () => {
    const { mcp, peer } = await connectPeer();
    const boom = new Error("name getter boom");
    const params = {
      get name(): string {
        throw boom;
      },
      arguments: {},
    };
    const request = {
      get method(): string {
        throw boom;
      },
      params: TOOL,
    };
    const sdk = mcp.sdkClient as unknown as { callTool(p: unknown): Promise<unknown>; request(r: unknown, s: unknown): Promise<unknown> };
    const made: unknown[] = [];
    expect(() => {
      made.push(mcp.callTool(params));
      made.push(sdk.callTool(params));
      made.push(mcp.request(request as never));
      made.push(sdk.request(request, {}));
    }).not.toThrow();
    for (const call of made) await expect(call).rejects.toBe(boom);
    expect(peer.requests("tools/call")).toHaveLength(0);
    expect(mcp.pendingCount).toBe(0);
  });
});
