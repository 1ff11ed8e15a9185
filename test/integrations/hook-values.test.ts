import { describe, expect, it } from "vitest";
import { callHook, hookedCallOptions } from "../../src/integrations/call-options.js";
import { notOptions } from "../helpers/hook-values.js";

// What a framework's `callOptions` hook may return: an options object (a literal, a class
// instance, `Object.create(null)`) goes on to the runner, as everywhere an options object is
// taken; anything else is a refusal naming what it was (an outside tester's finding: a class
// instance was refused here and accepted everywhere else).
describe("a callOptions hook's return value", () => {
  it("a literal, a class instance (its own toStringTag too) and Object.create(null) are options objects", () => {
    class Cfg {
      timeoutMs = 300;
      get [Symbol.toStringTag]() {
        return "Cfg";
      }
    }
    for (const value of [{ timeoutMs: 300 }, new Cfg(), Object.assign(Object.create(null), { timeoutMs: 300 })]) {
      expect(hookedCallOptions(value)).toBe(value);
    }
    expect(hookedCallOptions(null)).toBeUndefined();
    expect(hookedCallOptions(undefined)).toBeUndefined();
  });

  it("anything else is a refusal that says what it was", () => {
    for (const [value, what] of notOptions()) {
      const refused = hookedCallOptions(value) as Record<symbol, { returned: string }>;
      const [key] = Object.getOwnPropertySymbols(refused);
      expect(refused[key!]!.returned).toBe(what);
    }
  });

  it("a hook that throws an error that cannot be read (a message getter that throws, a revoked Proxy) is refused all the same", () => {
    const unreadable = new Error("x");
    Object.defineProperty(unreadable, "message", {
      get() {
        throw new Error("message getter threw");
      },
    });
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    for (const thrown of [unreadable, revoked.proxy]) {
      const refused = callHook(() => {
        throw thrown;
      }) as Record<symbol, { threw: string }>;
      const [key] = Object.getOwnPropertySymbols(refused);
      expect(typeof refused[key!]!.threw).toBe("string");
    }
    const returnedRevoked = Proxy.revocable({}, {});
    returnedRevoked.revoke();
    const refused = callHook(() => returnedRevoked.proxy) as Record<symbol, { returned: string }>;
    expect(refused[Object.getOwnPropertySymbols(refused)[0]!]!.returned).toBe("a value that cannot be read");
  });
});
