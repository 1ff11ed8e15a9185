/**
 * One of the library's own task requests (`tasks/get`, `tasks/result`, `tasks/cancel`) got no
 * answer within its time, in ms. Its entry is gone: a late answer is dropped. Code
 * `TASK_REQUEST_TIMEOUT`. An unanswered `tasks/get` poll is polled again; a caller meets this
 * error only where a `tasks/result` went unanswered.
 *
 * Named `TaskRequestTimeout` in 0.1 (still exported under that name, deprecated).
 */
export class TaskRequestTimeoutError extends Error {
  override readonly name = "TaskRequestTimeoutError" as const;
  readonly code = "TASK_REQUEST_TIMEOUT" as const;
  /** The library's request that went unanswered, such as `"tasks/get"`. */
  readonly method: string;
  /** How long it waited, in ms. */
  readonly timeoutMs: number;

  constructor(method: string, timeoutMs: number) {
    super(`${method} got no answer within ${timeoutMs} ms`);
    this.method = method;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The 0.1 name of `TaskRequestTimeoutError`: the same class (`instanceof` holds for both; its
 * `name` is now `"TaskRequestTimeoutError"`).
 * @deprecated use TaskRequestTimeoutError
 */
export const TaskRequestTimeout = TaskRequestTimeoutError;
/**
 * The 0.1 name of `TaskRequestTimeoutError`.
 * @deprecated use TaskRequestTimeoutError
 */
export type TaskRequestTimeout = TaskRequestTimeoutError;
