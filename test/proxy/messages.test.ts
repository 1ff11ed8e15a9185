// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} in a --header value is the option's own syntax, not a template.
import { afterEach, describe, expect, it } from "vitest";
import { parseProxyArgs } from "../../src/cli/proxy/args.js";
import { UsageError } from "../../src/cli/args.js";
import { DEFAULT_MAX_MESSAGE_BYTES } from "../../src/cli/json-lines.js";
import { eventually, RawClient, received, server } from "./helpers.js";
import { startRestartable } from "./restartable-server.js";

// Messages of any size up to --max-message-bytes, and what happens past it (issue 29, item 1);
// --header with ${NAME} (item 7).
const LINE = new URL("./fixtures/line-server.mjs", import.meta.url).pathname;
const running: RawClient[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const client of running.splice(0)) if (client.exit === undefined) await client.end();
  for (const close of closers.splice(0)) await close();
});
function start(args: string[]): RawClient {
  const client = new RawClient(args);
  running.push(client);
  return client;
}
const call = (id: string, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args },
});

describe("mcp-cancellable proxy: anomalies on stderr", () => {
  it("name the client's request id first and the upstream's after, as every other line does (an outside tester's: the upstream id alone, as 'client request 2' for the client's id 1)", async () => {
    const client = start(["--verbose", "--timeout-ms", "5000", ...server(LINE)]);
    await client.initialize();
    client.send({ ...call("mine", "misbehave"), params: { name: "misbehave", arguments: {}, _meta: { progressToken: "p" } } });
    expect((await client.answer("mine")).result!.content![0]!.text).toBe("misbehaved");
    const upstream = received(client.stderr).find((m) => m.method === "tools/call")!.id;
    const anomalies = client.stderr.split("\n").filter((text) => text.includes("anomaly"));
    expect(anomalies).toEqual([
      expect.stringContaining(`anomaly on id "mine" (upstream ${JSON.stringify(upstream)}): progress 3 for token`),
      expect.stringContaining(`anomaly on id "mine" (upstream ${JSON.stringify(upstream)}): server sent notifications/cancelled`),
    ]);
    // --verbose names the server's cancel by the client's id too.
    expect(client.stderr).toContain(`server->proxy notifications/cancelled id "mine" (upstream ${JSON.stringify(upstream)})`);
  });
});

describe("mcp-cancellable proxy: a malformed answer", () => {
  it("both result and error: not relayed (an SDK client refuses it and waits its own timeout); the call ends by the proxy's limit, -32001, cancelled upstream once (an outside tester's)", async () => {
    const client = start(["--timeout-ms", "500", ...server(LINE)]);
    await client.initialize();
    const sent = performance.now();
    client.send(call("both", "both"));
    const answer = await client.answer("both", 5_000);
    expect(performance.now() - sent).toBeGreaterThanOrEqual(450);
    expect(answer.error!.code).toBe(-32001);
    expect(answer.result).toBeUndefined();
    expect(client.messages.filter((m) => m.id === "both")).toHaveLength(1);
    expect(await eventually(() => received(client.stderr).some((m) => m.method === "notifications/cancelled"))).toBe(true);
    expect(received(client.stderr).filter((m) => m.method === "notifications/cancelled")).toHaveLength(1);
    // The proxy goes on.
    client.send(call("next", "echo"));
    expect((await client.answer("next")).result!.content![0]!.text).toMatch(/^echo /);
  });

  for (const [name, what] of [
    ["big-broken", "not JSON"],
    ["big-both", "both result and error"],
  ] as const) {
    it(`a long answer (64 KiB or more) that is ${what}: written as it came, before its parse; nothing more for that request, not a -32001 at its limit (an outside tester's: two answers for one request)`, async () => {
      const client = start(["--timeout-ms", "500", ...server(LINE)]);
      await client.initialize();
      client.send(call("long", name, { bytes: 100_000 }));
      // Past the request's limit: its -32001 would have come by now.
      await new Promise((resolve) => setTimeout(resolve, 900));
      const forLong = [
        ...client.messages.filter((m) => m.id === "long"),
        ...client.notJson.filter((line) => line.endsWith('"id":"long"}')),
      ];
      expect(forLong).toHaveLength(1);
      if (name === "big-broken") {
        expect(client.stderr).toMatch(/malformed line \(not JSON\) as the answer of request "long"; it had reached the client already/);
        expect(client.stderr).not.toMatch(/malformed line \(not JSON\), dropped/);
      }
      client.send(call("next", "echo"));
      expect((await client.answer("next")).result!.content![0]!.text).toMatch(/^echo /);
    });
  }
});

