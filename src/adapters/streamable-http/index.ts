// `mcp-cancellable/streamable-http`: cancel one request over Streamable HTTP by closing its own
// response stream (rules 6, 24-30, 40).
export {
  DEFAULT_FLUSH_TIMEOUT_MS,
  DEFAULT_NOTIFICATION_TIMEOUT_MS,
  STREAM_CLOSE_PROTOCOL_VERSION,
  streamableHttpCancellation,
} from "./adapter.js";
export type { StreamableHttpAdapter, StreamableHttpCancellationOptions, StreamableHttpStats } from "./adapter.js";
export { cancellableFetch } from "./cancellable-fetch.js";
export type { CancellableFetchOptions } from "./cancellable-fetch.js";
export type { FetchLike } from "./fetch.js";
