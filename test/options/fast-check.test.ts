import { describe, expect, it, vi } from "vitest";
import { DEFAULT_MAX_TOTAL_TIMEOUT_MS } from "../../src/options/defaults.js";
import { resolveCallOptions } from "../../src/options/resolve.js";
import { SDK_OPTION_NAMES, callOptionsSchema, isSignalOnly, isValidCallOptions, parseOptions } from "../../src/options/schemas.js";

// A call's options that pass the quick check skip the zod parse; the check must say "valid" only
// where the schema does, and should say it wherever the schema does for one plain value.

const signal = new AbortController().signal;
const duck = { aborted: false, addEventListener() {}, removeEventListener() {} };
const msValues: unknown[] = [
  0,
  -0,
  1,
  1.5,
  -1,
  999,
  2_147_483_647,
  2_147_483_648,
  1e21,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.NaN,
  "30",
  null,
  true,
  {},
  10n,
];
const VALUES: Record<string, unknown[]> = {
  timeoutMs: msValues,
  maxTotalTimeoutMs: msValues,
  clientWaitTimeoutMs: msValues,
  verifyTimeoutMs: msValues,
  verifyDelayMs: msValues,
  verifyWindowMs: msValues,
  verifyIntervalMs: msValues,
  resetTimeoutOnProgress: [true, false, "true", 0, 1, null, {}],
  forwardAbortReason: [true, false, "false", 0, null],
  reason: ["", "stop", 1, null, {}, ["a"]],
  onprogress: [() => {}, async () => {}, class {}, "f", null, {}],
  verify: [() => {}, function named() {}, "f", 1, null],
  signal: [signal, duck, { aborted: "no", addEventListener() {}, removeEventListener() {} }, { aborted: false }, null, 1, "s"],
};

function schemaTakes(options: object): boolean {
  try {
    parseOptions(callOptionsSchema, options, "call options");
    return true;
  } catch {
    return false;
  }
}

describe("call options: the quick check beside the schema", () => {
  it("gives the schema's answer for every option and value in the matrix", () => {
    expect(Object.keys(VALUES).sort()).toEqual(Object.keys(callOptionsSchema.shape).sort());
    let valid = 0;
    let invalid = 0;
    for (const [key, values] of Object.entries(VALUES)) {
      for (const value of values) {
        const options = { [key]: value };
        const quick = isValidCallOptions(options);
        expect({ key, value, answer: quick }).toEqual({ key, value, answer: schemaTakes(options) });
        if (quick) valid++;
        else invalid++;
      }
    }
    expect(valid).toBeGreaterThan(30);
    expect(invalid).toBeGreaterThan(60);
  });

  it("takes undefined values and several options together, and leaves everything else to the schema", () => {
    expect(isValidCallOptions({ timeoutMs: 5_000, maxTotalTimeoutMs: undefined, signal })).toBe(true);
    expect(isValidCallOptions({})).toBe(true);
    // Left to the schema (which takes some of them): an unknown key, an SDK name, an array of
    // signals, a class instance, a null-prototype object, an array.
    for (const options of [
      { timeoutMs: 5_000, timeout: 5_000 },
      { timeout: undefined },
      { signal: [signal] },
      new (class Options {
        timeoutMs = 5_000;
      })(),
      Object.assign(Object.create(null) as object, { timeoutMs: 5_000 }),
      [5_000],
    ]) {
      expect(isValidCallOptions(options)).toBe(false);
    }
    expect(schemaTakes({ signal: [signal] })).toBe(true);
    expect(schemaTakes({ timeout: undefined })).toBe(true);
  });

  it("resolves valid options without a zod parse, and refuses invalid ones through it with the option named", () => {
    const parse = vi.spyOn(callOptionsSchema, "safeParse");
    try {
      const resolved = resolveCallOptions({}, { timeoutMs: 5_000, signal, resetTimeoutOnProgress: true });
      expect(resolved).toMatchObject({
        timeoutMs: 5_000,
        maxTotalTimeoutMs: DEFAULT_MAX_TOTAL_TIMEOUT_MS,
        resetTimeoutOnProgress: true,
        signal,
      });
      expect(parse).toHaveBeenCalledTimes(0);
      expect(() => resolveCallOptions({}, { timeoutMs: 1.5 })).toThrow(/"timeoutMs" must be an integer number of ms from 1 to 2147483647/);
      expect(() => resolveCallOptions({}, { timeout: 5_000 } as never)).toThrow(/"timeoutMs" instead of the SDK's "timeout"/);
      expect(parse).toHaveBeenCalledTimes(2);
    } finally {
      parse.mockRestore();
    }
  });

  it("a refused signal's error says what would do and what is off: a polyfill's member, an array's item", () => {
    const refusal = (value: unknown): string => {
      try {
        resolveCallOptions({}, { signal: value } as never);
      } catch (error) {
        expect(error).toMatchObject({ name: "InvalidOptionError", option: "signal" });
        return (error as Error).message;
      }
      throw new Error("not refused");
    };
    const must =
      "must be an AbortSignal or an array of AbortSignals (an object with a boolean `aborted` and `addEventListener` and `removeEventListener` functions will do)";
    expect(refusal("x")).toBe(`call options: "signal" ${must}; received "x"`);
    expect(refusal({ ...duck, aborted: "no" })).toMatch(/; received an Object \(its `aborted` is "no"\)$/);
    expect(refusal({ aborted: false, addEventListener() {} })).toMatch(
      /; received an Object \(it has no `removeEventListener` function\)$/,
    );
    expect(refusal([signal, 5])).toMatch(/; received an array whose item 1 is not one: 5$/);
    expect(refusal(new AbortController())).toMatch(/; received an AbortController \(pass its \.signal\)$/);
    expect(refusal({ addEventListener() {}, removeEventListener() {} })).toMatch(/; received an Object \(it has no boolean `aborted`\)$/);
    expect(resolveCallOptions({}, { signal: duck as never }).signal).toBe(duck); // what would do, does
  });

  it("the signal-only shortcut looks for every other call option by name: a new option in the schema must be read there too", () => {
    const signal = new AbortController().signal;
    expect(isSignalOnly({ signal })).toBe(true);
    for (const key of [...Object.keys(callOptionsSchema.shape), ...Object.keys(SDK_OPTION_NAMES)]) {
      if (key === "signal") continue;
      // Not listed by for...in: only a read by name finds it.
      const hidden = Object.defineProperty({ signal }, key, { value: 1, enumerable: false });
      expect({ key, signalOnly: isSignalOnly(hidden) }).toEqual({ key, signalOnly: false });
    }
  });
});
