// `mcp-cancellable proxy`: one more entry point of the one call path (docs/architecture.md).
// The front is the client's stdio (its JSON-RPC lines on stdin, only protocol messages on
// stdout); the upstream is a `MessageTransport` over the upstream's cancellation adapter, so each
// client request is one `CallRunner.run` on the upstream connection: its limits, the cancel by
// the upstream's mechanism, late messages dropped and the run record all come from the library.
// What lives here is only the edge: ids and progress tokens mapped between the client's space and
// the upstream's, the client's own cancel turned into that call's signal, and the answers.
import { createWriteStream } from "node:fs";
import type { WriteStream } from "node:fs";
import type { Readable, Writable } from "node:stream";
import type { CancellationAdapter, TransportLike } from "../../adapters/types.js";
import { isCallTimeoutError, isConnectionClosedError } from "../../errors/guards.js";
import type { McpCancellableError } from "../../errors/McpCancellableError.js";
import { jsonLines } from "../../ledger/json-lines.js";
import { CONNECTION_CLOSED_ERROR_CODE, MessageTransport, TIMEOUT_ERROR_CODE } from "../../runner/message-transport.js";
import type { JsonRpcMessage, LibraryErrorResponse } from "../../runner/message-transport.js";
import { nameOf } from "../../runner/runner.js";
import type { CallObserver, CallOptions, CancellationOptions, Progress } from "../../types/options.js";
import type { RunRecord } from "../../types/record.js";
import { BoundedMap } from "../../utils/bounded-map.js";
import { JsonLineReader } from "../json-lines.js";
import type { ProxyOptions } from "./args.js";
import { baseLimits, entryLimits, hasOverrides, loadConfig, NO_CONFIG } from "./config.js";
import type { ProxyConfig } from "./config.js";

type Id = string | number;

/** The JSON-RPC error codes the proxy answers with for a line it cannot relay (JSON-RPC 2.0 §5.1). */
export const PARSE_ERROR_CODE = -32700;
export const INVALID_REQUEST_CODE = -32600;

/** The reason sent upstream when the client goes away with requests in flight. */
export const CLIENT_GONE_REASON = "The client went away (mcp-cancellable proxy: its stdin closed)";
/** The reason sent upstream for a client's cancel that gave none. */
export const CLIENT_CANCEL_REASON = "Cancelled by the client";

/** Where a 2026-07-28 request carries its protocol version (rule 38). */
const PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion";

/** How many settled requests' client ids are remembered for the records of late revisions. */
const MAX_REMEMBERED_IDS = 10_000;

/** Where the proxy reads and writes. */
export interface ProxyIo {
  /** The client's messages, one per line. */
  readonly input: Readable;
  /** Protocol messages for the client, one per line; nothing else. */
  readonly output: Writable;
  /** Diagnostics (stderr). */
  log(text: string): void;
}

/** How the upstream was made: its adapter, and a description of what ended it for the exit message. */
export interface Upstream<T extends TransportLike> {
  readonly adapter: CancellationAdapter<T>;
  /** What to say about the upstream once it closed, and the exit status it means (0 or 1). */
  ended(): { message: string; code: number };
  /** Where the upstream reports a line that is not a JSON-RPC message (stdio). */
  onInvalid?(handler: (line: string, why: string) => void): void;
}

/** A client request the upstream has not answered yet. */
interface Pending {
  readonly clientId: Id;
  readonly method: string;
  /** Aborted by the client's own cancel, or when the client goes away. */
  readonly controller: AbortController;
  /** The client's progress token, relayed back under it; `undefined` when the client asked for none. */
  readonly clientToken: Id | undefined;
}

/** What the proxy counted over its life (written on stderr at the end). */
export interface ProxyCounts {
  requests: number;
  clientCancels: number;
  /** Client cancels that named no request in progress (rule 10: ignored). */
  ignoredCancels: number;
  malformedFromClient: number;
  malformedFromServer: number;
  /** Responses from the upstream for no request in progress (dropped). */
  unknownResponses: number;
}

