// The entry-point contract (issues 19 and 28), its behaviour rows, on every entry point that runs
// on Node 20 (the drivers: drivers.ts; the table: contract.suite.ts; the option rows:
// entry-points-options.test.ts). See docs/architecture.md for the one call path they share.
import { afterEach, describe, expect, it } from "vitest";
import { entryPointContract } from "./contract.suite.js";
import type { Session } from "./contract.suite.js";
import { drivers } from "./drivers.js";

entryPointContract(drivers, "behaviours");

describe("entry-point contract: ids across entry points", () => {
  const open: Session[] = [];
  afterEach(async () => {
    for (const session of open.splice(0)) await session.close().catch(() => {});
  });

  it("every entry point's calls get call ids no other entry point's calls have, and each its own connection id", async () => {
    const sessions = await Promise.all(drivers.map((driver) => driver.connect({}, () => {}, [])));
    open.push(...sessions);
    await Promise.all(sessions.flatMap((session) => [session.call({ tool: "echo" }), session.call({ tool: "echo" })]));
    const records = sessions.map((session) => session.records());
    expect(records.map((r) => r.length)).toEqual(drivers.map(() => 2));
    const callIds = records.flat().map((r) => r.callId);
    expect(new Set(callIds).size).toBe(callIds.length);
    // One connection id per entry point's connection, the same for both of its calls.
    expect(records.map((r) => new Set(r.map((record) => record.connectionId)).size)).toEqual(drivers.map(() => 1));
    expect(new Set(records.map((r) => r[0]!.connectionId)).size).toBe(drivers.length);
  }, 60_000); // every entry point's server started at once
});
