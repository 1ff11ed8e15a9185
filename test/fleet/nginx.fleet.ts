import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectV1, connectV2 } from "../http/clients.js";
import { isConnectionClosedError } from "../../src/index.js";
import { eventually, fixture, server } from "../proxy/helpers.js";
import { nginxBinary, startedOn, startNginxFleet } from "./harness.js";
import type { Fleet } from "./harness.js";

// docs/proxy.md's nginx recipe, as an operator runs it on one machine (an outside tester found
// it refused every request there: nginx's own Host, and replica names the map did not know):
// two replicas of `mcp-cancellable proxy --listen` on 127.0.0.1, started `--replica r1` and
// `--replica r2` as the recipe's upstream blocks are named, behind a real nginx. 2025-era sessions
// are routed on their id's prefix; a replica killed mid-call: its calls fail, none is sent again,
// and its sessions reach the other replica (the backup server), whose 404 tells a client to start
// a new session, never nginx's 502.
const binary = nginxBinary();
const V2_STDIO = fixture("http/v2-stdio-server.mjs");
const CALL_MS = 3_000;

let fleet: Fleet;
const closers: Array<() => Promise<unknown>> = [];

describe.skipIf(binary === undefined)("a fleet behind nginx", () => {
  beforeAll(async () => {
    fleet = await startNginxFleet(["r1", "r2"], server(V2_STDIO), binary!);
  }, 60_000);
  afterAll(async () => {
    for (const close of closers.splice(0)) await close().catch(() => {});
    await fleet?.stop();
  }, 30_000);

  it("2025-era sessions routed on their id's prefix, 2026-07-28 spread; a replica killed mid-call: its calls fail, none re-sent, the survivor's answered; its sessions then get 404 (start anew), not 502", async () => {
    const r1 = fleet.replicas.get("r1")!;
    const r2 = fleet.replicas.get("r2")!;
    const sessions: Array<Awaited<ReturnType<typeof connectV1>>> = [];
    for (let i = 0; i < 4; i++) {
      const client = await connectV1(fleet.url);
      closers.push(client.close);
      sessions.push(client);
    }
    const replicaOf = (c: (typeof sessions)[number]): string => c.transport.sessionId!.split(".")[0]!;
    expect(sessions.map(replicaOf).sort()).toEqual(["r1", "r1", "r2", "r2"]);
    for (const client of sessions) {
      await expect(client.mcp.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ text: "slept 1" }] });
    }
    const modern = await connectV2(fleet.url, { pin: true });
    closers.push(modern.close);
    const before = { r1: startedOn(r1), r2: startedOn(r2) };
    await Promise.all(Array.from({ length: 4 }, () => modern.mcp.callTool({ name: "sleep", arguments: { ms: 1 } })));
    expect(startedOn(r1) - before.r1).toBeGreaterThan(0);
    expect(startedOn(r2) - before.r2).toBeGreaterThan(0);

    // A 2026-07-28 abort reaches the replica's server as the stream close.
    const aborted = (front: typeof r1) =>
      front
        .stderr()
        .split("\n")
        .filter((l) => l.startsWith("ABORTED")).length;
    const abortedBefore = aborted(r1) + aborted(r2);
    const startedBefore = startedOn(r1) + startedOn(r2);
    const controller = new AbortController();
    const cancelled = modern.mcp.callTool({ name: "sleep", arguments: { ms: 10_000 } }, { signal: controller.signal });
    cancelled.catch(() => {});
    expect(await eventually(() => startedOn(r1) + startedOn(r2) > startedBefore, 10_000)).toBe(true);
    controller.abort();
    await expect(cancelled).rejects.toThrow();
    expect(await eventually(() => aborted(r1) + aborted(r2) === abortedBefore + 1, 5_000)).toBe(true);

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

    const killedAt = performance.now();
    r1.child.kill("SIGKILL");
    const outcomes = await Promise.all([...legacyCalls, ...modernCalls]);
    expect(outcomes.filter((o) => !o.ok)).toHaveLength(onR1);
    expect(outcomes.filter((o) => o.ok)).toHaveLength(onR2);
    for (const o of outcomes.filter((o) => !o.ok)) {
      // Lost (-32000), or nginx's 502 for a 2026-07-28 request whose replica died before its headers.
      const lost = isConnectionClosedError(o.error);
      const balancer502 = o.replica === undefined && /\b502\b/.test(String(o.error));
      expect(lost || balancer502, String(o.error)).toBe(true);
      // Before the call would have ended: a 2025-era call once the SDK's resume of its stream failed.
      expect(o.at - killedAt).toBeLessThan(CALL_MS);
    }
    expect(outcomes.filter((o) => o.replica === "r1").every((o) => !o.ok)).toBe(true);
    expect(startedOn(r2) - start.r2).toBe(onR2); // never re-sent

    // The lost replica's session reaches r2 (its block's backup): 404, the sign to start anew.
    const lostSession = sessions.find((c) => replicaOf(c) === "r1")!;
    const probe = await fetch(fleet.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": lostSession.transport.sessionId!,
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/list", params: {} }),
    });
    expect(probe.status).toBe(404);
    await probe.text();
    // A new session lands on the survivor and works.
    const fresh = await connectV1(fleet.url);
    closers.push(fresh.close);
    expect(fresh.transport.sessionId!.startsWith("r2.")).toBe(true);
    await expect(fresh.mcp.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ text: "slept 1" }] });
  }, 60_000);
});