/**
 * Runs the proxy until the client closes its input or the upstream ends. Resolves with the exit
 * status: 0 when the client ended it (or the server exited with 0), 1 when the upstream ended
 * otherwise. Rejects only with a `ConfigError` (bad `--config`) or when `--records` cannot be
 * opened, before anything started.
 */
export async function runProxy<T extends TransportLike>(
  options: ProxyOptions,
  io: ProxyIo,
  makeUpstream: () => Upstream<T> | Promise<Upstream<T>>,
  extras: ProxyExtras = {},
): Promise<number> {
  const config: ProxyConfig = options.config === undefined ? NO_CONFIG : loadConfig(options.config);
  const records = options.records === undefined ? undefined : await openRecords(options.records);
  const upstream = await makeUpstream();
  return new ProxySession(options, config, io, upstream, records, extras).run();
}

/** What the command adds to every call besides the options: the observer of `--otel`. */
export interface ProxyExtras {
  readonly observer?: CallObserver;
}

function openRecords(file: string): Promise<WriteStream> {
  return new Promise((resolve, reject) => {
    const stream = createWriteStream(file, { flags: "a" });
    stream.once("open", () => resolve(stream));
    stream.once("error", (error) =>
      reject(
        new RecordsFileError(`--records ${file}: cannot open it for writing (${(error as NodeJS.ErrnoException).code ?? error.message})`),
      ),
    );
  });
}

/** The `--records` file cannot be opened. Exit code 2. */
export class RecordsFileError extends Error {
  override name = "RecordsFileError" as const;
}

class ProxySession<T extends TransportLike> {
  readonly #options: ProxyOptions;
  readonly #config: ProxyConfig;
  readonly #io: ProxyIo;
  readonly #upstream: Upstream<T>;
  readonly #records: WriteStream | undefined;
  readonly #transport: MessageTransport<T>;
  /** By upstream id. */
  readonly #pending = new Map<Id, Pending>();
  /** Client id -> upstream id, for requests in progress. */
  readonly #byClientId = new Map<Id, Id>();
  /** Upstream progress token -> the request it belongs to. */
  readonly #byToken = new Map<string, Pending>();
  /** Upstream id -> client id, kept after the request settles for its record's later revisions (with `--records`). */
  readonly #clientIds = new BoundedMap<Id, Id>(MAX_REMEMBERED_IDS);
  #nextId = 0;
  /** The protocol version last handed to the upstream transport. */
  #version: string | undefined;
  /** The client's lines (a line too long for `MAX_LINE_CHARS` is answered as a parse error). */
  readonly #reader = new JsonLineReader({
    message: (message) => {
      if (this.#ending === undefined) this.#deliver(message as JsonRpcMessage);
    },
    invalid: (_line, why, value) => {
      if (this.#ending !== undefined) return;
      if (value === undefined) {
        this.#malformed(null, why, PARSE_ERROR_CODE, "Parse error");
        return;
      }
      const id = isObject(value) ? value.id : undefined;
      this.#malformed(typeof id === "string" || typeof id === "number" ? id : null, why, INVALID_REQUEST_CODE, "Invalid Request");
    },
  });
  /** Whether the config file has entries per method or per tool (else every request has the same limits: the transport's defaults). */
  readonly #perRequestLimits: boolean;
  /** The client's messages that wait for `notifications/initialized` to be sent upstream (see `#deliver`). */
  #held: JsonRpcMessage[] | undefined;
  #ending: Promise<number> | undefined;
  #done!: (code: number) => void;
  readonly counts: ProxyCounts = {
    requests: 0,
    clientCancels: 0,
    ignoredCancels: 0,
    malformedFromClient: 0,
    malformedFromServer: 0,
    unknownResponses: 0,
  };

