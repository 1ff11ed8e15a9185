// `mcp-cancellable/openai-agents`: an `MCPServer` for OpenAI Agents JS (`@openai/agents`) whose
// tool calls go through the library: a shell over one `CallRunner` (src/runner/runner.ts) that
// lives across reconnects. Type-only imports of the framework: nothing of it is loaded at run
// time, and the root entry never reaches this file.
import { noop } from "../../utils/hooks.js";
import type { MCPServer } from "@openai/agents";
import { clientWire, toAdapter } from "../../client/with-cancellation.js";
import { isV2Client } from "../../sdk/private.js";
import type { ClientLike, ToolResult } from "../../client/with-cancellation.js";
import { createFacade, sdkCallsOf } from "../../client/facade.js";
import { claimClient, refuseAttached } from "../../client/owner.js";
import type { Facade } from "../../client/facade.js";
import type { RunRecord } from "../../types/record.js";
import { callErrorOf, isCallCancelledError, isCallTimeoutError } from "../../errors/guards.js";
import { InvalidOptionError } from "../../errors/InvalidOptionError.js";
import { callHook } from "../call-options.js";
import type { AdapterOrTransport, TransportLike } from "../../adapters/types.js";
import { stdioCancellation } from "../../adapters/stdio/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../adapters/streamable-http/index.js";
import { parseCancellationOptions } from "../../options/resolve.js";
import { MAX_TIMER_DELAY_MS } from "../../options/defaults.js";
import { isOptionsObject, received } from "../../options/schemas.js";
import type { CallOptions, CancellationOptions } from "../../types/options.js";
import { CallRunner } from "../../runner/runner.js";
import { awaitVerifiedText, checkAwaitVerification, splitAwaitVerification } from "../../runner/verified-outcome.js";
import type { AwaitVerification } from "../../runner/verified-outcome.js";
import type { Wire } from "../../wire/wire.js";

/** A v1 (`@modelcontextprotocol/sdk`) or v2 (`@modelcontextprotocol/client`) SDK `Client`, not yet connected. */
export interface AgentsClientLike extends ClientLike {
  connect(transport: never, options?: never): Promise<void>;
  close(): Promise<void>;
}

/** What `create` returns for each `connect()`: a fresh SDK client and its transport (or cancellation adapter). */
export interface ClientAndTransport {
  client: AgentsClientLike;
  /** A cancellation adapter (`stdioCancellation(...)`, `streamableHttpCancellation(...)`) or a plain transport (gets `notifications/cancelled`). */
  transport: AdapterOrTransport;
}

/** A tool as `tools/list` describes it (what `listTools()` returns to the Agents runtime). */
type AgentsTool = Awaited<ReturnType<MCPServer["listTools"]>>[number];
type AgentsCallOptions = Parameters<MCPServer["callTool"]>[3];
type AgentsContent = Awaited<ReturnType<MCPServer["callTool"]>>;
type AgentsResult = AgentsContent extends infer C ? { content: C; [key: string]: unknown } : never;

/** The Agents-side settings of an `MCPServer` (tool filter, meta resolver, error function, ...), passed through as they are. */
export type AgentsServerSettings = Partial<
  Omit<MCPServer, "name" | "cacheToolsList" | "connect" | "close" | "listTools" | "callTool" | "callToolResult" | "invalidateToolsCache">
>;

/**
 * Per-call options for one tool call: every `CallOptions` but the signal (the run's signal is
 * used), and `awaitVerification` for this call. All durations in ms.
 */
export type ToolCallOptions = Omit<CallOptions, "signal"> & {
  /** This call's `awaitVerification` (see the server option); overrides the server's. */
  awaitVerification?: AwaitVerification | undefined;
};

export type { AwaitVerification };

