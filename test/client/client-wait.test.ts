// Issue 29, item 4: waiting on the client is not the server's silence. A real v1 SDK stdio server
// (test/fixtures/sdk-stdio-server.mjs, tool `ask`) asks the client a question (elicitation/create)
// in the middle of a tool call; the client's own elicitation handler stands for a person who
// answers late. The call's idle timeout is paused while the server waits for that answer, at most
// clientWaitTimeoutMs; the answer starts it again in full; the maximum total timeout always holds.
// Real child process and real time: orders and bounds with slack.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { isCallTimeoutError, withCancellation } from "../../src/index.js";
import type { CancellationOptions } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { fixture } from "../helpers/stdio.js";
import { EARLY_MS, SLACK_MS } from "../helpers/timing.js";

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

/** A client whose person answers the server's question after `answerMs`. */
async function connect(answerMs: number, options: CancellationOptions = {}) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [fixture("sdk-stdio-server.mjs")], stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name: "form-bot", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  let askedAt: number | undefined;
  client.setRequestHandler(ElicitRequestSchema, async () => {
    askedAt ??= performance.now();
    await new Promise((resolve) => setTimeout(resolve, answerMs));
    return { action: "accept", content: { reply: "yes" } };
  });
  const mcp = withCancellation(client, stdioCancellation(transport), options);
  await client.connect(mcp.transport);
  cleanup.push(() => client.close());
  // When the server's question reached the client: where the pause starts (the trip there, through
  // a child process on a loaded machine, is not what these bounds are about).
  return { mcp, lines: () => stderr.split("\n"), asked: () => askedAt! };
}

/** `at`: ms from the call to its settle; `settledAt`: the settle's `performance.now()`. */
async function timed<T>(promise: Promise<T>): Promise<{ at: number; settledAt: number; value?: T; error?: unknown }> {
  const started = performance.now();
  try {
    const value = await promise;
    const settledAt = performance.now();
    return { at: settledAt - started, settledAt, value };
  } catch (error) {
    const settledAt = performance.now();
    return { at: settledAt - started, settledAt, error };
  }
}

describe("waiting on the client pauses the idle timeout (issue 29, item 4)", () => {
  it("a person answering after 3x the idle timeout: the call is not cut mid-form; it completes", async () => {
    const { mcp, lines } = await connect(900);
    const outcome = await timed(mcp.callTool({ name: "ask", arguments: { question: "Publish the report?" } }, { timeoutMs: 300 }));
    expect(outcome.error).toBeUndefined();
    expect(outcome.value).toMatchObject({ content: [{ text: 'answered: {"reply":"yes"}' }] });
    expect(outcome.at).toBeGreaterThanOrEqual(900 - EARLY_MS);
    expect(mcp.records()[0]).toMatchObject({ status: "succeeded" });
    expect(lines().some((line) => line.startsWith("ABORTED"))).toBe(false);
  });

  it("the answer starts the idle timeout again in full: silence after it is the server's, and times out", async () => {
    const { mcp, asked } = await connect(200);
    const outcome = await timed(mcp.callTool({ name: "ask", arguments: { question: "Go on?", workMs: 5_000 } }, { timeoutMs: 400 }));
    expect(isCallTimeoutError(outcome.error)).toBe(true);
    expect(outcome.at).toBeGreaterThanOrEqual(200 + 400 - EARLY_MS); // the answer at 200, then 400 ms of the server's silence
    expect(outcome.settledAt - asked()).toBeLessThan(200 + 400 + SLACK_MS);
    expect(mcp.records()[0]!.cancel).toMatchObject({
      trigger: "timeout",
      reason: "Request timed out after 400 ms",
      mechanism: "notification",
    });
  });

  it("clientWaitTimeoutMs bounds the wait for the person: past it the call times out, its reason names the option", async () => {
    const { mcp, asked } = await connect(5_000, { clientWaitTimeoutMs: 500 });
    const outcome = await timed(mcp.callTool({ name: "ask", arguments: { question: "Still there?" } }, { timeoutMs: 200 }));
    expect(isCallTimeoutError(outcome.error)).toBe(true);
    expect(outcome.error).toMatchObject({ code: "REQUEST_TIMEOUT", timeoutMs: 500, limitName: "clientWaitTimeoutMs" });
    // The error names the limit that ran out, not the idle timeout (200 ms) it paused.
    expect((outcome.error as Error).message).toMatch(
      /^tools\/call timed out after 500 ms waiting for the client's answer to the server's request \(clientWaitTimeoutMs; request id \d+\) and was cancelled/,
    );
    expect(outcome.settledAt - asked()).toBeGreaterThanOrEqual(500 - EARLY_MS);
    expect(outcome.settledAt - asked()).toBeLessThan(500 + SLACK_MS);
    expect(mcp.records()[0]!.cancel).toMatchObject({
      trigger: "timeout",
      reason: "The client's answer to the server's request did not come within clientWaitTimeoutMs (500 ms)",
    });
  });

  it("the maximum total timeout still holds while the person answers", async () => {
    const { mcp } = await connect(5_000);
    const outcome = await timed(
      mcp.callTool({ name: "ask", arguments: { question: "Well?" } }, { timeoutMs: 200, maxTotalTimeoutMs: 600 }),
    );
    expect(outcome.error).toMatchObject({ code: "MAX_TOTAL_TIMEOUT" });
    expect(outcome.at).toBeGreaterThanOrEqual(600 - EARLY_MS);
    expect(outcome.at).toBeLessThan(600 + SLACK_MS);
  });
});
