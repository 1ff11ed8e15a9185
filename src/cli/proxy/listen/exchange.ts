// One 2026-07-28 exchange of the HTTP front, written straight to its node response: the frames
// the v2 server's `PerRequestHTTPServerTransport` writes in its "sse" response mode (the headers,
// `event: message` frames, comment frames), without the web `Response`, `ReadableStream`, encoder
// and timer it makes for each request. Measured (bench/front.ts): that transport and its stream
// held 6.6 KB of each request in flight (16.9 KB a pending request in the front before, 10.3 KB
// after) and a few percent of the front's CPU. What decides the era, checks the
// headers and parses the body stays the v2 server's (`classifyInboundRequest`, see front.ts).
import type http from "node:http";
import type { JsonRpcMessage } from "../../../runner/message-transport.js";

/** A JSON-RPC request id (the relay's `Id`). */
type Id = string | number;

/** The response headers of a 2026-07-28 SSE exchange, as the v2 server's transport sends them. */
const SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no",
} as const;

/** The reason sent upstream when a 2026-07-28 client closes its request's response stream (rule 6: that close is its cancel). */
export const STREAM_CLOSED_REASON = "The client closed its response stream (mcp-cancellable proxy)";
/** Why an answer was not written: its response stream closed first (the client's socket went, or the write failed). */
export const ANSWER_CUT = "the client's response stream closed before the answer was written whole";

/**
 * How the write of an answer ended: `undefined` when it was written whole (handed to the socket:
 * whether the client then read it, no server can know), else why it was not.
 */
export type AnswerWritten = (unwritten: string | undefined) => void;

/**
 * Tells `written`, once `res` closed, whether what it wrote was handed whole to its socket: an
 * answer written on `res` from now on. Node emits a response's `finish` (and calls its write
 * callbacks, without an error) also when its socket was destroyed, or its write failed (EPIPE,
 * ECONNRESET), with bytes still queued: they left only if the socket was still open and had no
 * error then. Told at once when `res` is gone already.
 */
export function watchAnswer(res: http.ServerResponse, written: AnswerWritten): void {
  const socket = res.socket;
  const cut = (): string => {
    const error = socket?.errored;
    return error === null || error === undefined ? ANSWER_CUT : `${ANSWER_CUT} (${error.message})`;
  };
  if (socket === null || socket.destroyed || res.destroyed) {
    written(cut());
    return;
  }
  let flushed = false;
  res.once("finish", () => {
    flushed = !socket.destroyed && socket.errored === null;
  });
  res.once("close", () => written(flushed ? undefined : cut()));
}

/**
 * A single exchange: one request and its SSE response stream (rule 24). The headers and a comment
 * frame (ignored by clients, rule 29) go out at once, so that a replica lost mid-call is a
 * stream broken before its answer (rule 27) rather than a balancer's 502. The answer to the
 * request ends the stream (rule 29). `onend` is called once: after the answer was written
 * (`false`), or when the client closed the stream first (`true`; on 2026-07-28 that close is
 * the client's cancel, rule 6).
 */
export class SseExchange {
  readonly #res: http.ServerResponse;
  readonly #id: Id;
  #ended = false;
  /** The exchange is over: answered (`byClient` false), or closed by the client first (`true`). */
  onend: ((byClient: boolean) => void) | undefined;

  /** @param id the client's request id: only the answer to it, and messages related to it, are written. */
  constructor(res: http.ServerResponse, id: Id) {
    this.#res = res;
    this.#id = id;
    res.on("close", () => {
      if (this.#ended) return;
      this.#ended = true;
      this.onend?.(true);
    });
  }

  /** Sends the headers and a first comment frame. */
  open(): void {
    this.#res.writeHead(200, SSE_HEADERS);
    this.#res.write(": mcp-cancellable proxy\n\n");
  }

  /**
   * Writes `message` when it belongs to this exchange: the answer to its request (which ends the
   * stream), or a message related to it (progress, a server's request). Anything else is dropped,
   * as the v2 server's transport drops it. `written` is told how the answer's write ended, once
   * the response closed: an answer that came as the client's stream was being cut is not one the
   * client got (not called for a message that is not written).
   */
  send(message: JsonRpcMessage, related: Id | undefined, written?: AnswerWritten): void {
    if (this.#ended) return;
    const isResponse = !("method" in message) && ("result" in message || "error" in message);
    if ((isResponse ? (message as { id?: unknown }).id : related) !== this.#id) return;
    const frame = `event: message\ndata: ${JSON.stringify(message)}\n\n`;
    if (!isResponse) {
      this.#res.write(frame);
      return;
    }
    this.#ended = true;
    if (written !== undefined) watchAnswer(this.#res, written);
    this.#res.end(frame);
    this.onend?.(false);
  }

  /** A keep-alive comment frame (rule 29), while the stream is open. */
  keepAlive(): void {
    if (!this.#ended) this.#res.write(": keepalive\n\n");
  }
}
