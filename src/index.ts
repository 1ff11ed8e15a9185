// Every public export by name: what a bot author uses. The root never imports a `node:` module;
// adapters are subpath exports (`mcp-cancellable/stdio`, `mcp-cancellable/streamable-http`), and
// what an adapter author needs (`CancellableCall`, its hooks, the wire's message types) is
// `mcp-cancellable/core` (src/core.ts). docs/api.md lists them all.
export { withCancellation } from "./client/with-cancellation.js";
// What withCancellation, cancellableTransport and the Agents server take as a transport, so an
// adapter chosen at run time (`url ? streamableHttpCancellation(...) : stdioCancellation(...)`)
// can be named and passed: also in `mcp-cancellable/core` for adapter authors.
export type { AdapterOrTransport, CancellationAdapter, TransportLike, TransportOf } from "./adapters/types.js";
export { attachCancellation } from "./client/attach.js";
export type {
  CallToolParams,
  CallToolResultOf,
  CancellableClient,
  ClientLike,
  RequestOptions,
  RequestParams,
  RequestResultOf,
  ResultSchema,
  ToolCallOptions,
  ToolResult,
} from "./client/facade.js";
export { DEFAULT_TASK_POLL_INTERVAL_MS, DEFAULT_TASK_WATCH_MS } from "./runner/tasks.js";
export type { TaskOptions } from "./runner/tasks.js";
export type {
  CallErrorInfo,
  CallOutcome,
  CallStatus,
  CancelDelivery,
  CancelInfo,
  CancelledOutcome,
  CancelledRunRecord,
  CancelMechanism,
  CancelTrigger,
  CancelUndelivered,
  FailedRunRecord,
  RunRecord,
  RunRecordBase,
  SucceededRunRecord,
  TaskCreatedRunRecord,
  TaskInfo,
  TaskStatus,
  VerifyRead,
} from "./types/record.js";
export { DEFAULT_JSON_LINES_MAX_CALLS, jsonLines } from "./ledger/json-lines.js";
export type { JsonLinesOptions } from "./ledger/json-lines.js";
export { McpCancellableError } from "./errors/McpCancellableError.js";
export type { McpCancellableErrorCode } from "./errors/McpCancellableError.js";
export { CallTimeoutError } from "./errors/CallTimeoutError.js";
export { CallCancelledError } from "./errors/CallCancelledError.js";
export { ConnectionClosedError } from "./errors/ConnectionClosedError.js";
export { InvalidOptionError } from "./errors/InvalidOptionError.js";
export { TaskRequestError } from "./errors/TaskRequestError.js";
// TaskRequestTimeout: the 0.1 name of TaskRequestTimeoutError, kept as a deprecated alias.
export { TaskRequestTimeout, TaskRequestTimeoutError } from "./errors/TaskRequestTimeoutError.js";
export {
  callErrorOf,
  isCallCancelledError,
  isCallTimeoutError,
  isConnectionClosedError,
  isInvalidOptionError,
  isMcpCancellableError,
} from "./errors/guards.js";
export type { CallError } from "./errors/guards.js";
export {
  DEFAULT_MAX_RECORDS,
  DEFAULT_MAX_TOMBSTONES,
  DEFAULT_MAX_TOTAL_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_VERIFY_INTERVAL_MS,
  DEFAULT_VERIFY_TIMEOUT_MS,
  DEFAULT_VERIFY_WINDOW_MS,
  MAX_REASON_LENGTH,
  MAX_TIMER_DELAY_MS,
} from "./options/defaults.js";
export type {
  Anomaly,
  AwaitVerification,
  CallObservation,
  CallObserver,
  CallOptions,
  CancellationOptions,
  ObservedCall,
  Progress,
  Timers,
  ToolVerifier,
  ToolVerifyContext,
  Verifiers,
  VerifyContext,
  VerifyFn,
  VerifyResult,
} from "./types/options.js";
