import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidOptionError, MAX_REASON_LENGTH, isInvalidOptionError, withCancellation } from "../../src/index.js";
import { connectPeer, flush } from "../helpers/peer.js";
import { abortSubscribers } from "../../src/utils/abort-link.js";
import { watchProcess } from "../helpers/reliability.js";

// Bad input from the caller: every option, given a wrong value, is refused with an
// InvalidOptionError whose `option` names it and whose message names it, and nothing goes on the
// wire. Per-call options reject the call's promise (callTool never throws synchronously);
// client-wide options make withCancellation throw.

const process$ = watchProcess();
beforeAll(process$.start);
afterAll(() => {
  process$.stop();
  expect(process$.seen()).toEqual([]); // no unhandled rejection, no uncaught exception
});

const fn = () => {};
const notAnInteger = [0.5, 1.5, Number.NaN, "100", null, true, -Infinity, 1e300];

/** Per-call options and wrong values for each. */
const CALL_OPTIONS: Record<string, unknown[]> = {
  timeoutMs: [0, -1, 2 ** 31, ...notAnInteger],
  maxTotalTimeoutMs: [0, -5, 2 ** 31, ...notAnInteger],
  resetTimeoutOnProgress: ["yes", 1, 0, null, {}],
  // A test double with no `removeEventListener`, or an `aborted` that is no boolean (an outside
  // tester's: such a signal passed, the request went out and the call was lost).
  signal: [
    {},
    "signal",
    { aborted: false },
    { aborted: false, addEventListener() {} },
    { aborted: "no", addEventListener() {}, removeEventListener() {} },
    null,
    new AbortController(),
    42,
  ],
  reason: [42, {}, null, ["a"], Symbol("reason")],
  onprogress: ["fn", {}, null, 1],
  verify: ["fn", {}, null, 1],
  verifyTimeoutMs: [0, -1, 2 ** 31, ...notAnInteger],
  verifyDelayMs: [-1, Infinity, 2 ** 31, ...notAnInteger],
};

/** Client-wide options and wrong values for each. */
const CLIENT_OPTIONS: Record<string, unknown[]> = {
  timeoutMs: [0, -1, 1.5, "60000", null],
  maxTotalTimeoutMs: [0, 2 ** 31, Number.NaN],
  resetTimeoutOnProgress: ["true", 1],
  reason: [7, {}],
  verifyTimeoutMs: [0, 0.5],
  verifyDelayMs: [-1, 2.5],
  onRecord: ["log", 1, {}, null],
  onAnomaly: [1, {}, "warn"],
  maxRecords: [-1, 1.5, "10", Infinity, Number.NaN, 2 ** 31],
  maxTombstones: [0, -1, 2.5, Infinity, "100"],
  clock: [1, "now", {}],
  timers: ["timers", null, 5],
};

