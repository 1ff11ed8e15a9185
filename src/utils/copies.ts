// Parts of the library made by another copy of it, loaded in the same process (its ES module and
// CommonJS builds, or two installed versions): each copy has its own symbols and tables, so one
// copy cannot see another's adapter layers or fetch reports, and must refuse them by name.

/**
 * True when `value` was made by another copy of the library: it carries one of `brand`'s kind (a
 * symbol with the same description) that is not this copy's own. Such an adapter's layers, or
 * such a fetch's reports, are invisible to this copy.
 */
export function fromAnotherCopy(value: unknown, brand: symbol): boolean {
  for (
    let o: unknown = value;
    (typeof o === "object" || typeof o === "function") && o !== null && o !== Object.prototype && o !== Function.prototype;
    o = Object.getPrototypeOf(o)
  ) {
    for (const key of Object.getOwnPropertySymbols(o)) if (key !== brand && key.description === brand.description) return true;
  }
  return false;
}

/** The message refusing a part made by another copy of the library (`what`, in `where`). */
export function anotherCopyMessage(what: string, where: string): string {
  return (
    `${where}: ${what} was made by another copy of mcp-cancellable (the package's ES module and CommonJS builds, or two ` +
    "installed versions, loaded in one process), whose parts this copy cannot see: take the adapter, its fetch and " +
    "withCancellation from one copy (one import style)"
  );
}

/** This copy of the library: an object no other copy has (the value of the marks below). */
export const THIS_COPY: object = Object.freeze({});

/**
 * The mark of a transport the library is in the path of: a handle's `mcp.transport` (the view
 * answers it) and a transport `attachCancellation` decorated in place. A registered symbol, which
 * every copy reads; its value says which copy (`THIS_COPY` or another's).
 */
export const CARRIER = Symbol.for("mcp-cancellable/carrier");

/** Which copy of the library is in the path of `transport`: `"this"`, `"another"`, or `undefined` for none. */
export function carrierOf(transport: object): "this" | "another" | undefined {
  const carrier = (transport as Record<symbol, unknown>)[CARRIER];
  return carrier === undefined ? undefined : carrier === THIS_COPY ? "this" : "another";
}
