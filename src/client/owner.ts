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

/** The clients this copy's `attachCancellation` carries (their own `callTool` and `request` are the library's). */
const attached = new WeakSet<object>();

/** Marks `client` as attached (`attachCancellation`). */
export function markAttached(client: object): void {
  attached.add(client);
}

/**
 * Refuses a client `attachCancellation` carries, where `where` would wrap it again: the attach's
 * own calls (the client's `callTool`, a framework's) would follow the new connection through a
 * second wire, which drops the other one's requests.
 * @throws {InvalidOptionError} (`client`).
 */
export function refuseAttached(client: object, where: string): void {
  if (!attached.has(client)) return;
  throw new InvalidOptionError(
    "client",
    `${where}: this client carries attachCancellation (its own callTool and request go through the library, and the ` +
      "attach follows a reconnect): connect it again with client.connect(transport) and keep using the attach's handle, " +
      "or use a new SDK Client here",
  );
}