describe("per-call options", () => {
  for (const [option, values] of Object.entries(CALL_OPTIONS)) {
    it(`${option}: every wrong value is refused naming "${option}", and nothing is sent`, async () => {
      const { mcp, peer, records } = await connectPeer();
      peer.onRequest((m) => {
        if (m.id !== undefined) void peer.result(m.id); // a value wrongly accepted fails fast, not by hanging
      });
      for (const value of values) {
        const error = await mcp.callTool({ name: "x" }, { [option]: value } as never).then(
          () => expect.unreachable(`${option}=${String(value)} was accepted`),
          (e: unknown) => e,
        );
        expect(error, `${option}=${String(value)}`).toBeInstanceOf(InvalidOptionError);
        expect(isInvalidOptionError(error)).toBe(true);
        expect((error as InvalidOptionError).option, `${option}=${String(value)}`).toBe(option);
        expect((error as InvalidOptionError).code).toBe("INVALID_OPTION");
        expect((error as Error).message).toContain(`"${option}"`);
      }
      // the same through request()
      const viaRequest = await mcp
        .request({ method: "resources/read", params: { uri: "a://b" } }, { [option]: values[0] } as never)
        .catch((e: unknown) => e);
      expect((viaRequest as InvalidOptionError).option).toBe(option);
      await flush();
      expect(peer.received.map((m) => m.method)).toEqual(["initialize", "notifications/initialized"]);
      expect(records).toEqual([]); // a refused call never started: no run record
      expect(mcp.pendingCount).toBe(0);
    });
  }

  it("timeout messages give the unit and the bounds", async () => {
    const { mcp } = await connectPeer();
    const error = (await mcp.callTool({ name: "x" }, { timeoutMs: 0 }).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/ms/);
    expect(error.message).toContain("2147483647");
  });

  // Was a library bug (fixed): verifyDelayMs refuses Infinity (it must be an integer from 0 to 2_147_483_647,
  // as its docs say), but the error message tells the caller Infinity is allowed.
  it("verifyDelayMs: the message does not offer Infinity, which verifyDelayMs refuses", async () => {
    const { mcp } = await connectPeer();
    const error = (await mcp.callTool({ name: "x" }, { verifyDelayMs: Infinity }).catch((e: unknown) => e)) as Error;
    expect((error as InvalidOptionError).option).toBe("verifyDelayMs");
    expect(error.message).not.toContain("or Infinity"); // the bounds; the message quotes the value received
    expect(error.message).toContain("received Infinity");
  });

  it("unknown option names are refused, naming the first unknown one; all are in the message", async () => {
    const { mcp, peer } = await connectPeer();
    for (const [options, first, all] of [
      [{ timeout: 100 }, "timeout", ["timeout"]], // the SDK's name, not ours
      [{ timeoutMS: 100 }, "timeoutMS", ["timeoutMS"]],
      [{ timeOutMs: 1, zzz: 2 }, "timeOutMs", ["timeOutMs", "zzz"]],
      [{ maxRecords: 5 }, "maxRecords", ["maxRecords"]], // a client-wide option given per call
      [{ onRecord: fn }, "onRecord", ["onRecord"]],
    ] as const) {
      const error = (await mcp.callTool({ name: "x" }, options as never).catch((e: unknown) => e)) as InvalidOptionError;
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error.option).toBe(first);
      for (const name of all) expect(error.message).toContain(`"${name}"`);
    }
    expect(peer.requests("tools/call")).toEqual([]);
  });

  it("the SDK's option names are refused with the name to use instead", async () => {
    const { mcp, peer } = await connectPeer();
    const error = (await mcp
      .callTool({ name: "x" }, { timeout: 100, maxTotalTimeout: 200 } as never)
      .catch((e: unknown) => e)) as InvalidOptionError;
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.message).toContain(
      `use "timeoutMs" instead of the SDK's "timeout", "maxTotalTimeoutMs" instead of the SDK's "maxTotalTimeout"`,
    );
    const other = (await mcp.callTool({ name: "x" }, { constructor: 1 } as never).catch((e: unknown) => e)) as InvalidOptionError;
    expect(other.message).not.toContain("instead");
    expect(peer.requests("tools/call")).toEqual([]);
  });

  it('options that are not an object are refused as "options"', async () => {
    const { mcp, peer } = await connectPeer();
    for (const options of ["fast", 42, true, null, fn, Symbol("o")]) {
      const error = (await mcp.callTool({ name: "x" }, options as never).catch((e: unknown) => e)) as InvalidOptionError;
      expect(error, String(options)).toBeInstanceOf(InvalidOptionError);
      expect(error.option).toBe("options");
      expect(error.message).toContain("options");
    }
    expect(peer.requests("tools/call")).toEqual([]);
  });

  // Was a library bug (fixed): an array passed the `typeof === "object"` check and is refused by zod
  // with the path-less issue, so `option` is "call options" instead of "options" like every
  // other non-object, and the message reads `call options: "call options" Invalid input: ...`.
  it('an array as options is refused as "options" like any other non-object', async () => {
    const { mcp } = await connectPeer();
    const error = (await mcp.callTool({ name: "x" }, [] as never).catch((e: unknown) => e)) as InvalidOptionError;
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.option).toBe("options");
  });

  it('a Date, a Map or another built-in as options is refused as "options", not taken for {} (every default)', async () => {
    const { mcp, peer } = await connectPeer();
    for (const [options, name] of [
      [new Date(0), "a Date"],
      [new Map([["timeoutMs", 5]]), "a Map"],
      [new AbortController().signal, "an AbortSignal"],
    ] as const) {
      const error = (await mcp.callTool({ name: "x" }, options as never).catch((e: unknown) => e)) as InvalidOptionError;
      expect(error, name).toBeInstanceOf(InvalidOptionError);
      expect(error.option).toBe("options");
      expect(error.message).toContain(`received ${name}`);
    }
    expect(peer.requests("tools/call")).toEqual([]);
    // request() too (its options are spread before the check would see them otherwise).
    for (const options of [new Date(0), new Map()]) {
      const error = (await mcp.request({ method: "tools/list" }, options as never).catch((e: unknown) => e)) as InvalidOptionError;
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error.option).toBe("options");
    }
    expect(peer.requests("tools/list")).toEqual([]);
  });

  it("a class instance is an options object, its own Symbol.toStringTag too, and one from another realm", async () => {
    const { mcp, peer } = await connectPeer();
    peer.onRequest((m) => {
      if (m.id !== undefined) void peer.result(m.id, { content: [] });
    });
    class CallOptions {
      timeoutMs = 5_000;
      get [Symbol.toStringTag]() {
        return "CallOptions";
      }
    }
    const { runInNewContext } = await import("node:vm");
    for (const options of [new CallOptions(), Object.create(null), runInNewContext("({ timeoutMs: 5000 })")]) {
      await expect(mcp.callTool({ name: "x" }, options as never)).resolves.toBeDefined();
    }
    expect(peer.requests("tools/call")).toHaveLength(3);
  });

  it("undefined values mean the default, not an error", async () => {
    const { mcp, peer } = await connectPeer();
    peer.onRequest((m) => {
      if (m.id !== undefined) void peer.result(m.id);
    });
    const options = Object.fromEntries(Object.keys(CALL_OPTIONS).map((k) => [k, undefined]));
    await expect(mcp.callTool({ name: "x" }, options)).resolves.toMatchObject({ content: [{ text: "done" }] });
  });

  it("params: a missing or non-string tool name is refused as params.name; request() without a method as request.method", async () => {
    const { mcp, peer } = await connectPeer();
    for (const params of [undefined, null, {}, { name: 42 }, { name: null }, { arguments: {} }, 7]) {
      const error = (await mcp.callTool(params as never).catch((e: unknown) => e)) as InvalidOptionError;
      expect(error, JSON.stringify(params)).toBeInstanceOf(InvalidOptionError);
      expect(error.option).toBe("params.name");
      expect(error.message).toContain("params.name");
    }
    // A tool name alone, where params go: "params" itself is at fault (newcomer-options.test.ts).
    const named = (await mcp.callTool("tool" as never).catch((e: unknown) => e)) as InvalidOptionError;
    expect(named.option).toBe("params");
    for (const request of [undefined, null, {}, { method: 42 }, { params: {} }]) {
      const error = (await mcp.request(request as never).catch((e: unknown) => e)) as InvalidOptionError;
      expect(error.option, JSON.stringify(request)).toBe("request.method");
      expect(error.message).toContain("request.method");
    }
    const init = (await mcp.request({ method: "initialize" }).catch((e: unknown) => e)) as InvalidOptionError;
    expect(init.option).toBe("request.method");
    expect(init.message).toContain("initialize");
    await flush();
    expect(peer.received.map((m) => m.method)).toEqual(["initialize", "notifications/initialized"]);
  });

  it("bad input never throws synchronously out of callTool/request: the error is the promise's", async () => {
    const { mcp } = await connectPeer();
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = mcp.callTool(null as never, 5 as never);
    }).not.toThrow();
    await expect(promise).rejects.toBeInstanceOf(InvalidOptionError);
    expect(() => {
      promise = mcp.request({ method: "tools/list" }, { timeoutMs: -1 });
    }).not.toThrow();
    await expect(promise).rejects.toBeInstanceOf(InvalidOptionError);
  });

  it("a signal of the caller's own whose listener methods throw: the call still settles once, and nothing is left linked", async () => {
    const { mcp, peer } = await connectPeer();
    peer.onRequest((m) => void peer.result(m.id));
    // removeEventListener throws at the settle: the call is answered all the same (before, it never settled).
    const throwsOnRemove = {
      aborted: false,
      addEventListener() {},
      removeEventListener() {
        throw new Error("remove failed");
      },
    };
    await expect(mcp.callTool({ name: "x" }, { signal: throwsOnRemove as never })).resolves.toMatchObject({ content: [{ type: "text" }] });
    // addEventListener throws at the link: its error is the call's, before any send.
    const throwsOnAdd = {
      aborted: false,
      addEventListener() {
        throw new Error("add failed");
      },
      removeEventListener() {},
    };
    await expect(mcp.callTool({ name: "y" }, { signal: throwsOnAdd as never })).rejects.toThrow("add failed");
    // Second of several: the first one linked is let go (an outside tester's: it kept its
    // listener, and its abort later settled the refused call again, an unhandled rejection).
    const session = new AbortController();
    await expect(mcp.callTool({ name: "z" }, { signal: [session.signal, throwsOnAdd as never] })).rejects.toThrow("add failed");
    expect(abortSubscribers(session.signal)).toBe(0);
    session.abort(); // nothing of the refused call's is left to settle again
    await flush();
    expect(peer.requests("tools/call").map((m) => (m.params as { name: string }).name)).toEqual(["x"]);
    expect(mcp.pendingCount).toBe(0);
    // Each refused call has its record (failed, never sent), so an observer's span ends too.
    expect(mcp.records().map((r) => `${r.name} ${r.status} ${r.outcome}`)).toEqual([
      "x succeeded completed",
      "y failed not-sent",
      "z failed not-sent",
    ]);
  });

  it("a 5 MB reason is accepted but at most MAX_REASON_LENGTH characters of it go on the wire", async () => {
    const { mcp, peer } = await connectPeer();
    const reason = "r".repeat(5 * 1024 * 1024);
    const controller = new AbortController();
    const call = mcp.callTool({ name: "x" }, { signal: controller.signal, reason });
    await flush();
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: "CANCELLED" });
    await flush();
    const [cancel] = peer.cancels();
    const sent = (cancel!.params as { reason: string }).reason;
    expect(sent.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
    expect(sent.startsWith("rrrr")).toBe(true);
    expect(mcp.records()[0]!.cancel!.reason.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
  });
});

