// Bad input an outside tester found to slip past the option checks (a second round of bad input
// on every entry point): each is refused with an `InvalidOptionError` naming the option at fault,
// and nothing is sent. A sparse signal array (a hole was taken for an abort: "cancelled by the
// caller", no signal ever aborted); a symbol key in `verifiers` (a bare TypeError); a 10 MB key
// (echoed whole in the option's name); a method that is no string through `sdkClient.request`
// (it went out past the library, with no limit of ours); a frozen or sealed transport (a bare
// TypeError from inside the library); an unsafe integer progress token (its message now says
// "safe").
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describe, expect, it } from "vitest";
import { InvalidOptionError, withCancellation } from "../../src/index.js";
import { connectPeer } from "../helpers/peer.js";

const invalid = (error: unknown, option: string | RegExp) => {
  expect(error).toBeInstanceOf(InvalidOptionError);
  if (typeof option === "string") expect((error as InvalidOptionError).option).toBe(option);
  else expect((error as InvalidOptionError).option).toMatch(option);
};

describe("bad input at the edges of the option checks: refused, naming the option, nothing sent", () => {
  it("a signal array with a hole: refused naming signal, not taken for an abort", async () => {
    const { mcp, peer } = await connectPeer();
    const live = new AbortController().signal;
    const sparse = [live];
    sparse.length = 2; // index 1 is a hole
    for (const call of [
      () => mcp.callTool({ name: "echo" }, { signal: sparse }),
      () => mcp.sdkClient.callTool({ name: "echo" }, undefined, { signal: sparse as unknown as AbortSignal }),
    ]) {
      const error = await call().catch((e: unknown) => e);
      invalid(error, "signal");
      expect((error as Error).message).toMatch(/item 1 is not one/);
    }
    expect(peer.requests("tools/call")).toEqual([]);
    expect(mcp.pendingCount).toBe(0);
  });

  it("a symbol key in verifiers, and a 10 MB key: refused naming the key, the long one cut", async () => {
    const client = new Client({ name: "bad-input", version: "1.0.0" });
    const [transport] = InMemoryTransport.createLinkedPair();
    let error: unknown;
    try {
      withCancellation(client, transport, { verifiers: { [Symbol("v")]: () => "applied" } as never });
    } catch (e) {
      error = e;
    }
    invalid(error, "verifiers.Symbol(v)");
    const long = "k".repeat(10_000_000);
    error = undefined;
    try {
      withCancellation(client, transport, { verifiers: { [long]: 5 } as never });
    } catch (e) {
      error = e;
    }
    invalid(error, /^verifiers\.k{100}…$/);
    expect((error as Error).message.length).toBeLessThan(1_000);
  });

  it("sdkClient.request with a method that is no string: refused naming request.method, nothing sent", async () => {
    const { mcp, peer } = await connectPeer({ timeoutMs: 2_000 });
    for (const request of [{ method: 5 }, null, {}]) {
      const error = await (mcp.sdkClient.request as (r: unknown, s?: unknown) => Promise<unknown>)(request).catch((e: unknown) => e);
      invalid(error, "request.method");
    }
    expect(peer.received.filter((m) => m.method !== "initialize" && m.method !== "notifications/initialized")).toEqual([]);
    expect(mcp.pendingCount).toBe(0);
  });

  it("a frozen, sealed or non-extensible transport: refused naming transport", async () => {
    for (const lock of [Object.freeze, Object.seal, Object.preventExtensions]) {
      const client = new Client({ name: "bad-input", version: "1.0.0" });
      const [transport] = InMemoryTransport.createLinkedPair();
      let error: unknown;
      try {
        withCancellation(client, lock(transport));
      } catch (e) {
        error = e;
      }
      invalid(error, "transport");
      expect((error as Error).message).toMatch(/transport cannot be extended \(frozen, sealed or made non-extensible\)/);
    }
  });

  it("a progress token past the safe integers: refused, the message saying a safe integer", async () => {
    const { mcp, peer } = await connectPeer();
    const error = await mcp.callTool({ name: "echo", _meta: { progressToken: 2 ** 60 } }).catch((e: unknown) => e);
    invalid(error, "params._meta.progressToken");
    expect((error as Error).message).toMatch(/a safe one \(at most 2\^53 - 1 either way/);
    expect(peer.requests("tools/call")).toEqual([]);
  });
});
