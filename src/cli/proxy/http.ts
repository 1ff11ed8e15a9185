// The proxy's Streamable HTTP upstream, in both eras, through the library's adapter
// (`streamableHttpCancellation`): on 2026-07-28 the cancel closes that request's own response
// stream and sends nothing (rules 6, 28); on a 2025-era connection `notifications/cancelled` is
// POSTed with the session and protocol-version headers, then the stream is closed (rule 40).
//
// Around the adapter's `cancellableFetch()`, one more fetch of the proxy's own sees each
// exchange's status: a 404 (or the 400 some servers give) for the 2025-era session means the
// server no longer knows it (rule 40: the client MUST start a new one); a failure before the
// server ever answered means it cannot be reached.
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { TransportLike } from "../../adapters/types.js";
import { DEFAULT_FLUSH_TIMEOUT_MS, cancellableFetch, streamableHttpCancellation } from "../../adapters/streamable-http/index.js";
import { asSdkMatches } from "../../wire/messages.js";
import type { ProxyOptions } from "./args.js";
import type { Upstream } from "./session.js";

/** The v2 SDK client package is an optional peer: `--era 2026-07-28` needs it. Exit code 2. */
export class MissingSdkError extends Error {
  override name = "MissingSdkError" as const;
  readonly kind = "missing-sdk" as const;
}

/** The code of the answer to a request that met a lost session: the MCP SDKs' `ConnectionClosed` (local, rule 3). */
export const SESSION_LOST_ERROR_CODE = -32000;

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A Streamable HTTP server as the proxy's upstream: the v1 SDK transport for the 2025 era (the
 * client's `initialize` makes the session), the v2 one for 2026-07-28; each with
 * `cancellableFetch()`, so one request's stream can be closed without touching the others.
 * 2025-era: a request that meets a lost session (HTTP 404 or 400 with the session's id) is
 * answered -32000 naming the status, as the server's answer (it was received: recorded as
 * such, never sent again), and `onSessionLost` is told once; `resetSession()` then forgets the
 * session without sending anything (the server has none to delete). The DELETE of a live
 * session is `beforeClose`'s.
 * @throws {MissingSdkError} `--era 2026-07-28` without `@modelcontextprotocol/client`.
 */
