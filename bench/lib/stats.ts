/** Small measurement helpers. Times in milliseconds from `performance.now()`. */

export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Lets timers and I/O run between synchronous (SQLite) operations, the way a real step's I/O would. */
export const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Polls `done` every `everyMs` until it returns true or `timeoutMs` passes; returns whether it finished. */
export async function waitFor(done: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 10): Promise<boolean> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    if (await done()) return true;
    if (performance.now() > end) return false;
    await sleep(everyMs);
  }
}

/** Runs `fn` for 0..n-1 with at most `parallel` calls in flight; `lane` says which of them runs the call. */
export async function forEachLimit(n: number, parallel: number, fn: (i: number, lane: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(parallel, n) }, async (_, lane) => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      await fn(i, lane);
    }
  });
  await Promise.all(lanes);
}

/** Commit end times and latencies of one timed run; `rate()` counts the commits that ended inside the window. */
export class Recorder {
  readonly ends: number[] = [];
  readonly latencies: number[] = [];
  record(start: number, end: number): void {
    this.ends.push(end);
    this.latencies.push(end - start);
  }
  inWindow(from: number, to: number): { count: number; latencies: number[] } {
    const latencies: number[] = [];
    let count = 0;
    for (let i = 0; i < this.ends.length; i++) {
      const e = this.ends[i]!;
      if (e >= from && e <= to) {
        count++;
        latencies.push(this.latencies[i]!);
      }
    }
    return { count, latencies };
  }
}
