/**
 * Watches the test process for what must never happen while the library runs: an unhandled
 * rejection, an uncaught exception, a MaxListenersExceededWarning. `start` in `beforeAll`, `stop`
 * in `afterAll`, then assert `seen()` is empty. (Vitest reports the first two as well; this makes
 * the assertion explicit and catches the warning, which Vitest only prints.)
 */
export function watchProcess() {
  const seen: string[] = [];
  const onRejection = (reason: unknown) => seen.push(`unhandledRejection: ${describe(reason)}`);
  const onException = (error: unknown) => seen.push(`uncaughtException: ${describe(error)}`);
  const onWarning = (warning: Error) => {
    if (warning.name === "MaxListenersExceededWarning") seen.push(`${warning.name}: ${warning.message}`);
  };
  return {
    start() {
      process.on("unhandledRejection", onRejection);
      process.on("uncaughtException", onException);
      process.on("warning", onWarning);
    },
    stop() {
      process.off("unhandledRejection", onRejection);
      process.off("uncaughtException", onException);
      process.off("warning", onWarning);
    },
    seen: () => [...seen],
  };
}

function describe(value: unknown): string {
  return value instanceof Error ? `${value.name}: ${value.message.slice(0, 300)}` : String(value).slice(0, 300);
}

/** Collects the process's warnings while `run` runs (the listener removed after it, even when it throws). */
export async function withWarnings<T>(run: (warnings: Error[]) => Promise<T>): Promise<T> {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on("warning", onWarning);
  try {
    return await run(warnings);
  } finally {
    process.off("warning", onWarning);
  }
}

/** Resolves after `ms` of real time. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** How a promise settled and when (ms of `performance.now()` since `since`); never rejects. */
export function timed<P extends Promise<unknown>>(promise: P, since = performance.now()) {
  return (promise as Promise<Awaited<P>>).then(
    (value) => ({ status: "fulfilled" as const, value, error: undefined, at: performance.now() - since }),
    (error: unknown) => ({ status: "rejected" as const, value: undefined, error, at: performance.now() - since }),
  );
}
