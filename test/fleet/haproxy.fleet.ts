import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectV1, connectV2 } from "../http/clients.js";
import { isConnectionClosedError } from "../../src/index.js";
import { eventually, fixture, server } from "../proxy/helpers.js";
import { haproxyBinary, startedOn, startFleet } from "./harness.js";
import type { Fleet } from "./harness.js";

// The fleet leg of .ci/run (.ci/fleet.sh): two replicas of `mcp-cancellable proxy --listen`
// behind a real HAProxy, real SDK clients (the v1 and v2 lines, wrapped by the library) in both
// eras. One replica is killed (SIGKILL) with calls in flight on both: its own calls fail at once
// with a connection-closed error (-32000) and are never sent again, the other replica's calls
// are answered, and a new session lands on the survivor.
const binary = haproxyBinary();
const V2_STDIO = fixture("http/v2-stdio-server.mjs");
const CALL_MS = 3_000;

let fleet: Fleet;
const closers: Array<() => Promise<unknown>> = [];

describe.skipIf(binary === undefined)("a fleet behind HAProxy", () => {
  beforeAll(async () => {
    fleet = await startFleet(["r1", "r2"], server(V2_STDIO), binary!);
  }, 60_000);
  afterAll(async () => {
    for (const close of closers.splice(0)) await close().catch(() => {});
    await fleet?.stop();
  }, 30_000);

  it("2025-era sessions stick to their replica, 2026-07-28 requests spread round robin; a replica killed mid-call: its calls get -32000 at once, never re-sent; the survivor's are answered; a new session lands on the survivor", async () => {
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
    const failed = outcomes.filter((o) => !o.ok);
    const answered = outcomes.filter((o) => o.ok);
    // Every call settled once; exactly the killed replica's calls failed, each at once, as a lost connection.
    expect(failed).toHaveLength(onR1);
    expect(answered).toHaveLength(onR2);
    for (const o of failed) {
      // A lost connection (-32000); or, for a 2026-07-28 request the replica died on before its
      // response headers reached the balancer, the balancer's own 502, which the v2 SDK raises as
      // its HTTP error (docs/proxy.md, Limits). Either way at once, and never sent again.
      const lost = isConnectionClosedError(o.error);
      const balancer502 = o.replica === undefined && /\b502\b/.test(String(o.error));
      expect(lost || balancer502, String(o.error)).toBe(true);
      expect(o.at - killedAt).toBeLessThan(CALL_MS / 2);
    }
    expect(outcomes.filter((o) => o.replica === "r1").every((o) => !o.ok)).toBe(true);
    expect(outcomes.filter((o) => o.replica === "r2").every((o) => o.ok)).toBe(true);
    // Never re-sent: the survivor ran no tool call but its own.
    expect(startedOn(r2) - start.r2).toBe(onR2);

    // A new session lands on the survivor (HAProxy marked r1 down), and works.
    expect(await eventually(() => /r1 is DOWN/.test(fleet.balancerLog()), 5_000)).toBe(true);
    const fresh = await connectV1(fleet.url);
    closers.push(fresh.close);
    expect(fresh.transport.sessionId!.startsWith("r2.")).toBe(true);
    await expect(fresh.mcp.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ text: "slept 1" }] });
    await expect(modern.mcp.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ text: "slept 1" }] });
  }, 60_000);

  it("a 2026-07-28 client's abort through HAProxy reaches the replica's server as the cancel", async () => {
    const r2 = fleet.replicas.get("r2")!;
    const modern = await connectV2(fleet.url, { pin: true });
    closers.push(modern.close);
    const aborted = () =>
      r2
        .stderr()
        .split("\n")
        .filter((l) => l.startsWith("ABORTED")).length;
    const before = aborted();
    const started = startedOn(r2);
    const controller = new AbortController();
    const call = modern.mcp.callTool({ name: "sleep", arguments: { ms: 10_000 } }, { signal: controller.signal });
    expect(await eventually(() => startedOn(r2) > started, 10_000)).toBe(true);
    controller.abort();
    await expect(call).rejects.toThrow();
    expect(await eventually(() => aborted() === before + 1, 5_000)).toBe(true);
  }, 30_000);
});

describe.skipIf(binary === undefined)("a fleet behind HAProxy: a replica drained", () => {
  let drainFleet: Fleet;
  beforeAll(async () => {
    drainFleet = await startFleet(["d1", "d2"], server(V2_STDIO), binary!);
  }, 60_000);
  afterAll(async () => {
    for (const close of closers.splice(0)) await close().catch(() => {});
    await drainFleet?.stop();
  }, 30_000);

  it("SIGTERM to a replica with a call in flight: requests that reach it while it drains get its 503 (not sent) and HAProxy sends them to the other (retry-on 503): every one is answered, none runs twice; the call in flight finishes", async () => {
    const d1 = drainFleet.replicas.get("d1")!;
    const d2 = drainFleet.replicas.get("d2")!;
    const modern = await connectV2(drainFleet.url, { pin: true });
    closers.push(modern.close);
    // A call in flight on d1 keeps it draining (--drain-ms, 10 s by default).
    const before = startedOn(d1);
    let inFlight: Promise<unknown> | undefined;
    for (let i = 0; i < 4 && startedOn(d1) === before; i++) {
      const call = modern.mcp.callTool({ name: "sleep", arguments: { ms: 2_500 } });
      call.catch(() => {}); // judged below
      if (await eventually(() => startedOn(d1) > before, 2_000)) inFlight = call;
      else await call;
    }
    expect(inFlight).toBeDefined();
    const started = startedOn(d1) + startedOn(d2);
    d1.child.kill("SIGTERM");
    expect(await eventually(() => d1.stderr().includes("drain"), 5_000)).toBe(true);
    // Round robin sends half of these to d1 while HAProxy still has it up (its check: 300 ms, fall 2).
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => modern.mcp.callTool({ name: "sleep", arguments: { ms: 10 + i } })),
    );
    expect(results.map((r) => (r.status === "fulfilled" ? "fulfilled" : String(r.reason)))).toEqual(Array(8).fill("fulfilled"));
    // Each ran once, all on d2: d1 refused before sending anything upstream.
    expect(startedOn(d1) + startedOn(d2) - started).toBe(8);
    await expect(inFlight).resolves.toBeDefined();
    expect((await d1.exited).code).toBe(0);
  }, 40_000);
});
