import type { RunRecord } from "../types/record.js";
import type { CallObservation, CallObserver, ObservedCall } from "../types/options.js";

/**
 * Starts an observer's watch of one call (the `observer` option). Never throws: a throwing
 * observer watches nothing and the call goes on as if there were none.
 */
export function observe(observer: CallObserver, call: ObservedCall): CallObservation | undefined {
  try {
    return observer.start(call) ?? undefined;
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

/** Hands the SDK's result to the observation; its errors are swallowed. */
export function observeResult(observation: CallObservation | undefined, value: unknown): void {
  try {
    observation?.result?.(value);
  } catch {
    // An observer must not change how a call settles.
  }
}

/** Hands a run record revision to the observation; its errors are swallowed. */
export function observeRecord(observation: CallObservation | undefined, record: RunRecord): void {
  try {
    observation?.record?.(record);
  } catch {
    // An observer must not change how a call settles.
  }
}
