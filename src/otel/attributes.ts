/**
 * Attribute, event and metric names. The MCP semantic conventions' names (OpenTelemetry GenAI
 * conventions, `docs/gen-ai/mcp.md`, status Development) are defined here rather than imported:
 * the incubating constants of `@opentelemetry/semantic-conventions` are deprecated in favour of
 * the GenAI repository, and this module depends on nothing of OpenTelemetry but the API.
 */

// --- MCP semantic conventions -----------------------------------------------------------------
export const ATTR_MCP_METHOD_NAME = "mcp.method.name";
export const ATTR_MCP_PROTOCOL_VERSION = "mcp.protocol.version";
export const ATTR_MCP_RESOURCE_URI = "mcp.resource.uri";
export const ATTR_MCP_SESSION_ID = "mcp.session.id";
export const ATTR_JSONRPC_REQUEST_ID = "jsonrpc.request.id";
export const ATTR_RPC_RESPONSE_STATUS_CODE = "rpc.response.status_code";
export const ATTR_ERROR_TYPE = "error.type";
export const ATTR_GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
export const ATTR_GEN_AI_TOOL_NAME = "gen_ai.tool.name";
export const ATTR_GEN_AI_PROMPT_NAME = "gen_ai.prompt.name";
export const ATTR_GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments";
export const ATTR_GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result";
export const ATTR_NETWORK_TRANSPORT = "network.transport";
export const ATTR_NETWORK_PROTOCOL_NAME = "network.protocol.name";
export const ATTR_SERVER_ADDRESS = "server.address";
export const ATTR_SERVER_PORT = "server.port";

/** `gen_ai.operation.name` of a tool call. */
export const GEN_AI_OPERATION_EXECUTE_TOOL = "execute_tool";
/** `error.type` of a `tools/call` result with `isError: true`. */
export const ERROR_TYPE_TOOL_ERROR = "tool_error";
/** `error.type` when nothing better is known (the conventions' fallback). */
export const ERROR_TYPE_OTHER = "_OTHER";

/** The client operation duration histogram, in seconds. */
export const METRIC_MCP_CLIENT_OPERATION_DURATION = "mcp.client.operation.duration";
/** The bucket boundaries the conventions ask for, in seconds. */
export const MCP_DURATION_BUCKETS_S = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

// --- ours: what the conventions do not define (cancels, late messages, verification) -----------
/** The call's status: `succeeded`, `failed` or `cancelled`. */
export const ATTR_CALL_STATUS = "mcp_cancellable.call.status";
/** The call's outcome: `completed`, `error`, `not-sent`, `unverified`, `late-result-discarded`, `verified-applied`, `verified-not-applied`, `verify-failed`. */
export const ATTR_CALL_OUTCOME = "mcp_cancellable.call.outcome";
/** What ended a cancelled call: `timeout`, `max-total-timeout`, `aborted`, `connection-closed`. */
export const ATTR_CANCEL_TRIGGER = "mcp_cancellable.cancel.trigger";
/** How the cancel went on the wire: `notification`, `stream-close`, `notification+stream-close`, `none`. */
export const ATTR_CANCEL_MECHANISM = "mcp_cancellable.cancel.mechanism";
/** The reason sent with the cancel. */
export const ATTR_CANCEL_REASON = "mcp_cancellable.cancel.reason";
/** Progress notifications received while the call was live. */
export const ATTR_PROGRESS_COUNT = "mcp_cancellable.progress.count";
/** The kind of a discarded late message: `result`, `error`, `progress`. */
export const ATTR_LATE_KIND = "mcp_cancellable.late.kind";
/** Late results, errors and progress discarded so far for the call. */
export const ATTR_LATE_RESULTS = "mcp_cancellable.late.results";
export const ATTR_LATE_ERRORS = "mcp_cancellable.late.errors";
export const ATTR_LATE_PROGRESS = "mcp_cancellable.late.progress";
/** The record's revision that a follow-up span reports (1 and up). */
export const ATTR_RECORD_REVISION = "mcp_cancellable.record.revision";

/** Event on the call span: the cancel (trigger, mechanism, reason). */
export const EVENT_CANCEL = "mcp_cancellable.cancel";
/** Event on a follow-up span: one discarded late message. */
export const EVENT_LATE_MESSAGE = "mcp_cancellable.late_message";
/** Event on a follow-up span: a verification's answer. */
export const EVENT_VERIFICATION = "mcp_cancellable.verification";
/** Event on a `task` follow-up span: what became of the task behind a cancelled call. */
export const EVENT_TASK = "mcp_cancellable.task";
/** Event on a `cancel` follow-up span: the adapter learned how the cancel was delivered. */
export const EVENT_CANCEL_DELIVERY = "mcp_cancellable.cancel_delivery";
/** The task's id and its last status seen (task-augmented calls). */
export const ATTR_TASK_ID = "mcp_cancellable.task.id";
export const ATTR_TASK_STATUS = "mcp_cancellable.task.status";
/** The part of a cancel that did not reach the server: its mechanism and why. */
export const ATTR_CANCEL_UNDELIVERED = "mcp_cancellable.cancel.undelivered";

/** `error.type` of each cancel trigger. */
export const CANCEL_ERROR_TYPE = {
  timeout: "timeout",
  "max-total-timeout": "max_total_timeout",
  aborted: "cancelled",
  "connection-closed": "connection_closed",
} as const;

/** `error.type` of a follow-up span whose verification failed (threw, timed out, answered nonsense). */
export const ERROR_TYPE_VERIFY_FAILED = "verify_failed";
