// Every read of the official SDKs' private or undocumented shapes, and every guess at which SDK
// line an object comes from, lives here (issue 19, item 3). Nothing else in src/ reads an SDK's
// underscore field: callers use these functions, and each one has a fallback for when the field
// is gone, so an SDK release that moves one degrades to a slower or more conservative path
// instead of breaking. test/sdk/canaries.suite.ts runs `probeSdkShapes` on real v1 and v2
// instances (the root's versions, and the newest published in the Node 22 leg) and fails naming
// the field when a release moves it.
//
// Lines and versions: v1 = `@modelcontextprotocol/sdk` (checked: 1.32.2), v2 =
// `@modelcontextprotocol/client` (checked: 2.4.0). The file/line references point into those
// versions under node_modules/@modelcontextprotocol/; v2's bundle file names carry a content
// hash that changes with each release (search for the field name). In both lines the TypeScript
// declarations mark these fields `private`: they are not API and may move in any release.
//
// Public members the library also reads (`Client.transport`, `transport.sessionId`,
// `transport.protocolVersion`, `setProtocolVersion`, v2 `getNegotiatedProtocolVersion()`,
// `terminateSession()`) are documented API and are read where they are used.

/**
 * Hands one embedded input request of a task (2026-07-28 `inputRequests[key] = { method, params }`)
 * to the client's own handler; resolves with the bare result (`inputResponses[key]`). The handler
 * is aborted through `signal`. Defined here (the one module that reaches the SDK's handlers), so
 * this bottom layer imports nothing above it; the wire re-exports it.
 */
export type InputDispatcher = (
  key: string,
  request: { method: string; params?: Record<string, unknown> | undefined },
  signal: AbortSignal,
) => Promise<Record<string, unknown>>;

/** The SDK line an object is checked against. */
export type SdkLine = "v1" | "v2";

// ---- Protocol (both lines' Client extends it): the per-request state ----------------------------

/**
 * What both lines' `Protocol` keeps per request: `Protocol._responseHandlers` (a Map, request id
 * as a number → response handler), `Protocol._progressHandlers` (a Map, same keys) and
 * `Protocol._cleanupTimeout(messageId)` (clears and forgets the request's timer).
 *
 * - v1 1.32.2: assigned in the constructor, dist/esm/shared/protocol.js:20-21; `_cleanupTimeout`
 *   at :207; `_onresponse` (:476) drops exactly these three before calling the handler.
 * - v2 2.4.0: class fields, client/dist/src-CeKsbNLO.mjs:5669-5670; `_cleanupTimeout` at :5829.
 *
 * Read anew on every use (`_onclose` replaces `_responseHandlers` with a new Map).
 *
 * Fallback: where any of the three is missing or not of that kind, `sdkWaitDropper` answers
 * `false` and the wire ends the SDK's wait with a local error response instead
 * (through the SDK's `_onresponse` and its zod checks: correct, 20 to 50 µs slower a call).
 */
interface ProtocolWaitState {
  readonly responses: Map<unknown, unknown>;
  readonly progress: Map<unknown, unknown>;
  readonly cleanupTimeout: (messageId: number) => void;
}

/** Each part of a `ProtocolWaitState` on its own (`undefined` where missing), for the probe. */
function protocolWaitParts(client: object): { [K in keyof ProtocolWaitState]: ProtocolWaitState[K] | undefined } {
  const own = client as { _responseHandlers?: unknown; _progressHandlers?: unknown; _cleanupTimeout?: unknown };
  const cleanup = own._cleanupTimeout;
  return {
    responses: own._responseHandlers instanceof Map ? own._responseHandlers : undefined,
    progress: own._progressHandlers instanceof Map ? own._progressHandlers : undefined,
    cleanupTimeout: typeof cleanup === "function" ? (messageId: number) => void cleanup.call(client, messageId) : undefined,
  };
}

