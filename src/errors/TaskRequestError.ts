/**
 * A JSON-RPC error from the server for one of the library's own task requests (`tasks/get`,
 * `tasks/result`, `tasks/cancel`), or a task that ended `failed` or `cancelled` by the server
 * (`method` is then `"tools/call"`). `code` is the server's JSON-RPC error code (`null` when it
 * gave none, or for a task the server cancelled), with its `message` and `data`.
 */
export class TaskRequestError extends Error {
  override readonly name = "TaskRequestError" as const;
  /** The request the error answered (`"tasks/get"`, `"tasks/result"`, `"tasks/cancel"`), or `"tools/call"` for a failed task. */
  readonly method: string;
  /** The server's JSON-RPC error code, or `null`. */
  readonly code: number | null;
  /** The JSON-RPC error's `data`, as the server sent it. */
  readonly data?: unknown;

  constructor(method: string, code: number | null, message: string, data?: unknown) {
    super(message);
    this.method = method;
    this.code = code;
    this.data = data;
  }
}
