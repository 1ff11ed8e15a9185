// `mcp-cancellable/mastra`: the library on Mastra's `MCPClient` (`@mastra/mcp` 2.x, Node 22.13+).
// Mastra's public API takes server configs, never a client or a transport, and keeps each
// server's SDK client (a v2 `@modelcontextprotocol/client` `Client`) inside its `MCPClient`; its
// tools call that client's `callTool(params, { timeout, signal })`. This module is the one place
// that reads Mastra's internals (each read guarded, refused with a message naming the version
// tested when the shape is not there) and attaches the library to each client with
// `attachCancellation`. Nothing of Mastra is imported: the shapes below are structural.
import { attachWith, refuseOtherOptions } from "../../client/attach.js";
import type { CancellableClient, ClientLike } from "../../client/facade.js";
import { InvalidOptionError } from "../../errors/InvalidOptionError.js";
import type { TransportLike } from "../../adapters/types.js";
import type { RunRecord } from "../../types/record.js";
import type { CancellationOptions } from "../../types/options.js";
import { parseCancellationOptions } from "../../options/resolve.js";
import { warnOnce } from "../../options/warnings.js";

/** The part of Mastra's `MCPClient` this module uses in public: `listTools()` connects every server. */
export interface MastraMCPClientLike {
  listTools(): Promise<Record<string, unknown>>;
}

/** What `attachMastra` returns: the library's handle on each server's client, and every record. */
export interface MastraAttached {
  /** By server name (the keys of `new MCPClient({ servers })`): the handle `attachCancellation` returned. */
  readonly servers: ReadonlyMap<string, CancellableClient<TransportLike, ClientLike>>;
  /**
   * The servers of `new MCPClient({ servers })` that had no connected client when `attachMastra`
   * ran (their connect failed, e.g. Mastra's own `timeout` on a slow `initialize`): their tool
   * calls do not go through the library until `attachMastra` is called again after Mastra
   * connected them. Each is also warned about once (`McpCancellableWarning`, code
   * `MCP_CANCELLABLE_UNPROTECTED`). Empty when every server is attached.
   */
  readonly unattached: readonly string[];
  /** The run records of every server's calls, oldest first within each server. */
  records(): RunRecord[];
}

/** The versions whose internals this module was written against (and tested with, test/node22/mastra/). */
const TESTED = "@mastra/mcp 2.0.0";

/** Each `MCPClient`'s options from its first `attachMastra`: a later call attaches new server clients with them. */
const firstOptions = new WeakMap<object, CancellationOptions | undefined>();

/**
 * Options that act only through a verification: Mastra's tools pass no per-call `verify`, so
 * without `verifiers` they would do nothing, and are refused.
 */
const VERIFY_ONLY = ["verifyTimeoutMs", "verifyDelayMs", "verifyWindowMs", "verifyIntervalMs", "awaitVerification"] as const;

/** Refuses, at once, an option that would do nothing on Mastra's tools. @throws {InvalidOptionError} */
function refuseIdle(options: CancellationOptions | undefined): void {
  if (options === undefined || typeof options !== "object" || options === null) return;
  const verifiers = options.verifiers;
  if (verifiers !== undefined && typeof verifiers === "object" && verifiers !== null && Object.keys(verifiers).length > 0) return;
  for (const key of VERIFY_ONLY) {
    if (options[key] !== undefined) {
      throw new InvalidOptionError(
        key,
        `attachMastra options: "${key}" has no effect without verifiers: Mastra's tools pass no verify read of their own, so give ` +
          'the reads by tool name, such as verifiers: { generate_report: ({ arguments: args }) => (reportExists(args) ? "applied" : "not-applied") }',
      );
    }
  }
}

/**
 * Adds the library to every server client of a Mastra `MCPClient`: connects them
 * (`mcp.listTools()`, Mastra's own public call), then attaches the library to each server's SDK
 * client (as `attachCancellation` does), so the tools Mastra made (and makes) call through the
 * library: the tool's `abortSignal` cancels by the transport's mechanism (stdio:
 * `notifications/cancelled`; Streamable HTTP: the request's stream closed, the notification
 * POSTed first on a 2025-era server), late results are dropped, every call is recorded.
 *
 * Every option takes effect on Mastra's own tool calls, or is refused:
 * - `timeoutMs`: Mastra passes its own `timeout` (default 60_000 ms) on every call; the two
 *   combine as the tighter one (without `timeoutMs`, Mastra's is the idle timeout).
 * - `maxTotalTimeoutMs`, `resetTimeoutOnProgress`, `reason`, `forwardAbortReason`: every call
 *   (Mastra passes none of its own).
 * - `verifiers` (by tool name, as Mastra's server calls it: `generate_report`, not
 *   `reports_generate_report`), with `verifyDelayMs`, `verifyTimeoutMs`, `verifyWindowMs`,
 *   `verifyIntervalMs` and `awaitVerification`: a cancelled tool call is verified, and with
 *   `awaitVerification` Mastra's tool gets the verified outcome as an `isError` result (which it
 *   raises as its tool error, the text being what the model reads). Without `verifiers` those
 *   five are refused: Mastra's tools pass no verify read.
 * - `onRecord`, `observer`, `onAnomaly`, `maxRecords` and `maxTombstones` (each per server),
 *   `clock`, `timers`.
 *
 * Call it again after Mastra reconnected a server (a new client), with no options or the same
 * options object: the servers attached already keep their handle, new ones get the first call's
 * options; other options are refused (they would do nothing).
 *
 * @param mcp a Mastra `MCPClient` (`@mastra/mcp` 2.x).
 * @param options client-wide defaults, as for `attachCancellation` (durations in ms).
 * @throws {InvalidOptionError} `mcp` is not an `MCPClient`, this Mastra version keeps its server
 *   clients where this module does not look (tested with @mastra/mcp 2.0.0), an option is
 *   invalid or would do nothing, or the options differ from the first call's.
 */
