import { z } from "zod";

/**
 * The few JSON-RPC shapes the library inspects, validated with zod before use. Everything else
 * passes through untouched to the SDK, which validates it as it always does.
 */

/** A request id: a string or an integer, never null (rule 1). */
export const requestIdSchema = z.union([z.string(), z.number().int()]);

/** A progress token: a string or an integer (rule 20). */
export const progressTokenSchema = z.union([z.string(), z.number().int()]);

/** `notifications/progress` params (rule 21). */
export const progressParamsSchema = z.looseObject({
  progressToken: progressTokenSchema,
  progress: z.number().finite(),
  total: z.number().finite().optional(),
  message: z.string().optional(),
});

/** `notifications/cancelled` params (rule 2). */
export const cancelledParamsSchema = z.looseObject({
  requestId: requestIdSchema,
  reason: z.string().optional(),
});

/**
 * A JSON-RPC response the SDK will accept: `jsonrpc: "2.0"`, an id, and exactly one of a result
 * object or an error `{code, message}`, and no other member (the v1 SDK's envelopes are strict:
 * 1.32.2 types.js:135, :175; a response with one more member never reaches its handler). Anything
 * else never settles the SDK's request, so it must not settle ours either: the call keeps its
 * timers, and an SDK that does accept it settles the call through its own answer.
 */
export const responseSchema = z.union([
  z.strictObject({ jsonrpc: z.literal("2.0"), id: requestIdSchema, result: z.looseObject({}) }),
  z.strictObject({ jsonrpc: z.literal("2.0"), id: requestIdSchema, error: z.looseObject({ code: z.number().int(), message: z.string() }) }),
]);

/**
 * True when `id` is a request id `requestIdSchema` accepts (a string or a safe integer): the
 * same verdict without a zod parse, for the per-response path.
 */
export function isRequestId(id: unknown): id is string | number {
  return typeof id === "string" || Number.isSafeInteger(id);
}

/**
 * True when `message` cannot be serialised as JSON (a BigInt, a cycle, a `toJSON` or a getter that
 * throws): what a refused send is then told by (`WireFact` `unsendable`), read only on that path.
 */
export function unserialisable(message: unknown): boolean {
  try {
    JSON.stringify(message);
    return false;
  } catch {
    return true;
  }
}

/**
 * The id (or progress token) the SDKs would match a string to: both look a response up by
 * `Number(response.id)` and progress by `Number(progressToken)`, so `"10"` answers request 10.
 * Tried only when the value as it came matches nothing.
 */
export function asSdkMatches(value: string | number): string | number {
  if (typeof value !== "string") return value;
  const number = Number(value);
  return Number.isSafeInteger(number) ? number : value;
}

/**
 * What a response with id `given` answers, as the wire matches it (`Wire#onResponse`, after the
 * SDKs): `find` of the id as it came, else of the number an SDK reads in a string ("1" answers
 * request 1, {@link asSdkMatches}). For the layers below the wire that drop a cancel whose request
 * was answered first (rule 7). `undefined` when nothing matches, or `given` is no request id.
 */
export function findAnswered<V>(given: unknown, find: (id: string | number) => V | undefined): V | undefined {
  if (!isRequestId(given)) return undefined;
  const found = find(given);
  if (found !== undefined || typeof given !== "string") return found;
  const id = asSdkMatches(given);
  return id === given ? undefined : find(id);
}

/**
 * True when `message` certainly passes `responseSchema`: the shape every well-formed response
 * has, checked with `typeof` alone (no copy, unlike a zod parse). False means "not sure", never
 * "malformed": the caller then asks `responseSchema`, which stays the judge of every odd shape.
 */
export function isPlainResponse(message: { jsonrpc?: unknown; id?: unknown; result?: unknown; error?: unknown }): boolean {
  if (message.jsonrpc !== "2.0" || !isRequestId(message.id) || !threeMembers(message)) return false;
  const { result, error } = message;
  if (error === undefined) return isRecord(result);
  if (result !== undefined || !isRecord(error)) return false;
  const { code, message: text } = error as { code?: unknown; message?: unknown };
  return Number.isSafeInteger(code) && typeof text === "string";
}

/** Exactly three own enumerable members (`jsonrpc`, `id`, and `result` or `error`), counted without allocating. */
function threeMembers(message: object): boolean {
  let count = 0;
  for (const key in message) if (Object.hasOwn(message, key) && ++count > 3) return false;
  return count === 3;
}

function isRecord(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The key under which the facade marks its own requests' params with a call number. A symbol:
 * the SDKs' object spreads copy it, and `JSON.stringify` (stdio, HTTP) leaves it off the wire,
 * so nothing has to be stripped.
 */
export const CALL_MARKER: unique symbol = Symbol.for("mcp-cancellable/call");

/**
 * The key under which a response the SDK's stdio transport refused by its schema comes up, with
 * the error it refused it with (src/adapters/stdio/refused-answers.ts): the wire takes it only as
 * a settled call's late answer; any other goes to `onerror`, as the SDK sent it.
 */
export const REFUSED_BY_SDK: unique symbol = Symbol("mcp-cancellable/refused-by-sdk");

/** The JSON-RPC messages the wire decorator handles, in the loose shape both SDK lines share. */
export interface Message {
  jsonrpc: "2.0";
  id?: string | number | null;
  method?: string;
  params?: { _meta?: Record<string, unknown>; [CALL_MARKER]?: number; [key: string]: unknown };
  result?: unknown;
  error?: unknown;
  [REFUSED_BY_SDK]?: unknown;
}

/** The `notifications/cancelled` message for one request (rule 2). */
export interface CancelledNotification {
  jsonrpc: "2.0";
  method: "notifications/cancelled";
  params: { requestId: string | number; reason: string };
}
