// The adapter interfaces are defined at the wire layer (wire/types.ts), which uses them; adapter
// code keeps importing them from here.
export type { CancellationAdapter, CancelRequest, TransportLike, WireHooks } from "../wire/types.js";
