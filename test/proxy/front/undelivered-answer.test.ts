// The HTTP front's record of a request whose answer came from the upstream but never reached the
// client: its response stream was cut while the answer was being written. Real fronts on
// 127.0.0.1 over the line server (stdio), a raw TCP client that reads the response's head, then
// stops reading (so a large answer cannot be flushed) and cuts the connection once the answer
// has reached the front (its record is written at the upstream's answer, before the write).
import { readFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { eventually, server, sleep, tempDir } from "../helpers.js";
import { META_2026, startFront, stopFronts } from "./helpers.js";

const LINE = new URL("../fixtures/line-server.mjs", import.meta.url).pathname;
/** Far more than the loopback socket buffers hold: the answer cannot be flushed to a client that does not read. */
const BIG_BYTES = 24 * 1024 * 1024;
const open: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
  await stopFronts();
});

type Json = Record<string, unknown>;

/** The records file's lines, parsed. */
function recordsIn(file: string): Json[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Json);
}

/** The lines of one client request's record, in the order written. */
const linesOf = (file: string, clientRequestId: string): Json[] => recordsIn(file).filter((r) => r.clientRequestId === clientRequestId);

/**
 * A raw HTTP/1.1 POST on its own socket: resolves with the socket once the response's head has
 * come; then the socket stops reading (the answer stays in the front).
 */
