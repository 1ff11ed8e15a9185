import { afterEach, describe, expect, it } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import {
  CallCancelledError,
  CallTimeoutError,
  ConnectionClosedError,
  InvalidOptionError,
  attachCancellation,
  withCancellation,
} from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { fixture, eventually } from "../helpers/stdio.js";
import { closedUnfinished, sawDisconnect, seen, startV1, startV2, started } from "../http/servers.js";
import type { TestServer } from "../http/servers.js";
import { SLACK_MS } from "../helpers/timing.js";

// attachCancellation on clients that are already connected, as an agent framework leaves them:
// v1 and v2 SDK clients, stdio and Streamable HTTP, real servers. The framework's own calls on
// the client (client.callTool / client.request with the SDK's options) get the library's
// behaviour; client.transport keeps its identity; a reconnect attaches to the new transport.

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

function stderrOf(transport: { stderr: unknown }): () => string {
  const chunks: string[] = [];
  (transport.stderr as NodeJS.ReadableStream | null)?.on("data", (chunk: Buffer) => chunks.push(chunk.toString("utf8")));
  return () => chunks.join("");
}

async function v1Stdio(script: string, args: string[] = []) {
  const transport = new StdioV1({ command: process.execPath, args: [fixture(script), ...args], stderr: "pipe" });
  const stderr = stderrOf(transport);
  const client = new ClientV1({ name: "framework", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  await client.connect(transport);
  cleanups.push(() => client.close());
  return { client, transport, stderr, errors };
}

async function v2Stdio(pin: boolean) {
  const transport = new StdioV2({ command: process.execPath, args: [fixture("http/v2-stdio-server.mjs")], stderr: "pipe" });
  const stderr = stderrOf(transport);
  const client = new ClientV2(
    { name: "framework", version: "1.0.0" },
    pin ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : undefined,
  );
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  await client.connect(transport);
  cleanups.push(() => client.close());
  return { client, transport, stderr, errors };
}

async function server(start: () => Promise<TestServer>): Promise<TestServer> {
  const s = await start();
  cleanups.unshift(() => s.stop()); // stopped after the clients closed
  return s;
}

const cancelsIn = (stderr: string): number => (stderr.match(/RECV .*notifications\/cancelled/g) ?? []).length;

describe("attachCancellation: v1 client over stdio (SDK server)", () => {
  it("keeps client.transport's identity, leaves a call in flight alone, and returns the same handle twice", async () => {
    const { client, transport } = await v1Stdio("sdk-stdio-server.mjs");
    const inFlight = client.callTool({ name: "sleep", arguments: { ms: 200 } });
    const mcp = attachCancellation(client);
    expect(client.transport).toBe(transport);
    expect(mcp.transport).toBe(transport);
    expect(attachCancellation(client)).toBe(mcp);
    expect(mcp.sdkClient).toBe(client);
    await expect(inFlight).resolves.toMatchObject({ content: [{ text: "slept 200" }] });
    expect(mcp.records()).toEqual([]); // made before the attach: the SDK's own, untouched
    await expect(client.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ text: "slept 1" }] });
    expect(mcp.records()).toMatchObject([{ method: "tools/call", name: "sleep", status: "succeeded" }]);
  });

  it("a call in flight before the attach, then aborted: the SDK's own notification still reaches the handler, once (an outside tester's: it was dropped as one of ours)", async () => {
    const { client, stderr, errors } = await v1Stdio("sdk-stdio-server.mjs");
    const controller = new AbortController();
    const inFlight = client.callTool({ name: "sleep", arguments: { ms: 10_000 } }, undefined, { signal: controller.signal });
    inFlight.catch(() => {});
    expect(await eventually(() => /STARTED /.test(stderr()))).toBe(true);
    const mcp = attachCancellation(client);
    // A call through the attach after it: its own cancel is the library's, and the earlier one stays the SDK's.
    const later = new AbortController();
    const ours = client.callTool({ name: "sleep", arguments: { ms: 10_000 } }, undefined, { signal: later.signal });
    ours.catch(() => {});
    expect(await eventually(() => (stderr().match(/STARTED /g) ?? []).length === 2)).toBe(true);
    controller.abort(new Error("user stop"));
    await expect(inFlight).rejects.toThrow();
    expect(await eventually(() => (stderr().match(/ABORTED \d+/g) ?? []).length === 1)).toBe(true);
    later.abort(new Error("run aborted"));
    await expect(ours).rejects.toBeInstanceOf(CallCancelledError);
    expect(await eventually(() => (stderr().match(/ABORTED \d+/g) ?? []).length === 2)).toBe(true);
    expect(stderr()).not.toContain("user stop"); // the reason stays local, as for any SDK cancel through the library
    expect(mcp.records()).toHaveLength(1); // made before the attach: the SDK's own, no record
    expect(errors).toEqual([]);
  });

  it("the framework's signal: CallCancelledError, one notification that reaches the handler, a record", async () => {
    const { client, stderr, errors } = await v1Stdio("sdk-stdio-server.mjs");
    const mcp = attachCancellation(client);
    const controller = new AbortController();
    const call = client.callTool({ name: "sleep", arguments: { ms: 10_000 } }, undefined, { signal: controller.signal, timeout: 60_000 });
    expect(await eventually(() => /STARTED /.test(stderr()))).toBe(true);
    const t0 = performance.now();
    controller.abort(new Error("run aborted"));
    const error = await call.catch((e: unknown) => e);
    expect(performance.now() - t0).toBeLessThan(SLACK_MS);
    expect(error).toBeInstanceOf(CallCancelledError);
    expect((error as CallCancelledError).cause).toBe(controller.signal.reason);
    expect(await eventually(() => /ABORTED \d+/.test(stderr()))).toBe(true);
    expect(mcp.records()).toMatchObject([
      { status: "cancelled", cancel: { trigger: "aborted", mechanism: "notification" }, outcome: "unverified" },
    ]);
    expect(errors).toEqual([]);
    expect(mcp.pendingCount).toBe(0);
  });

  it("the SDK's timeout option becomes the idle timeout; without one, the attach default holds", async () => {
    const { client, stderr } = await v1Stdio("sdk-stdio-server.mjs");
    const mcp = attachCancellation(client, { timeoutMs: 300 });
    const t0 = performance.now();
    const mapped = await client
      .callTool({ name: "sleep", arguments: { ms: 10_000 } }, undefined, { timeout: 150 })
      .catch((e: unknown) => e);
    const mappedMs = performance.now() - t0;
    expect(mapped).toBeInstanceOf(CallTimeoutError);
    expect((mapped as CallTimeoutError).timeoutMs).toBe(150);
    // Named as the framework set it: its user never wrote timeoutMs 150.
    expect((mapped as Error).message).toContain(
      'timed out after 150 ms (the idle timeout, the SDK request option "timeout", as the framework set it;',
    );
    expect(mappedMs).toBeGreaterThanOrEqual(145);
    const t1 = performance.now();
    const fallback = await client.callTool({ name: "sleep", arguments: { ms: 10_000 } }).catch((e: unknown) => e);
    expect(fallback).toBeInstanceOf(CallTimeoutError);
    expect((fallback as CallTimeoutError).code).toBe("REQUEST_TIMEOUT");
    expect((fallback as CallTimeoutError).timeoutMs).toBe(300);
    expect((fallback as Error).message).toContain("(the idle timeout, timeoutMs;");
    expect(performance.now() - t1).toBeGreaterThanOrEqual(295);
    expect(performance.now() - t1).toBeLessThan(300 + SLACK_MS);
    expect(await eventually(() => (stderr().match(/ABORTED/g) ?? []).length === 2)).toBe(true);
    expect(mcp.records().map((r) => r.cancel?.trigger)).toEqual(["timeout", "timeout"]);
  });

  it("client.request and the v1 helpers built on it (listTools) get a record; a bad SDK timeout is a usage error", async () => {
    const { client } = await v1Stdio("sdk-stdio-server.mjs");
    const mcp = attachCancellation(client);
    await client.listTools();
    expect(mcp.records()).toMatchObject([{ method: "tools/list", status: "succeeded" }]);
    await expect(client.callTool({ name: "sleep", arguments: { ms: 1 } }, undefined, { timeout: 0 })).rejects.toMatchObject({
      name: "InvalidOptionError",
      option: "timeout",
      message: expect.stringMatching(
        /"timeout" \(the SDK's request option, in ms\) must be a positive number of ms, or Infinity; received 0$/,
      ),
    });
    // Through listTools (which calls request): the error names the method, not only client.request.
    await expect(client.listTools({}, { timeout: -1 })).rejects.toMatchObject({
      name: "InvalidOptionError",
      option: "timeout",
      message: expect.stringMatching(/^client\.request \(tools\/list\): "timeout" \(the SDK's request option, in ms\)/),
    });
    // Named as the SDK's option where it was given, not as the library's call options.
    await expect(
      client.callTool({ name: "sleep", arguments: { ms: 1 } }, undefined, { resetTimeoutOnProgress: "yes" } as never),
    ).rejects.toMatchObject({
      name: "InvalidOptionError",
      option: "resetTimeoutOnProgress",
      message: expect.stringMatching(/: "resetTimeoutOnProgress" \(the SDK's request option\) must be true or false; received "yes"$/),
    });
    // The library's client-wide options there: the SDK would ignore them (an outside tester's: the
    // call ran as if awaitVerification had never been given).
    for (const option of ["awaitVerification", "verifiers", "onRecord", "maxRecords"]) {
      const refused = await client
        .callTool({ name: "sleep", arguments: { ms: 1 } }, undefined, { [option]: true } as never)
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ name: "InvalidOptionError", option });
      expect((refused as Error).message).toBe(
        `client.callTool: "${option}" is a client-wide option of the library (withCancellation or attachCancellation options), not one of the SDK's request options (the SDK would ignore it)`,
      );
    }
    // signal and onprogress too (an outside tester's: they were named as the library's "call options").
    for (const [option, value, wants] of [
      [
        "signal",
        "x",
        "an AbortSignal or an array of AbortSignals \\(an object with a boolean `aborted` and `addEventListener` and `removeEventListener` functions will do\\)",
      ],
      ["onprogress", 5, "a function"],
    ] as const) {
      const refused = await client
        .callTool({ name: "sleep", arguments: { ms: 1 } }, undefined, { [option]: value } as never)
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ name: "InvalidOptionError", option });
      expect((refused as Error).message).toMatch(
        new RegExp(`^client\\.callTool: "${option}" \\(the SDK's request option\\) must be ${wants}; received `),
      );
    }
  });

  it("the library's own call options among the SDK's request options are refused, naming the SDK's name or where they belong; nothing is sent", async () => {
    const { client, stderr } = await v1Stdio("sdk-stdio-server.mjs");
    const mcp = attachCancellation(client);
    const sleep = { name: "sleep", arguments: { ms: 1 } };
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ timeoutMs: 300 }, "timeoutMs", /"timeoutMs" is the library's call option; the SDK's request options take "timeout" \(ms\)/],
      [{ maxTotalTimeoutMs: 900 }, "maxTotalTimeoutMs", /take "maxTotalTimeout" \(ms\)/],
      [{ verify: () => "applied" }, "verify", /verified by the client-wide "verifiers" option/],
      [{ reason: "no longer needed" }, "reason", /"reason" is the library's call option, not one of the SDK's request options/],
    ];
    for (const [options, option, message] of cases) {
      await expect(client.callTool(sleep, undefined, options)).rejects.toMatchObject({ name: "InvalidOptionError", option, message });
      await expect(mcp.sdkClient.callTool(sleep, undefined, options)).rejects.toMatchObject({ name: "InvalidOptionError", option });
    }
    // A Date or a Map where the request options go would read as {} (every default): refused too.
    for (const [options, name] of [
      [new Map([["timeout", 200]]), "a Map"],
      [new Date(0), "a Date"],
    ] as const) {
      await expect(client.callTool(sleep, undefined, options as never)).rejects.toMatchObject({
        name: "InvalidOptionError",
        option: "options",
        message: expect.stringContaining(`received ${name}`),
      });
    }
    // The SDK's own names still work, and what the SDK takes is passed through.
    await expect(client.callTool(sleep, undefined, { timeout: 5_000, resetTimeoutOnProgress: true })).resolves.toBeDefined();
    // Only that call reached the tool (its stderr line may come after its result: another pipe).
    expect(await eventually(() => /STARTED/.test(stderr()))).toBe(true);
    expect(stderr().match(/STARTED/g)).toHaveLength(1);
    expect(mcp.records().map((r) => r.status)).toEqual(["succeeded"]); // the refused calls are usage errors: no record
  });
  it("an SDK request option misspelt in case, _ or - (timeoutMS, onProgress, max_total_timeout) is refused naming the option meant, not passed to the SDK to be ignored; nothing is sent", async () => {
    const { client, stderr } = await v1Stdio("sdk-stdio-server.mjs");
    const mcp = attachCancellation(client);
    const sleep = { name: "sleep", arguments: { ms: 1 } };
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [
        { timeoutMS: 300 },
        "timeoutMS",
        /"timeoutMS" is not one of the SDK's request options \(the SDK would ignore it, .*\): the SDK's request option is "timeout" \(ms\)$/,
      ],
      [{ Timeout: 300 }, "Timeout", /the SDK's request option is "timeout" \(ms\)$/],
      [{ max_total_timeout: 900 }, "max_total_timeout", /the SDK's request option is "maxTotalTimeout" \(ms\)$/],
      [{ onProgress: () => {} }, "onProgress", /the SDK's request option is "onprogress"$/],
      [{ resettimeoutonprogress: true }, "resettimeoutonprogress", /the SDK's request option is "resetTimeoutOnProgress"$/],
      [{ awaitverification: true }, "awaitverification", /"awaitVerification" is the library's option/],
    ];
    for (const [options, option, message] of cases) {
      await expect(client.callTool(sleep, undefined, options)).rejects.toMatchObject({ name: "InvalidOptionError", option, message });
      await expect(mcp.sdkClient.request({ method: "tools/call", params: sleep }, undefined as never, options)).rejects.toMatchObject({
        name: "InvalidOptionError",
        option,
      });
    }
    // The SDK's own options that only look alike pass through: resumptionToken and relatedRequestId.
    await expect(client.callTool(sleep, undefined, { timeout: 5_000, relatedRequestId: 7 })).resolves.toBeDefined();
    expect(await eventually(() => /STARTED/.test(stderr()))).toBe(true);
    expect(stderr().match(/STARTED/g)).toHaveLength(1); // only that call reached the tool
    expect(mcp.records().map((r) => r.status)).toEqual(["succeeded"]);
  });
});

describe("attachCancellation: late results over stdio (a raw server that ignores cancels)", () => {
  it("a late result after our timeout is discarded and recorded; the SDK reports no unknown id", async () => {
    const { client, stderr, errors } = await v1Stdio("scripted-server.mjs");
    const mcp = attachCancellation(client);
    const error = await client.callTool({ name: "late", arguments: { ms: 300 } }, undefined, { timeout: 100 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(await eventually(() => mcp.records()[0]?.late.results === 1)).toBe(true);
    expect(mcp.records()[0]).toMatchObject({ outcome: "late-result-discarded", cancel: { mechanism: "notification" } });
    expect(cancelsIn(stderr())).toBe(1);
    expect(errors).toEqual([]);
    await expect(client.callTool({ name: "echo" })).resolves.toMatchObject({ content: [{ type: "text" }] });
  });
});

describe("attachCancellation: v2 client over stdio", () => {
  // The 2025-era abort on a v2 client over stdio is a row of the entry-point contract (test/contract/).
  it("2026-07-28: an abort through client.callTool(params, { signal }) sends one notification to the handler", async () => {
    const { client, transport, stderr, errors } = await v2Stdio(true);
    const mcp = attachCancellation(client);
    expect(client.transport).toBe(transport);
    await expect(client.callTool({ name: "sleep", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ type: "text" }] });
    const controller = new AbortController();
    const call = client.callTool({ name: "sleep", arguments: { ms: 10_000 } }, { signal: controller.signal });
    expect(await eventually(() => (stderr().match(/STARTED /g) ?? []).length === 2)).toBe(true); // the first call's, then this one's
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(CallCancelledError);
    expect(await eventually(() => /ABORTED/.test(stderr()))).toBe(true);
    expect(mcp.records().map((r) => `${r.status}/${r.cancel?.mechanism ?? "-"}`)).toEqual(["succeeded/-", "cancelled/notification"]);
    expect(errors).toEqual([]);
  });
});

// The idle timeout, the abort and the lost connection on Streamable HTTP (v1 with cancellableFetch,
// v2 in both eras) are rows of the entry-point contract (test/contract/entry-points-http.test.ts).
describe("attachCancellation: Streamable HTTP", () => {
  for (const [label, slot, mechanism] of [
    [
      "its requests get a per-request fetch over the plain one: the notification, then the request's stream closed",
      true,
      "notification+stream-close",
    ],
    ["with the SDK's _fetch slot gone (the fallback): the POSTed notification alone, said in the record", false, "notification"],
  ] as const) {
    it(`v1 client whose transport has the plain fetch: ${label}`, async () => {
      const s = await server(() => startV1());
      const transport = new HttpV1(s.url);
      const client = new ClientV1({ name: "framework", version: "1.0.0" });
      await client.connect(transport);
      cleanups.push(() => client.close());
      if (!slot) delete (transport as unknown as { _fetch?: unknown })._fetch; // what a release that moved the field looks like
      const mcp = attachCancellation(client);
      const controller = new AbortController();
      const call = client.callTool({ name: "slow", arguments: { ms: 5_000 } }, undefined, { signal: controller.signal });
      const idOf = () => mcp.records()[0]?.requestId ?? seen(s, "tools/call").at(-1)?.http.id;
      expect(await eventually(() => s.events.some((e) => e.kind === "handler-start"))).toBe(true);
      controller.abort();
      await expect(call).rejects.toBeInstanceOf(CallCancelledError);
      expect(mcp.records()[0]).toMatchObject({ cancel: { trigger: "aborted", mechanism } });
      expect(await eventually(() => seen(s, "notifications/cancelled").some((c) => c.http.cancelOf === idOf()))).toBe(true);
      // The stateful 2025 server stops the handler on the notification.
      expect(await eventually(() => seen(s, "tools/call").at(-1)?.aborted !== undefined)).toBe(true);
      // The request's own stream: closed by the client at once, or left to the server to end.
      if (slot) expect(await eventually(() => closedUnfinished(seen(s, "tools/call").at(-1)))).toBe(true);
      else expect(closedUnfinished(seen(s, "tools/call").at(-1))).toBe(false);
      expect(transport.sessionId).toBeDefined();
      // the next call on the upgraded transport works
      await expect(client.callTool({ name: "slow", arguments: { ms: 1 } })).resolves.toMatchObject({ content: [{ type: "text" }] });
    });
  }
});

describe("attachCancellation: a timeout followed at once by client.close() (the framework shutting down)", () => {
  it("stdio: the timer-fired cancel line is written before stdin ends, and the server's handler stops on it", async () => {
    const { client, stderr, errors } = await v1Stdio("sdk-stdio-server.mjs");
    const mcp = attachCancellation(client, { timeoutMs: 300 });
    const call = client.callTool({ name: "sleep", arguments: { ms: 10_000 } });
    expect(await eventually(() => /STARTED /.test(stderr()))).toBe(true); // its abort signal exists (rule 10)
    const error = await call.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    await client.close(); // at once: the line was still waiting for its turn (the close used to end stdin first)
    expect(await eventually(() => /ABORTED \d+/.test(stderr()))).toBe(true);
    expect(mcp.records()[0]!.cancel).toMatchObject({ mechanism: "notification", undelivered: null });
    expect(mcp.records()[0]!.cancel!.sentAt).not.toBeNull();
    expect(errors).toEqual([]);
  });

  it("2025-era HTTP: the POSTed notification is answered before the transport's fetches are aborted", async () => {
    const s = await server(() => startV1({ stateful: true }));
    const transport = new HttpV1(s.url);
    const client = new ClientV1({ name: "framework", version: "1.0.0" });
    await client.connect(transport);
    cleanups.push(() => client.close());
    const mcp = attachCancellation(client, { timeoutMs: 300 });
    const call = client.callTool({ name: "slow", arguments: { ms: 5_000 } });
    const error = await call.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    await client.close(); // at once
    expect(await eventually(() => seen(s, "notifications/cancelled").length === 1)).toBe(true);
    expect(seen(s, "notifications/cancelled")[0]!.close?.status).toBe(202); // the server read it before the client went
    expect(await eventually(() => seen(s, "tools/call").at(-1)?.aborted !== undefined)).toBe(true);
    expect(mcp.records()[0]!.cancel).toMatchObject({ mechanism: "notification+stream-close", undelivered: null });
  });
});

describe("attachCancellation across a reconnect", () => {
  it("v1 stdio: after close and connect on a new transport, the next call attaches to it", async () => {
    const first = await v1Stdio("sdk-stdio-server.mjs");
    const { client } = first;
    const mcp = attachCancellation(client);
    await client.callTool({ name: "sleep", arguments: { ms: 1 } });
    await client.close();
    await expect(mcp.callTool({ name: "sleep", arguments: { ms: 1 } })).rejects.toBeInstanceOf(ConnectionClosedError);
    const next = new StdioV1({ command: process.execPath, args: [fixture("sdk-stdio-server.mjs")], stderr: "pipe" });
    const stderr = stderrOf(next);
    await client.connect(next);
    expect(client.transport).toBe(next);
    const error = await client.callTool({ name: "sleep", arguments: { ms: 10_000 } }, undefined, { timeout: 150 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(client.transport).toBe(next);
    expect(mcp.transport).toBe(next);
    expect(await eventually(() => /ABORTED/.test(stderr()))).toBe(true);
    expect(mcp.records().map((r) => r.summary)).toEqual([
      "succeeded",
      "cancelled (connection-closed), never sent",
      "cancelled (timeout), outcome unverified",
    ]);
    expect(mcp.pendingCount).toBe(0);
  });

  it("v2 HTTP (2026-07-28): a reconnect on a new transport keeps the stream-close cancel", async () => {
    const s = await server(() => startV2());
    const client = new ClientV2({ name: "framework", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new HttpV2(s.url));
    cleanups.push(() => client.close());
    const mcp = attachCancellation(client);
    await client.close();
    const next = new HttpV2(s.url);
    await client.connect(next);
    expect(client.transport).toBe(next);
    // 1 s: the request reaches the server first even on a loaded machine (at 200 ms it once did not,
    // and the server never saw a request to lose).
    const error = await client.callTool({ name: "slow", arguments: { ms: 5_000 } }, { timeout: 1_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    const record = mcp.records().at(-1) as RunRecord;
    expect(record.cancel).toMatchObject({ trigger: "timeout", mechanism: "stream-close" });
    expect(
      await eventually(
        () => started(s, record.requestId) && sawDisconnect(seen(s, "tools/call").find((c) => c.http.id === record.requestId)),
        15_000,
      ),
    ).toBe(true);
  });
});

describe("attachCancellation: usage", () => {
  it("refuses a client that is not connected, naming what to do", () => {
    let error: unknown;
    try {
      attachCancellation(new ClientV1({ name: "b", version: "1" }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as Error).message).toContain("not connected");
    expect((error as Error).message).toContain("withCancellation");
  });

  it("a transport whose close cannot be replaced (a getter) keeps its own: the attach works and its calls get the library", async () => {
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    const server = new McpServer({ name: "s", version: "1" });
    server.registerTool("hang", {}, () => new Promise<never>(() => {}));
    await server.connect(serverSide);
    // A wrapper whose close is an accessor without a setter (send is a plain method).
    const wrapper = {
      onmessage: undefined as ((message: unknown) => void) | undefined,
      onclose: undefined as (() => void) | undefined,
      onerror: undefined as ((error: Error) => void) | undefined,
      start: () => clientSide.start(),
      send: (message: never) => clientSide.send(message),
      get close() {
        return () => clientSide.close();
      },
    };
    clientSide.onmessage = (message) => wrapper.onmessage?.(message);
    clientSide.onclose = () => wrapper.onclose?.();
    const client = new ClientV1({ name: "b", version: "1" });
    await client.connect(wrapper as never);
    const mcp = attachCancellation(client, { timeoutMs: 200 });
    const error = await client.callTool({ name: "hang", arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(mcp.records()).toMatchObject([{ status: "cancelled", cancel: { trigger: "timeout", mechanism: "notification" } }]);
    await client.close(); // its own close
    expect(mcp.pendingCount).toBe(0);
  });

  it("refuses a client connected through withCancellation's transport (it would be decorated twice)", async () => {
    const transport = new StdioV1({ command: process.execPath, args: [fixture("sdk-stdio-server.mjs")], stderr: "pipe" });
    const client = new ClientV1({ name: "b", version: "1" });
    const mcp = withCancellation(client, transport);
    await client.connect(mcp.transport);
    cleanups.push(() => client.close());
    expect(() => attachCancellation(client)).toThrow(/withCancellation's mcp.transport/);
  });

  it("attaching again with other options is refused, naming the option (the first options stay in force: these would do nothing); the same options or none give the handle (issue 28, item 3)", async () => {
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    const server = new McpServer({ name: "s", version: "1" });
    await server.connect(serverSide);
    const client = new ClientV1({ name: "b", version: "1" });
    await client.connect(clientSide);
    cleanups.push(() => client.close());
    const options = { timeoutMs: 30_000, onRecord: () => {} };
    const mcp = attachCancellation(client, options);
    expect(attachCancellation(client, options)).toBe(mcp);
    expect(attachCancellation(client)).toBe(mcp);
    expect(attachCancellation(client, { ...options })).toBe(mcp); // the same values
    const error = (() => {
      try {
        attachCancellation(client, { timeoutMs: 1_000 });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).option).toBe("timeoutMs");
    expect((error as Error).message).toMatch(/attached already, with other options \("timeoutMs" differs\)/);
  });
});

describe("attachCancellation: the same transport object started again", () => {
  it("a reconnect on the very same transport object re-attaches without stacking decorators", async () => {
    // A transport that can be started again after a close (a fresh in-memory pair, and server, each time).
    class Restartable {
      inner: InMemoryTransport | undefined;
      servers = 0;
      onmessage?: (message: never) => void;
      onclose?: () => void;
      onerror?: (error: Error) => void;
      async start(): Promise<void> {
        const [client, serverSide] = InMemoryTransport.createLinkedPair();
        const server = new McpServer({ name: "s", version: "1" });
        server.registerTool("echo", { inputSchema: {} }, async () => ({ content: [{ type: "text" as const, text: "ok" }] }));
        await server.connect(serverSide);
        this.servers++;
        client.onmessage = (message) => this.onmessage?.(message as never);
        client.onclose = () => this.onclose?.();
        this.inner = client;
        await client.start();
      }
      send(message: never): Promise<void> {
        return this.inner!.send(message);
      }
      close(): Promise<void> {
        return this.inner!.close();
      }
    }
    const transport = new Restartable();
    const client = new ClientV1({ name: "framework", version: "1.0.0" });
    await client.connect(transport as never);
    const mcp = attachCancellation(client);
    await expect(client.callTool({ name: "echo" })).resolves.toMatchObject({ content: [{ text: "ok" }] });
    await client.close();
    await client.connect(transport as never); // the SDK sets its handlers on the same object again
    expect(client.transport).toBe(transport);
    await expect(client.callTool({ name: "echo" })).resolves.toMatchObject({ content: [{ text: "ok" }] });
    await expect(mcp.callTool({ name: "echo" })).resolves.toMatchObject({ content: [{ text: "ok" }] });
    expect(mcp.records().map((r) => r.summary)).toEqual(["succeeded", "succeeded", "succeeded"]);
    expect(transport.servers).toBe(2);
    await client.close();
  });
});
