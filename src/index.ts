// Every public export by name. The root never imports a `node:` module; adapters that do are
// subpath exports (`mcp-cancellable/stdio`).
export { withCancellation } from "./client/with-cancellation.js";
export type {
  CallToolParams,
  CancellableClient,
  ClientLike,
  RequestOptions,
  RequestParams,
  ResultSchema,
  ToolCallOptions,
  ToolResult,
} from "./client/with-cancellation.js";
export { DEFAULT_TASK_POLL_INTERVAL_MS, DEFAULT_TASK_WATCH_MS } from "./client/tasks.js";
export type { TaskOptions } from "./client/tasks.js";
export { TaskRequestError, TaskRequestTimeout } from "./wire/tasks.js";
export { CancellableCall } from "./core/cancellable-call.js";
export type { CallHooks, CallInit, RequestId } from "./core/cancellable-call.js";
export { summarize } from "./core/record.js";
export type { CallOutcome, CallStatus, CancelMechanism, CancelTrigger, RunRecord, TaskInfo, TaskStatus } from "./core/record.js";
export { notificationCancellation } from "./adapters/notification.js";
export type { CancellationAdapter, CancelRequest, TransportLike, WireHooks } from "./adapters/types.js";
export { jsonLines } from "./ledger/json-lines.js";
export { McpCancellableError } from "./errors/McpCancellableError.js";
export type { McpCancellableErrorCode } from "./errors/McpCancellableError.js";
export { CallTimeoutError } from "./errors/CallTimeoutError.js";
export { CallCancelledError } from "./errors/CallCancelledError.js";
export { ConnectionClosedError } from "./errors/ConnectionClosedError.js";
export { InvalidOptionError } from "./errors/InvalidOptionError.js";
export {
  isCallCancelledError,
  isCallTimeoutError,
  isConnectionClosedError,
  isInvalidOptionError,
  isMcpCancellableError,
} from "./errors/guards.js";
export {
  DEFAULT_MAX_RECORDS,
  DEFAULT_MAX_TOMBSTONES,
  DEFAULT_MAX_TOTAL_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_VERIFY_TIMEOUT_MS,
  MAX_REASON_LENGTH,
  MAX_TIMER_DELAY_MS,
} from "./types/options.js";
export type {
  Anomaly,
  CallOptions,
  CancellationOptions,
  Progress,
  ResolvedCallOptions,
  Timers,
  VerifyContext,
  VerifyFn,
  VerifyResult,
} from "./types/options.js";
export type { CancelledNotification, Message } from "./wire/messages.js";