/**
 * Ends the SDK's wait for a request the call already settled by dropping what the SDK's
 * `Protocol` keeps for it (its response handler, progress handler and timer: see
 * `ProtocolWaitState`), exactly what its own `_onresponse` drops before calling the handler.
 * The SDK's promise for that request then never settles; the facade has stopped listening to
 * it, and nothing holds it any more.
 *
 * This avoids handing the SDK a local error response, which both SDK lines validate with zod
 * three times (two of which fail, building zod issues: 20 to 50 µs per cancelled call here).
 *
 * Fallback: the shape is checked on every use; a client without these maps and method (another
 * SDK version) gets `false`, and the wire falls back to the local error response.
 */
export function sdkWaitDropper(client: object): (id: string | number) => boolean {
  // The shape of a `ProtocolWaitState`, read in place: nothing allocated per cancel (its object
  // and closure were about 150 B of each timed-out call's garbage).
  const own = client as { _responseHandlers?: unknown; _progressHandlers?: unknown; _cleanupTimeout?: unknown };
  return (id) => {
    const responses = own._responseHandlers;
    const progress = own._progressHandlers;
    const cleanup = own._cleanupTimeout;
    if (!(responses instanceof Map) || !(progress instanceof Map) || typeof cleanup !== "function") return false;
    // The SDKs key their maps by Number(id), as their _onresponse does.
    const key = Number(id);
    if (!responses.has(key)) return false;
    responses.delete(key);
    progress.delete(key);
    cleanup.call(client, key);
    return true;
  };
}

/**
 * Drops the SDK's own timer for a request of a call as the request goes out: the SDK's
 * `Protocol._cleanupTimeout(messageId)` (see `ProtocolWaitState`), which clears the timer the
 * SDK's `request()` set up just before its `send` (v1 1.32.2 dist/esm/shared/protocol.js:742-772,
 * v2 2.4.0 client/dist/src-CeKsbNLO.mjs:6255-6256) and forgets its entry. The library gives that
 * timer the longest delay (it must never decide a call's fate, the call's deadlines do), so all
 * it does while the request is pending is hold a `Timeout`, its handler closure and the SDK's
 * entry: about 340 bytes per pending call (heap snapshot, v1). What the SDK does later for that
 * id (its `_onresponse`, its progress handling, its `finally`) finds no entry, as it expects
 * of an id without one.
 *
 * Fallback: `undefined` when the client has no `_cleanupTimeout` (another SDK version): the
 * SDK's timer stays, as without the library, and is dropped when the request ends.
 */
export function sdkTimerDropper(client: object): ((id: string | number) => void) | undefined {
  const cleanup = (client as { _cleanupTimeout?: unknown })._cleanupTimeout;
  if (typeof cleanup !== "function") return undefined;
  // The SDKs key their maps by Number(id), as their _onresponse does.
  return (id) => void cleanup.call(client, Number(id));
}

/** Marks a client whose `_setupTimeout` skips the marked requests (`sdkTimerSkipper`): installed once. */
const SKIPS_TIMER = Symbol.for("mcp-cancellable.skipsSdkTimer");

/**
 * Makes the SDK client set up no timer of its own for a request whose `timeout` request option is
 * `marker`: an own `_setupTimeout` on the client (v1 1.32.2 dist/esm/shared/protocol.js:181, v2
 * 2.4.0 client/dist/src-CeKsbNLO.mjs:5804, both called by `request()` just before its `send`)
 * that returns at once for that delay and hands every other to the SDK's. The library marks the
 * requests of calls with a limit of their own (their deadlines are the request's limits); the
 * SDK then keeps no `Timeout`, no entry in `_timeoutInfo` and no place in Node's timer list for
 * them, where `sdkTimerDropper` cleared them as the request went out (about 0.5 µs and 120 B a
 * call). What the SDK does later for that id (`_cleanupTimeout`, `_onprogress`) finds no entry, as
 * it expects of an id without one. A request the caller makes on the client without the library,
 * with any other `timeout`, is the SDK's as before.
 *
 * Fallback: `false` when the client has no `_setupTimeout` function (another SDK version) or
 * cannot take an own property: the marked requests get the SDK's timer (of `marker` ms, the longest
 * delay less 1 ms) and `sdkTimerDropper` clears it as the request goes out.
 */
