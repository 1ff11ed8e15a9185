// The `observer` option: the extension point mcp-cancellable/otel plugs into. Started before the
// send (even for a call that is never sent), its `meta` merged into params._meta, told of the
// result and of each record revision; a throwing observer never changes how a call settles.
import { describe, expect, it } from "vitest";
import { InvalidOptionError } from "../../src/index.js";
import type { CallObservation, CallObserver, ObservedCall, RunRecord } from "../../src/index.js";
import { connectPeer, flush } from "../helpers/peer.js";

describe("observer", () => {
  it("is started before the send with the call's method, name and params; its meta goes into _meta; it sees the result, then each revision", async () => {
    const seen: string[] = [];
    const started: ObservedCall[] = [];
    const observer: CallObserver = {
      start(call) {
        started.push(call);
        seen.push("start");
        return {
          meta: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
          result: (value) => seen.push(`result ${JSON.stringify(value)}`),
          record: (record: RunRecord) => seen.push(`record ${record.revision} ${record.summary}`),
        };
      },
    };
    const { mcp, peer, client } = await connectPeer({ observer });
    peer.onRequest((message) => void peer.result(message.id, { content: [] }));
    await mcp.callTool({ name: "echo", arguments: { a: 1 }, _meta: { mine: 1 } });
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({ method: "tools/call", name: "echo", params: { name: "echo", arguments: { a: 1 } }, client });
    const sent = peer.requests("tools/call")[0]!;
    expect(sent.params?._meta).toMatchObject({ mine: 1, traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" });
    expect(seen).toEqual(["start", 'result {"content":[]}', "record 0 succeeded"]);
    // A late duplicate answer: one more revision.
    await peer.result(sent.id, { content: [] });
    await flush();
    expect(seen).toHaveLength(4);
    expect(seen[3]).toMatch(/^record 1 /);
  });

  it("a call never sent (signal already aborted) is still observed, from start to record", async () => {
    const seen: string[] = [];
    const { mcp } = await connectPeer({
      observer: { start: () => (seen.push("start"), { record: (r) => seen.push(`record ${r.outcome}`) }) },
    });
    await expect(mcp.callTool({ name: "echo" }, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: "CANCELLED" });
    expect(seen).toEqual(["start", "record not-sent"]);
  });

  it("a throwing observer changes nothing: the call settles as without it", async () => {
    const throwing = () => {
      throw new Error("observer bug");
    };
    for (const observer of [{ start: throwing }, { start: () => ({ result: throwing, record: throwing }) }]) {
      const { mcp, peer } = await connectPeer({ observer });
      peer.onRequest((message) => void peer.result(message.id));
      await expect(mcp.callTool({ name: "echo" })).resolves.toMatchObject({ content: [{ type: "text", text: "done" }] });
      expect(mcp.records()[0]!.summary).toBe("succeeded");
    }
  });

  it("an observation whose meta is bad (null, no object, a getter that throws, a value the wire cannot carry, a progress token) is ignored: the call is sent without it and settles as without it", async () => {
    const boom = () => {
      throw new Error("observer bug");
    };
    const metas: unknown[] = [
      null,
      "traceparent",
      [1, 2],
      {
        get meta() {
          return boom();
        },
      },
      {
        get traceparent() {
          return boom();
        },
      },
      { n: 1n },
      // The progress token is never an observer's (rule 20): it would go out unchecked.
      { progressToken: {} },
      { progressToken: "observer-token" },
    ];
    for (const [index, meta] of metas.entries()) {
      const observation = index === 3 ? meta : { meta };
      const { mcp, peer } = await connectPeer({ observer: { start: () => observation as CallObservation } });
      peer.onRequest((message) => void peer.result(message.id));
      await expect(mcp.callTool({ name: "echo", _meta: { mine: 1 } }), `meta #${index}`).resolves.toMatchObject({
        content: [{ type: "text", text: "done" }],
      });
      expect(peer.requests("tools/call")[0]!.params?._meta, `meta #${index}`).toEqual({ mine: 1 });
      expect(mcp.records()[0]!.summary).toBe("succeeded");
    }
  });

  it("is validated: an object with a start method", async () => {
    await expect(connectPeer({ observer: {} as never })).rejects.toThrow(InvalidOptionError);
    await expect(connectPeer({ observer: (() => {}) as never })).rejects.toThrow(/"observer"/);
  });
});
