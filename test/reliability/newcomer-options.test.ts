import { afterEach, describe, expect, it, vi } from "vitest";
import { CallCancelledError, CallTimeoutError, InvalidOptionError } from "../../src/index.js";
import { abortSubscribers } from "../../src/utils/abort-link.js";
import { connectPeer, flush } from "../helpers/peer.js";
import { z } from "zod";

type Mcp = Awaited<ReturnType<typeof connectPeer>>["mcp"];
/** The handle as JavaScript sees it: no types to refuse the SDK's argument order. */
type Js = { callTool: (...args: unknown[]) => Promise<unknown>; request: (...args: unknown[]) => Promise<unknown> };

// Mistakes a new user makes (issue 13, item 7): a duration in seconds by mistake, and a call
// that should stop on either of two signals (a session-wide one and its own).

afterEach(() => vi.restoreAllMocks());

describe("durations given in seconds by mistake", () => {
  it("timeoutMs: 30 is accepted with one warning that says the unit and the fix; once per option", async () => {
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    const { mcp, peer } = await connectPeer();
    peer.onRequest((m) => {
      if (m.id !== undefined) void peer.result(m.id);
    });
    await mcp.callTool({ name: "x" }, { timeoutMs: 30 });
    await mcp.callTool({ name: "x" }, { timeoutMs: 40 });
    await mcp.callTool({ name: "x" }, { timeoutMs: 100, maxTotalTimeoutMs: 50 });
    await mcp.callTool({ name: "x" }, { timeoutMs: 30_000 });
    expect(warn.mock.calls.map((c) => c[0])).toEqual([
      "timeoutMs is 30 ms (given as timeoutMs, or as the SDK's request option timeout). Durations are in milliseconds: for 30 seconds write 30000. (Shown once per option.)",
      "maxTotalTimeoutMs is 50 ms (given as maxTotalTimeoutMs, or as the SDK's request option maxTotalTimeout). Durations are in milliseconds: for 50 seconds write 50000. (Shown once per option.)",
    ]);
    expect(warn.mock.calls[0]![1]).toMatchObject({ type: "McpCancellableWarning", code: "MCP_CANCELLABLE_SHORT_DURATION" });
  });

  it("verifyTimeoutMs: 5 (5 s meant) is accepted with one warning naming it; a verify that runs out says which option ended it", async () => {
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    const { mcp } = await connectPeer();
    // Never answered: the call times out, its verify read hangs past verifyTimeoutMs.
    const error = (await mcp
      .callTool({ name: "x" }, { timeoutMs: 100, verifyTimeoutMs: 5, verify: () => new Promise(() => {}) })
      .catch((e: unknown) => e)) as CallTimeoutError;
    expect(error).toBeInstanceOf(CallTimeoutError);
    const verified = await error.verification;
    expect(verified.verification?.error).toBe("verify did not answer within 5 ms (verifyTimeoutMs)");
    await mcp.callTool({ name: "x" }, { timeoutMs: 100, verifyTimeoutMs: 6, verify: () => "applied" }).catch(() => {});
    const texts = warn.mock.calls.map((c) => String(c[0])).filter((text) => text.startsWith("verifyTimeoutMs"));
    expect(texts).toEqual([
      "verifyTimeoutMs is 5 ms (given as verifyTimeoutMs). Durations are in milliseconds: for 5 seconds write 5000. (Shown once per option.)",
    ]);
  });

  it("a refused duration's message quotes the value received", async () => {
    const { mcp } = await connectPeer();
    for (const [value, shown] of [
      [30.5, "received 30.5"],
      ["30s", 'received "30s"'],
      [Number.NaN, "received NaN"],
      [null, "received null"],
    ] as const) {
      const error = (await mcp.callTool({ name: "x" }, { timeoutMs: value as never }).catch((e: unknown) => e)) as InvalidOptionError;
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error.message).toContain(shown);
    }
  });

  it("a refused boolean's message quotes the value received too (an outside tester's: it did not)", async () => {
    const { mcp } = await connectPeer();
    const error = (await mcp
      .callTool({ name: "x" }, { resetTimeoutOnProgress: "yes" as never })
      .catch((e: unknown) => e)) as InvalidOptionError;
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.option).toBe("resetTimeoutOnProgress");
    expect(error.message).toContain('"resetTimeoutOnProgress" must be true or false; received "yes"');
  });

  it("a refused reason's message quotes the value received too (an outside tester's: reason: 5 said only 'must be a string')", async () => {
    const { mcp } = await connectPeer();
    const error = (await mcp.callTool({ name: "x" }, { reason: 5 as never }).catch((e: unknown) => e)) as InvalidOptionError;
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.option).toBe("reason");
    expect(error.message).toContain('"reason" must be a string; received 5');
  });

  it.each([
    ["verifiers", [], '"verifiers" must be an object of verify functions by tool name; received an array'],
    ["verifiers", "write", '"verifiers" must be an object of verify functions by tool name; received "write"'],
    ["observer", 5, '"observer" must be an object with a start(call) method; received 5'],
    ["timers", "fake", '"timers" must be { setTimeout, clearTimeout }; received "fake"'],
  ])("a refused client-wide %s quotes the value received (%j)", async (option, value, message) => {
    const error = await connectPeer({ [option]: value } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).option).toBe(option);
    expect((error as Error).message).toContain(message);
  });
});

