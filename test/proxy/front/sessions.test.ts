// 2025-era sessions of the HTTP front, where the v1 SDK server transport (one response stream per
// request id) needs the front's help: a cancelled request's stream, and a request id used twice.
// Real fronts on 127.0.0.1 over the scripted stdio server (it echoes each line it reads as
// "RECV <json>"), raw fetch and the v1 SDK client.
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { eventually, fixture, received, server } from "../helpers.js";
import { messagesOf, openSession, post2026, startFront, stopFronts } from "./helpers.js";

const SCRIPTED = fixture("scripted-server.mjs");
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const open: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {});
  await stopFronts();
});

/** A 2025-era session by hand; `post` sends one message in it. */
const session = (url: URL, version: string) => openSession(url, version, "sessions-test");

/** Reads an SSE body as it comes; `done` once it ends. */
function reader(response: Response) {
  let text = "";
  let ended = false;
  const done = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
    ended = true;
  })().catch(() => {
    ended = true;
  });
  return { text: () => text, ended: () => ended, done };
}

/**
 * POSTs a `late` tool call (its answer after `ms`), reads its stream up to the priming event's id,
 * then drops the stream (a dropped stream is not a cancel). Returns that event id.
 */
async function callAndDrop(url: URL, headers: Record<string, string>, id: number, ms: number): Promise<string> {
  const dropped = new AbortController();
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "late", arguments: { ms } } }),
    signal: dropped.signal,
  });
  const decoder = new TextDecoder();
  let text = "";
  const body = response.body!.getReader();
  while (!/^id: \S+$/m.test(text)) {
    const { done, value } = await body.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  const eventId = /^id: (\S+)$/m.exec(text)?.[1];
  expect(eventId).toBeDefined();
  dropped.abort();
  return eventId!;
}

