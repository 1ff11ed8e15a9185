// What every fleet leg checks, whatever the load balancer (test/fleet/*.fleet.ts): 2025-era
// sessions on their own replica and 2026-07-28 requests spread over both, then replica r1 killed
// (SIGKILL) with calls in flight on both replicas: r1's calls fail as lost (or, for a 2026-07-28
// request r1 died on before its headers, the balancer's own 502), each before it would have
// ended; r2's are answered; none is sent again.
import { expect } from "vitest";
import { connectV1, connectV2 } from "../http/clients.js";
import { isConnectionClosedError } from "../../src/index.js";
import { eventually } from "../proxy/helpers.js";
import { startedOn } from "./harness.js";
import type { RunningFront } from "../proxy/front/helpers.js";
import type { Fleet } from "./harness.js";

/** How long each call in flight at the kill would have run, ms. */
export const CALL_MS = 3_000;

/**
 * Runs the scenario on `fleet` (replicas `r1` and `r2`); `closers` gets each client's close;
 * `withinMs`: how soon after the kill each of r1's calls must have failed. Returns the clients,
 * for the balancer's own checks after it.
 */
export async function killMidCall(fleet: Fleet, closers: Array<() => Promise<unknown>>, withinMs: number) {
  const r1 = fleet.replicas.get("r1")!;
  const r2 = fleet.replicas.get("r2")!;
  // Four 2025-era sessions (v1 line), round robin: two on each replica, named by their session id.
  const sessions: Array<Awaited<ReturnType<typeof connectV1>>> = [];
  for (let i = 0; i < 4; i++) {
    const client = await connectV1(fleet.url);
    closers.push(client.close);
    sessions.push(client);
  }
  const replicaOf = (c: (typeof sessions)[number]): string => c.transport.sessionId!.split(".")[0]!;
  expect(sessions.map(replicaOf).sort()).toEqual(["r1", "r1", "r2", "r2"]);
  // Affinity: each session's requests reach its own replica (a call that worked proves it: another replica answers 404).
  for (const client of sessions) {
    await expect(client.mcp.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ text: "slept 1" }] });
  }
  // 2026-07-28 (v2 line, pinned): requests spread over both replicas.
  const modern = await connectV2(fleet.url, { pin: true });
  closers.push(modern.close);
  const before = { r1: startedOn(r1), r2: startedOn(r2) };
  await Promise.all(Array.from({ length: 4 }, () => modern.mcp.callTool({ name: "sleep", arguments: { ms: 1 } })));
  expect(startedOn(r1) - before.r1).toBeGreaterThan(0);
  expect(startedOn(r2) - before.r2).toBeGreaterThan(0);

  // Calls in flight everywhere: one per session, six 2026-07-28 ones.
  const start = { r1: startedOn(r1), r2: startedOn(r2) };
  type Outcome = { ok: boolean; error?: unknown; at: number; replica?: string };
  const settle = (p: Promise<unknown>, replica?: string): Promise<Outcome> =>
    p.then(
      () => ({ ok: true, at: performance.now(), ...(replica === undefined ? {} : { replica }) }),
      (error: unknown) => ({ ok: false, error, at: performance.now(), ...(replica === undefined ? {} : { replica }) }),
    );
  const legacyCalls = sessions.map((c) => settle(c.mcp.callTool({ name: "sleep", arguments: { ms: CALL_MS } }), replicaOf(c)));
  const modernCalls = Array.from({ length: 6 }, () => settle(modern.mcp.callTool({ name: "sleep", arguments: { ms: CALL_MS } })));
  expect(await eventually(() => startedOn(r1) + startedOn(r2) - start.r1 - start.r2 === 10, 10_000)).toBe(true);
  const onR1 = startedOn(r1) - start.r1;
  const onR2 = startedOn(r2) - start.r2;
  expect(onR1).toBeGreaterThanOrEqual(2);
  expect(onR2).toBeGreaterThanOrEqual(2);

  const killedAt = performance.now();
  r1.child.kill("SIGKILL");
  const outcomes = await Promise.all([...legacyCalls, ...modernCalls]);
  // Every call settled once; exactly the killed replica's calls failed, each before it would have ended.
  expect(outcomes.filter((o) => !o.ok)).toHaveLength(onR1);
  expect(outcomes.filter((o) => o.ok)).toHaveLength(onR2);
  for (const o of outcomes.filter((o) => !o.ok)) {
    // A lost connection (-32000); or, for a 2026-07-28 request the replica died on before its
    // response headers reached the balancer, the balancer's own 502, which the v2 SDK raises as
    // its HTTP error (docs/proxy.md, Limits). Never sent again.
    const lost = isConnectionClosedError(o.error);
    const balancer502 = o.replica === undefined && /\b502\b/.test(String(o.error));
    expect(lost || balancer502, String(o.error)).toBe(true);
    // A 2025-era call once the SDK's own resume of its stream failed: before its end.
    expect(o.at - killedAt).toBeLessThan(withinMs);
  }
  expect(outcomes.filter((o) => o.replica === "r1").every((o) => !o.ok)).toBe(true);
  expect(outcomes.filter((o) => o.replica === "r2").every((o) => o.ok)).toBe(true);
  // Never re-sent: the survivor ran no tool call but its own.
  expect(startedOn(r2) - start.r2).toBe(onR2);
  return { sessions, modern, replicaOf };
}

/** A 2026-07-28 call through the balancer to `front` (the only replica left, or the one it picks), aborted once its tool runs: the replica's server sees its handler's signal abort (the stream close carried upstream as the cancel). */
export async function abortReachesServer(front: RunningFront, modern: Awaited<ReturnType<typeof connectV2>>): Promise<void> {
  const aborted = () =>
    front
      .stderr()
      .split("\n")
      .filter((l) => l.startsWith("ABORTED")).length;
  const before = aborted();
  const started = startedOn(front);
  const controller = new AbortController();
  const call = modern.mcp.callTool({ name: "sleep", arguments: { ms: 10_000 } }, { signal: controller.signal });
  call.catch(() => {});
  expect(await eventually(() => startedOn(front) > started, 10_000)).toBe(true);
  controller.abort();
  await expect(call).rejects.toThrow();
  expect(await eventually(() => aborted() === before + 1, 5_000)).toBe(true);
}