export function sdkTimerSkipper(client: object, marker: number): boolean {
  const own = client as { _setupTimeout?: unknown; [SKIPS_TIMER]?: number };
  if (own[SKIPS_TIMER] === marker) return true;
  const setup = own._setupTimeout;
  if (typeof setup !== "function" || own[SKIPS_TIMER] !== undefined) return false;
  const sdkSetup = setup as (...args: unknown[]) => unknown;
  // The SDK's five parameters, named (a rest parameter would make an array per request).
  function _setupTimeout(this: unknown, id: unknown, timeout: unknown, total: unknown, onTimeout: unknown, reset: unknown): unknown {
    if (timeout === marker) return undefined;
    return sdkSetup.call(this, id, timeout, total, onTimeout, reset);
  }
  try {
    Object.defineProperty(client, "_setupTimeout", { value: _setupTimeout, configurable: true, writable: true });
    Object.defineProperty(client, SKIPS_TIMER, { value: marker, configurable: true });
  } catch {
    return false;
  }
  return true;
}

/**
 * Whether the v1 client refuses `callTool` for this tool because its `execution.taskSupport` is
 * `"required"`: v1's `Client.isToolTaskRequired(name)` (declared `private`; 1.32.2
 * dist/esm/client/index.js:521, called by its `callTool` at :481). v2 2.4.0 has no such check.
 *
 * Fallback: `false` when the method is missing (v2, or a v1 release that moved it): the call
 * goes to the SDK, and the SDK's own refusal (if any) reaches the caller unchanged, with the
 * SDK's wording instead of the library's advice to pass the `task` option.
 */
export function sdkRequiresToolTask(client: object, name: string): boolean {
  const check = (client as { isToolTaskRequired?: unknown }).isToolTaskRequired;
  if (typeof check !== "function") return false;
  try {
    return check.call(client, name) === true;
  } catch {
    return false;
  }
}

// ---- Which line: public members used as markers ---------------------------------------------------

/**
 * Whether the client is the v2 line's: v2 `Client` has the public `getProtocolEra()` (2.4.0
 * client/dist/public-CvV4ZHkX.mjs:3167, declared in client-BTIWJvaF.d.mts:769); v1 1.32.2 has
 * none. Decides the argument order (v2 `callTool(params, options)`, v1 `callTool(params,
 * resultSchema, options)`) and whether failed sends need releasing (v1 leaks their handlers).
 *
 * Fallback: none is possible for a client that is neither; `false` (the v1 order). The canary
 * checks both ways: v2 has the method, and v1 still lacks it (a v1 release that added it would
 * be taken for v2).
 */
export function isV2Client(client: object): boolean {
  return typeof (client as { getProtocolEra?: unknown }).getProtocolEra === "function";
}

/**
 * Whether the transport is v2's `StreamableHTTPClientTransport`, which opens one stream per
 * request and closes it through the SDK's `requestSignal` on a 2026-07-28 connection: the public
 * `readonly hasPerRequestStream = true` (2.4.0 client/dist/index.mjs:1355; the `Transport`
 * interface declares it optional). v1 1.32.2 has no such field.
 *
 * Fallback: `false` (v1 behaviour): the adapter then needs `cancellableFetch()` to close one
 * request's stream, and says so with an `InvalidOptionError` when it is missing.
 */
export function hasPerRequestStream(transport: object): boolean {
  return (transport as { hasPerRequestStream?: unknown }).hasPerRequestStream === true;
}

/**
 * Whether the transport is either line's `StreamableHTTPClientTransport`: v2's
 * `hasPerRequestStream`, or the public `terminateSession()` both lines have (1.32.2
 * dist/esm/client/streamableHttp.js:446; 2.4.0 client/dist/index.mjs:1823).
 *
 * Fallback: `false`: the transport is treated as a message transport (stdio, in-memory), whose
 * cancel is the `notifications/cancelled` alone; OpenTelemetry leaves out `network.transport`.
 */
export function isStreamableHttpTransport(transport: object): boolean {
  return hasPerRequestStream(transport) || typeof (transport as { terminateSession?: unknown }).terminateSession === "function";
}

/**
 * Whether the transport is either line's `StdioClientTransport`: both have the public `stderr`
 * getter (1.32.2 dist/esm/client/stdio.js:115; 2.4.0 client/dist/stdio.mjs:124).
 *
 * Fallback: `false`: OpenTelemetry leaves out `network.transport` (`pipe`).
 */
