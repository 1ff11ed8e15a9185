// The verified outcome of a cancelled tool call, as a framework hands it to its model: every entry
// point (the SDK-client shells, the Agents server, the AI SDK transport) waits for a cancelled
// call's verification when asked (`awaitVerification`) and answers the tool call with what is
// known, so the model is not told "please try again" about a side effect that may have happened.
import { CLIENT_CLOSED_REASON } from "../core/cancellable-call.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import type { McpCancellableError } from "../errors/McpCancellableError.js";
import type { RunRecord } from "../types/record.js";
import type { AwaitVerification } from "../types/options.js";
import { onAbort } from "../utils/abort-link.js";
import { noop, textOf } from "../utils/hooks.js";
import { warnOnce } from "../options/warnings.js";
import { received } from "../options/schemas.js";
import { REFUSED_HOOK_VALUE } from "./runner.js";
import type { HookRefusal } from "./runner.js";

/** The caller's signal(s) of a call, as its options give them. */
type CallerSignal = AbortSignal | readonly AbortSignal[] | undefined;

/** See `AwaitVerification` in src/types/options.ts (an option of every entry point, and per call where it takes per-call options). */
export type { AwaitVerification };

/** What an `awaitVerification` value must be (absent, or one of these). */
const AWAIT_VERIFICATION_RULE = '"awaitVerification" must be true, false or a function (record) => string';

const isAwaitVerification = (value: unknown): value is AwaitVerification | undefined =>
  value === undefined || typeof value === "boolean" || typeof value === "function";

/** Checks an `awaitVerification` value. @throws {InvalidOptionError} naming it and where. */
export function checkAwaitVerification(value: unknown, where: string): AwaitVerification | undefined {
  if (isAwaitVerification(value)) return value;
  throw new InvalidOptionError("awaitVerification", `${where}: ${AWAIT_VERIFICATION_RULE}; received ${received(value)}`);
}

/**
 * Takes `awaitVerification` out of what a `callOptions` hook returned (`callHook`,
 * src/integrations/call-options.ts): the rest are the call's options. A value that is not `true`, `false` or a function refuses the call as any
 * invalid option from the hook does (`... returned an invalid option, so tools/call "x" was not
 * sent: "awaitVerification" must be ...`, nothing sent, warned once, recorded `failed`,
 * `not-sent`): an outside tester's, the OpenAI Agents server sent the call and checked it only
 * once the call had failed, and the AI SDK transport refused it with no warning and no record.
 */
export function splitAwaitVerification<T extends object>(
  hooked: (T & { awaitVerification?: unknown }) | undefined,
): { options: T | undefined; awaitVerification: AwaitVerification | undefined } {
  if (hooked === undefined || REFUSED_HOOK_VALUE in hooked) return { options: hooked, awaitVerification: undefined };
  const { awaitVerification, ...options } = hooked;
  if (isAwaitVerification(awaitVerification)) return { options: options as T, awaitVerification };
  return {
    options: {
      [REFUSED_HOOK_VALUE]: {
        option: "awaitVerification",
        invalid: `${AWAIT_VERIFICATION_RULE}; received ${received(awaitVerification)}`,
      } satisfies HookRefusal,
    } as unknown as T,
    awaitVerification: undefined,
  };
}

const TRIGGER_WORDS: Record<string, string> = {
  timeout: "timed out",
  "max-total-timeout": "reached its maximum total time",
  aborted: "was aborted",
  "connection-closed": "lost its connection",
};

