import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectV1 } from "../http/clients.js";
import { fixture, server } from "../proxy/helpers.js";
import { nginxBinary, startNginxFleet } from "./harness.js";
import type { Fleet } from "./harness.js";
import { CALL_MS, abortReachesServer, killMidCall } from "./scenarios.js";

// docs/proxy.md's nginx recipe, as an operator runs it on one machine (an outside tester found
// it refused every request there: nginx's own Host, and replica names the map did not know):
// two replicas of `mcp-cancellable proxy --listen` on 127.0.0.1, started `--replica r1` and
// `--replica r2` as the recipe's upstream blocks are named, behind a real nginx. 2025-era sessions
// are routed on their id's prefix; a replica killed mid-call: its calls fail, none is sent again,
// and its sessions reach the other replica (the backup server), whose 404 tells a client to start
// a new session, never nginx's 502.
const binary = nginxBinary();
const V2_STDIO = fixture("http/v2-stdio-server.mjs");

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
    const { sessions, modern, replicaOf } = await killMidCall(fleet, closers, CALL_MS);
    // A 2026-07-28 abort reaches the survivor's server as the stream close.
    await abortReachesServer(fleet.replicas.get("r2")!, modern);

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