export function isStdioTransport(transport: object): boolean {
  return "stderr" in transport;
}

// ---- StdioClientTransport ------------------------------------------------------------------------

/** The part of a Node `Writable` (the server's stdin) the stdio adapter writes its cancels to. */
export interface ChildStdin {
  readonly writable: boolean;
  readonly destroyed: boolean;
  readonly writableNeedDrain: boolean;
  /** Bytes written and not yet handed to the pipe (Node's `Writable`; absent on a stand-in). */
  readonly writableLength?: number;
  /** The error the pipe failed with, else null (Node's `Writable.errored`, Node 18+; absent on a stand-in). */
  readonly errored?: Error | null;
  write(chunk: string, callback?: (error?: Error | null) => void): boolean;
  once(event: "drain", listener: () => void): unknown;
  removeListener(event: "drain", listener: () => void): unknown;
}

/**
 * The server's stdin of a started `StdioClientTransport`: both lines keep the child process as
 * `_process` (declared `private`), set by `start()` and cleared on close.
 *
 * - v1 1.32.2: dist/esm/client/stdio.js:65 (`this._process = spawn(...)`).
 * - v2 2.4.0: client/dist/stdio.mjs:74.
 *
 * Fallback: `undefined` (also before `start()` and after close): the stdio adapter sends its
 * cancel through the transport's own `send` (the `notifications/cancelled` line is the same; it
 * then waits behind the SDK's own `drain` listeners when the pipe is full).
 */
export function stdioChildStdin(transport: object): ChildStdin | undefined {
  const child = (transport as { _process?: unknown })._process;
  const stdin = typeof child === "object" && child !== null ? (child as { stdin?: unknown }).stdin : undefined;
  if (typeof stdin !== "object" || stdin === null) return undefined;
  const pipe = stdin as Partial<ChildStdin>;
  return typeof pipe.write === "function" && typeof pipe.once === "function" && typeof pipe.removeListener === "function"
    ? (stdin as ChildStdin)
    : undefined;
}

/**
 * The server's stdout of a started `StdioClientTransport` (the same `_process` as
 * {@link stdioChildStdin}), for the stdio adapter to see it end while the process runs on.
 * Fallback: `undefined` (that end is then seen only when the process exits, as without the library).
 */
export function stdioChildStdout(transport: object): object | undefined {
  const child = (transport as { _process?: unknown })._process;
  const stdout = typeof child === "object" && child !== null ? (child as { stdout?: unknown }).stdout : undefined;
  if (typeof stdout !== "object" || stdout === null) return undefined;
  const stream = stdout as { once?: unknown; removeListener?: unknown };
  return typeof stream.once === "function" && typeof stream.removeListener === "function" ? stdout : undefined;
}

/**
 * Whether the server's process of a `StdioClientTransport` has exited (Node's `exitCode` or
 * `signalCode` set on its `_process`): true also once the transport dropped its process (closed).
 * False while it runs, and where neither can be read.
 */
export function stdioChildExited(transport: object): boolean {
  const child = (transport as { _process?: unknown })._process;
  if (typeof child !== "object" || child === null) return true;
  const { exitCode, signalCode } = child as { exitCode?: unknown; signalCode?: unknown };
  return typeof exitCode === "number" || typeof signalCode === "string";
}

/** The read buffers whose `readMessage` is wrapped already (see {@link onRefusedStdioLine}). */
const refusalsWatched = new WeakSet<object>();