describe("proxy --listen: 2025-era sessions", () => {
  it("a cancelled request's response stream is ended (no answer, rule 11) and a resume of it gets 204; with 2025-06-18 (no event ids) the stream ends the same way", async () => {
    const front = await startFront(server(SCRIPTED));
    for (const version of ["2025-11-25", "2025-06-18"]) {
      const { headers, post } = await session(front.url, version);
      const id = `call-${version}`;
      const calls = received(front.stderr()).filter((m) => m.method === "tools/call").length;
      const stream = reader(await post({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "late", arguments: { ms: 4_000 } } }));
      expect(await eventually(() => received(front.stderr()).filter((m) => m.method === "tools/call").length === calls + 1)).toBe(true);
      const before = received(front.stderr()).filter((m) => m.method === "notifications/cancelled").length;
      const cancel = await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "stop" } });
      expect(cancel.status).toBe(202);
      // The stream ends well before the late answer (4,000 ms) would have come, and carries no answer.
      expect(await eventually(() => stream.ended(), 2_000)).toBe(true);
      expect(stream.text()).not.toContain('"result"');
      expect(
        await eventually(() => received(front.stderr()).filter((m) => m.method === "notifications/cancelled").length === before + 1),
      ).toBe(true);
      const eventId = /^id: (\S+)$/m.exec(stream.text())?.[1];
      if (version === "2025-11-25") {
        // The priming event gave the stream an id: a client resumes it, and is told there is nothing to resume.
        expect(eventId).toBeDefined();
        const resume = await fetch(front.url, {
          method: "GET",
          headers: { ...headers, accept: "text/event-stream", "last-event-id": eventId! },
        });
        expect(resume.status).toBe(204);
        expect(await resume.text()).toBe("");
      } else expect(eventId).toBeUndefined();
    }
  });

  it("a client that drops a request's stream resumes it at once (GET with Last-Event-ID): the stream is released when the client goes, not at its next event; the answer comes on the resumed stream", async () => {
    const front = await startFront(server(SCRIPTED));
    const { headers } = await session(front.url, "2025-11-25");
    const eventId = await callAndDrop(front.url, headers, 41, 1_500);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Well before the tool's answer (1,500 ms), the only event still to come.
    const resumed = await fetch(front.url, {
      method: "GET",
      headers: { ...headers, accept: "text/event-stream", "last-event-id": eventId },
    });
    expect(resumed.status).toBe(200);
    const answer = reader(resumed);
    expect(await eventually(() => answer.text().includes('"result"'), 4_000)).toBe(true);
    const events = answer
      .text()
      .split("\n")
      .filter((line) => line.startsWith("data: ") && line.length > 6)
      .map((line) => JSON.parse(line.slice(6)) as { id?: unknown; result?: unknown });
    expect(events.filter((event) => event.id === 41 && event.result !== undefined)).toHaveLength(1);
    expect(received(front.stderr()).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
  });

  it("a client that drops a request's stream and resumes it in the same moment (no pause) gets it, every time: a resume that finds the dropped stream not yet released waits for its release, not 409", async () => {
    const front = await startFront(server(SCRIPTED));
    const { headers } = await session(front.url, "2025-11-25");
    for (let round = 0; round < 6; round++) {
      const eventId = await callAndDrop(front.url, headers, 100 + round, 600);
      const resumed = await fetch(front.url, {
        method: "GET",
        headers: { ...headers, accept: "text/event-stream", "last-event-id": eventId },
      });
      expect(resumed.status, `round ${round}`).toBe(200);
      const answer = reader(resumed);
      expect(await eventually(() => answer.text().includes('"result"'), 4_000)).toBe(true);
      await answer.done;
    }
    expect(received(front.stderr()).filter((m) => m.method === "notifications/cancelled")).toEqual([]);
  });

  it("a 2025-era stream silent for --sse-keep-alive-ms gets comment frames between its events (a load balancer's read timeout must not cut a silent call); the answer still comes once", async () => {
    const front = await startFront(["--sse-keep-alive-ms", "200", ...server(SCRIPTED)]);
    const { post } = await session(front.url, "2025-11-25");
    const stream = reader(await post({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "late", arguments: { ms: 1_200 } } }));
    await stream.done;
    const text = stream.text();
    const frames = text.split("\n\n").filter((frame) => frame !== "");
    // Each frame is whole: an event or a comment, never a comment inside an event.
    const comments = frames.filter((frame) => frame === ": keepalive");
    expect(comments.length).toBeGreaterThanOrEqual(2);
    for (const frame of frames) expect(frame === ": keepalive" || /^(event|id|data|retry): /m.test(frame)).toBe(true);
    expect(frames.filter((frame) => frame.includes('"result"') && frame.includes('"id":7'))).toHaveLength(1);
    // None after the answer: the stream ended with it.
    expect(frames.at(-1)).toContain('"result"');
  });

  it("the v1 SDK client aborting calls one after another does not fill --max-connections: a new client still connects and is answered", async () => {
    const front = await startFront(["--max-connections", "6", ...server(SCRIPTED)]);
    const client = new Client({ name: "aborts", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(front.url));
    open.push(() => client.close());
    for (let i = 0; i < 10; i++) {
      const controller = new AbortController();
      const call = client.callTool({ name: "late", arguments: { ms: 5_000 } }, undefined, { signal: controller.signal });
      const calls = i + 1;
      expect(await eventually(() => received(front.stderr()).filter((m) => m.method === "tools/call").length === calls)).toBe(true);
      controller.abort("stop");
      await expect(call).rejects.toThrow();
    }
    expect(await eventually(() => received(front.stderr()).filter((m) => m.method === "notifications/cancelled").length === 10)).toBe(true);
    const second = new Client({ name: "after", version: "1" });
    await second.connect(new StreamableHTTPClientTransport(front.url));
    open.push(() => second.close());
    await expect(second.callTool({ name: "echo", arguments: { text: "still here" } })).resolves.toBeDefined();
  });

  it("a request under the id of one in progress gets -32600 at once and reaches no server; the first still gets its answer on its own stream", async () => {
    const front = await startFront(server(SCRIPTED));
    const { post } = await session(front.url, "2025-06-18");
    const first = post({ jsonrpc: "2.0", id: 20, method: "tools/call", params: { name: "late", arguments: { ms: 700 } } });
    expect(await eventually(() => received(front.stderr()).some((m) => m.method === "tools/call"))).toBe(true);
    const second = await post({ jsonrpc: "2.0", id: 20, method: "tools/call", params: { name: "echo", arguments: { text: "second" } } });
    const refusal = JSON.parse(await second.text()) as { id: unknown; error: { code: number; message: string } };
    expect(refusal.id).toBe(20);
    expect(refusal.error.code).toBe(-32600);
    expect(refusal.error.message).toContain("already used by a request in progress (rule 1 in docs/spec-rules.md)");
    const answer = await (await first).text();
    expect(answer).toContain('"id":20');
    expect(answer).toContain('"result"');
    expect(received(front.stderr()).filter((m) => m.method === "tools/call")).toHaveLength(1);
  });
  it("a cancel whose POST overtook its request's (HTTP reorders; stdio cannot) follows the request when it comes: the tool is cancelled, not run to its end; a cancel of an answered id does not touch a later request reusing it", async () => {
    const front = await startFront(server(SCRIPTED));
    const { post } = await session(front.url, "2025-06-18");
    const cancels = () => received(front.stderr()).filter((m) => m.method === "notifications/cancelled");
    // The cancel first, then its request.
    expect((await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "x", reason: "stop" } })).status).toBe(
      202,
    );
    const stream = reader(
      await post({ jsonrpc: "2.0", id: "x", method: "tools/call", params: { name: "late", arguments: { ms: 3_000 } } }),
    );
    expect(await eventually(() => stream.ended(), 2_000)).toBe(true);
    expect(stream.text()).not.toContain('"result"');
    // Sent and cancelled at once, or never sent: either way the server does not run it to its end unasked.
    const calls = received(front.stderr()).filter((m) => m.method === "tools/call");
    // The server logs the cancel as it reads it, which may come just after the stream ended.
    expect(await eventually(() => cancels().length === calls.length, 2_000)).toBe(true);
    // An answered request's id: a late cancel for it (rule 9) is ignored, and a new request reusing the id is answered.
    expect(
      await (await post({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "echo", arguments: { text: "one" } } })).text(),
    ).toContain('"result"');
    expect((await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, reason: "too late" } })).status).toBe(
      202,
    );
    expect(
      await (await post({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "echo", arguments: { text: "two" } } })).text(),
    ).toContain('"result"');
    expect(cancels()).toHaveLength(calls.length);
    // A cancel whose request never comes reaches nothing.
    await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "never", reason: "stop" } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(cancels()).toHaveLength(calls.length);
  });
  it("initialize inside a JSON-RPC batch is refused naming that (not a missing session header); nothing is started", async () => {
    const front = await startFront(server(SCRIPTED));
    const response = await fetch(front.url, {
      method: "POST",
      headers: HEADERS,
      body: JSON.stringify([
        {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "batch", version: "1" } },
        },
      ]),
    });
    expect(response.status).toBe(400);
    const answer = (await response.json()) as { error: { code: number; message: string } };
    expect(answer.error.code).toBe(-32600);
    expect(answer.error.message).toContain("initialize must be sent alone");
    expect(received(front.stderr()).filter((m) => m.method === "initialize")).toEqual([]);
  });
  it("a batch (2025-03-26) with one request cancelled: its stream still carries the other's answer, then ends", async () => {
    const front = await startFront(server(SCRIPTED));
    const { post } = await session(front.url, "2025-03-26");
    const calls = received(front.stderr()).filter((m) => m.method === "tools/call").length;
    const stream = reader(
      await post([
        { jsonrpc: "2.0", id: "a", method: "tools/call", params: { name: "late", arguments: { ms: 5_000 } } },
        { jsonrpc: "2.0", id: "b", method: "tools/call", params: { name: "late", arguments: { ms: 800 } } },
      ]),
    );
    expect(await eventually(() => received(front.stderr()).filter((m) => m.method === "tools/call").length === calls + 2)).toBe(true);
    expect((await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "a", reason: "stop" } })).status).toBe(
      202,
    );
    expect(await eventually(() => stream.ended(), 3_000)).toBe(true);
    expect(stream.text()).toContain('"id":"b","result"');
    expect(stream.text()).not.toContain('"id":"a"');
  });
  it("a batch naming an id in progress, or one id twice, is refused whole (400, -32600) and none of it is sent; the request in progress still gets its answer", async () => {
    const front = await startFront(server(SCRIPTED));
    const { post } = await session(front.url, "2025-03-26");
    const calls = () => received(front.stderr()).filter((m) => m.method === "tools/call").length;
    const first = post({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "late", arguments: { ms: 800 } } });
    expect(await eventually(() => calls() === 1)).toBe(true);
    const echo = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: {} } });
    for (const batch of [
      [echo(3), echo(4)],
      [echo(9), echo(9)],
    ]) {
      const refused = await post(batch);
      expect(refused.status).toBe(400);
      const answer = (await refused.json()) as { error: { code: number; message: string } };
      expect(answer.error.code).toBe(-32600);
      expect(answer.error.message).toContain("no request of the batch was sent");
    }
    const text = await (await first).text();
    expect(text).toContain('"id":3,"result"');
    expect(calls()).toBe(1);
  });

  it("a JSON-RPC batch in a 2025-06-18 or 2025-11-25 session is refused whole (400, -32600; batching left the protocol at 2025-06-18) and none of it reaches the server", async () => {
    const front = await startFront(server(SCRIPTED));
    for (const version of ["2025-06-18", "2025-11-25"]) {
      const { post } = await session(front.url, version);
      const calls = received(front.stderr()).filter((m) => m.method === "tools/call").length;
      const refused = await post([
        { jsonrpc: "2.0", id: "x", method: "tools/call", params: { name: "echo", arguments: {} } },
        { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "x" } },
      ]);
      expect(refused.status).toBe(400);
      const answer = (await refused.json()) as { id: unknown; error: { code: number; message: string } };
      expect(answer.id).toBeNull();
      expect(answer.error.code).toBe(-32600);
      expect(answer.error.message).toContain(`not part of protocol ${version}`);
      // The session is still there: a single request in it is answered.
      const single = await post({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: {} } });
      expect(await single.text()).toContain('"id":2,"result"');
      // The server logs what it reads on stderr, which may reach the test after the answer.
      const toolCalls = () => received(front.stderr()).filter((m) => m.method === "tools/call").length;
      expect(await eventually(() => toolCalls() === calls + 1, 2_000)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(toolCalls()).toBe(calls + 1); // only the single request: nothing of the batch
    }
  });

  it("a resume of a cancelled request's stream gets 204 even after the session's event store dropped its events", async () => {
    const front = await startFront(["--events-per-session", "4", ...server(SCRIPTED)]);
    const { headers, post } = await session(front.url, "2025-11-25");
    const calls = () => received(front.stderr()).filter((m) => m.method === "tools/call").length;
    const stream = reader(
      await post({ jsonrpc: "2.0", id: "c", method: "tools/call", params: { name: "late", arguments: { ms: 5_000 } } }),
    );
    expect(await eventually(() => calls() === 1)).toBe(true);
    await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "c", reason: "stop" } });
    expect(await eventually(() => stream.ended(), 2_000)).toBe(true);
    const eventId = /^id: (\S+)$/m.exec(stream.text())?.[1];
    expect(eventId).toBeDefined();
    // Six more events (a priming event and an answer each) push the cancelled stream's out of the store's 4.
    for (let i = 0; i < 3; i++)
      await (await post({ jsonrpc: "2.0", id: `e${i}`, method: "tools/call", params: { name: "echo", arguments: {} } })).text();
    const resume = await fetch(front.url, {
      method: "GET",
      headers: { ...headers, accept: "text/event-stream", "last-event-id": eventId! },
    });
    expect(resume.status).toBe(204);
  });

  it("a 2026-07-28 request whose id is not an integer is refused with id null, not its id echoed", async () => {
    const front = await startFront(server(SCRIPTED));
    const response = await post2026(front.url, { id: 1.5, method: "tools/list" });
    expect(response.status).toBe(400);
    const [answer] = await messagesOf(response);
    expect(answer!.id).toBeNull();
    expect(answer!.error?.code).toBe(-32600);
  });
  it("--verbose in a session: an answer is logged under the client's id beside the upstream's, and a cancel with its reason", async () => {
    const front = await startFront(["--verbose", ...server(SCRIPTED)]);
    const { post } = await session(front.url, "2025-06-18");
    await (await post({ jsonrpc: "2.0", id: "answered", method: "tools/call", params: { name: "echo", arguments: {} } })).text();
    const stream = reader(
      await post({ jsonrpc: "2.0", id: "v1", method: "tools/call", params: { name: "late", arguments: { ms: 5_000 } } }),
    );
    expect(await eventually(() => received(front.stderr()).some((m) => m.method === "tools/call"))).toBe(true);
    await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "v1", reason: "the user pressed stop" } });
    expect(await eventually(() => stream.ended(), 2_000)).toBe(true);
    expect(front.stderr()).toContain('server->client result id "answered" (upstream 2)');
    expect(front.stderr()).toContain('client->server tools/call id "v1" (upstream 3)');
    expect(front.stderr()).toContain(
      'client->proxy notifications/cancelled id "v1" (upstream 3): cancelling upstream: the user pressed stop',
    );
  });

  it("--verbose: the proxy's own timeout is logged as the proxy's answer with the cancel it sent upstream, in both eras, never as the server's", async () => {
    const front = await startFront(["--verbose", "--timeout-ms", "300", ...server(SCRIPTED)]);
    const { post } = await session(front.url, "2025-11-25");
    const [legacy] = await messagesOf(
      await post({ jsonrpc: "2.0", id: "t1", method: "tools/call", params: { name: "silent", arguments: {} } }),
    );
    expect(legacy!.error?.code).toBe(-32001);
    // The shared 2026-07-28 server is started by its first request: one it answers first (until a
    // stdio server has spoken, a request's idle timeout is held for its start).
    await messagesOf(await post2026(front.url, { id: "warm", method: "tools/call", params: { name: "echo", arguments: {} } }));
    const [modern] = await messagesOf(
      await post2026(front.url, { id: "t2", method: "tools/call", params: { name: "silent", arguments: {} } }),
    );
    expect(modern!.error?.code).toBe(-32001);
    const lines = front.stderr().split("\n");
    for (const id of ["t1", "t2"]) {
      const line = lines.find((l) => l.includes(`error id "${id}"`));
      expect(line).toMatch(
        new RegExp(
          `: proxy->client error id "${id}" \\(upstream \\d+\\): the proxy's own answer \\(REQUEST_TIMEOUT\\); cancelled upstream \\(notification\\): Request timed out after 300 ms$`,
        ),
      );
    }
    expect(lines.filter((l) => l.includes("server->client error"))).toEqual([]);
  });
});
