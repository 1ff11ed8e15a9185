import http from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { cancellableFetch } from "../../src/adapters/streamable-http/index.js";
import { linkedCount, observesBody } from "../../src/adapters/streamable-http/fetch.js";

// cancellableFetch on its own, against a plain node:http server on 127.0.0.1.
const agents: unknown[] = [];
vi.mock("undici", async (importOriginal) => {
  const undici = await importOriginal<typeof import("undici")>();
  class Agent extends undici.Agent {
    constructor(options?: ConstructorParameters<typeof undici.Agent>[0]) {
      super(options);
      agents.push(options);
    }
  }
  return { ...undici, Agent };
});

let server: http.Server;
let url: URL;
beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === "/slow-headers") setTimeout(() => res.end("late"), 300);
    else res.end("hello");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("cancellableFetch", () => {
  it("sends through undici with its header and body timeouts off (0), so only the call's own timeouts decide", async () => {
    const response = await cancellableFetch()(new URL("/slow-headers", url));
    expect(await response.text()).toBe("late");
    expect(agents).toEqual([{ headersTimeout: 0, bodyTimeout: 0 }]);
  });

  it("says it sees each body written only where undici reports it: in Node, not in Bun (whose undici ignores the dispatcher) nor without Node's process", async () => {
    // An outside tester's: under Bun every request aborted before its head was recorded never sent, though the server ran it.
    await (await cancellableFetch()(url)).text(); // undici loaded: the fetch in use is known (no undici: test/http/no-undici.test.ts)
    expect(observesBody(cancellableFetch())).toBe(true);
    const runtime = globalThis as { Bun?: unknown };
    runtime.Bun = {};
    try {
      expect(observesBody(cancellableFetch())).toBe(false);
    } finally {
      delete runtime.Bun;
    }
    vi.stubGlobal("process", { ...process, versions: {} }); // a browser bundle's process shim
    try {
      expect(observesBody(cancellableFetch())).toBe(false);
    } finally {
      vi.unstubAllGlobals();
    }
    expect(observesBody(cancellableFetch({ fetch: globalThis.fetch }))).toBe(false); // a fetch of yours: unknown
  });

  it("uses a fetch it is given as it is", async () => {
    const base = vi.fn((input: string | URL, init?: RequestInit) => globalThis.fetch(input, init));
    const response = await cancellableFetch({ fetch: base })(url, { method: "GET" });
    expect(await response.text()).toBe("hello");
    expect(base).toHaveBeenCalledTimes(1);
  });

  it("each request gets its own controller, linked to the caller's signal and unlinked once the body ends or is cancelled", async () => {
    const transport = new AbortController();
    const fetch = cancellableFetch();
    const read = await fetch(url, { signal: transport.signal });
    expect(linkedCount(transport.signal)).toBe(1);
    await read.text();
    const cancelled = await fetch(url, { signal: transport.signal });
    await cancelled.body!.cancel();
    expect(linkedCount(transport.signal)).toBe(0);
    // The transport-wide signal still aborts a request in flight.
    const pending = fetch(new URL("/slow-headers", url), { signal: transport.signal });
    transport.abort(new Error("transport closed"));
    await expect(pending).rejects.toThrow("transport closed");
  });
});
