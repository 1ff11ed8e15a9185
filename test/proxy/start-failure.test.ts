import { afterEach, describe, expect, it } from "vitest";
import { fixture, INITIALIZE, RawClient, server, sleep } from "./helpers.js";

// Two ways the stdio proxy used to say nothing to its client (an outside tester's): a server
// command that cannot be started (`spawn ... ENOENT`) left the host's `initialize` unanswered, and
// a `--records` file that stops taking writes (a full disk) lost the records silently.

const running: RawClient[] = [];
afterEach(async () => {
  for (const client of running.splice(0)) if (client.exit === undefined) await client.end();
});
function start(args: string[]): RawClient {
  const client = new RawClient(args);
  running.push(client);
  return client;
}

const call = (id: string) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } });

describe("mcp-cancellable proxy: a server that cannot be started", () => {
  it("the requests the host wrote right after the spawn are answered -32000 with why (ENOENT), notifications are not; exit status 1; stdout carries only JSON", async () => {
    const client = start(["--", "/nonexistent/bin/mcp-server-that-is-not-there"]);
    client.send(INITIALIZE());
    client.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    client.send(call("c1"));
    const [init, c1] = [await client.answer("init"), await client.answer("c1")];
    for (const [answer, method] of [
      [init, "initialize"],
      [c1, "tools/call"],
    ] as const) {
      expect(answer.error).toMatchObject({
        code: -32000,
        message: expect.stringMatching(
          new RegExp(`^mcp-cancellable proxy: ${method} was not sent: the server could not be started \\(.*ENOENT.*\\); not retried$`),
        ),
        data: { code: "CONNECTION_CLOSED", trigger: "connection-closed" },
      });
    }
    expect(client.messages).toHaveLength(2);
    expect(client.notJson).toEqual([]);
    expect(await client.end()).toEqual({ code: 1, signal: null });
    expect(client.stderr).toContain("cannot start the upstream");
  });

  it("with no request and the client's input left open, it still exits (status 1) within its bound", async () => {
    const client = start(["--", "/nonexistent/bin/mcp-server-that-is-not-there"]);
    const exited = await Promise.race([client.exited, sleep(8_000).then(() => "still running" as const)]);
    expect(exited).toEqual({ code: 1, signal: null });
    expect(client.messages).toEqual([]);
  });
});

describe("mcp-cancellable proxy: a --records file that stops taking writes", () => {
  it("says so once on stderr, naming the file and the error, and goes on relaying", async () => {
    const client = start(["--records", "/dev/full", ...server(fixture("scripted-server.mjs"))]);
    await client.initialize();
    for (const id of ["a", "b", "c"]) {
      client.send(call(id));
      expect((await client.answer(id)).result).toMatchObject({ content: [{ type: "text" }] });
    }
    expect(await client.end()).toEqual({ code: 0, signal: null });
    const said = client.stderr.split("\n").filter((line) => line.includes("--records /dev/full"));
    expect(said).toEqual([
      "mcp-cancellable proxy: --records /dev/full: cannot write to it (ENOSPC): the run records from here on are lost",
    ]);
  });
});
