/** Summary statistics of a latency sample, all in the sample's unit (ms unless said). */
export interface Summary {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Linear-interpolated quantile of an ascending-sorted array (q in 0..1). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const position = (sorted.length - 1) * q;
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  const a = sorted[lower]!;
  const b = sorted[upper]!;
  return a + (b - a) * (position - lower);
}

/** min, p50, p90, p99, max and mean of a sample. */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((x, y) => x - y);
  const sum = sorted.reduce((total, value) => total + value, 0);
  return {
    n: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length,
  };
}

/** Median of a small array. */
export function median(values: readonly number[]): number {
  return quantile(
    [...values].sort((x, y) => x - y),
    0.5,
  );
}

/** Rounds for the report: 3 significant decimals below 10, 2 below 100, 1 above. */
export function round(value: number): number {
  if (!Number.isFinite(value)) return value;
  const abs = Math.abs(value);
  const digits = abs < 1 ? 4 : abs < 10 ? 3 : abs < 100 ? 2 : 1;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** A summary with every field rounded for the report. */
export function rounded(summary: Summary): Summary {
  return {
    n: summary.n,
    min: round(summary.min),
    p50: round(summary.p50),
    p90: round(summary.p90),
    p99: round(summary.p99),
    max: round(summary.max),
    mean: round(summary.mean),
  };
}