describe("mcp-cancellable proxy: large messages", () => {
  it("a 40 MB result, id last and id first: relayed whole under the client's id; the next call is answered after it", async () => {
    const client = start(server(LINE));
    await client.initialize();
    client.send(call("big-last", "big", { bytes: 40_000_000 }));
    client.send(call("after", "echo"));
    client.send(call("big-first", "big-head", { bytes: 5_000_000 }));
    const [last, after, first] = await Promise.all([client.answer("big-last", 60_000), client.answer("after"), client.answer("big-first")]);
    expect(last.result!.content![0]!.text.length).toBe(40_000_000);
    expect(first.result!.content![0]!.text.length).toBe(5_000_000);
    expect(after.result!.content![0]!.text).toMatch(/^echo /);
    expect(client.notJson).toEqual([]);
  });

  it("past --max-message-bytes from the server: the answer is -32603 naming the option (recorded as the server's answer), the proxy goes on", async () => {
    const client = start(["--max-message-bytes", "100000", ...server(LINE)]);
    await client.initialize();
    client.send(call("too-big", "big", { bytes: 300_000 }));
    const answer = await client.answer("too-big");
    expect(answer.error!.code).toBe(-32603);
    expect(answer.error!.message).toMatch(/more than --max-message-bytes \(100000\); dropped\. Raise --max-message-bytes/);
    client.send(call("ok", "big", { bytes: 50_000 }));
    expect((await client.answer("ok")).result!.content![0]!.text.length).toBe(50_000);
    expect(client.stderr).toMatch(/dropped a message of 300\d+ bytes from the server/);
  });

  it("past --max-message-bytes from the client: -32600 naming the option, with the request's id; nothing goes upstream; the proxy goes on", async () => {
    const client = start(["--max-message-bytes", "2048", ...server(LINE)]);
    await client.initialize();
    client.send({ jsonrpc: "2.0", method: "tools/call", params: { name: "echo", arguments: { pad: "p".repeat(10_000) } }, id: "huge" });
    const answer = await client.answer("huge");
    expect(answer.error!.code).toBe(-32600);
    expect(answer.error!.message).toMatch(/a message of 10\d+ bytes, more than --max-message-bytes \(2048\)/);
    client.send(call("small", "echo"));
    await client.answer("small");
    expect(
      received(client.stderr)
        .filter((m) => m.method === "tools/call")
        .map((m) => m.params!.name),
    ).toEqual(["echo"]);
  });

  it("a request whose id is null, an object, not an integer or past 2^53: -32600 with id null naming rule 1; nothing goes upstream; the proxy goes on", async () => {
    const client = start(server(LINE));
    await client.initialize();
    for (const id of [null, { a: 1 }, 1.5])
      client.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: {} } });
    // An integer past 2^53: a JSON number cannot carry it exactly, so relaying it would answer another id.
    client.send('{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"echo","arguments":{}}}');
    client.send(call("after", "echo"));
    await client.answer("after");
    const refusals = client.messages.filter((m) => m.id === null && m.method === undefined);
    expect(refusals.map((m) => m.error?.code)).toEqual([-32600, -32600, -32600, -32600]);
    expect(refusals[0]!.error!.message).toContain("is not a string or an integer JSON carries exactly (rule 1 in docs/spec-rules.md)");
    expect(received(client.stderr).filter((m) => m.method === "tools/call")).toHaveLength(1);
  });

  it("a request whose method is no string: -32600 saying so (not 'without a method'), with its id; the proxy goes on", async () => {
    const client = start(server(LINE));
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: "m5", method: 5, params: {} });
    const answer = await client.answer("m5");
    expect(answer.error).toMatchObject({ code: -32600, message: 'Invalid Request: JSON-RPC whose "method" is not a string (5)' });
    client.send(call("after", "echo"));
    await client.answer("after");
  });

  it("a request whose progress token is neither a string nor an integer (rule 20), or whose _meta is no object: -32602 naming it, nothing goes upstream; the proxy goes on", async () => {
    const client = start(["--verbose", ...server(LINE)]);
    await client.initialize();
    client.send({ ...call("t1", "echo"), params: { name: "echo", arguments: {}, _meta: { progressToken: { a: 1 } } } });
    client.send({ ...call("t2", "echo"), params: { name: "echo", arguments: {}, _meta: 7 } });
    const first = await client.answer("t1");
    expect(first.error).toMatchObject({ code: -32602, message: expect.stringContaining("params._meta.progressToken") });
    expect(first.error!.message).toContain("rule 20");
    expect((await client.answer("t2")).error).toMatchObject({ code: -32602, message: expect.stringContaining("params._meta") });
    client.send(call("after", "echo"));
    await client.answer("after");
    expect(received(client.stderr).filter((m) => m.method === "tools/call")).toHaveLength(1); // only "after" went upstream
  });

  it("a client that does not read: past --max-message-bytes plus 16 MiB unread, the proxy ends (exit 1) saying so, instead of holding it all", async () => {
    const http = await startRestartable();
    closers.push(() => http.stop());
    const client = start(["--url", http.url.href, "--max-message-bytes", "1024"]);
    await client.initialize();
    client.child.stdout.pause(); // the client stops reading
    client.child.stdout.removeAllListeners("data");
    for (let i = 0; i < 4; i++) client.send(call(`b${i}`, "big", { bytes: 8_000_000 }));
    expect(await eventually(() => client.exit !== undefined, 30_000)).toBe(true);
    expect(client.exit!.code).toBe(1);
    expect(client.stderr).toMatch(
      /the client has not read \d+ bytes of its stdout \(the bound is --max-message-bytes plus 16777216 bytes, 16778240\)/,
    );
  });
});

