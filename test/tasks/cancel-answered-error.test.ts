// A gateway in front of a 2025-11-25 task server (v1 SDK, Streamable HTTP): it forwards every
// POST; a tasks/cancel is forwarded, its upstream answer read in full (the task is cancelled on the
// server), and the client is answered 502. The request reached the server (its response head came:
// a wire fact), so the record never says "not sent"; a poll then learns what became of the task
// (an audit's: "not sent ... the task was not cancelled", outcome unverified).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { connectV1 } from "../http/clients.js";
import { methods, startV1TaskServer, stoppedAfterEach } from "./servers.js";
import { until } from "../helpers/timing.js";

const started = stoppedAfterEach();

async function gateway(upstream: URL): Promise<{ url: URL; close(): Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const method = body.length > 0 ? (JSON.parse(body.toString()) as { method?: string }).method : undefined;
    const headers = { ...req.headers };
    delete headers.host;
    const up = http.request(upstream, { method: req.method, headers }, (upstreamResponse) => {
      if (method === "tasks/cancel") {
        upstreamResponse.resume();
        upstreamResponse.on("end", () => res.writeHead(502, { "content-type": "text/plain" }).end("bad gateway"));
        return;
      }
      res.writeHead(upstreamResponse.statusCode ?? 500, upstreamResponse.headers);
      upstreamResponse.pipe(res);
    });
    up.on("error", () => res.destroy());
    res.on("close", () => up.destroy());
    up.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}${upstream.pathname}`),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("a tasks/cancel answered with an HTTP error status", () => {
  it("reached the server: recorded as sent without an answer, not as never sent; a poll finds the task cancelled", async () => {
    const server = (started.server = await startV1TaskServer());
    const front = await gateway(server.url);
    const peer = await connectV1(front.url);
    started.closeClient = async () => {
      await peer.close();
      await front.close();
    };
    const controller = new AbortController();
    const call = peer.mcp
      .callTool({ name: "report", arguments: { ms: 5_000 } }, { task: true, timeoutMs: 10_000, signal: controller.signal })
      .catch((e: unknown) => e);
    await until(() => methods(server, "tasks/get").length >= 1);
    controller.abort();
    await call;
    await until(() => peer.mcp.records().at(-1)?.outcome === "task-cancelled", 5_000);
    expect(methods(server, "tasks/cancel")).toHaveLength(1);
    const record = peer.mcp.records().at(-1)!;
    expect(record.cancel).toMatchObject({ mechanism: "tasks/cancel", undelivered: { mechanism: "tasks/cancel" } });
    expect(record.cancel!.sentAt).not.toBeNull();
    expect(record.cancel!.undelivered!.error).toMatch(
      /^it reached the server, then its send failed \(.+\): whether the server cancelled the task is not known$/,
    );
    expect(record.cancel!.undelivered!.error).not.toMatch(/not sent/);
  }, 20_000);
});