/** The library's text for a verified (or failed-to-verify) cancelled call, or one learned never sent after its settle. */
export function verifiedOutcomeText(record: RunRecord): string {
  const tool = record.name === null ? `The ${record.method} request` : `The tool call ${JSON.stringify(record.name)}`;
  // The client's own close() is no lost connection (an outside tester's: it said "lost its connection").
  const trigger =
    record.cancel?.trigger === "connection-closed" && record.cancel.reason === CLIENT_CLOSED_REASON
      ? "its connection was closed by the client"
      : (TRIGGER_WORDS[record.cancel?.trigger ?? "aborted"] ?? "was cancelled");
  const head = `${tool} was cancelled after ${(record.elapsedMs / 1_000).toFixed(1)} s (${trigger})`;
  const summary = record.verification?.summary ?? "";
  switch (record.outcome) {
    case "not-sent":
      // Learned after the settle (its request body never written): no verification ran.
      return `${head} before the server received it: its effect was not applied, and it may be called again.`;
    case "verified-applied":
      return `${head}; a check afterwards found that its effect was applied (${summary}). Do not call it again to repeat it.`;
    case "late-result-discarded":
    case "task-completed-anyway":
      // A check that found nothing, overruled by the server's own word that the work was done (a
      // result, or its task completed, after or while the check read: see SettledRecord.late).
      // An outside tester's: the model read "could not tell (not applied as of 0.0 s)".
      if (record.verification?.reads.at(-1)?.found === "not-applied") {
        return `${head}; the server then answered that it had done the work (its result was discarded), though a check had found its effect not applied (${summary}): its effect was applied. Do not call it again to repeat it.`;
      }
      return `${head}; the check afterwards could not tell whether its effect was applied (${ownVerifyError(record.verification?.error) ?? summary}). Check before calling it again.`;
    case "verified-not-applied":
      // "As of" its reads only: a server that did not stop the work may still apply it later.
      return `${head}; a check afterwards found that its effect was not applied (${summary}), though a server that goes on with the work could still apply it: check again before calling it again.`;
    default:
      return `${head}; the check afterwards could not tell whether its effect was applied (${ownVerifyError(record.verification?.error) ?? summary}). Check before calling it again.`;
  }
}

/**
 * A failed read's error as the model may read it: the library's own words only (`verify did not
 * answer within 5000 ms`, `verify must answer "applied" or "not-applied", got a string`); not what
 * the `verify` function threw or answered, which may carry what a server said (a connection string
 * with its password): the summary (`read failed at 0.2 s`) stands for it, and the record keeps the
 * text. Only the fixed words are taken from the text, so a `verify` that throws them itself adds
 * nothing of its own either.
 */
function ownVerifyError(error: string | null | undefined): string | undefined {
  return error == null ? undefined : OWN_VERIFY_ERROR.exec(error)?.[0];
}

const OWN_VERIFY_ERROR =
  /^verify (did not answer within \d+ ms|must answer "applied" or "not-applied", got (a string|a number|a boolean|a bigint|a symbol|a function|an object|an array|undefined|null))/;

/**
 * For a cancelled call whose `verify` read runs: waits for it and returns the text to answer the
 * tool call with; `undefined` when there is nothing to wait for (no `verify`, not a cancel, the
 * request never left), `awaitVerification` is off, or the caller's `signal` aborts while it waits
 * (a caller's own abort is never waited for: the run is being stopped; the verification goes on
 * and its record is revised as ever). Never rejects: a text function that throws, or answers
 * anything but a string (an async function included: it is not waited for), falls back to the
 * library's text, and is warned about once per distinct message (`MCP_CANCELLABLE_HOOK_THREW`).
 */
