// subscriptions/listen with the v2 client pinned to 2026-07-28 against the v2 server, over
// Streamable HTTP through the library's adapter: each way a listen ends releases its wire entry,
// and closing a listen puts no notifications/cancelled POST on the wire (rules 28, 32). The
// server's own teardown (notifications/cancelled naming the listen, or a listen result) is not
// something the v2 server can be made to do on demand: test/tasks/wire-kinds.test.ts covers it
// with a scripted peer.
import { afterEach, describe, expect, it } from "vitest";
import { connectV2 } from "../http/clients.js";
import { seen, sleep, startV2 } from "../http/servers.js";
import type { TestServer } from "../http/servers.js";

interface Subscription {
  close(): Promise<void>;
  closed: Promise<unknown>;
}
type Listening = { listen(filter: object, options?: object): Promise<Subscription> };

let server: TestServer | undefined;
let closeClient: (() => Promise<void>) | undefined;
afterEach(async () => {
  await closeClient?.();
  await server?.stop();
  server = undefined;
  closeClient = undefined;
});

describe("v2 client listens on 2026-07-28 (Streamable HTTP)", () => {
  it("closing listens sends no POST and leaves no entry (20 listens opened and closed)", async () => {
    server = await startV2();
    const peer = await connectV2(server.url, { pin: true });
    closeClient = peer.close;
    const client = peer.client as unknown as Listening;
    for (let i = 0; i < 20; i++) {
      const subscription = await client.listen({ toolsListChanged: true }, { timeout: 5_000 });
      expect(peer.mcp.pendingCount).toBe(1);
      await subscription.close();
      expect(peer.mcp.pendingCount).toBe(0);
    }
    await sleep(50);
    expect(seen(server, "subscriptions/listen")).toHaveLength(20);
    expect(seen(server, "notifications/cancelled")).toHaveLength(0);
    expect(peer.anomalies).toEqual([]);
  });

  it("a listen whose stream ends (the server drops the connection) leaves no entry", async () => {
    server = await startV2();
    const peer = await connectV2(server.url, { pin: true });
    closeClient = peer.close;
    const client = peer.client as unknown as Listening;
    const subscription = await client.listen({ toolsListChanged: true }, { timeout: 5_000 });
    expect(peer.mcp.pendingCount).toBe(1);
    server.drop();
    await expect(Promise.race([subscription.closed, sleep(2_000).then(() => "still open")])).resolves.toBe("remote");
    expect(peer.mcp.pendingCount).toBe(0);
  });

  it("closing the client ends every listen and leaves no entry", async () => {
    server = await startV2();
    const peer = await connectV2(server.url, { pin: true });
    const client = peer.client as unknown as Listening;
    await client.listen({ toolsListChanged: true }, { timeout: 5_000 });
    await client.listen({ toolsListChanged: true }, { timeout: 5_000 });
    expect(peer.mcp.pendingCount).toBe(2);
    await peer.close();
    expect(peer.mcp.pendingCount).toBe(0);
    expect(seen(server, "notifications/cancelled")).toHaveLength(0);
  });
});