export async function attachMastra(mcp: MastraMCPClientLike, options?: CancellationOptions): Promise<MastraAttached> {
  if (typeof mcp !== "object" || mcp === null || typeof mcp.listTools !== "function") {
    throw new InvalidOptionError("mcp", "attachMastra: mcp must be a Mastra MCPClient (from @mastra/mcp)");
  }
  if (firstOptions.has(mcp)) refuseOtherOptions(firstOptions.get(mcp), options, "attachMastra");
  else {
    // Before anything connects: a refused option starts no server.
    parseCancellationOptions(options, "attachMastra options");
    refuseIdle(options);
  }
  const chosen = firstOptions.has(mcp) ? firstOptions.get(mcp) : options;
  const listed = await mcp.listTools();
  const servers = new Map<string, CancellableClient<TransportLike, ClientLike>>();
  for (const [name, client] of mastraServerClients(mcp)) servers.set(name, attachWith(client, chosen, "attachMastra", "tighter"));
  warnUnmatchedVerifiers(chosen?.verifiers, listed, [...servers.keys()]);
  if (!firstOptions.has(mcp)) firstOptions.set(mcp, options);
  const unattached = configuredServers(mcp).filter((name) => !servers.has(name));
  for (const name of unattached) {
    warnOnce(
      `attachMastra: server ${JSON.stringify(name)} has no connected client (its connect failed or has not happened), ` +
        "so its tool calls do not go through mcp-cancellable (no timeouts, cancels or records of ours): " +
        "call attachMastra again once Mastra has connected it",
      "MCP_CANCELLABLE_UNPROTECTED",
    );
  }
  return {
    servers,
    unattached,
    records: () => [...servers.values()].flatMap((server) => server.records()),
  };
}

/**
 * A `verifiers` key that names no tool of the attached servers never runs: the call it was meant
 * for ends `unverified` without a word (an outside tester's: `srv_write`, the name Mastra's
 * `listTools()` gives the tool `write` of server `srv`). Warned once each (`MCP_CANCELLABLE_INVALID_OPTION`),
 * naming the MCP name where the key is Mastra's name for one. Mastra names each tool
 * `<server>_<tool>`; keys of another shape say nothing, and nothing is warned.
 */
function warnUnmatchedVerifiers(verifiers: unknown, listed: unknown, serverNames: readonly string[]): void {
  if (typeof verifiers !== "object" || verifiers === null || typeof listed !== "object" || listed === null) return;
  const mcpNames = new Map<string, string>(); // Mastra's name of a tool → its MCP name
  for (const key of Object.keys(listed)) {
    const server = serverNames.find((name) => key.startsWith(`${name}_`));
    if (server !== undefined) mcpNames.set(key, key.slice(server.length + 1));
  }
  const known = new Set(mcpNames.values());
  if (known.size === 0) return;
  for (const key of Object.keys(verifiers)) {
    if (known.has(key)) continue;
    const meant = mcpNames.get(key);
    warnOnce(
      `attachMastra options: verifiers.${key} names no tool of these servers, so it never runs (their tools: ${[...known]
        .slice(0, 10)
        .map((name) => JSON.stringify(name))
        .join(", ")}${known.size > 10 ? ", …" : ""})${
        meant === undefined
          ? ""
          : `: ${JSON.stringify(key)} is Mastra's name for the tool ${JSON.stringify(meant)}; key verifiers by the MCP name, verifiers: { ${JSON.stringify(meant)}: ... }`
      }`,
      "MCP_CANCELLABLE_INVALID_OPTION",
    );
  }
}

/**
 * The server names a Mastra `MCPClient` was made with: `MCPClient.serverConfigs` (the `servers`
 * option; @mastra/mcp 2.0.0 dist/index.js: `this.serverConfigs = args.servers`). Fallback: none
 * known (`[]`) when it is not an object: then no server is reported unattached.
 */
function configuredServers(mcp: object): string[] {
  const configs = (mcp as { serverConfigs?: unknown }).serverConfigs;
  return typeof configs === "object" && configs !== null ? Object.keys(configs) : [];
}

/**
 * Each server's SDK client inside a Mastra `MCPClient`: `MCPClient.mcpClientsById` (a `Map` of
 * server name to Mastra's `InternalMastraMCPClient`), whose `client` is the SDK `Client` its
 * tools call (@mastra/mcp 2.0.0 dist/index.js: `mcpClientsById = new Map()`, `this.client = new
 * Client(...)`; both declared `private` in its typings).
 * Fallback: none that keeps the library on the calls: refused, naming the version tested.
 */
function mastraServerClients(mcp: object): Array<[string, ClientLike]> {
  const refused = (what: string) =>
    new InvalidOptionError("mcp", `attachMastra: this @mastra/mcp keeps its server clients elsewhere (${what}); written against ${TESTED}`);
  const byId = (mcp as { mcpClientsById?: unknown }).mcpClientsById;
  if (!(byId instanceof Map)) throw refused("no MCPClient.mcpClientsById map");
  return [...byId].map(([name, internal]) => {
    const client = (internal as { client?: unknown } | null)?.client as Partial<ClientLike> | undefined;
    if (typeof client?.callTool !== "function" || typeof client.request !== "function") {
      throw refused(`server ${JSON.stringify(name)} has no SDK client at .client`);
    }
    return [String(name), client as ClientLike];
  });
}