describe("mcp-cancellable proxy: options", () => {
  it("--max-message-bytes: default 256 MiB; a whole number of bytes from 1024, else a usage error naming it", () => {
    const ok = parseProxyArgs(["--", "node"]);
    expect(ok !== "help" && ok.maxMessageBytes).toBe(DEFAULT_MAX_MESSAGE_BYTES);
    expect(DEFAULT_MAX_MESSAGE_BYTES).toBeGreaterThan(120_000_000);
    const set = parseProxyArgs(["--max-message-bytes", "500000000", "--", "node"]);
    expect(set !== "help" && set.maxMessageBytes).toBe(500_000_000);
    for (const bad of ["10", "1e6", "lots", "0"]) {
      expect(() => parseProxyArgs(["--max-message-bytes", bad, "--", "node"])).toThrow(/--max-message-bytes: expected/);
    }
  });

  it("--header: ${NAME} is the environment variable; an unset or empty one, or a malformed ${, is a usage error naming it; $${ is a literal ${", () => {
    const env = { MCP_TOKEN: "t0k3n", USER_ID: "42", EMPTY: "" };
    const parsed = parseProxyArgs(
      ["--url", "http://127.0.0.1:1/mcp", "--header", "Authorization: Bearer ${MCP_TOKEN}", "--header", "X-Id: u-${USER_ID}-$${literal}"],
      env,
    );
    expect(parsed !== "help" && parsed.upstream.kind === "http" && parsed.upstream.headers).toEqual({
      Authorization: "Bearer t0k3n",
      "X-Id": "u-42-${literal}",
    });
    const usage = (header: string): string => {
      try {
        parseProxyArgs(["--url", "http://127.0.0.1:1/mcp", "--header", header], env);
      } catch (error) {
        expect(error).toBeInstanceOf(UsageError);
        return (error as Error).message;
      }
      throw new Error("no usage error");
    };
    expect(usage("Authorization: Bearer ${NOPE}")).toBe("--header Authorization: the environment variable NOPE (${NOPE}) is not set");
    expect(usage("Authorization: Bearer ${EMPTY}")).toMatch(/EMPTY \(\$\{EMPTY\}\) is empty/);
    expect(usage("Authorization: Bearer ${MCP TOKEN}")).toMatch(/"\$\{MCP TOKEN\}" is not a variable/);
    expect(usage("Authorization: Bearer ${MCP_TOKEN")).toMatch(/is not a variable/);
  });

  // An outside tester's: a token with a line break in it was taken; every request then failed
  // with fetch's "invalid header value", which quoted the token's first line to the client, and the
  // proxy exited 0. Refused at the start now, naming the header and never its value.
  it("--header: a value with CR, LF or NUL (after ${NAME} expansion), or beyond Latin-1, is a usage error naming the header, never the value; its ends are trimmed as fetch trims them", () => {
    const usage = (value: string): string => {
      try {
        parseProxyArgs(["--url", "http://127.0.0.1:1/mcp", "--header", "Authorization: Bearer ${MCP_TOKEN}"], { MCP_TOKEN: value });
      } catch (error) {
        expect(error).toBeInstanceOf(UsageError);
        return (error as Error).message;
      }
      throw new Error("no usage error");
    };
    for (const [value, which] of [
      ["sk-0123\n4567abcd", /a line break \(LF\)/],
      ["sk-0123\r4567abcd", /a carriage return \(CR\)/],
      ["sk-0123\u00004567abcd", /a NUL character/],
      ["sk-0123€4567abcd", /a character beyond Latin-1 \(at index 14\)/],
    ] as const) {
      const message = usage(value);
      expect(message).toMatch(/^--header Authorization: the value \(after \$\{NAME\} expansion\) holds /);
      expect(message).toMatch(which);
      expect(message).not.toMatch(/sk-|4567/);
    }
    expect(() => parseProxyArgs(["--url", "http://127.0.0.1:1/mcp", "--header", "X-A: a\nb"])).toThrow(/--header X-A: .* a line break/);
    const trimmed = parseProxyArgs(["--url", "http://127.0.0.1:1/mcp", "--header", "Authorization: ${MCP_TOKEN}"], {
      MCP_TOKEN: "\tBearer clé-1\r\n",
    });
    expect(trimmed !== "help" && trimmed.upstream.kind === "http" && trimmed.upstream.headers).toEqual({ Authorization: "Bearer clé-1" });
  });

  it("--header with a line break through the executable: exit 2 before anything starts, the header named, nothing of the token on stdout or stderr", async () => {
    const client = new RawClient(["--url", "http://127.0.0.1:9/mcp", "--header", "Authorization: Bearer ${MCP_TOKEN}"], {
      MCP_TOKEN: "sk-live-0123\n456789abcdef",
    });
    running.push(client);
    client.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
    });
    expect(await eventually(() => client.exit !== undefined, 5_000)).toBe(true);
    expect(client.exit?.code).toBe(2);
    expect(client.stderr).toMatch(/--header Authorization: the value \(after \$\{NAME\} expansion\) holds a line break \(LF\)/);
    expect(client.stderr).not.toMatch(/sk-live|456789/);
    expect(client.messages).toEqual([]);
  });

  it("--header ${MCP_TOKEN} through the executable: the token reaches the server, and is not in the proxy's command line", async () => {
    const http = await startRestartable();
    closers.push(() => http.stop());
    const client = new RawClient(["--url", http.url.href, "--header", "X-Token: ${MCP_TOKEN}"], { MCP_TOKEN: "from-the-env" });
    running.push(client);
    await client.initialize();
    expect(client.child.spawnargs.join(" ")).not.toContain("from-the-env");
    const posts = http.seen.filter((s) => s.http === "POST");
    expect(posts.length).toBeGreaterThan(0);
    expect(new Set(posts.map((s) => s.headers["x-token"]))).toEqual(new Set(["from-the-env"]));
  });
});

describe("mcp-cancellable proxy: a server that writes the request's id as a string", () => {
  it('an answer under "2" for the request it sent as 2 reaches the client under the client\'s own id, as the SDKs take it (it was dropped, and the client hung)', async () => {
    const client = start(["--timeout-ms", "5000", ...server(LINE)]);
    await client.initialize();
    client.send({ jsonrpc: "2.0", id: "mine", method: "tools/call", params: { name: "string-id", arguments: {} } });
    const answer = await client.answer("mine", 4_000);
    expect(answer.result).toMatchObject({ content: [{ type: "text", text: expect.stringMatching(/^string-id \d+$/) }] });
    expect(client.stderr).not.toMatch(/which is no request in progress/);
  });
});
