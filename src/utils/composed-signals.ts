// What Node 20 keeps of the signals `AbortSignal.any` composed: on each source signal, a `WeakRef`
// to every signal composed from it, for the source's life, even once the composed signal is
// collected (nodejs/node#55351; Node 22 removes each once its signal is collected). A transport's
// long-lived signal composed with a per-request signal for every request (the v2 SDK's Streamable
// HTTP transport does this for each POST and GET) grows by one entry a request, for the
// connection's life. The per-request fetch sweeps the collected entries off such a source when
// their count doubles: amortised O(1) a request, nothing on a runtime without the fault.

/** Node's own symbols for the two sides of a composition, or null where there are none. */
interface CompositionKeys {
  readonly sources: symbol;
  readonly dependants: symbol;
}

let keys: CompositionKeys | null | undefined;

/** A source is swept once its entries reach this many, then again at twice what a sweep left. */
const FIRST_SWEEP_AT = 64;

/** Each source signal: the count of entries at which it is swept next. */
const nextSweep = new WeakMap<object, number>();

function symbolNamed(target: object, name: string): symbol | undefined {
  return Object.getOwnPropertySymbols(target).find((symbol) => symbol.description === name);
}

/** Reads Node's symbols from one composition of a throwaway signal (once per process). */
function compositionKeys(): CompositionKeys | null {
  if (keys !== undefined) return keys;
  keys = null;
  try {
    if (typeof AbortSignal.any !== "function") return keys;
    const source = new AbortController().signal;
    const composed = AbortSignal.any([source]);
    const sources = symbolNamed(composed, "kSourceSignals");
    const dependants = symbolNamed(source, "kDependantSignals");
    if (sources !== undefined && dependants !== undefined) keys = { sources, dependants };
  } catch {
    // Another runtime's AbortSignal: nothing to sweep.
  }
  return keys;
}

/** Node keeps them in its own `SafeSet` of `SafeWeakRef`s, outside `Set`'s and `WeakRef`'s prototype chains. */
interface RefSet {
  readonly size: number;
  delete(entry: unknown): boolean;
  [Symbol.iterator](): Iterator<unknown>;
}

function isRefSet(value: unknown): value is RefSet {
  const set = value as RefSet | null | undefined;
  return (
    typeof set === "object" &&
    set !== null &&
    typeof set.size === "number" &&
    typeof set.delete === "function" &&
    typeof set[Symbol.iterator] === "function"
  );
}

/** What a `SafeWeakRef` still points to: `undefined` once collected (or for anything else). */
function target(ref: unknown): object | undefined {
  const deref = (ref as { deref?: unknown } | null)?.deref;
  return typeof deref === "function" ? (deref.call(ref) as object | undefined) : undefined;
}

function isRef(value: unknown): boolean {
  return typeof (value as { deref?: unknown } | null)?.deref === "function";
}

/**
 * `signal` was composed by `AbortSignal.any` (or is any signal: a plain one is left as it is):
 * on each of its sources, drops the entries of composed signals already collected, once they
 * have doubled since the last sweep. A no-op where the runtime keeps no such entries.
 * @internal
 */
export function sweepComposedSignals(signal: AbortSignal | null | undefined): void {
  if (signal === null || signal === undefined) return;
  const found = keys === undefined ? compositionKeys() : keys;
  if (found === null) return;
  const sources = (signal as unknown as Record<symbol, unknown>)[found.sources];
  if (!isRefSet(sources)) return;
  for (const ref of sources) {
    const source = target(ref);
    if (source === undefined) continue;
    const dependants = (source as Record<symbol, unknown>)[found.dependants];
    if (!isRefSet(dependants) || dependants.size < (nextSweep.get(source) ?? FIRST_SWEEP_AT)) continue;
    for (const entry of dependants) {
      if (isRef(entry) && target(entry) === undefined) dependants.delete(entry);
    }
    nextSweep.set(source, Math.max(FIRST_SWEEP_AT, dependants.size * 2));
  }
}

/** How many composed signals `signal` holds entries for (collected or not): 0 where the runtime keeps none. @internal */
export function composedEntries(signal: AbortSignal): number {
  const found = compositionKeys();
  if (found === null) return 0;
  const dependants = (signal as unknown as Record<symbol, unknown>)[found.dependants];
  return isRefSet(dependants) ? dependants.size : 0;
}
