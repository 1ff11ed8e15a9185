// An answer the SDK's schema refuses. A server's response to a request of ours that is not
// JSON-RPC 2.0 as the SDK reads it (an error with no `message`: `{"id":1,"error":{"code":0}}`, a
// `result` that is no object, no `"jsonrpc":"2.0"`) never reached the library: the SDK's stdio
// transport threw on it and handed its schema's error to `onerror` (cases.md C02: a server's
// cancel path answering the cancelled request so; the SDK's validation error reached the user,
// and the record never learned that an answer came). Such a line now comes up as it is, marked
// with the SDK's error (`REFUSED_BY_SDK`): the wire takes it as a settled call's late answer
// (dropped, counted on its record: rule 8), and hands any other to `onerror` as the SDK did (a
// pending call keeps waiting for a well-formed answer: the SDK would not settle it by this one).
import { REFUSED_BY_SDK } from "../../wire/messages.js";

/**
 * `line`, a line the SDK's schema refused with `error`, as the response it names (an `id` that is
 * a string or a number, `result` or `error`, no `method`), marked with that error; `undefined`
 * for any other line (a request or notification of the server's, or no JSON object: the SDK's
 * refusal stands).
 * @internal
 */
export function refusedAnswer(line: string, error: unknown): object | undefined {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const { id, method } = message as { id?: unknown; method?: unknown };
  if (method !== undefined || (typeof id !== "string" && typeof id !== "number")) return undefined;
  if (!("error" in message) && !("result" in message)) return undefined;
  return Object.assign(message, { [REFUSED_BY_SDK]: error });
}
