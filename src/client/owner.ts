// Which copy of the library carries a client. A program that loads the package twice (its ES
// module and CommonJS builds, or two installed versions) has two of everything: wires, handles,
// the tables of calls not sent yet. A client one copy carries must not be taken by the other:
// each would drop the other's requests as its own settled calls (an outside tester's finding:
// after a second copy's attachCancellation, no request reached the server). The mark lives on
// the client under a registered symbol, which every copy reads.
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { THIS_COPY, anotherCopyMessage } from "../utils/copies.js";

const OWNER = Symbol.for("mcp-cancellable/owner");

/**
 * Marks `client` as carried by this copy of the library.
 * @throws {InvalidOptionError} (`client`) another copy carries it already.
 */
export function claimClient(client: object, where: string): void {
  const owner = (client as Record<symbol, unknown>)[OWNER];
  if (owner === THIS_COPY) return;
  if (owner !== undefined) {
    throw new InvalidOptionError("client", anotherCopyMessage("the library on this client", where));
  }
  // Not enumerable: never copied, never serialised. A frozen client cannot be marked (nor wrapped).
  if (Object.isExtensible(client)) Object.defineProperty(client, OWNER, { value: THIS_COPY, configurable: true });
}