/**
 * Lets `replace` see each line the SDK's stdio transport refuses by its schema (and the error it
 * refused it with), and hand a message in its place (`undefined`: refused as before, the SDK's
 * `onerror` gets its error). Both lines keep a `ReadBuffer` as `StdioClientTransport._readBuffer`
 * (declared `private`), made with
 * the transport and kept across `start()` and `close()`; its `readMessage()` takes one line off
 * `_buffer` (a `Buffer`), then throws on what its schema refuses: the SDK's `processReadBuffer`
 * hands that to `onerror`, and the line is lost. The line is the last one of what the call took off
 * `_buffer`: nothing is copied or parsed again on a line the SDK accepts (one property read and
 * one call more per message).
 *
 * - v1 1.32.2: dist/esm/client/stdio.js:47 (`_readBuffer = new ReadBuffer()`), :132
 *   (`readMessage()` in `processReadBuffer`); shared/stdio.js:18 (`readMessage`: one line, then
 *   `deserializeMessage`, a `SyntaxError` for a line that is no JSON, a `ZodError` for the schema).
 * - v2 2.4.0: client/dist/stdio.mjs:138; src-CeKsbNLO.mjs:6764 (`readMessage` skips lines that are
 *   no JSON, and throws the schema's error).
 *
 * Fallback: `false` where `_readBuffer.readMessage` is not there: a refused line reaches `onerror`,
 * as without the library.
 */
export function onRefusedStdioLine(transport: object, replace: (line: string, error: unknown) => object | undefined): boolean {
  const buffer = (transport as { _readBuffer?: unknown })._readBuffer;
  if (typeof buffer !== "object" || buffer === null) return false;
  if (refusalsWatched.has(buffer)) return true;
  const readBuffer = buffer as { _buffer?: unknown; readMessage?: unknown };
  const read = readBuffer.readMessage;
  if (typeof read !== "function") return false;
  refusalsWatched.add(buffer);
  readBuffer.readMessage = function readMessage(this: typeof readBuffer): unknown {
    const before = this._buffer;
    try {
      return read.call(this);
    } catch (error) {
      const line = lastLineTaken(before, this._buffer);
      const message = line === undefined ? undefined : replace(line, error);
      if (message === undefined) throw error;
      return message;
    }
  };
  return true;
}

/** The last line `readMessage` took off a buffer that was `before` and is `after` now, without its `\n` (and `\r`). */
function lastLineTaken(before: unknown, after: unknown): string | undefined {
  if (!Buffer.isBuffer(before)) return undefined;
  const left = Buffer.isBuffer(after) ? after.length : 0;
  const end = before.length - left - 1; // the taken line's `\n`
  if (end < 0 || before[end] !== 0x0a) return undefined;
  const start = end === 0 ? 0 : before.lastIndexOf(0x0a, end - 1) + 1;
  return before.toString("utf8", start, end).replace(/\r$/, "");
}

// ---- StreamableHTTPClientTransport ---------------------------------------------------------------

/**
 * Whether the transport has the slot both lines keep the `fetch` option in: `_fetch` (declared
 * `private _fetch?`), assigned in the constructor even when no `fetch` was given (then
 * `undefined`; every request uses `this._fetch ?? fetch`).
 *
 * - v1 1.32.2: dist/esm/client/streamableHttp.js:32 (wrapped at :36 for `redirectPolicy`).
 * - v2 2.4.0: client/dist/index.mjs:1362 (wrapped at :1366 for DPoP).
 */
export function hasFetchSlot(transport: object): boolean {
  return "_fetch" in transport;
}

/**
 * The `fetch` the transport makes its requests with (`_fetch`, see `hasFetchSlot`), or
 * `undefined` (none given: the global `fetch`).
 *
 * Fallback: `undefined` when the slot is gone. On v1 the adapter then finds no
 * `cancellableFetch()` and throws an `InvalidOptionError` asking for it to be passed as
 * `streamableHttpCancellation(transport, { fetch })`, which is used instead of this read; v2
 * needs none (its streams close through `requestSignal`).
 */
export function transportFetch(transport: object): unknown {
  return (transport as { _fetch?: unknown })._fetch;
}

/**
 * True when the transport has an `authProvider` (`_authProvider`, both SDK lines): the SDK then
 * answers a 401 (or a 403 asking for more scope) by authorizing and sending again, so such an
 * answer to the library's own notification POST is left to it. Fallback: `false` when the slot is
 * gone: the 401 is then taken as the server's refusal of the notification (recorded, never
 * reported to `onerror`), as any other error status.
 */
export function hasAuthProvider(transport: object): boolean {
  const provider = (transport as { _authProvider?: unknown })._authProvider;
  return provider !== undefined && provider !== null;
}