describe("abort reasons that cannot be read", () => {
  const unreadable = (): Array<[string, () => unknown]> => [
    [
      "a reason whose name getter throws",
      () =>
        Object.defineProperty(new Error("stop"), "name", {
          get() {
            throw new Error("name getter boom");
          },
        }),
    ],
    [
      "a revoked Proxy (every read throws)",
      () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return proxy;
      },
    ],
  ];
  for (const [name, make] of unreadable()) {
    for (const forwardAbortReason of [false, true]) {
      it(`${name}${forwardAbortReason ? ", forwarded" : ""}: the call is cancelled once, with its record, aborted in flight or before (an outside tester's: the process died of an uncaught exception in the abort listener)`, async () => {
        const { mcp, peer } = await connectPeer({ forwardAbortReason });
        peer.onRequest(() => {}); // never answers
        const controller = new AbortController();
        const call = mcp.callTool({ name: "x" }, { signal: controller.signal });
        await flush();
        controller.abort(make());
        await expect(call).rejects.toMatchObject({ name: "CallCancelledError", code: "CANCELLED" });
        const before = AbortSignal.abort(make());
        await expect(mcp.callTool({ name: "y" }, { signal: before })).rejects.toMatchObject({ code: "CANCELLED" });
        await flush();
        expect(mcp.records().map((r) => [r.name, r.status, r.cancel?.trigger, r.outcome])).toEqual([
          ["x", "cancelled", "aborted", "unverified"],
          ["y", "cancelled", "aborted", "not-sent"],
        ]);
        expect(peer.cancels()).toHaveLength(1);
        expect(mcp.pendingCount).toBe(0);
      });
    }
  }
});