/** Options of `CancellableMCPServer`. Durations in ms; client-wide defaults as `withCancellation`'s. */
export interface CancellableMCPServerOptions extends CancellationOptions {
  /** The server's name, as the Agents runtime shows it (and prefixes tool names with, when asked). */
  name: string;
  /**
   * Builds a fresh SDK client and its transport. Called by every `connect()` (the Agents runtime
   * may connect again after `close()`); may be async. The client must not be connected yet.
   */
  create: () => ClientAndTransport | Promise<ClientAndTransport>;
  /**
   * Keep the `tools/list` answer until `invalidateToolsCache()` or the next `connect()`.
   * @default false
   */
  cacheToolsList?: boolean;
  /**
   * Per-call options for a tool call, by tool name: a different idle or maximum total timeout,
   * a reason, a `verify` read. Merged over the client-wide defaults; the run's signal is added.
   * `null` or `undefined`: none of the call's own. Called synchronously for each call.
   * @throws {InvalidOptionError} (as the tool call's failure, nothing sent) naming `callOptions`
   *   when it returns anything but an object or `null`/`undefined` (a string, a number, an array,
   *   a Promise), and naming the option when an option in the object is invalid. Either is also
   *   warned about once (`MCP_CANCELLABLE_INVALID_OPTION`); the model is only told what Agents' own
   *   error text says (see `errorFunction`).
   */
  callOptions?: (toolName: string, args: Record<string, unknown>) => ToolCallOptions | null | undefined;
  /** Agents-side settings passed through unchanged (`toolFilter`, `toolMetaResolver`, `errorFunction`, ...). */
  agents?: AgentsServerSettings;
  /**
   * When a tool call is cancelled (a timeout, the connection lost) and has a `verify` read, wait
   * for the read before the Agents runtime gets the tool's outcome, and hand it a tool result
   * that says what was found (`isError: true`; `true`: the library's text, or your own from a
   * function of the record) instead of the error its error function would turn into "please try
   * again". A run's abort is never waited for. Per call through `callOptions` too.
   * @default false
   */
  awaitVerification?: AwaitVerification | undefined;
  /**
   * How long `connect()` waits for the server's answer to `initialize`, in ms (the Agents
   * runtime's own servers: `clientSessionTimeoutSeconds`, default 5 s). Integer from 1 to
   * 2_147_483_647. `initialize` itself is never cancelled (rule 39).
   * @default 60_000 (the SDK's own request timeout)
   */
  connectTimeoutMs?: number;
}

/**
 * Options of the Agents runtime's own MCP servers that a newcomer passes by habit, and what to
 * use here instead: each is refused with that advice (a bare "unknown option" would not say).
 */
const AGENTS_OPTION_ADVICE: Record<string, string> = {
  clientSessionTimeoutSeconds:
    "is the Agents runtime's MCPServer option (seconds, the SDK's request timeout); here use timeoutMs, the idle timeout " +
    "per request in ms (clientSessionTimeoutSeconds: 5 is timeoutMs: 5_000), maxTotalTimeoutMs for a hard cap, and connectTimeoutMs for connect()'s initialize",
  fullCommand:
    "is not supported (the Agents runtime's MCPServerStdio splits it on spaces, which breaks quoted arguments): pass " +
    'command and args, such as { command: "node", args: ["report-server.js"] }',
  ...Object.fromEntries(
    ["errorFunction", "toolFilter", "toolMetaResolver", "customDataExtractor", "useStructuredContent"].map((key) => [
      key,
      `is an Agents-side setting: pass it in agents: { ${key} }, which is handed to the Agents runtime as it is`,
    ]),
  ),
};

/** Refuses the Agents runtime's own option names with what to use instead. @throws {InvalidOptionError} */
function refuseAgentsOptions(options: object, what: string): void {
  for (const key of Object.keys(options)) {
    const advice = AGENTS_OPTION_ADVICE[key];
    if (advice !== undefined && (options as Record<string, unknown>)[key] !== undefined) {
      throw new InvalidOptionError(key, `${what}: "${key}" ${advice}`);
    }
  }
}

/** One `connect()`'s client, its wire, and the library's calls over the server's one runner. */
interface Connected {
  readonly client: AgentsClientLike;
  readonly wire: Wire<TransportLike>;
  readonly calls: Facade;
}

/**
 * An `MCPServer` for OpenAI Agents JS (`new Agent({ mcpServers: [server] })`) whose every
 * request goes through the library's one call path (one `CallRunner` for the server's life,
 * across reconnects: records, call ids, the deadline queue, `onRecord` and the observer):
 *
 * - each tool call has an idle timeout and a maximum total timeout (client-wide defaults, per
 *   tool through `callOptions`), even where the Agents runtime sets none;
 * - the run's `AbortSignal` (`run(agent, input, { signal })`) cancels the `tools/call` by the
 *   transport's own mechanism: `notifications/cancelled` on stdio, closing the request's stream
 *   on Streamable HTTP (2025-era: the notification POSTed first);
 * - a caller abort rejects with exactly the signal's `reason`, which is how the Agents runtime
 *   recognises an abort (anything else it may hand to the tool's error function); nothing is
 *   ever retried, so a `tools/call` goes out at most once;
 * - a timeout rejects with `CallTimeoutError`, which the Agents runtime turns into the tool's
 *   error output for the model (or rethrows when `errorFunction` is `null`);
 * - late messages are dropped; every request leaves a run record (`records()`).
 *
 * `client.transport` is never replaced: the decorated transport is what the client connects with.
 *
 * @throws {InvalidOptionError} `name` or `create` missing, or an invalid client-wide option.
 */