/**
 * Replaces the transport's `fetch` (`_fetch`, see `hasFetchSlot`) with `wrap(current)`, so every
 * request the SDK makes from then on goes through the wrapper (both lines read `_fetch` at each
 * request: v1 1.32.2 dist/esm/client/streamableHttp.js:100, :320, :458). The only write into an
 * SDK's private field. Used on v2 to mark the failures of the library's own notification POSTs,
 * and by `attachCancellation` on a v1 transport created without `cancellableFetch()` (LangChain's
 * `MultiServerMCPClient` builds them so), to give its requests from then on a per-request fetch
 * over the one it had, so a cancel closes the request's stream.
 *
 * Fallback: when the slot is gone nothing is written and `false` is returned: on v2 the SDK's
 * echo of a failed notification POST then reaches `onerror` unrecognised (nothing else changes;
 * the cancel itself does not depend on it); on v1 the attached transport's cancel is the POSTed
 * notification alone, and its record says so (mechanism `notification`).
 */
export function replaceTransportFetch(transport: object, wrap: (current: unknown) => unknown): boolean {
  if (!hasFetchSlot(transport)) return false;
  const own = transport as { _fetch?: unknown };
  own._fetch = wrap(own._fetch);
  return true;
}

/**
 * The server URL of a Streamable HTTP transport: both lines keep the constructor's `url` as
 * `_url` (declared `private`), a `URL`.
 *
 * - v1 1.32.2: dist/esm/client/streamableHttp.js:27.
 * - v2 2.4.0: client/dist/index.mjs:1357.
 *
 * Fallback: `undefined`: OpenTelemetry takes `otelRecorder({ serverUrl })` if given, else leaves
 * out `server.address` and `server.port`.
 */
export function streamableHttpUrl(transport: object): URL | undefined {
  const url = (transport as { _url?: unknown })._url;
  return url instanceof URL ? url : undefined;
}

// ---- v1 server transport (the proxy's HTTP front, 2025-era sessions) ---------------------------

/**
 * The v1 server's `WebStandardStreamableHTTPServerTransport` map of request id to the id of the
 * response stream that carries its answer: `_requestToStreamMapping` (declared `private`), a
 * `Map<RequestId, string>`. The front reads it to end a cancelled request's stream (rule 11: no
 * answer will come on it) when no other request is on that stream, and deletes the request's
 * entry after `closeSSEStream` (public).
 *
 * - v1 1.32.2: dist/esm/server/webStandardStreamableHttp.js (the constructor's field list; set in
 *   `handlePostRequest`, read by `closeSSEStream` and `send`).
 *
 * Fallback: `undefined`: the front leaves a cancelled request's stream open until the session
 * ends, as the v1 SDK's own server does.
 */
export function serverRequestStreams(transport: object): Map<unknown, unknown> | undefined {
  const streams = (transport as { _requestToStreamMapping?: unknown })._requestToStreamMapping;
  return streams instanceof Map ? streams : undefined;
}

// ---- The canary -------------------------------------------------------------------------------

/** One shape the library reads, as `probeSdkShapes` found it on a real instance. */
export interface ShapeCheck {
  /** `<Class>.<field>` as the SDK names it, e.g. `Client._responseHandlers`. */
  readonly field: string;
  /** Whether the field is expected on this line. */
  readonly expected: boolean;
  /** Whether the library's own accessor found it. */
  readonly found: boolean;
  /** What the library does when it is missing. */
  readonly fallback: string;
}

/** What `probeSdkShapes` found. */
export interface ShapeReport {
  readonly line: SdkLine;
  readonly checks: readonly ShapeCheck[];
  /** `"<line> <field>"` of every check whose `found` differs from `expected` (empty when all hold). */
  readonly moved: readonly string[];
}

/** Real instances of one SDK line, as a bot would make them. */
export interface SdkInstances {
  /** A `Client` (connected or not). */
  readonly client?: object;
  /** A `StdioClientTransport` that was started (its child is running). */
  readonly stdio?: object;
  /** A `StreamableHTTPClientTransport` created with `{ fetch }` (it need not be started). */
  readonly http?: object;
  /** The `fetch` passed to `http`'s constructor, to check that `transportFetch` returns it. */
  readonly httpFetch?: unknown;
  /** The URL passed to `http`'s constructor. */
  readonly httpUrl?: URL;
  /** A v1 `WebStandardStreamableHTTPServerTransport` (v1 only). */
  readonly legacyServer?: object;
}

