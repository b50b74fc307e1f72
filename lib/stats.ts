/** Latency summaries for the benchmark and the scripted droid's bench step. */

export interface Summary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(0, Math.ceil(q * sorted.length) - 1);
  return sorted[Math.min(rank, sorted.length - 1)] ?? 0;
}

/** p50/p90/p99/min/max/mean of samples (milliseconds), rounded to microseconds. */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    count: sorted.length,
    p50: round(percentile(sorted, 0.5)),
    p90: round(percentile(sorted, 0.9)),
    p99: round(percentile(sorted, 0.99)),
    min: round(sorted[0] ?? 0),
    max: round(sorted.at(-1) ?? 0),
    mean: round(sorted.length ? sum / sorted.length : 0),
  };
}
