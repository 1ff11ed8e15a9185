// Loads the TypeScript worker of the HTTP bench's server through tsx (workers do not inherit the
// main thread's --import tsx).
import { register } from "tsx/esm/api";

register();
await import("./http-harness-worker.ts");