/**
 * Runs every accessor of this module on real SDK instances and says which shape is not where
 * the library expects it, so the canary tests exercise the library's own code. A check is made
 * only for the instances given.
 */
export function probeSdkShapes(line: SdkLine, instances: SdkInstances): ShapeReport {
  const checks: ShapeCheck[] = [];
  const add = (field: string, expected: boolean, found: boolean, fallback: string) =>
    void checks.push({ field, expected, found, fallback });
  const { client, stdio, http } = instances;
  if (client !== undefined) {
    const parts = protocolWaitParts(client);
    const wait = "local error response through the SDK's _onresponse";
    add("Client._responseHandlers", true, parts.responses !== undefined, wait);
    add("Client._progressHandlers", true, parts.progress !== undefined, wait);
    add("Client._cleanupTimeout", true, parts.cleanupTimeout !== undefined, wait);
    add(
      "Client._setupTimeout",
      true,
      typeof (client as { _setupTimeout?: unknown })._setupTimeout === "function",
      "the SDK's timer of each call's request is set up, then cleared as the request goes out",
    );
    add(
      "Client.isToolTaskRequired",
      line === "v1",
      typeof (client as { isToolTaskRequired?: unknown }).isToolTaskRequired === "function",
      "the SDK's own refusal",
    );
    add("Client.getProtocolEra (v2 marker)", line === "v2", isV2Client(client), "v1 argument order");
    add(
      "Client._getRequestHandler + buildContext (2026-07-28 input requests)",
      line === "v2",
      sdkInputDispatcher(client) !== undefined,
      "input_required polled like working",
    );
  }
  if (stdio !== undefined) {
    add("StdioClientTransport._process.stdin", true, stdioChildStdin(stdio) !== undefined, "cancel through transport.send");
    add(
      "StdioClientTransport._process.stdout and exitCode",
      true,
      stdioChildStdout(stdio) !== undefined && !stdioChildExited(stdio),
      "a closed stdout seen only at the process's exit",
    );
    add(
      "StdioClientTransport._readBuffer.readMessage",
      true,
      typeof (stdio as { _readBuffer?: { readMessage?: unknown } })._readBuffer?.readMessage === "function",
      "an answer the SDK's schema refuses reaches onerror (cases.md C02)",
    );
    add("StdioClientTransport.stderr (stdio marker)", true, isStdioTransport(stdio), "no network.transport attribute");
    add("StdioClientTransport (not Streamable HTTP)", false, isStreamableHttpTransport(stdio), "none needed");
  }
  if (http !== undefined) {
    const fetchFound = hasFetchSlot(http) && (instances.httpFetch === undefined || transportFetch(http) === instances.httpFetch);
    add(
      "StreamableHTTPClientTransport._fetch",
      true,
      fetchFound,
      "v1: streamableHttpCancellation(transport, { fetch }); v2: failures not marked",
    );
    const url = streamableHttpUrl(http);
    add(
      "StreamableHTTPClientTransport._url",
      true,
      url !== undefined && (instances.httpUrl === undefined || url.href === instances.httpUrl.href),
      "otelRecorder({ serverUrl })",
    );
    add(
      "StreamableHTTPClientTransport.hasPerRequestStream (v2 marker)",
      line === "v2",
      hasPerRequestStream(http),
      "v1 path: cancellableFetch() required",
    );
    add("StreamableHTTPClientTransport (Streamable HTTP marker)", true, isStreamableHttpTransport(http), "treated as a message transport");
  }
  if (instances.legacyServer !== undefined) {
    add(
      "WebStandardStreamableHTTPServerTransport._requestToStreamMapping",
      true,
      serverRequestStreams(instances.legacyServer) !== undefined,
      "a cancelled request's stream left open until its session ends",
    );
  }
  const moved = checks.filter((check) => check.found !== check.expected).map((check) => `${line} ${check.field}`);
  return { line, checks, moved };
}