describe("signals whose abort cannot be read", () => {
  it("a real signal whose reason getter throws, a test double whose aborted getter throws once aborted, each alone and in an array: the call is cancelled once, with its record (a second pass: the process died in the abort listener)", async () => {
    const { mcp, peer } = await connectPeer();
    peer.onRequest(() => {}); // never answers
    const unreadableReason = (): { signal: AbortSignal; fire: () => void } => {
      const controller = new AbortController();
      Object.defineProperty(controller.signal, "reason", {
        get() {
          throw new Error("reason unreadable");
        },
      });
      return { signal: controller.signal, fire: () => controller.abort() };
    };
    const unreadableAborted = (): { signal: AbortSignal; fire: () => void } => {
      const listeners = new Set<(event: unknown) => void>();
      let fired = false;
      const signal = {
        get aborted() {
          if (fired) throw new Error("aborted unreadable");
          return false;
        },
        reason: undefined,
        addEventListener: (_type: string, listener: (event: unknown) => void) => void listeners.add(listener),
        removeEventListener: (_type: string, listener: (event: unknown) => void) => void listeners.delete(listener),
      } as unknown as AbortSignal;
      return {
        signal,
        fire: () => {
          fired = true;
          for (const listener of listeners) listener({ type: "abort" });
        },
      };
    };
    const kinds = [unreadableReason, unreadableAborted];
    let n = 0;
    for (const make of kinds) {
      for (const inArray of [false, true]) {
        const { signal, fire } = make();
        const call = mcp.callTool({ name: `t${n++}` }, { signal: inArray ? [new AbortController().signal, signal] : signal });
        await flush();
        fire();
        await expect(call).rejects.toMatchObject({ name: "CallCancelledError", code: "CANCELLED" });
      }
    }
    expect(mcp.records().map((r) => [r.status, r.cancel?.trigger])).toEqual(Array.from({ length: 4 }, () => ["cancelled", "aborted"]));
    expect(peer.cancels()).toHaveLength(4);
    expect(mcp.pendingCount).toBe(0);
  });
});