export async function awaitVerifiedText(
  error: unknown,
  wait: AwaitVerification | undefined,
  signal?: CallerSignal,
): Promise<string | undefined> {
  if (wait === undefined || wait === false || !isCancelled(error) || error.record.cancel?.trigger === "aborted") return undefined;
  // A caller's signal that timed out (a framework's own timeout: LangChain's `AbortSignal.timeout`)
  // is a limit, not the caller's abort: the verification is waited for, and only a signal still
  // live can end the wait (an outside tester's finding: the model read "outcome unverified").
  const record = await untilAborted(error.verification, timedOutBySignal(error) ? live(signal) : signal);
  // A request learned never sent after the settle has no verification, and a fact to tell.
  if (record === undefined || (record.verification === null && record.outcome !== "not-sent")) return undefined;
  if (typeof wait === "function") {
    try {
      const text: unknown = wait(record);
      if (typeof text === "string") return text;
      // An async function (its type says a string): not waited for, and its rejection never
      // unhandled (an outside tester's: the process died on it); the library's text stands.
      const thenable = typeof (text as PromiseLike<unknown> | null | undefined)?.then === "function";
      if (thenable) (text as PromiseLike<unknown>).then(undefined, noop);
      // Said, not silent (an outside tester's: a JavaScript bot author got no hint).
      warnOnce(
        `awaitVerification's text function answered ${thenable ? "a promise (it must answer a string at once; it is not waited for)" : `${received(text)}, not a string`}, so the library's own text was used`,
        "MCP_CANCELLABLE_HOOK_THREW",
      );
    } catch (error) {
      // The developer's text function failed: the library's text says the same facts.
      warnOnce(
        `awaitVerification's text function threw, so the library's own text was used: ${textOf(error)}`,
        "MCP_CANCELLABLE_HOOK_THREW",
      );
    }
  }
  return verifiedOutcomeText(record);
}

/** The tool result a verified cancelled call answers with: its text, `isError: true` (the one way MCP tells a model that a tool failed). */
export function verifiedToolResult(text: string): { content: Array<{ type: "text"; text: string }>; isError: true } {
  return { content: [{ type: "text", text }], isError: true };
}

/**
 * A tool call's outcome, answered with the verified outcome's tool result when `wait` asks for it
 * and the call was cancelled by a limit with a verification (see `awaitVerifiedText`); otherwise
 * as it was. The outcome itself when there is nothing to wait for.
 */
export function answerVerified<R>(outcome: Promise<R>, wait: AwaitVerification | undefined, signal?: CallerSignal): Promise<R> {
  if (wait === undefined || wait === false) return outcome;
  return outcome.catch(async (error: unknown) => {
    const text = await awaitVerifiedText(error, wait, signal);
    if (text === undefined) throw error;
    return verifiedToolResult(text) as R;
  });
}

/** The call timed out because the caller's signal did (its `limitName` is `signal`). */
function timedOutBySignal(error: McpCancellableError): boolean {
  return error.record.cancel?.trigger === "timeout" && (error as { limitName?: unknown }).limitName === "signal";
}

/** The signals of `signal` that have not aborted (the timed-out one has). */
function live(signal: CallerSignal): CallerSignal {
  if (signal === undefined) return undefined;
  const signals: readonly AbortSignal[] = Array.isArray(signal) ? signal : [signal as AbortSignal];
  const left = signals.filter((s) => !s.aborted);
  return left.length === 0 ? undefined : left;
}

function isCancelled(error: unknown): error is McpCancellableError {
  if (!(error instanceof Error) || !("record" in error) || !("verification" in error)) return false;
  const { record, verification } = error as Partial<McpCancellableError>;
  return record?.status === "cancelled" && record.outcome !== "not-sent" && verification instanceof Promise;
}

/** `promise`'s value, or `undefined` as soon as one of `signal` aborts (at once if one has); its listeners go either way. */
function untilAborted<T>(promise: Promise<T>, signal: CallerSignal): Promise<T | undefined> {
  if (signal === undefined) return promise;
  const signals: readonly AbortSignal[] = Array.isArray(signal) ? signal : [signal as AbortSignal];
  if (signals.some((s) => s.aborted)) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve) => {
    let offs: Array<() => void> = [];
    const done = (value: T | undefined): void => {
      for (const off of offs) off();
      offs = [];
      resolve(value);
    };
    offs = signals.map((s) => onAbort(s, () => done(undefined)));
    promise.then(done, () => done(undefined));
  });
}