  constructor(
    options: ProxyOptions,
    config: ProxyConfig,
    io: ProxyIo,
    upstream: Upstream<T>,
    records: WriteStream | undefined,
    extras: ProxyExtras,
  ) {
    this.#options = options;
    this.#config = config;
    this.#io = io;
    this.#upstream = upstream;
    this.#records = records;
    const writeLine = records === undefined ? undefined : jsonLines((line) => records.write(line));
    this.#perRequestLimits = hasOverrides(config);
    const defaults: CancellationOptions = {
      // The limits every request has unless a config entry for its method or tool says otherwise:
      // validated already (the command line, the config file), so requests without an entry of
      // their own carry no options to validate again (only the client's cancel signal).
      ...baseLimits(config, options.limits),
      // The client's cancel reason was meant for the server: it goes upstream as it is.
      forwardAbortReason: true,
      // Records go to the file, not to memory.
      maxRecords: 0,
      onAnomaly: (anomaly) => this.#log(`anomaly: ${anomaly.message}`),
      ...(writeLine === undefined ? {} : { onRecord: (record: RunRecord) => writeLine(this.#withClientId(record)) }),
      ...(extras.observer === undefined ? {} : { observer: extras.observer }),
    };
    this.#transport = new MessageTransport(upstream.adapter, {
      defaults,
      callOptions: (method, params) => this.#callOptions(method, params),
      respond: (error) => this.#respond(error),
    });
    this.#transport.onmessage = (message) => this.#fromServer(message);
    this.#transport.onerror = (error) => this.#log(`upstream: ${error.message}`);
    this.#transport.onclose = () => void this.#end("upstream");
    upstream.onInvalid?.((line, why) => this.#serverMalformed(line, why));
  }

  /** Starts the upstream, then relays until one side ends. */
  async run(): Promise<number> {
    const finished = new Promise<number>((resolve) => (this.#done = resolve));
    try {
      await this.#transport.start();
    } catch (error) {
      this.#log(`cannot start the upstream: ${(error as Error).message}`);
      await this.#closeRecords();
      return 1;
    }
    const { input, output } = this.#io;
    output.on("error", this.#outputError);
    input.setEncoding("utf8");
    input.on("data", this.#read);
    input.once("end", this.#inputEnded);
    input.once("error", this.#inputEnded);
    return finished;
  }

  // ---- client -> server ---------------------------------------------------------------------

  readonly #read = (chunk: string): void => this.#reader.push(chunk);

  readonly #inputEnded = (): void => {
    this.#reader.end();
    void this.#end("client");
  };

  readonly #outputError = (error: Error): void => {
    this.#log(`the client's end of stdout failed (${error.message}): ending`);
    void this.#end("client");
  };

  /**
   * The client's messages in the client's order. Sends upstream are not awaited (an HTTP POST
   * each), except `notifications/initialized`: what the client sends after it waits until it is
   * sent, as the SDK client's `connect` does, so that no request reaches the server before it
   * and the server's standalone stream (which a 2025-era HTTP transport opens once it is
   * accepted) is asked for first.
   */
  #deliver(message: JsonRpcMessage): void {
    if (this.#held !== undefined) {
      this.#held.push(message);
      return;
    }
    this.#fromClient(message);
  }

  /** A line from the client that is not a JSON-RPC message: answered with the spec's error, counted, logged; nothing is relayed. */
  #malformed(id: Id | null, why: string, code: number, message: string): void {
    this.counts.malformedFromClient++;
    this.#log(`client sent a malformed line (${why}): answered ${code} ${message}`);
    this.#toClient({ jsonrpc: "2.0", id, error: { code, message: `${message}: ${why}` } });
  }

  #fromClient(message: JsonRpcMessage): void {
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (typeof method === "string" && (typeof id === "string" || typeof id === "number")) {
      this.#request(message, method, id);
      return;
    }
    if (method === "notifications/cancelled") {
      this.#clientCancel(message);
      return;
    }
    // Notifications, and the client's answers to the server's own requests (ids in the server's space): as they are.
    this.#verbose("client->server", message);
    const sent = this.#transport
      .send(message)
      .catch((error: unknown) => this.#log(`could not relay a ${String(method ?? "response")} to the server: ${(error as Error).message}`));
    if (method === "notifications/initialized") {
      const held: JsonRpcMessage[] = [];
      this.#held = held;
      void sent.then(() => {
        this.#held = undefined;
        for (const next of held) if (this.#ending === undefined) this.#deliver(next);
      });
    }
  }

  #request(message: JsonRpcMessage, method: string, clientId: Id): void {
    if (this.#byClientId.has(clientId)) {
      // Rule 1: an id must not match another request still unanswered.
      this.#toClient({
        jsonrpc: "2.0",
        id: clientId,
        error: {
          code: INVALID_REQUEST_CODE,
          message: `Invalid Request: id ${JSON.stringify(clientId)} is already used by a request in progress`,
        },
      });
      return;
    }
    this.counts.requests++;
    const upstreamId = this.#nextId++;
    const params = (message as { params?: unknown }).params;
    const meta = isObject(params) && isObject(params._meta) ? params._meta : undefined;
    const clientToken = meta?.progressToken;
    // 2026-07-28 has no initialize: each request names its protocol version (rule 38), which the
    // upstream transport needs (HTTP: the MCP-Protocol-Version header; the adapter's era).
    const version = meta?.[PROTOCOL_VERSION_META];
    if (typeof version === "string" && version !== this.#version) {
      this.#version = version;
      this.#transport.setProtocolVersion(version);
    }
    const controller = new AbortController();
    const pending: Pending = {
      clientId,
      method,
      controller,
      clientToken: typeof clientToken === "string" || typeof clientToken === "number" ? clientToken : undefined,
    };
    this.#verbose("client->server", message, upstreamId);
    // The message was parsed for the proxy alone: it goes upstream under the upstream's id as it is.
    const forward = message;
    forward.id = upstreamId;
    if (pending.clientToken !== undefined && method !== "initialize") {
      // The upstream gets a token of the proxy's (unique whatever the client reuses); progress
      // for it goes back to the client under the client's own token.
      const token = `mcp-cancellable-proxy-${upstreamId}`;
      this.#byToken.set(token, pending);
      forward.params = { ...(params as Record<string, unknown>), _meta: { ...meta, progressToken: token } };
    }
    this.#pending.set(upstreamId, pending);
    this.#byClientId.set(clientId, upstreamId);
    if (this.#records !== undefined) this.#clientIds.set(upstreamId, clientId);
    this.#transport.send(forward, method === "initialize" ? undefined : { signal: controller.signal }).catch((error: unknown) => {
      // initialize (not a call: nothing answers it for us), or an option the runner refused.
      if (!this.#pending.has(upstreamId)) return;
      this.#forget(upstreamId);
      this.#toClient({
        jsonrpc: "2.0",
        id: clientId,
        error: {
          code: CONNECTION_CLOSED_ERROR_CODE,
          message: `mcp-cancellable proxy: ${method} could not be sent to the server (${(error as Error).message})`,
        },
      });
    });
  }