describe("several signals per call", () => {
  it("signal: [session, own]: either one cancels, the cause is the reason of the one that aborted, and both are released", async () => {
    const { mcp, peer } = await connectPeer();
    const session = new AbortController();
    const calls = [new AbortController(), new AbortController()].map((own) => ({
      own,
      promise: mcp.callTool({ name: "slow" }, { signal: [session.signal, own.signal] }).catch((e: unknown) => e),
    }));
    await flush();
    expect(abortSubscribers(session.signal)).toBe(2);
    calls[1]!.own.abort("user pressed stop");
    const stopped = (await calls[1]!.promise) as CallCancelledError;
    expect(stopped).toBeInstanceOf(CallCancelledError);
    expect(stopped.cause).toBe("user pressed stop");
    expect(abortSubscribers(session.signal)).toBe(1);
    expect(abortSubscribers(calls[1]!.own.signal)).toBe(0);
    session.abort("session over");
    expect(((await calls[0]!.promise) as CallCancelledError).cause).toBe("session over");
    expect(abortSubscribers(calls[0]!.own.signal)).toBe(0);
    await flush();
    expect(peer.received.filter((m) => m.method === "notifications/cancelled")).toHaveLength(2);
  });

  it("an already aborted signal anywhere in the list cancels before sending; a list with a non-signal is refused", async () => {
    const { mcp, peer } = await connectPeer();
    const done = AbortSignal.abort("already");
    const error = (await mcp
      .callTool({ name: "x" }, { signal: [new AbortController().signal, done] })
      .catch((e: unknown) => e)) as CallCancelledError;
    expect(error.cause).toBe("already");
    const bad = (await mcp.callTool({ name: "x" }, { signal: [done, {} as AbortSignal] }).catch((e: unknown) => e)) as InvalidOptionError;
    expect(bad.option).toBe("signal");
    await flush();
    expect(peer.received.map((m) => m.method)).toEqual(["initialize", "notifications/initialized"]);
  });
});

