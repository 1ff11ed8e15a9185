import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isPlainResponse, isRequestId, requestIdSchema, responseSchema } from "../../src/wire/messages.js";

// The wire recognises well-formed responses without zod (the per-response path); zod stays the
// judge of everything else. The fast checks must never call a message well-formed that zod
// refuses, and must agree with zod on request ids.

const RUNS = Number(process.env.FC_RUNS_MESSAGES ?? 5_000);

const id = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.constant(null), fc.constant(undefined), fc.boolean(), fc.constant(2 ** 60));
const loose = fc.oneof(fc.anything(), fc.dictionary(fc.string(), fc.anything()), fc.array(fc.anything()), fc.constant(undefined));
const response = fc.record(
  {
    jsonrpc: fc.oneof(fc.constant("2.0"), fc.constant("1.0"), fc.anything()),
    id,
    result: loose,
    // A member more: the v1 SDK's envelopes are strict, so such a response never reaches its handler.
    extra: fc.anything(),
    error: fc.oneof(
      loose,
      fc.record(
        { code: fc.oneof(fc.integer(), fc.double(), fc.string()), message: fc.oneof(fc.string(), fc.anything()) },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);

/** Responses one step from well-formed (a member more, or not): the edge the checks must get right. */
const nearlyWellFormed = fc.oneof(
  fc.record(
    {
      jsonrpc: fc.constant("2.0"),
      id: fc.oneof(fc.integer(), fc.string()),
      result: fc.dictionary(fc.string(), fc.anything()),
      extra: fc.anything(),
    },
    { requiredKeys: ["jsonrpc", "id", "result"] },
  ),
  fc.record(
    {
      jsonrpc: fc.constant("2.0"),
      id: fc.oneof(fc.integer(), fc.string()),
      error: fc.record({ code: fc.integer(), message: fc.string(), data: fc.anything() }, { requiredKeys: ["code", "message"] }),
      result: fc.constant(undefined),
      extra: fc.anything(),
    },
    { requiredKeys: ["jsonrpc", "id", "error"] },
  ),
);
const anyResponse = fc.oneof(response, nearlyWellFormed);

describe("fast response checks agree with the zod schemas", () => {
  it(`isRequestId is requestIdSchema (${RUNS} runs)`, () => {
    fc.assert(
      fc.property(fc.oneof(id, fc.anything()), (value) => {
        expect(isRequestId(value)).toBe(requestIdSchema.safeParse(value).success);
      }),
      { numRuns: RUNS },
    );
  });

  it(`isPlainResponse(m) implies responseSchema accepts m (${RUNS} runs)`, () => {
    let plain = 0;
    fc.assert(
      fc.property(anyResponse, (message) => {
        if (isPlainResponse(message)) {
          plain++;
          expect(responseSchema.safeParse(message).success).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
    expect(plain).toBeGreaterThan(0);
  });

  it(`responseSchema accepts m only when the v1 SDK's JSONRPCResponseSchema does (${RUNS} runs): the wire never takes a response the SDK drops`, async () => {
    const { JSONRPCResponseSchema } = await import("@modelcontextprotocol/sdk/types.js");
    let accepted = 0;
    fc.assert(
      fc.property(anyResponse, (message) => {
        if (responseSchema.safeParse(message).success) {
          accepted++;
          expect(JSONRPCResponseSchema.safeParse(message).success).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
    expect(accepted).toBeGreaterThan(0);
  });

  it("recognises the shapes SDKs send, and leaves odd ones to zod", () => {
    expect(isPlainResponse({ jsonrpc: "2.0", id: 1, result: { content: [] }, extra: 1 } as never)).toBe(false);
    expect(responseSchema.safeParse({ jsonrpc: "2.0", id: 1, result: { content: [] }, extra: 1 }).success).toBe(false);
    expect(isPlainResponse({ jsonrpc: "2.0", id: 1, result: { content: [] } })).toBe(true);
    expect(isPlainResponse({ jsonrpc: "2.0", id: "a", error: { code: -32602, message: "Invalid params", data: 1 } })).toBe(true);
    expect(isPlainResponse({ jsonrpc: "2.0", id: 1, result: [] })).toBe(false);
    expect(isPlainResponse({ jsonrpc: "2.0", id: 1, result: {}, error: { code: 1, message: "x" } })).toBe(false);
    expect(isPlainResponse({ jsonrpc: "2.0", id: 1.5, result: {} })).toBe(false);
    expect(isPlainResponse({ jsonrpc: "2.0", id: 1, error: { code: 1.5, message: "x" } })).toBe(false);
    expect(isPlainResponse({ id: 1, result: {} })).toBe(false);
  });
});

describe("call options holding only a signal skip the zod parse", () => {
  it(`isSignalOnly(o) implies the call options schema accepts o (${RUNS} runs)`, async () => {
    const { isSignalOnly, callOptionsSchema, parseOptions } = await import("../../src/options/schemas.js");
    const value = fc.oneof(fc.constant(new AbortController().signal), fc.constant(undefined), fc.anything());
    const optionsArb = fc.oneof(fc.dictionary(fc.constantFrom("signal", "timeoutMs", "reason", "other"), value), fc.anything());
    let fast = 0;
    fc.assert(
      fc.property(optionsArb, (options) => {
        if (!isSignalOnly(options)) return;
        fast++;
        // The schema accepts it: the fast path only skips work.
        expect(() => parseOptions(callOptionsSchema, options, "call options")).not.toThrow();
      }),
      { numRuns: RUNS },
    );
    expect(fast).toBeGreaterThan(0);
    expect(isSignalOnly({ signal: new AbortController().signal })).toBe(true);
    expect(isSignalOnly({ signal: { aborted: false } })).toBe(false);
    expect(isSignalOnly({ signal: new AbortController().signal, timeoutMs: 5 })).toBe(false);
    expect(isSignalOnly([])).toBe(false);
    expect(isSignalOnly(5)).toBe(false);
  });
});