  /** The client cancels one of its requests: that call's signal aborts; the library cancels it upstream by its mechanism, with the upstream's id. */
  #clientCancel(message: JsonRpcMessage): void {
    const params = (message as { params?: unknown }).params;
    const requestId = isObject(params) ? params.requestId : undefined;
    const reason = isObject(params) && typeof params.reason === "string" && params.reason !== "" ? params.reason : CLIENT_CANCEL_REASON;
    const upstreamId = typeof requestId === "string" || typeof requestId === "number" ? this.#byClientId.get(requestId) : undefined;
    const pending = upstreamId === undefined ? undefined : this.#pending.get(upstreamId);
    if (upstreamId === undefined || pending === undefined) {
      // Rule 10: a cancel for nothing in progress (answered already, or never sent) is ignored.
      this.counts.ignoredCancels++;
      this.#verbose("client->proxy", message, undefined, "ignored: no such request in progress (rule 10)");
      return;
    }
    if (pending.method === "initialize") {
      this.counts.ignoredCancels++;
      this.#log("the client cancelled initialize: ignored (initialize is never cancelled, rule 39)");
      return;
    }
    this.counts.clientCancels++;
    this.#verbose("client->proxy", message, upstreamId, "cancelling upstream");
    this.#forget(upstreamId);
    pending.controller.abort(reason);
  }

  /** A request's own options: its config entry's limits (none without one: the defaults have them), and the relay of its progress. */
  #callOptions(method: string, params: Record<string, unknown>): Omit<CallOptions, "signal"> | undefined {
    const limits = this.#perRequestLimits ? entryLimits(this.#config, this.#options.limits, method, nameOf(params)) : undefined;
    const meta = params._meta;
    const token = isObject(meta) ? meta.progressToken : undefined;
    const pending = typeof token === "string" ? this.#byToken.get(token) : undefined;
    if (pending === undefined) return limits;
    const clientToken = pending.clientToken!;
    return { ...limits, onprogress: (progress: Progress) => this.#relayProgress(clientToken, progress) };
  }

  #relayProgress(clientToken: Id, progress: Progress): void {
    this.#toClient({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: clientToken, ...progress } });
  }

  // ---- server -> client ---------------------------------------------------------------------

  #fromServer(message: JsonRpcMessage): void {
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (method === undefined && (typeof id === "string" || typeof id === "number")) {
      const pending = this.#pending.get(id);
      if (pending === undefined) {
        this.counts.unknownResponses++;
        this.#log(`the server answered id ${JSON.stringify(id)}, which is no request in progress: dropped`);
        return;
      }
      this.#forget(id);
      if (pending.method === "initialize") this.#noteVersion(message);
      this.#verbose("server->client", message, id);
      this.#toClient({ ...message, id: pending.clientId });
      return;
    }
    // The server's own requests (sampling, elicitation, roots/list, ping), notifications, logging,
    // list changes, its cancels of its own requests: ids in the server's space, as they are.
    this.#verbose("server->client", message);
    this.#toClient(message);
  }

  /** The protocol version the server answered initialize with reaches the upstream transport (HTTP sends it as a header). */
  #noteVersion(message: JsonRpcMessage): void {
    const result = (message as { result?: unknown }).result;
    if (isObject(result) && typeof result.protocolVersion === "string") {
      this.#version = result.protocolVersion;
      this.#transport.setProtocolVersion(result.protocolVersion);
    }
  }

  /** How the library's settle of a request is answered to the client: a timeout as -32001 naming the limit, a lost connection as -32000; a client's own cancel gets nothing. */
  #respond(error: McpCancellableError): LibraryErrorResponse | undefined {
    const record = error.record;
    const what = record.name === null ? record.method : `${record.method} ${JSON.stringify(record.name)}`;
    if (isCallTimeoutError(error)) {
      const idle = error.code === "REQUEST_TIMEOUT";
      const message = idle
        ? `mcp-cancellable proxy: ${what} timed out after ${error.timeoutMs} ms with no answer (the idle timeout, timeoutMs); cancelled upstream`
        : `mcp-cancellable proxy: ${what} exceeded its maximum total timeout of ${error.timeoutMs} ms (maxTotalTimeoutMs); cancelled upstream`;
      const data = {
        code: error.code,
        trigger: record.cancel?.trigger ?? (idle ? "timeout" : "max-total-timeout"),
        limitMs: error.timeoutMs,
        summary: record.summary,
        record: this.#withClientId(record),
      };
      return { code: TIMEOUT_ERROR_CODE, message, data };
    }
    if (isConnectionClosedError(error)) {
      const data = { code: error.code, trigger: "connection-closed", summary: record.summary, record: this.#withClientId(record) };
      return {
        code: CONNECTION_CLOSED_ERROR_CODE,
        message: `mcp-cancellable proxy: the connection to the server was lost before ${what} was answered`,
        data,
      };
    }
    return undefined;
  }

  /** The record with the client's id of its request: from the request in progress, or (records of `--records` only) remembered after it. */
  #withClientId(record: RunRecord): RunRecord {
    const id = record.requestId;
    const clientId = id === null ? undefined : (this.#pending.get(id)?.clientId ?? this.#clientIds.get(id));
    return (clientId === undefined ? record : { ...record, clientRequestId: clientId }) as RunRecord;
  }

  #forget(upstreamId: Id): void {
    const pending = this.#pending.get(upstreamId);
    if (pending === undefined) return;
    this.#pending.delete(upstreamId);
    if (this.#byClientId.get(pending.clientId) === upstreamId) this.#byClientId.delete(pending.clientId);
    if (pending.clientToken !== undefined) this.#byToken.delete(`mcp-cancellable-proxy-${String(upstreamId)}`);
  }

  #toClient(message: unknown): void {
    if (this.#ending !== undefined && this.#io.output.writableEnded) return;
    try {
      this.#io.output.write(`${JSON.stringify(message)}\n`);
    } catch (error) {
      this.#log(`could not write to the client: ${(error as Error).message}`);
    }
  }

  // ---- the end ------------------------------------------------------------------------------

  #end(side: "client" | "upstream"): Promise<number> {
    this.#ending ??= this.#shutdown(side).then((code) => {
      this.#done(code);
      return code;
    });
    return this.#ending;
  }

  async #shutdown(side: "client" | "upstream"): Promise<number> {
    const { input } = this.#io;
    input.removeListener("data", this.#read);
    input.pause();
    let code = 0;
    if (side === "client") {
      // Every request in flight is cancelled upstream (each by the upstream's mechanism), then the upstream is closed.
      for (const [upstreamId, pending] of [...this.#pending]) {
        if (pending.method === "initialize") continue;
        this.#forget(upstreamId);
        pending.controller.abort(CLIENT_GONE_REASON);
      }
      await this.#transport.close().catch((error: unknown) => this.#log(`closing the upstream: ${(error as Error).message}`));
      const { message } = this.#upstream.ended();
      this.#log(`the client closed its end; ${message}`);
    } else {
      // The library answered every call in flight (-32000) as the connection closed; what is left
      // (initialize) is answered here, at once.
      for (const [upstreamId, pending] of [...this.#pending]) {
        this.#forget(upstreamId);
        this.#toClient({
          jsonrpc: "2.0",
          id: pending.clientId,
          error: {
            code: CONNECTION_CLOSED_ERROR_CODE,
            message: `mcp-cancellable proxy: the connection to the server was lost before ${pending.method} was answered`,
          },
        });
      }
      const ended = this.#upstream.ended();
      code = ended.code;
      this.#log(ended.message);
    }
    const c = this.counts;
    this.#log(
      `done: ${c.requests} request${c.requests === 1 ? "" : "s"}, ${c.clientCancels} cancelled by the client, ${c.ignoredCancels} cancel${c.ignoredCancels === 1 ? "" : "s"} ignored, ` +
        `${c.malformedFromClient} malformed line${c.malformedFromClient === 1 ? "" : "s"} from the client and ${c.malformedFromServer} from the server dropped, ${c.unknownResponses} unknown response${c.unknownResponses === 1 ? "" : "s"} dropped`,
    );
    await this.#closeRecords();
    return code;
  }

  async #closeRecords(): Promise<void> {
    const records = this.#records;
    if (records === undefined) return;
    await new Promise<void>((resolve) => records.end(() => resolve()));
  }

  /** A line from the server that is not a JSON-RPC message: dropped and counted. */
  #serverMalformed(line: string, why: string): void {
    this.counts.malformedFromServer++;
    this.#log(`the server wrote a malformed line (${why}), dropped: ${line.length > 200 ? `${line.slice(0, 200)}...` : line}`);
  }

  #log(text: string): void {
    this.#io.log(`mcp-cancellable proxy: ${text}\n`);
  }

  #verbose(direction: string, message: JsonRpcMessage, upstreamId?: Id, note?: string): void {
    if (!this.#options.verbose) return;
    const { method, id } = message as { method?: unknown; id?: unknown };
    const what = typeof method === "string" ? method : "error" in message ? "error" : "result";
    const ids =
      id === undefined
        ? ""
        : upstreamId === undefined
          ? ` id ${JSON.stringify(id)}`
          : ` id ${JSON.stringify(id)} (upstream ${JSON.stringify(upstreamId)})`;
    this.#log(`${direction} ${what}${ids}${note === undefined ? "" : `: ${note}`}`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
