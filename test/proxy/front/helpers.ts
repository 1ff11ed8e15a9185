import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { proxyCommand } from "../helpers.js";
import type { RpcMessage } from "../helpers.js";

/** `mcp-cancellable proxy --listen 127.0.0.1:0 <args>` as a real process; resolves once it prints its URL. */
export interface RunningFront {
  readonly url: URL;
  readonly child: ChildProcessWithoutNullStreams;
  stderr(): string;
  /** Sends `signal` (default SIGTERM) and waits for the exit, at most `ms` (then SIGKILL). */
  stop(signal?: NodeJS.Signals, ms?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<RunningFront>();

/** Starts a front; `listen` replaces `127.0.0.1:0`. Bounded: fails after 20 s without the line. */
export async function startFront(args: string[], { env = {}, listen = "127.0.0.1:0" } = {}): Promise<RunningFront> {
  const { command, args: argv } = proxyCommand(["--listen", listen, ...args]);
  const child = spawn(command, argv, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stdout.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("close", (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<URL>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line within 20 s:\n${stderr}`)), 20_000);
    child.stderr.on("data", (chunk: string) => {
      stderr += chunk;
      const match = /listening on (\S+)/.exec(stderr);
      if (match !== null) {
        clearTimeout(timer);
        resolve(new URL(match[1]!));
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the front exited before listening:\n${stderr}`));
    });
  });
  const front: RunningFront = {
    url,
    child,
    exited,
    stderr: () => stderr,
    async stop(signal = "SIGTERM", ms = 15_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), ms);
      const exit = await exited;
      clearTimeout(timer);
      running.delete(front);
      return exit;
    },
  };
  running.add(front);
  return front;
}

/** Stops every front still running (afterEach). */
export async function stopFronts(): Promise<void> {
  await Promise.all([...running].map((front) => front.stop("SIGKILL", 5_000)));
}

/** The `_meta` every 2026-07-28 request carries (rule 38). */
export const META_2026 = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "raw-http", version: "1.0.0" },
};

/** POSTs one JSON-RPC message the way a 2026-07-28 client does (headers of rule 25). */
export function post2026(
  url: URL,
  message: { id?: string | number; method: string; params?: Record<string, unknown> },
  init: RequestInit = {},
) {
  const params: Record<string, unknown> = { ...message.params, _meta: META_2026 };
  const name = typeof params.name === "string" ? { "mcp-name": params.name } : {};
  return fetch(url, {
    method: "POST",
    ...init,
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": message.method,
      ...name,
      ...(init.headers as Record<string, string> | undefined),
    },
    body: JSON.stringify({ jsonrpc: "2.0", ...message, params }),
  });
}

/** The JSON-RPC messages of a response body: a JSON body, or the `data:` lines of an SSE one. */
export async function messagesOf(response: Response): Promise<RpcMessage[]> {
  const text = await response.text();
  if ((response.headers.get("content-type") ?? "").includes("application/json")) return text === "" ? [] : [JSON.parse(text)];
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line.length > 6)
    .map((line) => JSON.parse(line.slice(6)) as RpcMessage);
}

const SESSION_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A 2025-era session opened by hand (initialize, then notifications/initialized): its headers, and `post` to send one message in it. */
export async function openSession(url: URL, version: string, name = "front-test") {
  const init = await fetch(url, {
    method: "POST",
    headers: SESSION_HEADERS,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name, version: "1" } },
    }),
  });
  await init.text();
  const headers = { ...SESSION_HEADERS, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": version };
  const post = (body: unknown) => fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  await (await post({ jsonrpc: "2.0", method: "notifications/initialized" })).text();
  return { headers, post };
}
