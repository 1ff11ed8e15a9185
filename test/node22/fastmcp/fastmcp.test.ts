// fastmcp (4.20, Node 22: its mcp-proxy pulls pipenet) as a real peer: fastmcp-server.mjs is a
// fastmcp server over stdio whose tool reports progress and honours the abort signal fastmcp
// hands it. (a) The library (withCancellation over stdioCancellation, the v1 SDK client from the
// root node_modules) times out and cancels calls to it; (b) `mcp-cancellable probe`, the real
// executable (node --import tsx src/cli/index.ts), judges it.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it } from "vitest";
import { stdioCancellation } from "../../../src/adapters/stdio/index.js";
import type { CancellationOptions, RunRecord } from "../../../src/index.js";
import { CallCancelledError, CallTimeoutError, withCancellation } from "../../../src/index.js";
import type { ProbeJson } from "../../cli/helpers.js";
import { SLACK_MS, eventually } from "../../helpers/timing.js";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const server = fileURLToPath(new URL("fastmcp-server.mjs", import.meta.url));

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

const calls = (mcp: { records(): RunRecord[] }): RunRecord[] => mcp.records().filter((r) => r.method === "tools/call");

async function connect(options: CancellationOptions) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [server], stderr: "pipe" });
  const chunks: string[] = [];
  transport.stderr?.on("data", (chunk: Buffer) => chunks.push(chunk.toString("utf8")));
  const client = new Client({ name: "fastmcp-peer-test", version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => errors.push(error);
  const mcp = withCancellation(client, stdioCancellation(transport), options);
  await client.connect(mcp.transport);
  cleanups.push(() => client.close());
  const stderr = () => chunks.join("");
  // The request ids of the notifications/cancelled lines the server read from its stdin.
  const cancels = () => [...stderr().matchAll(/RECV-CANCEL (\S+)/g)].map((m) => m[1]);
  return { client, mcp, stderr, cancels, errors };
}

describe("the library against a real fastmcp server over stdio", () => {
  it("a call completes with its result and progress, and a record", async () => {
    const { mcp, cancels } = await connect({ timeoutMs: 5_000 });
    const progress: number[] = [];
    const result = await mcp.callTool(
      { name: "slow-count", arguments: { steps: 3, intervalMs: 10 } },
      {
        onprogress: (p) => progress.push(p.progress),
      },
    );
    expect(result).toMatchObject({ content: [{ type: "text", text: "counted 3" }] });
    expect(progress).toEqual([1, 2, 3]);
    expect(calls(mcp)).toMatchObject([{ status: "succeeded" }]);
    expect(cancels()).toEqual([]);
  });

  it("an idle timeout sends one notifications/cancelled, settles with CallTimeoutError and its record; fastmcp aborts the handler", async () => {
    const { mcp, stderr, cancels, errors } = await connect({ timeoutMs: 300 });
    const t0 = performance.now();
    // Silent: the first progress would come after 10 s.
    const error = await mcp.callTool({ name: "slow-count", arguments: { steps: 5, intervalMs: 10_000 } }).catch((e: unknown) => e);
    const elapsed = performance.now() - t0;
    expect(error).toBeInstanceOf(CallTimeoutError);
    const timeout = error as CallTimeoutError;
    expect(timeout).toMatchObject({ code: "REQUEST_TIMEOUT", timeoutMs: 300, method: "tools/call" });
    expect(elapsed).toBeGreaterThanOrEqual(295); // never before its bound
    expect(timeout.record).toMatchObject({
      method: "tools/call",
      status: "cancelled",
      cancel: { trigger: "timeout", mechanism: "notification" },
    });
    expect(timeout.record.requestId).toBe(timeout.requestId);
    // One cancel reached the server, for that request.
    expect(await eventually(() => cancels().length > 0, 5_000)).toBe(true);
    expect(cancels()).toEqual([String(timeout.requestId)]);
    // fastmcp turned it into an abort of the tool's signal.
    expect(await eventually(() => /ABORTED 1\b/.test(stderr()), 5_000)).toBe(true);
    expect(stderr().indexOf("RECV-CANCEL")).toBeLessThan(stderr().indexOf("ABORTED 1")); // the cancel, then the abort
    expect(stderr()).not.toMatch(/DONE 1\b/);
    expect(calls(mcp)).toMatchObject([{ status: "cancelled", cancel: { trigger: "timeout" } }]);
    expect(mcp.pendingCount).toBe(0);
    // Nothing late, no SDK noise, and the connection still serves calls.
    await sleep(200);
    expect(cancels()).toHaveLength(1);
    expect(errors).toEqual([]);
    await expect(mcp.callTool({ name: "slow-count", arguments: { steps: 1, intervalMs: 1 } })).resolves.toMatchObject({
      content: [{ text: "counted 1" }],
    });
  });

  it("an abort mid-progress settles CallCancelledError at once, sends one cancel, and fastmcp aborts the handler; no progress after it", async () => {
    const { mcp, stderr, cancels, errors } = await connect({ timeoutMs: 10_000 });
    const controller = new AbortController();
    const progress: number[] = [];
    const running = mcp
      .callTool(
        { name: "slow-count", arguments: { steps: 100, intervalMs: 50 } },
        {
          signal: controller.signal,
          onprogress: (p) => progress.push(p.progress),
        },
      )
      .catch((e: unknown) => e);
    expect(await eventually(() => progress.length >= 2, 5_000)).toBe(true);
    const abortedAt = performance.now();
    controller.abort(new Error("user pressed stop"));
    const error = await running;
    expect(performance.now() - abortedAt).toBeLessThan(SLACK_MS);
    expect(error).toBeInstanceOf(CallCancelledError);
    expect((error as CallCancelledError).record).toMatchObject({
      status: "cancelled",
      cancel: { trigger: "aborted", mechanism: "notification" },
    });
    expect(await eventually(() => cancels().length > 0, 5_000)).toBe(true);
    expect(cancels()).toEqual([String((error as CallCancelledError).requestId)]);
    expect(await eventually(() => /ABORTED 1\b/.test(stderr()), 5_000)).toBe(true);
    const seen = progress.length;
    await sleep(300); // six of the tool's intervals: a tool still running would have reported
    expect(progress).toHaveLength(seen);
    expect(stderr()).not.toMatch(/DONE 1\b/);
    expect(cancels()).toHaveLength(1);
    expect(calls(mcp)).toHaveLength(1);
    expect(mcp.pendingCount).toBe(0);
    expect(errors).toEqual([]);
  });
});

// The probe's verdicts follow from what this server does:
// - its tool stops on the abort and fastmcp sends nothing more for the request:
//   silent-after-cancel PASS, and (progress before the cancel, none after, little CPU) work-stops PASS;
// - fastmcp handles requests concurrently and answers the fence and later requests:
//   connection-survives PASS, and each of two concurrent calls keeps its own token (fastmcp passes
//   the request's progressToken per call): concurrent-calls PASS, progress-increases PASS;
// - it ignores cancels for completed and unknown ids and never cancels on its own:
//   cancel-completed-ignored, cancel-unknown-ignored, no-server-cancel PASS;
// - stdio: http-cancel-mechanism and sessions-isolated SKIP.
// So the probe exits 0. (A fastmcp tool that ignores its signal is docs/probe.md's work-stops WARN.)
describe("mcp-cancellable probe against the fastmcp server", () => {
  it("judges it: every stdio check passes, the HTTP-only ones skip, exit 0", async () => {
    const entry = join(process.cwd(), "src/cli/index.ts");
    const command = [JSON.stringify(process.execPath), JSON.stringify(server)].join(" ");
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", entry, "probe", "--stdio", command, "--window", "400", "--timeout", "5000", "--json"],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
      child.on("close", (exit) => resolve({ code: exit, stdout: out, stderr: err }));
    });
    let json: ProbeJson;
    try {
      json = JSON.parse(stdout) as ProbeJson;
    } catch {
      throw new Error(`not JSON (exit ${code}): ${stdout}\n${stderr}`);
    }
    const why = json.checks.map((c) => `${c.status} ${c.id}: ${c.summary}`).join("\n");
    expect(Object.fromEntries(json.checks.map((c) => [c.id, c.status])), why).toEqual({
      "silent-after-cancel": "PASS",
      "work-stops": "PASS",
      "connection-survives": "PASS",
      "cancel-completed-ignored": "PASS",
      "cancel-unknown-ignored": "PASS",
      "no-server-cancel": "PASS",
      "progress-increases": "PASS",
      "http-cancel-mechanism": "SKIP",
      "concurrent-calls": "PASS",
      "sessions-isolated": "SKIP",
    });
    expect(code).toBe(0);
    expect(json.ok).toBe(true);
    // Picked from tools/list by its annotations (read-only, idempotent), cancelled once, then silent.
    expect(json.call?.tool).toBe("slow-count");
    const id = json.call!.requestId;
    const cancels = json.timeline.filter(
      (e) =>
        e.from === "client" &&
        e.message?.method === "notifications/cancelled" &&
        (e.message.params as { requestId: unknown }).requestId === id,
    );
    expect(cancels).toHaveLength(1);
    const cancel = cancels[0]!;
    const progressBefore = json.timeline.filter(
      (e) => e.from === "server" && e.message?.method === "notifications/progress" && e.seq < cancel.seq,
    );
    expect(progressBefore.length).toBeGreaterThanOrEqual(1);
    expect(json.call!.record?.summary).toMatch(/^cancelled \(aborted\)/);
    expect(json.clientErrors).toEqual([]);
    expect(json.anomalies).toEqual([]);
  });
});
