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
/** This copy's handles' transports (`mcp.transport`, the view the SDK connects through): their mark. */
export const THIS_COPY_VIEW: object = Object.freeze({});

/**
 * The mark of a transport the library is in the path of: a handle's `mcp.transport` (the view
 * answers it: `THIS_COPY_VIEW`) and a transport `attachCancellation` decorated in place (an own
 * property: `THIS_COPY`). A registered symbol, which every copy reads.
 */
export const CARRIER = Symbol.for("mcp-cancellable/carrier");

/** This copy's marks on transports that take no property (not extensible). */
const marked = new WeakMap<object, object>();

/** Marks `transport` as decorated in place by this copy's `attachCancellation` (`carrierOf` says `"attached"`). */
export function markAttachedTransport(transport: object): void {
  if (Object.hasOwn(transport, CARRIER)) return;
  if (Object.isExtensible(transport)) Object.defineProperty(transport, CARRIER, { value: THIS_COPY, configurable: true });
  else marked.set(transport, THIS_COPY);
}

/**
 * Which library is in the path of `transport`: `"view"` (a handle's `mcp.transport` of this copy),
 * `"attached"` (a transport this copy's `attachCancellation` decorated), `"another"` (another
 * copy's either), or `undefined` for none.
 */
export function carrierOf(transport: object): "view" | "attached" | "another" | undefined {
  const carrier = (transport as Record<symbol, unknown>)[CARRIER] ?? marked.get(transport);
  if (carrier === undefined) return undefined;
  return carrier === THIS_COPY_VIEW ? "view" : carrier === THIS_COPY ? "attached" : "another";
}
