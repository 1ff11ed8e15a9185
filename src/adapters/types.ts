// The adapter interfaces are defined at the wire layer (wire/types.ts), which uses them; adapter
// code keeps importing them from here.
export type { AdapterOrTransport, CancellationAdapter, CancelRequest, TransportLike, TransportOf, WireHooks } from "../wire/types.js";
