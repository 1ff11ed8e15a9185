import type { RunRecord } from "../types/record.js";
import type { CallObservation, CallObserver, ObservedCall } from "../types/options.js";
import { callHook, noop } from "../utils/hooks.js";

/**
 * Starts an observer's watch of one call (the `observer` option). Never throws: a throwing
 * observer watches nothing and the call goes on as if there were none.
 */
export function observe(observer: CallObserver, call: ObservedCall): CallObservation | undefined {
  try {
    const observation: unknown = observer.start(call);
    // An async `start` (a promise) watches nothing either; its rejection is swallowed too.
    if (typeof (observation as PromiseLike<unknown> | null | undefined)?.then === "function") {
      (observation as PromiseLike<unknown>).then(undefined, noop);
      return undefined;
    }
    return (observation as CallObservation | null | undefined) ?? undefined;
  } catch {
    return undefined;
  }
}

/** The params with the observation's `_meta` entries (trace context) added; the caller's object is not changed. */
export function withMeta<P extends { _meta?: Record<string, unknown> }>(params: P, observation: CallObservation | undefined): P {
  const meta = observation === undefined ? undefined : metaOf(observation);
  return meta === undefined ? params : { ...params, _meta: { ...params._meta, ...meta } };
}

/**
 * An observation's `meta`, copied (its getters read once), when it is a non-empty object the wire
 * can carry, without a `progressToken`; else `undefined`. A bad `meta` (`null`, no object, a
 * getter that throws, a value JSON cannot carry: a BigInt, a cycle) is ignored, as a throwing
 * observer is: it never changes how a call settles (an outside tester's: every call failed,
 * unsent, its error naming neither the observer nor `_meta`).
 */
function metaOf(observation: CallObservation): Record<string, unknown> | undefined {
  try {
    const meta: unknown = observation.meta;
    if (typeof meta !== "object" || meta === null || Array.isArray(meta)) return undefined;
    const copy: Record<string, unknown> = { ...meta };
    // The request's progress token is the library's and the caller's (rule 20): an observer's would
    // go out unchecked (an outside tester's: `{}` went, and the server refused the request).
    delete copy.progressToken;
    if (Object.keys(copy).length === 0) return undefined;
    JSON.stringify(copy); // throws for what the wire cannot carry
    return copy;
  } catch {
    return undefined;
  }
}

/** Hands the SDK's result to the observation; its errors (a throw, an async method's rejection) are swallowed. */
export function observeResult(observation: CallObservation | undefined, value: unknown): void {
  // An observer must not change how a call settles.
  const result = observation?.result;
  if (result !== undefined) callHook((v: unknown) => result.call(observation, v), value, noop);
}

/** Hands a run record revision to the observation; its errors (a throw, an async method's rejection) are swallowed. */
export function observeRecord(observation: CallObservation | undefined, record: RunRecord): void {
  const onRecord = observation?.record;
  if (onRecord !== undefined) callHook((r: RunRecord) => onRecord.call(observation, r), record, noop);
}
