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