describe("mistakes from the second new-user trial", () => {
  it("stdioCancellation given options as a second argument (as streamableHttpCancellation takes them) names them: it takes none", async () => {
    const { stdioCancellation } = await import("../../src/adapters/stdio/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const transport = new StdioClientTransport({ command: process.execPath, args: ["-e", ""] });
    const given = () => (stdioCancellation as (t: unknown, o: unknown) => unknown)(transport, { flushTimeoutMs: 500 });
    expect(given).toThrow(InvalidOptionError);
    expect(given).toThrow(
      /stdioCancellation takes the transport only, no options; received a second argument: an Object with "flushTimeoutMs"\. On stdio .* there is no flushTimeoutMs to set/,
    );
    expect(() => (stdioCancellation as (t: unknown, o: unknown) => unknown)(transport, undefined)).not.toThrow();
  });

  it("stdioCancellation given the server's parameters, or nothing, names the transport and shows the call to make", async () => {
    const { stdioCancellation } = await import("../../src/adapters/stdio/index.js");
    const params = () => stdioCancellation({ command: "node", args: ["server.mjs"] } as never);
    expect(params).toThrow(InvalidOptionError);
    expect(params).toThrow(/not its parameters: stdioCancellation\(new StdioClientTransport\(\{ command, args \}\)\)/);
    for (const wrong of [null, undefined, "node server.mjs"]) {
      let error: unknown;
      try {
        stdioCancellation(wrong as never);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect((error as InvalidOptionError).option).toBe("transport");
    }
  });

  it("an option that differs only in case is named with the one meant", async () => {
    const { mcp } = await connectPeer();
    const error = (await mcp.callTool({ name: "x" }, { timeoutMS: 300 } as never).catch((e: unknown) => e)) as InvalidOptionError;
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.option).toBe("timeoutMS");
    expect(error.message).toBe('call options: unknown option "timeoutMS"; use "timeoutMs" (not "timeoutMS")');
  });

  it("a client-wide option given per call says where it goes (an outside tester's: only 'unknown option')", async () => {
    const { mcp } = await connectPeer();
    const error = (await mcp.callTool({ name: "x" }, { awaitVerification: true } as never).catch((e: unknown) => e)) as InvalidOptionError;
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.option).toBe("awaitVerification");
    expect(error.message).toBe(
      'call options: unknown option "awaitVerification"; "awaitVerification" is a client-wide option (withCancellation or attachCancellation options)',
    );
  });

  it("a per-call option given client-wide says where it goes, and for verify names verifiers (an outside tester's: only 'unknown option')", async () => {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { InMemoryTransport } = await import("@modelcontextprotocol/sdk/inMemory.js");
    const { withCancellation } = await import("../../src/index.js");
    const [transport] = InMemoryTransport.createLinkedPair();
    const refused = (options: object) => {
      try {
        withCancellation(new Client({ name: "c", version: "1" }), transport, options as never);
      } catch (error) {
        return error as InvalidOptionError;
      }
      throw new Error("not refused");
    };
    expect(refused({ verify: () => "applied" })).toMatchObject({
      option: "verify",
      message:
        'withCancellation options: unknown option "verify"; "verify" is a per-call option (pass it to each call: callTool(params, { verify }); "verifiers" ({ toolName: verify }) gives tools their verify client-wide)',
    });
    expect(refused({ task: true }).message).toMatch(
      /"task" is a per-call option \(pass it to each call: callTool\(params, \{ task \}\)\)$/,
    );
    // The adapter's own options: where they go.
    expect(refused({ flushTimeoutMs: 100 }).message).toMatch(
      /"flushTimeoutMs" is an option of the adapter: streamableHttpCancellation\(transport, \{ flushTimeoutMs \}\)$/,
    );
    const { mcp } = await connectPeer();
    const perCall = (await mcp.callTool({ name: "x" }, { notificationTimeoutMs: 100 } as never).catch((e: unknown) => e)) as Error;
    expect(perCall.message).toMatch(/"notificationTimeoutMs" is an option of the adapter: streamableHttpCancellation/);
    expect(refused({ signal: new AbortController().signal }).message).toMatch(
      /"signal" is a per-call option \(pass it to each call: callTool\(params, \{ signal \}\)\)$/,
    );
  });

  it('callTool("name") says params is an object and shows its shape', async () => {
    const { mcp } = await connectPeer();
    const error = (await mcp.callTool("echo" as never).catch((e: unknown) => e)) as InvalidOptionError;
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.option).toBe("params");
    expect(error.message).toContain('{ name: "echo", arguments: { ... } }');
  });

  it("the AI SDK transport's option errors name cancellableTransport, not withCancellation", async () => {
    const { cancellableTransport } = await import("../../src/integrations/ai-sdk/index.js");
    const { InMemoryTransport } = await import("@modelcontextprotocol/sdk/inMemory.js");
    const [transport] = InMemoryTransport.createLinkedPair();
    expect(() => cancellableTransport(transport, { timeout: 300 } as never)).toThrow(
      'cancellableTransport options: unknown option "timeout"; use "timeoutMs" instead of the SDK\'s "timeout"',
    );
    // A Date or a Map is no options object (it would pass as {}, every default, and hide the mistake).
    for (const options of [new Date(0), new Map()]) {
      expect(() => cancellableTransport(transport, options as never)).toThrow(
        expect.objectContaining({ name: "InvalidOptionError", option: "options", message: expect.stringMatching(/received a (Date|Map)/) }),
      );
    }
  });
});

