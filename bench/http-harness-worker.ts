// The worker thread that runs the HTTP cancel-latency bench's server (bench/http-harness.ts).
import { parentPort } from "node:worker_threads";
import { serveHarness } from "./http-harness.js";

const port = parentPort!;
const harness = await serveHarness({ push: (event) => port.postMessage({ type: "event", event }) });
port.postMessage({ type: "ready", url: harness.url });
port.on("message", (message: unknown) => {
  if (message !== "stop") return;
  void harness.stop().then(() => port.postMessage({ type: "stopped" }));
});