// ---- v2 Client: its own handlers of embedded input requests (2026-07-28) ------------------------

/** The requests a 2026-07-28 server's `input_required` answer may ask of the client. */
const INPUT_REQUEST_METHODS = ["elicitation/create", "sampling/createMessage", "roots/list"] as const;

/**
 * Whether the v2 SDK client has a handler of its own for a server's input requests (one of
 * `INPUT_REQUEST_METHODS`): `Protocol._getRequestHandler(method)` (2.4.0
 * client/dist/src-CeKsbNLO.mjs:5797, the map `setRequestHandler` fills). Its multi round-trip
 * driver (`runInputRequiredFlow`, :6544) hands those handlers the request's `signal`.
 *
 * Fallback: `false` when the client has no `_getRequestHandler` (v1, or a v2 release that moved
 * it), or it throws: the handlers then get no signal of the library's, as before.
 */
export function sdkAnswersInputRequests(client: object): boolean {
  const handlerOf = (client as { _getRequestHandler?: unknown })._getRequestHandler;
  if (typeof handlerOf !== "function") return false;
  try {
    return INPUT_REQUEST_METHODS.some((method) => handlerOf.call(client, method) !== undefined);
  } catch {
    return false;
  }
}

/**
 * Hands one embedded input request (`{ method, params }`: `elicitation/create`,
 * `sampling/createMessage`, `roots/list`) to the SDK client's own registered handler and
 * resolves with the bare result, as the v2 SDK's own multi-round-trip engine does
 * (`dispatchInputRequest`): `Protocol._getRequestHandler(method)` (the stored handler chain,
 * with the `Client`'s validation of elicitation results) called with a context made by
 * `buildContext({ sessionId, mcpReq: { id: key, method, _meta, signal, ... } })`.
 *
 * - v2 2.4.0: `_getRequestHandler` at client/dist/src-CeKsbNLO.mjs:5797; the engine's dispatch at
 *   :6495 and its context at :6473; `Client._resolveNonCompleteResult` wires them at
 *   client/dist/public-CvV4ZHkX.mjs:2831.
 *
 * A server request cannot be synthesised up through the transport instead: the v2 client on a
 * 2026-07-28 connection drops every inbound JSON-RPC request (`_shouldDropInbound`,
 * public-CvV4ZHkX.mjs:2794), and its 2026 registry has no `elicitation/create` request.
 *
 * Fallback: `undefined` when the client has no `_getRequestHandler` or `buildContext` (v1, or a
 * v2 release that moved them): the library then leaves a task in `input_required` to be polled.
 * A method with no handler registered rejects (the SDK's own words: declare the capability).
 */
export function sdkInputDispatcher(client: object): InputDispatcher | undefined {
  const own = client as { _getRequestHandler?: unknown; buildContext?: unknown; transport?: { sessionId?: unknown } };
  if (typeof own._getRequestHandler !== "function" || typeof own.buildContext !== "function") return undefined;
  const getHandler = own._getRequestHandler as (method: string) => unknown;
  const buildContext = own.buildContext as (base: unknown, extra: unknown) => unknown;
  return async (key, request, signal) => {
    const handler = getHandler.call(client, request.method);
    if (typeof handler !== "function") {
      throw new Error(`no handler is registered for ${request.method} on this client (input request ${JSON.stringify(key)})`);
    }
    const unavailable = (): never => {
      throw new Error("related messaging is not available for an input request of a task");
    };
    const params = request.params;
    const ctx = buildContext.call(
      client,
      {
        sessionId: own.transport?.sessionId,
        mcpReq: {
          id: key,
          method: request.method,
          _meta: params?._meta,
          requestState: () => undefined,
          signal,
          send: unavailable,
          notify: unavailable,
        },
      },
      undefined,
    );
    const result = await (handler as (request: unknown, ctx: unknown) => Promise<unknown>).call(
      client,
      { jsonrpc: "2.0", id: key, method: request.method, ...(params === undefined ? {} : { params }) },
      ctx,
    );
    return typeof result === "object" && result !== null ? (result as Record<string, unknown>) : {};
  };
}