export class CancellableMCPServer implements MCPServer {
  readonly #name: string;
  cacheToolsList: boolean;
  readonly #create: CancellableMCPServerOptions["create"];
  readonly #callOptions: CancellableMCPServerOptions["callOptions"];
  readonly #awaitVerification: AwaitVerification | undefined;
  readonly #connectTimeoutMs: number;
  readonly #runner: CallRunner;
  #connected: Connected | null = null;
  #tools: AgentsTool[] | null = null;

  constructor(options: CancellableMCPServerOptions) {
    if (!isOptionsObject(options)) {
      throw new InvalidOptionError("options", `CancellableMCPServer: options must be an object; received ${received(options)}`);
    }
    const { name, create, cacheToolsList, callOptions, agents, awaitVerification, connectTimeoutMs, ...defaults } = options;
    refuseAgentsOptions(defaults, "CancellableMCPServer");
    if (typeof name !== "string" || name === "") {
      throw new InvalidOptionError("name", "CancellableMCPServer: name must be a non-empty string");
    }
    if (typeof create !== "function") {
      throw new InvalidOptionError("create", "CancellableMCPServer: create must be a function returning { client, transport }");
    }
    if (callOptions !== undefined && typeof callOptions !== "function") {
      throw new InvalidOptionError("callOptions", "CancellableMCPServer: callOptions must be a function");
    }
    if (
      connectTimeoutMs !== undefined &&
      (typeof connectTimeoutMs !== "number" ||
        !Number.isInteger(connectTimeoutMs) ||
        connectTimeoutMs < 1 ||
        connectTimeoutMs > MAX_TIMER_DELAY_MS)
    ) {
      throw new InvalidOptionError(
        "connectTimeoutMs",
        `CancellableMCPServer: connectTimeoutMs must be an integer number of ms from 1 to ${MAX_TIMER_DELAY_MS}; received ${received(connectTimeoutMs)}`,
      );
    }
    this.#connectTimeoutMs = connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    if (cacheToolsList !== undefined && typeof cacheToolsList !== "boolean") {
      throw new InvalidOptionError(
        "cacheToolsList",
        `CancellableMCPServer: cacheToolsList must be true or false; received ${received(cacheToolsList)}`,
      );
    }
    if (agents !== undefined && (typeof agents !== "object" || agents === null || Array.isArray(agents))) {
      throw new InvalidOptionError(
        "agents",
        "CancellableMCPServer: agents must be an object of Agents-side settings, such as { toolFilter }",
      );
    }
    this.#awaitVerification = checkAwaitVerification(awaitVerification, "CancellableMCPServer");
    this.#name = name;
    this.cacheToolsList = cacheToolsList ?? false;
    this.#create = create;
    this.#callOptions = callOptions;
    const server = this;
    this.#runner = new CallRunner({
      defaults: parseCancellationOptions(defaults, "CancellableMCPServer options"),
      // The observer sees the current connection's SDK client.
      get client() {
        return server.#connected?.client;
      },
      // Between close() and connect() no call gets this far (#calls() refuses it): null is a
      // connection that went away.
      wire: () => server.#connected?.wire ?? null,
    });
    // What the model is told of a failed tool call: the Agents runtime's default error function
    // says "Please try again" whatever happened; for the library's errors this one hands the
    // model the error's own words (whether the call ran, and to check before calling it again).
    // An `errorFunction` given in `agents` (null included) wins; `agents: { errorFunction:
    // undefined }` leaves the Agent's own `mcpConfig.errorFunction` in charge.
    this.errorFunction = toolErrorFunction;
    if (agents !== undefined) Object.assign(this, agents);
  }

  /** The model-visible text of a failed tool call (see the constructor); replaced by `agents.errorFunction`. */
  errorFunction?: Exclude<MCPServer["errorFunction"], undefined>;

  get name(): string {
    return this.#name;
  }

  /**
   * Builds a client with `create()` and connects it through the library's decorated transport.
   * A server already connected is closed first. The server's answer to `initialize` is awaited at
   * most `connectTimeoutMs` (default 60_000 ms); `initialize` itself is never cancelled (rule 39).
   * Connects run one at a time, in the order called; a `close()` meanwhile gives up every
   * connect under way.
   * @throws {Error} naming `connectTimeoutMs` when the server did not answer in time; saying
   *   "connect() was given up" when `close()` came meanwhile; the SDK's error when the connect
   *   failed otherwise. The transport (a spawned child) is closed either way.
   */
  connect(): Promise<void> {
    // One connect at a time, in the order called: two at once each made a client, and the one
    // overwritten was never closed (its child ran on). `close()` gives up every connect under way.
    const before = [...this.#openings].map((other) => other.done);
    const opening: Opening = { givenUp: false, client: undefined, done: Promise.resolve() };
    const run = (async () => {
      await Promise.all(before);
      if (opening.givenUp) throw closedWhileConnecting(this.#name);
      await this.#connectNow(opening);
    })();
    opening.done = run.then(noop, noop);
    this.#openings.add(opening);
    void opening.done.then(() => this.#openings.delete(opening));
    return run;
  }

  /** Connects under way (see `connect`); `close()` gives them up. */
  readonly #openings = new Set<Opening>();

  async #connectNow(opening: Opening): Promise<void> {
    if (this.#connected !== null) await this.#closeConnected();
    const { client, transport } = await this.#create();
    opening.client = client;
    // A client attachCancellation carries: its own calls would follow this connection through a second wire.
    refuseAttached(client, "CancellableMCPServer create()");
    // Marked as this copy's: another copy's attachCancellation of it is refused, naming that copy.
    claimClient(client, "CancellableMCPServer create()");
    const wire = clientWire(toAdapter(transport, "CancellableMCPServer create()"), client, this.#runner.defaults);
    const boundMs = this.#connectTimeoutMs;
    // Told when the transport reports itself closed (a stdio child exited): see the catch below.
    const sdkClient = client as unknown as { onclose?: (() => void) | undefined };
    const prior = sdkClient.onclose;
    let reportClosed!: () => void;
    const transportClosed = new Promise<void>((resolve) => (reportClosed = resolve));
    sdkClient.onclose = () => {
      reportClosed();
      prior?.call(client);
    };
    // Given up before it began (`close()` while `create()` ran): nothing was started, nothing is sent.
    if (opening.givenUp) throw closedWhileConnecting(this.#name);
    try {
      await (client as unknown as { connect(transport: never, options: { timeout: number }): Promise<void> }).connect(
        wire.transport as never,
        { timeout: boundMs },
      );
      sdkClient.onclose = prior;
      if (opening.givenUp) throw closedWhileConnecting(this.#name);
    } catch (error) {
      // A half-open transport (a spawned child) must not outlive the failure. The v1 SDK's connect
      // began a close of its own (`void this.close()`), so this one may return at once: the child
      // is stopped once the transport says it closed (the SDK ends its stdin, then SIGTERM after
      // 2 s, SIGKILL after 4 s), waited for at most CONNECT_CLOSE_WAIT_MS (an outside tester's:
      // connect() rejected while a server that ignores the end of its stdin still ran).
      await client.close().catch(() => {});
      await within(transportClosed, CONNECT_CLOSE_WAIT_MS);
      sdkClient.onclose = prior;
      // `close()` came while it connected: that, not the SDK's error from the close, is why.
      if (opening.givenUp) throw error instanceof CloseWhileConnecting ? error : closedWhileConnecting(this.#name, error);
      // The only request of a connect is initialize, under this bound: its timeout is ours, when
      // no answer to it came (an audit's: a server's own -32001 error, at once, was told as the bound).
      if (isSdkTimeout(error) && !wire.handshakeAnswered) {
        throw new Error(
          `${this.#name}: connect() gave up after ${boundMs} ms: the server did not answer initialize within connectTimeoutMs; raise connectTimeoutMs if it starts slowly`,
          { cause: error },
        );
      }
      throw error;
    }
    const own = sdkCallsOf(client);
    this.#connected = { client, wire, calls: createFacade(this.#runner, own, client, isV2Client(client)) };
    this.#tools = null;
  }

  /**
   * Closes the client (and its transport); calls still pending settle as `connection-closed`. A
   * `connect()` under way is given up: its client is closed at once (a spawned child stopped),
   * and it rejects, saying `close()` was called while it connected.
   */
  async close(): Promise<void> {
    const openings = [...this.#openings];
    for (const opening of openings) {
      opening.givenUp = true;
      void opening.client?.close().catch(noop);
    }
    await Promise.all(openings.map((opening) => opening.done));
    await this.#closeConnected();
  }

  async #closeConnected(): Promise<void> {
    const client = this.#connected?.client;
    this.#connected = null;
    this.#tools = null;
    await client?.close();
  }

  /** `tools/list`, every page, with the client-wide timeouts; cached when `cacheToolsList` is set. */
  async listTools(): Promise<AgentsTool[]> {
    const { calls } = this.#calls();
    if (this.cacheToolsList && this.#tools !== null) return this.#tools;
    const connected = this.#connected;
    const tools: AgentsTool[] = [];
    const cursors = new Set<string>();
    let cursor: string | undefined;
    for (;;) {
      const page = await calls.request<{ tools: AgentsTool[]; nextCursor?: string }>({
        method: "tools/list",
        ...(cursor === undefined ? {} : { params: { cursor } }),
      });
      tools.push(...page.tools);
      cursor = page.nextCursor;
      if (cursor === undefined) break;
      if (cursors.has(cursor)) throw new Error(`MCP server ${this.#name} returned a repeated tools/list cursor`);
      cursors.add(cursor);
    }
    if (this.#connected === connected) this.#tools = tools;
    return tools;
  }

  /** Calls a tool; returns its `content` with `_meta`, `structuredContent` and `isError` attached, as the Agents runtime reads them. */
  async callTool(
    toolName: string,
    args: Record<string, unknown> | null,
    meta?: Record<string, unknown> | null,
    options?: AgentsCallOptions,
  ): Promise<AgentsContent> {
    const result = await this.callToolResult(toolName, args, meta, options);
    const content = [...result.content] as unknown as AgentsContent;
    for (const key of ["_meta", "structuredContent", "isError"] as const) {
      if (result[key] !== undefined) {
        Object.defineProperty(content, key, { value: result[key], enumerable: false, configurable: true });
      }
    }
    return content;
  }

  /**
   * Calls a tool and returns the whole `CallToolResult`.
   * @throws the run signal's `reason`, exactly, when the run was aborted (the Agents runtime's
   *   test for an abort); `CallTimeoutError`, `ConnectionClosedError`, or the server's error otherwise.
   */
  async callToolResult(
    toolName: string,
    args: Record<string, unknown> | null,
    meta?: Record<string, unknown> | null,
    options?: AgentsCallOptions,
  ): Promise<AgentsResult> {
    const { calls } = this.#calls();
    const signal = options?.signal;
    const callArgs = args ?? {};
    const hook =
      this.#callOptions === undefined
        ? undefined
        : `CancellableMCPServer ${JSON.stringify(this.#name)} callOptions(${JSON.stringify(toolName)}, args)`;
    // An invalid awaitVerification refuses the call before it is sent, as any invalid option from the hook.
    const { options: perCall, awaitVerification } = splitAwaitVerification(
      hook === undefined
        ? undefined
        : callHook<ToolCallOptions & { awaitVerification?: unknown }>(() => this.#callOptions?.(toolName, callArgs)),
    );
    try {
      const result: ToolResult = await calls.callToolFrom(
        { name: toolName, arguments: callArgs, ...(meta == null ? {} : { _meta: meta }) },
        { ...perCall, ...(signal === undefined ? {} : { signal }) },
        // The Agents runtime hands a tool's error to the model as text: an invalid option from the
        // hook is also warned about and recorded (the runner does both).
        hook,
      );
      return { ...result, content: (result.content ?? []) as AgentsContent } as AgentsResult;
    } catch (error) {
      // The Agents runtime treats a failure as the caller's abort only when it is the signal's
      // reason itself; anything else may reach its error function (or a retry path elsewhere). A
      // run's signal that timed out (AbortSignal.timeout) is recorded as a timeout, and is still
      // the run being stopped: the same.
      if (signal?.aborted === true && (isCallCancelledError(error) || (isCallTimeoutError(error) && error.cause === signal.reason))) {
        throw signal.reason;
      }
      // A cancelled side effect, verified before the model decides what to do next.
      const wait = awaitVerification ?? this.#awaitVerification;
      const text = await awaitVerifiedText(error, wait, signal);
      // The run was stopped while its verification was awaited: never waited for (see above).
      if (signal?.aborted === true) throw signal.reason;
      if (text !== undefined) return { content: [{ type: "text", text }] as unknown as AgentsContent, isError: true } as AgentsResult;
      throw error;
    }
  }

  /** Forgets the cached `tools/list` answer. */
  async invalidateToolsCache(): Promise<void> {
    this.#tools = null;
  }

  /** Run records of every request made through this server, across reconnects, oldest first (at most `maxRecords`). */
  records(): RunRecord[] {
    return this.#runner.records();
  }

  /** Requests still pending on the wire (0 when idle or not connected). */
  get pendingCount(): number {
    return this.#connected?.wire.pendingCount ?? 0;
  }

  /** The connected SDK client (`null` before `connect()` and after `close()`). */
  get client(): AgentsClientLike | null {
    return this.#connected?.client ?? null;
  }

  #calls(): Connected {
    if (this.#connected === null) {
      throw new Error(`MCP server ${this.#name} is not connected: call connect() first`);
    }
    return this.#connected;
  }
}

/**
 * What the Agents runtime's own default tool error function tells the model (0.20: its whole
 * text, "without inspecting the exception"; 0.14 appended `Error: ${error}`). Agents exports no
 * such function to delegate to, so the text is here.
 */
const AGENTS_DEFAULT_TOOL_ERROR_TEXT = "An error occurred while running the tool. Please try again.";

/**
 * The server's default `errorFunction`: for the library's errors (found through `cause` too), the
 * error's message, which says what happened and whether the call ran (`tools/call timed out after
 * 30000 ms (the idle timeout, timeoutMs; request id 3) and was cancelled; whether it ran is unknown
 * (outcome unverified): check before calling it again`); for any other error (the server's
 * JSON-RPC error, an invalid option from `callOptions`), the Agents runtime's own default text
 * and nothing of the error: its message may carry what the model must not read (a connection
 * string in a server's error), and an invalid option is the developer's to fix (it is warned
 * about and recorded).
 */
function toolErrorFunction({ error }: { error: unknown }): string {
  const ours = callErrorOf(error);
  if (ours !== undefined) return `The tool call did not complete: ${ours.message}.`;
  return AGENTS_DEFAULT_TOOL_ERROR_TEXT;
}

/** Options shared by the stdio and Streamable HTTP servers: everything but `create`; `name` optional. */
export interface ConvenienceServerOptions extends Omit<CancellableMCPServerOptions, "create" | "name"> {
  /** The server's name. Default: `stdio: <command>` or the URL. */
  name?: string;
  /** The second argument of the SDK's `new Client(info, options)` (capabilities; with the v2 client `versionNegotiation`, ...). */
  clientOptions?: Record<string, unknown>;
}

/** `connectTimeoutMs`'s default: the SDK's own request timeout, ms. */
const DEFAULT_CONNECT_TIMEOUT_MS = 60_000;

/** An SDK request timeout (v1 `McpError` -32001, v2 `SdkError` `REQUEST_TIMEOUT`). */
function isSdkTimeout(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === -32001 || code === "REQUEST_TIMEOUT";
}

/** Options of `CancellableMCPServerStdio`: the command to spawn, plus the server options. */
export interface CancellableMCPServerStdioOptions extends ConvenienceServerOptions {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** The child's stderr: `"inherit"` (the SDK's default), `"pipe"` or `"ignore"`. */
  stderr?: "inherit" | "pipe" | "ignore";
}

/** Options of `CancellableMCPServerStreamableHttp`: the endpoint, plus the server options. */
export interface CancellableMCPServerStreamableHttpOptions extends ConvenienceServerOptions {
  url: string | URL;
  /** Passed to the `StreamableHTTPClientTransport` (headers, ...). */
  requestInit?: RequestInit;
}

function splitConvenience<T extends ConvenienceServerOptions>(options: T, what: string) {
  if (!isOptionsObject(options)) {
    throw new InvalidOptionError("options", `${what}: options must be an object; received ${received(options)}`);
  }
  const { clientOptions, name, ...rest } = options;
  if (name !== undefined && (typeof name !== "string" || name === "")) {
    throw new InvalidOptionError("name", `${what}: name must be a non-empty string`);
  }
  if (clientOptions !== undefined && !isOptionsObject(clientOptions)) {
    throw new InvalidOptionError("clientOptions", `${what}: clientOptions must be an object; received ${received(clientOptions)}`);
  }
  return { clientOptions, name, rest };
}

/** A constructor as the conveniences call it (the SDK classes of either line). */
/** The SDK classes a convenience server builds its client with: the v2 client's, else the v1 SDK's (both lines share these shapes). */
interface SdkClasses {
  readonly line: "v1" | "v2";
  readonly Client: new (info: { name: string; version: string }, options?: never) => AgentsClientLike;
  readonly StdioClientTransport: () => Promise<new (params: { command: string }) => TransportLike>;
  readonly StreamableHTTPClientTransport: () => Promise<new (url: URL, options?: never) => TransportLike>;
}

/**
 * The SDK the bot has installed: the v2 client (`@modelcontextprotocol/client`, which
 * `@openai/agents` 0.15 and later install), else the v1 SDK (`@modelcontextprotocol/sdk`, which
 * `@openai/agents` 0.14 installs). @throws naming both install lines when neither is there.
 */
async function loadSdk(what: string): Promise<SdkClasses> {
  let v2Error: unknown;
  try {
    const v2 = await import("@modelcontextprotocol/client");
    return {
      line: "v2",
      Client: v2.Client,
      StdioClientTransport: async () => (await import("@modelcontextprotocol/client/stdio")).StdioClientTransport,
      StreamableHTTPClientTransport: async () => v2.StreamableHTTPClientTransport,
    };
  } catch (error) {
    v2Error = error;
  }
  try {
    const v1 = await import("@modelcontextprotocol/sdk/client/index.js");
    return {
      line: "v1",
      Client: v1.Client,
      StdioClientTransport: async () => (await import("@modelcontextprotocol/sdk/client/stdio.js")).StdioClientTransport,
      StreamableHTTPClientTransport: async () =>
        (await import("@modelcontextprotocol/sdk/client/streamableHttp.js")).StreamableHTTPClientTransport,
    };
  } catch {
    throw new Error(
      `${what} builds an MCP SDK client and found neither SDK: npm install @modelcontextprotocol/client ` +
        "(the v2 client, what @openai/agents 0.15 and later use) or @modelcontextprotocol/sdk (v1, with @openai/agents 0.14)",
      { cause: v2Error },
    );
  }
}

/**
 * `CancellableMCPServer` over stdio, built like the Agents runtime's own `MCPServerStdio`: each
 * `connect()` spawns the command with the SDK's `Client` and `StdioClientTransport`, through
 * `stdioCancellation`: the v2 client's (`@modelcontextprotocol/client`, what `@openai/agents`
 * 0.15 and later use) when it is installed, else the v1 SDK's (`@modelcontextprotocol/sdk`,
 * with `@openai/agents` 0.14). A cancel is one `notifications/cancelled` line (rules 6, 31).
 * @throws {InvalidOptionError} `command` missing, or an invalid option.
 */
export class CancellableMCPServerStdio extends CancellableMCPServer {
  constructor(options: CancellableMCPServerStdioOptions) {
    const { clientOptions, name, rest } = splitConvenience(options, "CancellableMCPServerStdio");
    refuseAgentsOptions(rest, "CancellableMCPServerStdio");
    const { command, args, env, cwd, stderr, ...server } = rest;
    const what = "CancellableMCPServerStdio";
    if (typeof command !== "string" || command === "") {
      throw new InvalidOptionError("command", `${what}: command must be a non-empty string`);
    }
    if (args !== undefined && (!Array.isArray(args) || !args.every((arg) => typeof arg === "string"))) {
      throw new InvalidOptionError(
        "args",
        `${what}: args must be an array of strings, such as ["report-server.js", "--flag"]; received ${typeof args === "string" ? `the string ${received(args)} (one argument per element)` : received(args)}`,
      );
    }
    if (env !== undefined && (typeof env !== "object" || env === null || !Object.values(env).every((value) => typeof value === "string"))) {
      throw new InvalidOptionError("env", `${what}: env must be an object of strings (variable name to value)`);
    }
    if (cwd !== undefined && typeof cwd !== "string") {
      throw new InvalidOptionError("cwd", `${what}: cwd must be a string (a directory); received ${received(cwd)}`);
    }
    if (stderr !== undefined && stderr !== "inherit" && stderr !== "pipe" && stderr !== "ignore") {
      throw new InvalidOptionError("stderr", `${what}: stderr must be "inherit", "pipe" or "ignore"; received ${received(stderr)}`);
    }
    const serverName = name ?? `stdio: ${command}`;
    super({
      ...server,
      name: serverName,
      create: async () => {
        const sdk = await loadSdk("CancellableMCPServerStdio");
        const StdioClientTransport = await sdk.StdioClientTransport();
        const transport = new StdioClientTransport({
          command,
          ...(args === undefined ? {} : { args }),
          ...(env === undefined ? {} : { env }),
          ...(cwd === undefined ? {} : { cwd }),
          ...(stderr === undefined ? {} : { stderr }),
        });
        const client = new sdk.Client({ name: serverName, version: "1.0.0" }, clientOptions as never);
        return { client, transport: stdioCancellation(transport) };
      },
    });
  }
}

/**
 * `CancellableMCPServer` over Streamable HTTP, built like the Agents runtime's own
 * `MCPServerStreamableHttp`: each `connect()` makes an SDK `Client` and
 * `StreamableHTTPClientTransport` (the v2 client's when installed, else the v1 SDK's, created with
 * `cancellableFetch()`), through `streamableHttpCancellation`. A cancel closes that
 * request's response stream (2026-07-28), after POSTing `notifications/cancelled` on a 2025-era
 * connection (rules 6, 28, 40). Never reconnects and retries a call by itself.
 * @throws {InvalidOptionError} `url` missing, or an invalid option.
 */
export class CancellableMCPServerStreamableHttp extends CancellableMCPServer {
  constructor(options: CancellableMCPServerStreamableHttpOptions) {
    const { clientOptions, name, rest } = splitConvenience(options, "CancellableMCPServerStreamableHttp");
    refuseAgentsOptions(rest, "CancellableMCPServerStreamableHttp");
    const { url, requestInit, ...server } = rest;
    if (typeof url !== "string" && !(url instanceof URL)) {
      throw new InvalidOptionError("url", "CancellableMCPServerStreamableHttp: url must be a string or a URL");
    }
    let endpoint: URL;
    try {
      endpoint = new URL(url);
    } catch {
      throw new InvalidOptionError(
        "url",
        `CancellableMCPServerStreamableHttp: url must be an absolute URL such as "http://127.0.0.1:3000/mcp"; received ${received(String(url))}`,
      );
    }
    if (endpoint.protocol !== "http:" && endpoint.protocol !== "https:") {
      throw new InvalidOptionError(
        "url",
        `CancellableMCPServerStreamableHttp: url must be http: or https:; received ${received(endpoint.href)}`,
      );
    }
    if (requestInit !== undefined && (typeof requestInit !== "object" || requestInit === null)) {
      throw new InvalidOptionError(
        "requestInit",
        "CancellableMCPServerStreamableHttp: requestInit must be an object (fetch's RequestInit: headers, ...)",
      );
    }
    super({
      ...server,
      name: name ?? endpoint.href,
      create: async () => {
        const sdk = await loadSdk("CancellableMCPServerStreamableHttp");
        const StreamableHTTPClientTransport = await sdk.StreamableHTTPClientTransport();
        // The v1 transport closes one request's stream only through cancellableFetch(), chosen here.
        const transportOptions = {
          ...(requestInit === undefined ? {} : { requestInit }),
          ...(sdk.line === "v1" ? { fetch: cancellableFetch() } : {}),
        };
        const transport = new StreamableHTTPClientTransport(
          endpoint,
          (Object.keys(transportOptions).length === 0 ? undefined : transportOptions) as never,
        );
        const client = new sdk.Client({ name: name ?? "mcp-cancellable", version: "1.0.0" }, clientOptions as never);
        return { client, transport: streamableHttpCancellation(transport) };
      },
    });
  }
}

/** How long a failed `connect()` waits for its transport to close (its child to exit), in ms: the SDK's stdio close ends stdin, then SIGTERM after 2 s, SIGKILL after 4 s. */
const CONNECT_CLOSE_WAIT_MS = 5_000;

/** A `connect()` under way: `close()` gives it up (see `CancellableMCPServer.close`). */
interface Opening {
  givenUp: boolean;
  /** Its client, once `create()` made it: closed by a `close()` meanwhile. */
  client: { close(): Promise<void> } | undefined;
  /** Settles (never rejects) when the connect is over, either way. */
  done: Promise<void>;
}

/** The error of a `connect()` that `close()` gave up. */
class CloseWhileConnecting extends Error {
  override name = "Error";
}

function closedWhileConnecting(name: string, cause?: unknown): Error {
  return new CloseWhileConnecting(
    `${name}: connect() was given up: close() was called while it connected`,
    cause === undefined ? undefined : { cause },
  );
}

/** `promise`, or nothing after `ms` (the timer released either way). */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