describe("a framework's own timeout arrives as the caller's signal", () => {
  it("AbortSignal.timeout: a timeout (CallTimeoutError REQUEST_TIMEOUT, trigger timeout), never a user abort; the signal's reason is the cause (issue 28, item 4)", async () => {
    const { mcp, peer } = await connectPeer();
    peer.onRequest(() => {}); // never answers
    const error = (await mcp
      .callTool({ name: "x" }, { signal: AbortSignal.timeout(50), timeoutMs: 5_000 })
      .catch((e: unknown) => e)) as CallTimeoutError;
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(error.code).toBe("REQUEST_TIMEOUT");
    expect(error.message).toMatch(
      /^tools\/call timed out after \d+ ms \(the caller's signal timed out: a TimeoutError, such as AbortSignal\.timeout or a framework's own timeout; request id \d+\) and was cancelled; whether it ran is unknown \(outcome unverified\): check before calling it again$/,
    );
    expect(error.timeoutMs).toBeGreaterThanOrEqual(45);
    expect(error.timeoutMs).toBeLessThan(5_000);
    expect((error.cause as Error).name).toBe("TimeoutError");
    expect(error.record.cancel).toMatchObject({
      trigger: "timeout",
      reason: `Request timed out after ${error.timeoutMs} ms (the caller's signal)`,
    });
    const plain = new AbortController();
    const call = mcp.callTool({ name: "x" }, { signal: plain.signal });
    await flush();
    plain.abort();
    expect(((await call.catch((e: unknown) => e)) as Error).message).toMatch(/^tools\/call was cancelled by the caller \(request id/);
  });
});

describe("the SDK's argument order, from JavaScript where no type error catches it", () => {
  // An outside tester's: `mcp.callTool(params, undefined, { timeout: 200, signal })` (the v1 SDK's
  // order) ran on the 60 s default with its signal ignored; a result schema second gave an error
  // about keys named `def` and `type`. Each is refused, naming `options`, nothing sent, no record.
  const CallToolResultSchema = z.object({ content: z.array(z.unknown()) });
  it.each([
    [
      "callTool(params, undefined, { timeout, signal })",
      "callTool",
      (mcp: Mcp, signal: AbortSignal) => (mcp as unknown as Js).callTool({ name: "x" }, undefined, { timeout: 200, signal }),
    ],
    [
      "callTool(params, schema, { timeoutMs })",
      "callTool",
      (mcp: Mcp) => (mcp as unknown as Js).callTool({ name: "x" }, CallToolResultSchema, { timeoutMs: 200 }),
    ],
    ["callTool(params, schema)", "callTool", (mcp: Mcp) => mcp.callTool({ name: "x" }, CallToolResultSchema as never)],
    [
      "request(request, undefined, { timeoutMs })",
      "request",
      (mcp: Mcp) => (mcp as unknown as Js).request({ method: "ping" }, undefined, { timeoutMs: 200 }),
    ],
    [
      "request(request, schema, { timeoutMs })",
      "request",
      (mcp: Mcp) => (mcp as unknown as Js).request({ method: "ping" }, CallToolResultSchema, { timeoutMs: 200 }),
    ],
  ] as const)("%s is refused with InvalidOptionError naming options; nothing is sent", async (_, call, make) => {
    const { mcp, peer, records } = await connectPeer();
    const controller = new AbortController();
    const error = (await (make as (mcp: Mcp, signal: AbortSignal) => Promise<unknown>)(mcp, controller.signal).catch(
      (e: unknown) => e,
    )) as InvalidOptionError;
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.option).toBe("options");
    expect(error.message).toMatch(
      new RegExp(`^${call}: (a third argument was given|a result schema was given as the options), as in the SDK's ${call}\\(`),
    );
    expect(error.message).toContain("{ timeoutMs, maxTotalTimeoutMs, signal, ... }, durations in ms");
    await flush();
    expect([...peer.requests("tools/call"), ...peer.requests("ping")]).toHaveLength(0);
    expect(records).toHaveLength(0);
    expect(mcp.pendingCount).toBe(0);
  });

  it("an explicit undefined third argument is no argument: the call runs", async () => {
    const { mcp, peer } = await connectPeer();
    peer.onRequest((m) => {
      if (m.id !== undefined) void peer.result(m.id);
    });
    await expect((mcp as unknown as Js).callTool({ name: "x" }, { timeoutMs: 5_000 }, undefined)).resolves.toBeDefined();
  });
});