describe("client-wide options", () => {
  /** A client and an unconnected transport whose far side records anything sent. */
  function fresh() {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const sent: unknown[] = [];
    serverTransport.onmessage = (m) => sent.push(m);
    return { client: new Client({ name: "bot", version: "1.0.0" }), transport: clientTransport, sent };
  }

  for (const [option, values] of Object.entries(CLIENT_OPTIONS)) {
    it(`${option}: every wrong value makes withCancellation throw naming "${option}"`, () => {
      for (const value of values) {
        const { client, transport, sent } = fresh();
        let error: unknown;
        try {
          withCancellation(client, transport, { [option]: value } as never);
        } catch (e) {
          error = e;
        }
        expect(error, `${option}=${String(value)}`).toBeInstanceOf(InvalidOptionError);
        expect((error as InvalidOptionError).option, `${option}=${String(value)}`).toBe(option);
        expect((error as Error).message).toContain(`"${option}"`);
        expect(sent).toEqual([]);
      }
    });
  }

  it("maxRecords and maxTombstones quote the value they refused, as the ms options do", () => {
    for (const [option, value, quoted] of [
      ["maxRecords", -1, "received -1"],
      ["maxRecords", "10", 'received "10"'],
      ["maxTombstones", 2.5, "received 2.5"],
      ["timeoutMs", 1.5, "received 1.5"],
    ] as const) {
      const { client, transport } = fresh();
      let error: unknown;
      try {
        withCancellation(client, transport, { [option]: value } as never);
      } catch (e) {
        error = e;
      }
      expect((error as Error).message, option).toContain(quoted);
    }
  });

  it("timers must carry both functions: the missing one is named", () => {
    for (const [timers, missing] of [
      [{}, "timers.setTimeout"],
      [{ setTimeout: fn }, "timers.clearTimeout"],
      [{ clearTimeout: fn }, "timers.setTimeout"],
      [{ setTimeout: 1, clearTimeout: fn }, "timers.setTimeout"],
    ] as const) {
      const { client, transport } = fresh();
      let error: InvalidOptionError | undefined;
      try {
        withCancellation(client, transport, { timers: timers as never });
      } catch (e) {
        error = e as InvalidOptionError;
      }
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error!.option).toBe(missing);
      expect(error!.message).toContain(missing);
    }
  });

  it("per-call-only options and unknown names are refused client-wide, named", () => {
    for (const [options, name] of [
      [{ signal: new AbortController().signal }, "signal"],
      [{ onprogress: fn }, "onprogress"],
      [{ verify: fn }, "verify"],
      [{ timeout: 1_000 }, "timeout"],
      [{ maxTombstone: 5 }, "maxTombstone"],
    ] as const) {
      const { client, transport } = fresh();
      let error: InvalidOptionError | undefined;
      try {
        withCancellation(client, transport, options as never);
      } catch (e) {
        error = e as InvalidOptionError;
      }
      expect(error, name).toBeInstanceOf(InvalidOptionError);
      expect(error!.option).toBe(name);
      expect(error!.message).toContain(`"${name}"`);
    }
  });

  it("options, client and transport that are not objects are refused, named", () => {
    for (const options of ["x", 42, null, true, fn, new Date(0), new Map()]) {
      const { client, transport } = fresh();
      expect(() => withCancellation(client, transport, options as never)).toThrow(
        expect.objectContaining({ name: "InvalidOptionError", option: "options" }),
      );
    }
    for (const client of [null, undefined, {}, "client", { callTool: 1 }]) {
      expect(() => withCancellation(client as never, fresh().transport)).toThrow(
        expect.objectContaining({ name: "InvalidOptionError", option: "client" }),
      );
    }
    for (const transport of [null, undefined, {}, "stdio", { send: fn }, { start: fn }]) {
      expect(() => withCancellation(fresh().client, transport as never)).toThrow(
        expect.objectContaining({ name: "InvalidOptionError", option: "transport" }),
      );
    }
  });

  it("a throwing onRecord or onAnomaly does not change how calls settle", async () => {
    const { mcp, peer, errors } = await connectPeer({
      onRecord: () => {
        throw new Error("log sink down");
      },
      onAnomaly: () => {
        throw new Error("anomaly sink down");
      },
    });
    peer.onRequest((m) => {
      if (m.id === undefined) return;
      void peer.progress(999, 1); // unknown token: an anomaly, whose hook throws
      void peer.result(m.id);
    });
    await expect(mcp.callTool({ name: "x" })).resolves.toMatchObject({ content: [{ text: "done" }] });
    await expect(mcp.callTool({ name: "x" }, { timeoutMs: 5_000 })).resolves.toBeDefined();
    expect(errors).toEqual([]);
  });
});

describe("signal: an empty array", () => {
  it("is no signal (docs/api.md): the call is sent and answered as without one", async () => {
    const { mcp, peer } = await connectPeer();
    peer.onRequest((message) => void peer.result(message.id));
    await expect(mcp.callTool({ name: "x" }, { signal: [] })).resolves.toMatchObject({ content: [{ text: "done" }] });
    expect(peer.requests("tools/call")).toHaveLength(1);
  });
});
