import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { CallCancelledError } from "../../src/index.js";
import { composedEntries, sweepComposedSignals } from "../../src/utils/composed-signals.js";
import { connectPeer } from "../helpers/peer.js";

// node#55351: on Node 20, `AbortSignal.any` leaves on each source signal a WeakRef to every signal
// composed from it, for the source's life, collected or not (Node 22 removes them). The library
// sweeps the collected ones off a source when their count doubles: the v2 transport's signal
// (composed for every request, test/http/v2-sdk.test.ts) and a session signal a caller composes
// with each call's own (`signal: AbortSignal.any([session, own])`).

/**
 * A full collection, in this process (the test runs without --expose-gc), after a macrotask: a
 * WeakRef's target made in the current job is kept until the job ends.
 */
async function collectGarbage(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

describe("composed signals (node#55351)", () => {
  it("a sweep drops only collected compositions: the live ones still abort with their source, and the count stays bounded", async () => {
    const session = new AbortController();
    const live: AbortSignal[] = [];
    let most = 0;
    for (let i = 0; i < 3_000; i++) {
      const composed = AbortSignal.any([session.signal, new AbortController().signal]);
      if (i % 500 === 0) live.push(composed); // kept: never collected, never swept
      sweepComposedSignals(composed);
      if (i % 100 === 99) await collectGarbage();
      most = Math.max(most, composedEntries(session.signal));
    }
    expect(most).toBeLessThan(300); // Node 20 without the sweep: 3,000
    expect(live).toHaveLength(6);
    session.abort(new Error("session over"));
    expect(live.every((signal) => signal.aborted && (signal.reason as Error).message === "session over")).toBe(true);
  });

  it("a plain signal, null and undefined are left as they are", () => {
    const plain = new AbortController();
    expect(() => sweepComposedSignals(plain.signal)).not.toThrow();
    expect(() => sweepComposedSignals(null)).not.toThrow();
    expect(() => sweepComposedSignals(undefined)).not.toThrow();
    plain.abort();
    expect(plain.signal.aborted).toBe(true);
  });

  it("calls each given AbortSignal.any([session, own]): the session's signal keeps no entry for each call's, and still cancels them", async () => {
    const { mcp, peer } = await connectPeer();
    peer.onRequest((message) => {
      if (message.method === "tools/call" && (message.params as { name: string }).name === "echo") void peer.result(message.id);
    });
    const session = new AbortController();
    const calls = 1_000;
    for (let i = 1; i <= calls; i++) {
      const own = new AbortController();
      await mcp.callTool({ name: "echo", arguments: {} }, { signal: AbortSignal.any([session.signal, own.signal]) });
      if (i % 100 === 0) await collectGarbage();
    }
    await collectGarbage();
    const pending = mcp.callTool(
      { name: "slow", arguments: {} },
      { signal: AbortSignal.any([session.signal, new AbortController().signal]) },
    );
    pending.catch(() => {});
    expect(composedEntries(session.signal)).toBeLessThan(200); // Node 20 without the sweep: 1,001
    session.abort();
    await expect(pending).rejects.toBeInstanceOf(CallCancelledError);
    expect(peer.cancels()).toHaveLength(1);
  });
});
