// `mcp-cancellable/ai-sdk`: a custom transport for the Vercel AI SDK's MCP client
// (`createMCPClient({ transport })` from `@ai-sdk/mcp`): the library's message-level entry point
// (src/runner/message-transport.ts) under the AI SDK's names. Nothing of the AI SDK is imported:
// the transport has the shape its `MCPTransport` interface describes.
import { toAdapter } from "../../client/with-cancellation.js";
import type { RunRecord } from "../../types/record.js";
import { InvalidOptionError } from "../../errors/InvalidOptionError.js";
import type { AdapterOrTransport } from "../../adapters/types.js";
import { parseCancellationOptions } from "../../options/resolve.js";
import { isOptionsObject, received } from "../../options/schemas.js";
import type { CallOptions, CancellationOptions } from "../../types/options.js";
import { CONNECTION_CLOSED_ERROR_CODE, MessageTransport, TIMEOUT_ERROR_CODE } from "../../runner/message-transport.js";
import type { JsonRpcMessage, MessageSendOptions } from "../../runner/message-transport.js";
import { checkAwaitVerification } from "../../runner/verified-outcome.js";
import { callHook } from "../call-options.js";
import type { AwaitVerification } from "../../runner/verified-outcome.js";

export type { JsonRpcMessage };

/**
 * The JSON-RPC error code of the local error response that tells the AI SDK a request timed out
 * (idle or maximum total timeout). SDK-local, the same as the MCP SDK's `RequestTimeout`; it
 * never goes on the wire (rule 3: the spec assigns no code to a local timeout).
 */
export const AI_SDK_TIMEOUT_CODE = TIMEOUT_ERROR_CODE;

/** The code of the local error response for a request whose connection or stream was lost (the MCP SDK's `ConnectionClosed`). */
export const AI_SDK_CONNECTION_CLOSED_CODE = CONNECTION_CLOSED_ERROR_CODE;

/** The AI SDK's `MCPTransportSendOptions`: the request's signal, and the request a message answers. */
export type AiSdkSendOptions = MessageSendOptions;

/**
 * The transport to hand to `createMCPClient({ transport })`: the AI SDK's `MCPTransport` shape
 * (`start`, `send(message, { signal })`, `close`, `onmessage`, `onclose`, `onerror`,
 * `setProtocolVersion`, which reaches the wrapped transport), plus the run records.
 */
export interface CancellableAiSdkTransport {
  start(): Promise<void>;
  send(message: JsonRpcMessage, options?: AiSdkSendOptions): Promise<void>;
  close(): Promise<void>;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JsonRpcMessage) => void;
  setProtocolVersion(version: string): void;
  /** The run records of every request but `initialize`, oldest first (at most `maxRecords`). */
  records(): RunRecord[];
  /** Requests still pending on the wire (0 when idle). */
  readonly pendingCount: number;
  /** Settled request ids remembered to drop late messages (at most `maxTombstones`). */
  readonly tombstoneCount: number;
}

/** Options of `cancellableTransport`: the client-wide defaults (all durations in ms) plus per-request options. */
export interface CancellableTransportOptions extends CancellationOptions {
  /**
   * Per-request options by method and params (for a tool: `params.name`), merged over the
   * client-wide defaults: a longer idle timeout for one slow tool, a `verify` read. The AI
   * SDK's signal for the request is always used; a `signal` from the hook is refused (an
   * `InvalidOptionError` naming `signal`). `null` or `undefined`: none of the request's
   * own. Called synchronously for each request but `initialize`.
   * @throws {InvalidOptionError} (as that request's rejection: a tool's `execute`, or `tools()`;
   *   nothing sent) naming `callOptions` when it returns anything but an object or
   *   `null`/`undefined` (a string, a number, an array, a Promise), and naming the option when an
   *   option in the object is invalid. Either is also warned about once (`MCP_CANCELLABLE_INVALID_OPTION`).
   */
  callOptions?: (
    method: string,
    params: Record<string, unknown>,
  ) => (Omit<CallOptions, "signal"> & { awaitVerification?: AwaitVerification }) | null | undefined;
  /**
   * When a `tools/call` is cancelled by a limit (a timeout, the connection lost) and has a `verify`
   * read, wait for the read and answer the AI SDK with a tool result (`isError: true`) that says
   * what it found (`true`: the library's text; a function of the record: your own), instead of
   * the -32001 error that `generateText` would hand the model as a tool error. The tool's
   * `abortSignal` is never waited for. Per request through `callOptions` too.
   * @default false
   */
  awaitVerification?: AwaitVerification | undefined;
}

export type { AwaitVerification };

/**
 * A transport for the Vercel AI SDK's MCP client (`createMCPClient({ transport })`, `@ai-sdk/mcp`
 * 1.x and 2.x) that gives every request the library's behaviour, although the AI SDK sets no
 * timeout and never sends a cancel:
 *
 * - an idle timeout and a maximum total timeout per request (defaults 60_000 ms and
 *   max(600_000, timeoutMs); per request through `callOptions`); on expiry the request is
 *   cancelled on the wire and the AI SDK's request rejects with an `MCPClientError` whose
 *   `code` is -32001 and whose `data` is `{ code: "REQUEST_TIMEOUT" | "MAX_TOTAL_TIMEOUT", record }`;
 * - the `signal` the AI SDK passes to `send` (a tool's `abortSignal`) cancels that request by
 *   the transport's mechanism: `notifications/cancelled` on stdio, closing the request's stream
 *   on Streamable HTTP (the notification POSTed first on a 2025-era connection); the AI SDK
 *   rejects the call itself ("Request was aborted", `cause` = the signal's reason);
 * - a response, error or progress for a request already settled never reaches the AI SDK (which
 *   would throw "unknown message ID"); it is counted on that request's run record;
 * - `initialize` is never cancelled (rule 39) and gets no record; every other request gets one.
 *
 * @param transport a cancellation adapter over an MCP SDK transport (`stdioCancellation(...)`,
 *   `streamableHttpCancellation(...)`), or a plain stdio-like transport (the AI SDK's own
 *   `Experimental_StdioMCPTransport` included), which gets `notifications/cancelled`.
 * @param options client-wide defaults (all durations in ms), `callOptions`, and where records go.
 * @throws {InvalidOptionError} a bad transport or option, naming it.
 */
export function cancellableTransport(transport: AdapterOrTransport, options: CancellableTransportOptions = {}): CancellableAiSdkTransport {
  if (!isOptionsObject(options)) {
    throw new InvalidOptionError("options", `cancellableTransport: options must be an object; received ${received(options)}`);
  }
  const { callOptions, awaitVerification, ...rest } = options;
  if (callOptions !== undefined && typeof callOptions !== "function") {
    throw new InvalidOptionError("callOptions", "cancellableTransport: callOptions must be a function");
  }
  const defaults = parseCancellationOptions(rest, "cancellableTransport options");
  return new MessageTransport(toAdapter(transport, "cancellableTransport"), {
    defaults,
    // `null` is no options, as `undefined`; a value that is no object is refused, naming the hook.
    callOptions: callOptions === undefined ? undefined : (method, params) => callHook(() => callOptions(method, params)),
    name: "cancellableTransport",
    awaitVerification: checkAwaitVerification(awaitVerification, "cancellableTransport"),
  });
}