async function postAndStall(url: URL, headers: Record<string, string>, body: unknown): Promise<{ socket: net.Socket; head: string }> {
  const socket = net.connect(Number(url.port), url.hostname);
  open.push(() => socket.destroy());
  const text = JSON.stringify(body);
  const lines = [
    `POST ${url.pathname} HTTP/1.1`,
    `Host: ${url.host}`,
    "Content-Type: application/json",
    "Accept: application/json, text/event-stream",
    `Content-Length: ${Buffer.byteLength(text)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.write(`${lines.join("\r\n")}\r\n\r\n${text}`);
  const head = await new Promise<string>((resolve, reject) => {
    let got = "";
    const onData = (chunk: Buffer): void => {
      got += chunk.toString("latin1");
      if (!got.includes("\r\n\r\n")) return;
      socket.removeListener("data", onData);
      socket.pause();
      resolve(got.slice(0, got.indexOf("\r\n\r\n")));
    };
    socket.on("data", onData);
    socket.once("error", reject);
  });
  return { socket, head };
}

/** A 2025-era session by hand (fetch): its id (2025-11-25 unless `version` says another). */
async function legacySession(url: URL, version = "2025-11-25"): Promise<Record<string, string>> {
  const base = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const init = await fetch(url, {
    method: "POST",
    headers: base,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: "init",
      method: "initialize",
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "undelivered", version: "1" } },
    }),
  });
  await init.text();
  const headers = { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": version };
  const initialized = await fetch(url, {
    method: "POST",
    headers: { ...base, ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  await initialized.text();
  return headers;
}

const bigCall = (id: string) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "big", arguments: { bytes: BIG_BYTES } },
});

/** POSTs a call of `after` (answered after `ms`), reads its stream until its first event id (the priming event), then drops it: that id. */
async function dropAtFirstEvent(url: URL, headers: Record<string, string>, id: string, ms: number): Promise<string> {
  const dropped = new AbortController();
  const post = await fetch(url, {
    method: "POST",
    headers,
    signal: dropped.signal,
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "after", arguments: { ms } } }),
  });
  const reader = post.body!.getReader();
  let seen = "";
  while (!/^id: *(\S+)/m.test(seen)) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += new TextDecoder().decode(value);
  }
  dropped.abort();
  const eventId = /^id: *(\S+)/m.exec(seen)?.[1];
  expect(eventId).toBeDefined();
  return eventId!;
}

describe("proxy --listen: an answer the client's cut stream never received", () => {
  it("2026-07-28: recorded first as the upstream's success, then revised to the client's cancel (rule 6) with the answer discarded, never left a success", async () => {
    const dir = tempDir();
    open.push(() => dir.cleanup());
    const file = join(dir.dir, "records.jsonl");
    const front = await startFront(["--records", file, ...server(LINE)]);
    const call = bigCall("cut-2026");
    const { socket, head } = await postAndStall(
      front.url,
      { "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "big" },
      { ...call, params: { ...call.params, _meta: META_2026 } },
    );
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    // The upstream answered: the front settled the call (its record) and is writing the answer.
    expect(await eventually(() => linesOf(file, "cut-2026").length === 1, 20_000)).toBe(true);
    expect(linesOf(file, "cut-2026")[0]).toMatchObject({ status: "succeeded", revision: 0 });
    socket.destroy();
    expect(await eventually(() => linesOf(file, "cut-2026").length === 2)).toBe(true);
    const [first, last] = linesOf(file, "cut-2026");
    expect(last).toMatchObject({
      callId: first!.callId,
      requestId: first!.requestId,
      revision: 1,
      status: "cancelled",
      cancel: {
        trigger: "aborted",
        reason: "The client closed its response stream (mcp-cancellable proxy)",
        mechanism: "none",
        sentAt: null,
        undelivered: null,
      },
      outcome: "late-result-discarded",
      late: { results: 1, errors: 0 },
      summary: "cancelled (aborted), late result discarded",
      answerUndelivered: { resumable: false, error: expect.stringContaining("closed before") },
      clientRequestId: "cut-2026",
      clientSessionId: null,
    });
    // Nothing else is written for it, and the front holds nothing for it.
    await front.stop("SIGTERM");
    expect(linesOf(file, "cut-2026")).toHaveLength(2);
  });

  it("2026-07-28: an answer written whole keeps its one success line", async () => {
    const dir = tempDir();
    open.push(() => dir.cleanup());
    const file = join(dir.dir, "records.jsonl");
    const front = await startFront(["--records", file, ...server(LINE)]);
    const response = await fetch(front.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "big",
      },
      body: JSON.stringify({ ...bigCall("whole"), params: { name: "big", arguments: { bytes: 1_000 }, _meta: META_2026 } }),
    });
    expect(await response.text()).toContain('"id":"whole"');
    await front.stop("SIGTERM");
    expect(linesOf(file, "whole")).toEqual([expect.objectContaining({ status: "succeeded", revision: 0 })]);
  });

  it("2025-era: an answer written whole keeps its one success line", async () => {
    const dir = tempDir();
    open.push(() => dir.cleanup());
    const file = join(dir.dir, "records.jsonl");
    const front = await startFront(["--records", file, ...server(LINE)]);
    const session = await legacySession(front.url);
    const response = await fetch(front.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...session },
      body: JSON.stringify({ ...bigCall("whole"), params: { name: "big", arguments: { bytes: 1_000 } } }),
    });
    expect(await response.text()).toContain('"id":"whole"');
    await front.stop("SIGTERM");
    expect(linesOf(file, "whole")).toEqual([expect.objectContaining({ status: "succeeded", revision: 0 })]);
  });

  for (const [events, resumable] of [
    ["0", false],
    ["256", true],
  ] as const) {
    it(`2025-era, --events-per-session ${events}: a cut stream is no cancel (rule 40): still succeeded, revised to say the answer was not written and ${resumable ? "is kept for a resume (Last-Event-ID)" : "is lost"}`, async () => {
      const dir = tempDir();
      open.push(() => dir.cleanup());
      const file = join(dir.dir, "records.jsonl");
      const front = await startFront(["--records", file, "--events-per-session", events, ...server(LINE)]);
      const session = await legacySession(front.url);
      const { socket, head } = await postAndStall(
        front.url,
        { "Mcp-Session-Id": session["mcp-session-id"]!, "MCP-Protocol-Version": "2025-11-25" },
        bigCall("cut-2025"),
      );
      expect(head).toMatch(/^HTTP\/1\.1 200/);
      expect(await eventually(() => linesOf(file, "cut-2025").length === 1, 20_000)).toBe(true);
      expect(linesOf(file, "cut-2025")[0]).toMatchObject({ status: "succeeded", revision: 0 });
      socket.destroy();
      expect(await eventually(() => linesOf(file, "cut-2025").length === 2)).toBe(true);
      const [first, last] = linesOf(file, "cut-2025");
      expect(last).toMatchObject({
        callId: first!.callId,
        revision: 1,
        status: "succeeded",
        outcome: "completed",
        cancel: null,
        answerUndelivered: { resumable, error: expect.stringContaining("closed before") },
        summary: resumable
          ? "succeeded; the answer was not written to the client (its response stream closed first): kept for a resume (Last-Event-ID)"
          : "succeeded; the answer was not written to the client (its response stream closed first): lost (--events-per-session 0)",
        clientRequestId: "cut-2025",
        clientSessionId: session["mcp-session-id"],
      });
      await front.stop("SIGTERM");
      expect(linesOf(file, "cut-2025")).toHaveLength(2);
    });
  }

  it("2025-era (2025-06-18, no priming event): a request whose client dropped its stream, then timed out: one chain of revisions, the last saying the answer was lost because the transport refused it (events on)", async () => {
    // An outside tester's: revision 0, the front's revision 1 (answerUndelivered), then the
    // library's cancel revision as a second revision 1 without it; the summary blamed
    // --events-per-session 0, which was not given.
    const dir = tempDir();
    open.push(() => dir.cleanup());
    const file = join(dir.dir, "records.jsonl");
    const front = await startFront(["--records", file, "--timeout-ms", "800", ...server(LINE)]);
    const session = await legacySession(front.url, "2025-06-18");
    const dropped = new AbortController();
    const post = await fetch(front.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...session },
      signal: dropped.signal,
      body: JSON.stringify({ jsonrpc: "2.0", id: "dropped", method: "tools/call", params: { name: "silent", arguments: {} } }),
    });
    expect(post.status).toBe(200);
    dropped.abort();
    const undelivered = () => linesOf(file, "dropped").some((line) => line.answerUndelivered !== undefined);
    expect(await eventually(undelivered, 20_000)).toBe(true);
    await front.stop("SIGTERM");
    const lines = linesOf(file, "dropped");
    const revisions = lines.map((line) => line.revision as number);
    expect(revisions).toEqual(revisions.map((_, i) => i));
    const first = lines.findIndex((line) => line.answerUndelivered !== undefined);
    const lost = "lost (the session's transport refused it, so no resume has it)";
    for (const line of lines.slice(first)) {
      expect(line).toMatchObject({
        status: "cancelled",
        cancel: { trigger: "timeout" },
        answerUndelivered: { resumable: false, error: expect.stringContaining("No connection established") },
        summary: expect.stringMatching(new RegExp(`: ${lost.replace(/[()]/g, "\\$&")}$`)),
      });
    }
  });

  it("2025-era: a stream dropped before its answer and resumed (GET Last-Event-ID) before it came gets the answer live: one success line, no answerUndelivered", async () => {
    // An outside tester's: the resumed stream got the answer, and the record said it was not written.
    const dir = tempDir();
    open.push(() => dir.cleanup());
    const file = join(dir.dir, "records.jsonl");
    const front = await startFront(["--records", file, "--events-per-session", "256", ...server(LINE)]);
    const session = await legacySession(front.url);
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", ...session };
    const lastEventId = await dropAtFirstEvent(front.url, headers, "resumed", 600);
    const resumed = await fetch(front.url, { method: "GET", headers: { ...headers, "last-event-id": lastEventId } });
    expect(resumed.status).toBe(200);
    expect(await resumed.text()).toContain('"id":"resumed"');
    expect(await eventually(() => linesOf(file, "resumed").length >= 1)).toBe(true);
    await front.stop("SIGTERM");
    expect(linesOf(file, "resumed")).toEqual([expect.objectContaining({ status: "succeeded", revision: 0 })]);
    expect(linesOf(file, "resumed")[0]).not.toHaveProperty("answerUndelivered");
  });

  it("2025-era: a resume from an event the session does not keep (never sent, or older than --events-per-session) is refused 400 saying so, naming the option", async () => {
    // An outside tester's: the SDK's "Invalid event ID format", the same text as for garbage.
    const front = await startFront(["--events-per-session", "4", ...server(LINE)]);
    const session = await legacySession(front.url);
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", ...session };
    for (const lastEventId of ["999999", "zzz"]) {
      const refused = await fetch(front.url, { method: "GET", headers: { ...headers, "last-event-id": lastEventId } });
      expect(refused.status).toBe(400);
      expect((await refused.json()) as unknown).toMatchObject({
        error: {
          message: `Bad Request: Last-Event-ID "${lastEventId}" is not among this session's events: it was never sent, or it is older than the newest --events-per-session (4) kept`,
        },
      });
    }
    await front.stop("SIGTERM");
  });

  it("2025-era: two resumes of one stream at once: the answer written live on the first keeps one success line, whatever becomes of the second (held, then replayed, then closed)", async () => {
    // An outside tester's: the later GET was watched, and its close revised the record to say the answer was not written.
    const dir = tempDir();
    open.push(() => dir.cleanup());
    const file = join(dir.dir, "records.jsonl");
    const front = await startFront(["--records", file, "--events-per-session", "256", ...server(LINE)]);
    const session = await legacySession(front.url);
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", ...session };
    const lastEventId = await dropAtFirstEvent(front.url, headers, "twice", 600);
    const resume = { method: "GET", headers: { ...headers, "last-event-id": lastEventId } };
    const second = new AbortController();
    // The first is open (its head came) before the second is sent: which of two fetches sent at
    // once reaches the front first is the machine's to decide (under load the second did, and the
    // first, never answered, held the test to its timeout).
    const first = await fetch(front.url, resume);
    const later = fetch(front.url, { ...resume, signal: second.signal });
    const firstText = first.text();
    expect(await firstText).toContain('"id":"twice"');
    // The second: read until it carries the replayed answer too (or a bound), then closed by its client.
    const reader = (await later).body!.getReader();
    let seen = "";
    const until = performance.now() + 3_000;
    while (!seen.includes('"id":"twice"') && performance.now() < until) {
      const step = await Promise.race([reader.read(), sleep(200).then(() => undefined)]);
      if (step === undefined) continue;
      if (step.done) break;
      seen += new TextDecoder().decode(step.value);
    }
    second.abort();
    await sleep(300);
    expect(await eventually(() => linesOf(file, "twice").length >= 1)).toBe(true);
    await front.stop("SIGTERM");
    expect(linesOf(file, "twice")).toEqual([expect.objectContaining({ status: "succeeded", revision: 0 })]);
  });
});
