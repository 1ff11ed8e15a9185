import { describe, expect, it } from "vitest";
import { isConnectionClosedError } from "../../src/index.js";
import { connectPeer, flush } from "../helpers/peer.js";

// How a connection-closed error reads to a framework that decides from the message whether to
// reconnect and send a call again (Mastra's MCPClient: "not connected", "connection closed"): a
// call never sent says "not connected" (sending it again is safe: an outside tester's, Mastra's
// tools stayed dead after a server crash); a call that was pending says neither (it may have run).

describe("ConnectionClosedError's words, as frameworks read them", () => {
  it("never sent (the connection had closed): 'not connected'; pending when it closed: neither phrase", async () => {
    const { client, mcp, peer } = await connectPeer();
    peer.onRequest(() => {}); // never answers
    const pending = mcp.callTool({ name: "slow", arguments: {} }).catch((e: unknown) => e);
    await flush();
    await peer.close();
    const lost = (await pending) as Error;
    expect(isConnectionClosedError(lost)).toBe(true);
    expect(lost.message.toLowerCase()).not.toContain("not connected");
    expect(lost.message.toLowerCase()).not.toContain("connection closed");
    const never = (await mcp.callTool({ name: "next", arguments: {} }).catch((e: unknown) => e)) as Error & {
      record: { requestId: unknown };
    };
    expect(isConnectionClosedError(never)).toBe(true);
    expect(never.record.requestId).toBeNull();
    expect(never.message).toBe("tools/call was not sent: not connected (the connection is closed; reconnect the client to call again)");
    await client.close();
  });
});