export async function httpUpstream(
  upstream: Extract<ProxyOptions["upstream"], { kind: "http" }>,
  log: (text: string) => void = () => {},
): Promise<Upstream<TransportLike>> {
  const url = new URL(upstream.url);
  const legacy = upstream.era === "legacy";
  const base = cancellableFetch() as FetchLike;
  let transport: TransportLike & { sessionId?: string | undefined; terminateSession?: () => Promise<void> };
  let onLost: ((status: number) => void) | undefined;
  let onUnreachable: ((error: Error) => void) | undefined;
  let answered = false;
  /** Sessions the server said it does not know (a DELETE of one is answered here: there is nothing to delete). */
  const lost = new Set<string>();
  /** `initialize` POSTs on their way (a new session's, after a lost one): the close waits for them, to DELETE what they open. */
  const initializing = new Set<Promise<unknown>>();

  /**
   * 2025-era: the first request id (the proxy's own counter upstream) sent in each session, in
   * order: a session the server lost is followed by a new one, and a request belongs to the
   * session it was sent in (its cancel goes there, rule 7; its record names it).
   */
  const sessionsFrom: Array<{ firstId: number; session: string }> = [];
  const sessionOf = (id: unknown): string | undefined => {
    if (typeof id !== "number") return undefined;
    for (let i = sessionsFrom.length - 1; i >= 0; i--) if (sessionsFrom[i]!.firstId <= id) return sessionsFrom[i]!.session;
    return undefined;
  };

  const fetch: FetchLike = async (input, init) => {
    const method = (init?.method ?? "GET").toUpperCase();
    // 2026-07-28 has no sessions (rule 26): no headers object to read for each request.
    let session = legacy ? (new Headers(init?.headers).get("mcp-session-id") ?? undefined) : undefined;
    if (method === "DELETE" && session !== undefined && lost.has(session)) return new Response(null, { status: 200 });
    if (session !== undefined && method === "POST") {
      const request = requestIn(init?.body);
      if (typeof request?.id === "number") {
        if (sessionsFrom.at(-1)?.session !== session) sessionsFrom.push({ firstId: request.id, session });
      } else {
        // The cancel of a request sent in an earlier session goes to that session, never to the
        // new one, which never had it (rule 7; an outside tester's). A session the server lost
        // answers it 404, which the record says (the notification was refused).
        const sentIn = sessionOf(cancelledIn(init?.body));
        if (sentIn !== undefined && sentIn !== session) {
          const headers = new Headers(init?.headers);
          headers.set("mcp-session-id", sentIn);
          init = { ...init, headers };
          session = sentIn;
        }
      }
    }
    let response: Response;
    try {
      const answer = base(input, init);
      if (legacy && method === "POST" && requestIn(init?.body)?.method === "initialize") {
        const settled = answer.then(
          () => undefined,
          () => undefined,
        );
        initializing.add(settled);
        void settled.then(() => initializing.delete(settled));
      }
      response = await answer;
    } catch (error) {
      if (!answered && init?.signal?.aborted !== true) onUnreachable?.(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    answered = true;
    const status = response.status;
    // An HTTP error whose body is the server's JSON-RPC error for this very request (invalid
    // params, say) is the server's answer to it: the client gets that error (the SDK transports
    // would throw on the status instead, and the client got -32000 "failed between the proxy and
    // the server"); the record keeps the status (the adapter saw it). Not a lost session either:
    // the SDKs' servers answer an unknown session with `"id": null` (an outside tester's: the
    // server's error was replaced, and a live session was left for a new one).
    let namesRequest = false;
    if (status >= 400 && method === "POST" && /json/i.test(response.headers.get("content-type") ?? "")) {
      const text = await response.text().catch(() => "");
      const named = errorAnswerId(text);
      const request = requestIn(init?.body);
      // Its id as the SDKs match an answer's ("2" answers request 2).
      if (request !== undefined && named !== undefined && named !== null && asSdkMatches(named) === asSdkMatches(request.id)) {
        return new Response(text, { status: 200, headers: { "content-type": "application/json" } });
      }
      namesRequest = named !== undefined && named !== null;
      response = new Response(text, { status, statusText: response.statusText, headers: response.headers });
    }
    // A JSON-RPC error naming a request (not `"id": null`, as the SDKs' servers answer an unknown session) is no lost session.
    if (!legacy || session === undefined || (status !== 404 && status !== 400) || namesRequest) return response;
    if (session !== transport.sessionId && !lost.has(session)) return response; // an older session's stream
    if (!lost.has(session)) {
      lost.add(session);
      // After the answer below has reached the request's call (its record names the session it
      // was sent in; the new session's start forgets the old id).
      setImmediate(() => onLost?.(status));
    }
    const request = requestIn(init?.body);
    if (method !== "POST" || request === undefined) return response;
    await response.body?.cancel().catch(() => undefined);
    return Response.json({
      jsonrpc: "2.0",
      id: request.id,
      error: {
        code: SESSION_LOST_ERROR_CODE,
        message: `mcp-cancellable proxy: the server answered HTTP ${status} for the session (it no longer knows it), so ${request.method} was not run there; it is not sent again, and a new session is being started`,
        data: { httpStatus: status, trigger: "session-lost" },
      },
    });
  };

  const init = { requestInit: { headers: upstream.headers }, fetch };
  if (legacy) {
    transport = new StreamableHTTPClientTransport(url, init);
  } else {
    let v2: typeof import("@modelcontextprotocol/client");
    try {
      v2 = await import("@modelcontextprotocol/client");
    } catch {
      throw new MissingSdkError("--era 2026-07-28 needs the v2 SDK client: npm install @modelcontextprotocol/client");
    }
    transport = new v2.StreamableHTTPClientTransport(url, init);
  }
  // The adapter binds to the cancellableFetch() under the proxy's own fetch.
  const adapter = streamableHttpCancellation(transport, { fetch: base });
  return {
    adapter,
    ended: () => ({ message: `the connection to ${url.origin} is closed`, code: 0 }),
    onSessionLost: (handler) => {
      onLost = handler;
    },
    sessionOf,
    onUnreachable: (handler) => {
      onUnreachable = handler;
    },
    async resetSession() {
      await transport.terminateSession?.();
    },
    async beforeClose(budgetMs) {
      const deadline = performance.now() + Math.max(0, budgetMs);
      // The cancels on their way (2025-era: POSTed notifications) go first: the DELETE must not
      // overtake them. They are given flushTimeoutMs (250 ms), as the close gives them.
      const answered = Math.min(deadline - 20, performance.now() + DEFAULT_FLUSH_TIMEOUT_MS);
      while (adapter.stats().flushing > 0 && performance.now() < answered) await sleep(5);
      // A new session's initialize on its way (the client left right after a lost session): its
      // answer opens a session at the server, which is DELETEd too (then the SDK has read its id).
      if (initializing.size > 0) {
        while (initializing.size > 0 && performance.now() < answered) await Promise.race([...initializing, sleep(5)]);
        await new Promise((resolve) => setImmediate(resolve));
      }
      const session = transport.sessionId;
      if (!legacy || session === undefined || lost.has(session) || transport.terminateSession === undefined) return;
      // The close that follows waits for notifications still unanswered (at most flushTimeoutMs):
      // the DELETE leaves it that much of the budget.
      const left = deadline - performance.now() - (adapter.stats().flushing > 0 ? DEFAULT_FLUSH_TIMEOUT_MS : 0);
      if (left <= 0) return;
      // The 2025-era Session Management: a client that no longer needs its session SHOULD DELETE it.
      const deleted = transport.terminateSession().then(
        () => log(`mcp-cancellable proxy: deleted the session at ${url.origin}\n`),
        (error: unknown) => log(`mcp-cancellable proxy: deleting the session failed: ${(error as Error).message}\n`),
      );
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([deleted, new Promise((resolve) => (timer = setTimeout(resolve, left)))]);
      clearTimeout(timer);
    },
  };
}

/** The id of the JSON-RPC error response `text` is (`null` for `"id": null`), or `undefined` when it is none. */
function errorAnswerId(text: string): string | number | null | undefined {
  try {
    const body = JSON.parse(text) as { id?: unknown; error?: unknown };
    if (typeof body.error !== "object" || body.error === null) return undefined;
    return body.id === null || typeof body.id === "string" || typeof body.id === "number" ? body.id : undefined;
  } catch {
    return undefined;
  }
}

/** The request id a `notifications/cancelled` POST body names, if it is one. */
function cancelledIn(body: unknown): unknown {
  if (typeof body !== "string" || !body.includes("notifications/cancelled")) return undefined;
  try {
    const message = JSON.parse(body) as { method?: unknown; params?: { requestId?: unknown } };
    return message.method === "notifications/cancelled" ? message.params?.requestId : undefined;
  } catch {
    return undefined;
  }
}

/** The request a POST body carries (not a notification, not a batch), if any. */
function requestIn(body: unknown): { id: string | number; method: string } | undefined {
  if (typeof body !== "string") return undefined;
  try {
    const message = JSON.parse(body) as { id?: unknown; method?: unknown };
    return (typeof message.id === "string" || typeof message.id === "number") && typeof message.method === "string"
      ? { id: message.id, method: message.method }
      : undefined;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
