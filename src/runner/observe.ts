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
  const meta = observation?.meta;
  if (meta === undefined || Object.keys(meta).length === 0) return params;
  return { ...params, _meta: { ...params._meta, ...meta } };
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
