import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectV1, connectV2 } from "../http/clients.js";
import { eventually, fixture, server } from "../proxy/helpers.js";
import { haproxyBinary, startedOn, startFleet } from "./harness.js";
import type { Fleet } from "./harness.js";
import { CALL_MS, abortReachesServer, killMidCall } from "./scenarios.js";

// The fleet leg of .ci/run (.ci/fleet.sh): two replicas of `mcp-cancellable proxy --listen`
// behind a real HAProxy, real SDK clients (the v1 and v2 lines, wrapped by the library) in both
// eras. One replica is killed (SIGKILL) with calls in flight on both: its own calls fail at once
// with a connection-closed error (-32000) and are never sent again, the other replica's calls
// are answered, and a new session lands on the survivor.
const binary = haproxyBinary();
const V2_STDIO = fixture("http/v2-stdio-server.mjs");

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
    const { modern } = await killMidCall(fleet, closers, CALL_MS / 2);
    // A new session lands on the survivor (HAProxy marked r1 down), and works.
    expect(await eventually(() => /r1 is DOWN/.test(fleet.balancerLog()), 5_000)).toBe(true);
    const fresh = await connectV1(fleet.url);
    closers.push(fresh.close);
    expect(fresh.transport.sessionId!.startsWith("r2.")).toBe(true);
    await expect(fresh.mcp.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ text: "slept 1" }] });
    await expect(modern.mcp.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ text: "slept 1" }] });
  }, 60_000);

  it("a 2026-07-28 client's abort through HAProxy reaches the replica's server as the cancel", async () => {
    const modern = await connectV2(fleet.url, { pin: true });
    closers.push(modern.close);
    await abortReachesServer(fleet.replicas.get("r2")!, modern);
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
