// The stdio adapter's one body: its write queue over a transport whose child's stdin it is given
// how to read. `stdioCancellation` (the public entry, index.ts) reads the SDK transports' stdin;
// the CLI's own transport (the proxy's upstream, src/cli/stdio-transport.ts) hands its own.
import { ADAPTER_LAYERS, STARTS_SERVER } from "../../wire/port.js";
import type { LayeredAdapter, Port } from "../../wire/port.js";
import { notify, sendOf } from "../../wire/pipe.js";
import type { CancellationAdapter, TransportLike } from "../types.js";
import { StdioQueue } from "./queue.js";
import type { Stdin, StdioQueueOptions } from "./queue.js";

/**
 * The stdio adapter over `transport` (see `stdioCancellation`), with its write queue reading the
 * server's stdin through `stdin` (it changes when the transport is started again).
 * @internal
 */
export function stdioAdapter<T extends TransportLike>(
  transport: T,
  stdin: () => Stdin | undefined,
  options?: StdioQueueOptions,
): CancellationAdapter<T> {
  let queue: StdioQueue | undefined;
  const adapter: CancellationAdapter<T> & LayeredAdapter & { readonly [STARTS_SERVER]: true } = {
    transport,
    // Used only when the adapter is not in a pipeline (the wire always is): the plain notification.
    cancel: (request) => (queue !== undefined ? queue.cancel(request) : notify({ send: sendOf(transport) }, request)),
    [ADAPTER_LAYERS]: () => [(below: Port) => (queue = new StdioQueue(below, stdin, options))],
    [STARTS_SERVER]: true,
  };
  return adapter;
}
