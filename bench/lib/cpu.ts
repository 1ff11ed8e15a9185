import type { Task } from "tinybench";

/**
 * tinybench task hooks that read `process.cpuUsage()` (user + system CPU of this process, all
 * threads: the GC's helpers included) around the measured phase of a task. CPU time is what a
 * call costs the machine; unlike wall time it hardly moves when other processes compete for
 * the cores, so it is the steadier figure on a shared runner.
 */
export function cpuMeter(): {
  hooks: { beforeAll(this: Task, mode?: "run" | "warmup"): void; afterAll(this: Task, mode?: "run" | "warmup"): void };
  /** CPU µs per iteration of the last measured phase. */
  perIterationUs(task: Task): number;
} {
  let start: NodeJS.CpuUsage | undefined;
  let spentUs = 0;
  return {
    hooks: {
      beforeAll(mode) {
        if (mode === "run") start = process.cpuUsage();
      },
      afterAll(mode) {
        if (mode !== "run" || start === undefined) return;
        const used = process.cpuUsage(start);
        spentUs = used.user + used.system;
      },
    },
    perIterationUs(task) {
      const result = task.result;
      const count = "latency" in result ? result.latency.samplesCount : 0;
      return count === 0 ? Number.NaN : spentUs / count;
    },
  };
}
