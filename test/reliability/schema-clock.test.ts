// Options whose kind was not checked (an outside tester's): a `resultSchema` that is no schema went
// out and failed the answered call with the SDK's bare TypeError; a `clock` answering NaN or a Date
// turned every timeout off, one answering a bigint failed every call with a bare TypeError.
import { describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import * as z from "zod";
import { InvalidOptionError, withCancellation } from "../../src/index.js";
import { connectPeer, flush } from "../helpers/peer.js";

describe("resultSchema must be a schema", () => {
  for (const [what, value] of [
    ["a number", 5],
    ["a string", "schema"],
    ["an empty object", {}],
    ["an object whose parse is no function", { parse: 1 }],
    [
      "(on the v1 SDK) a Standard Schema that is not zod",
      { "~standard": { version: 1, vendor: "x", validate: (value: unknown) => ({ value }) } },
    ],
    ["(on the v1 SDK) an object with a parse function only", { parse: (value: unknown) => value }],
  ] as const) {
    it(`${what}: refused naming resultSchema, nothing sent; a zod schema goes`, async () => {
      const { client, mcp, peer } = await connectPeer();
      peer.onRequest((message) => {
        if (message.method === "ping") void peer.send({ jsonrpc: "2.0", id: message.id as number, result: {} });
      });
      const error = await mcp.request({ method: "ping" }, { resultSchema: value as never }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option: "resultSchema", message: expect.stringContaining("received") });
      await flush();
      expect(peer.requests("ping")).toHaveLength(0);
      await expect(mcp.request({ method: "ping" }, { resultSchema: z.object({}) })).resolves.toEqual({});
      await client.close();
    });
  }
});

describe("clock must answer the time in ms as a finite number", () => {
  for (const [what, clock, says] of [
    ["NaN", () => Number.NaN, "it returned NaN"],
    ["a Date", () => new Date(), "it returned a Date"],
    ["a bigint (process.hrtime.bigint)", () => process.hrtime.bigint(), "it returned"],
    [
      "a throw",
      () => {
        throw new Error("no clock here");
      },
      "it threw (no clock here)",
    ],
  ] as const) {
    it(`one answering ${what} is refused at the wrapper, naming clock and what it answered`, () => {
      const [transport] = InMemoryTransport.createLinkedPair();
      expect(() => withCancellation(new Client({ name: "c", version: "1" }), transport, { clock: clock as () => number })).toThrow(
        expect.objectContaining({ option: "clock", message: expect.stringContaining(says) }),
      );
    });
  }

  it("performance.now and a fake clock are taken", () => {
    const [transport] = InMemoryTransport.createLinkedPair();
    expect(() => withCancellation(new Client({ name: "c", version: "1" }), transport, { clock: () => 42 })).not.toThrow();
  });
});

describe("a request's _meta and progress token, and a notification given to request()", () => {
  for (const [what, meta, option] of [
    ["a progress token that is an object", { progressToken: {} }, "params._meta.progressToken"],
    ["a progress token that is a fraction", { progressToken: 1.5 }, "params._meta.progressToken"],
    ["a progress token that is null", { progressToken: null }, "params._meta.progressToken"],
    ["a _meta that is a number", 5, "params._meta"],
  ] as const) {
    it(`${what}: refused naming ${option} (rule 20), nothing sent`, async () => {
      const { client, mcp, peer } = await connectPeer();
      const error = await mcp.callTool({ name: "x", arguments: {}, _meta: meta as never }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option });
      await flush();
      expect(peer.requests("tools/call")).toHaveLength(0);
      await client.close();
    });
  }

  it("notifications/cancelled given to request(): refused naming request.method, nothing sent", async () => {
    const { client, mcp, peer } = await connectPeer();
    const error = await mcp.request({ method: "notifications/cancelled", params: { requestId: 1 } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ option: "request.method", message: expect.stringContaining("is a notification, not a request") });
    await flush();
    expect(peer.received.filter((m) => m.method === "notifications/cancelled")).toHaveLength(0);
    await client.close();
  });
});
