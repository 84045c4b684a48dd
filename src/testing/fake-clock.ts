import type { Clock } from '../core/clock.js';

/**
 * A clock tests move by hand. `sleep` resolves when `advance`/`set` passes its due time, so lease expiry, backoff
 * and deadlines are tested without real waiting.
 */
export class FakeClock implements Clock {
  private current: number;
  private sleepers: Array<{ at: number; resolve: () => void; reject: (e: unknown) => void; signal?: AbortSignal; onAbort?: () => void }> = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const entry: (typeof this.sleepers)[number] = { at: this.current + Math.max(0, ms), resolve, reject };
      if (signal) {
        entry.signal = signal;
        entry.onAbort = () => {
          this.sleepers = this.sleepers.filter((s) => s !== entry);
          reject(signal.reason as Error);
        };
        signal.addEventListener('abort', entry.onAbort, { once: true });
      }
      this.sleepers.push(entry);
      if (ms <= 0) this.flush();
    });
  }

  advance(ms: number): void {
    this.set(this.current + ms);
  }

  set(ms: number): void {
    this.current = ms;
    this.flush();
  }

  /** Number of pending sleeps (lets tests wait until a loop is idle). */
  get pendingSleeps(): number {
    return this.sleepers.length;
  }

  private flush(): void {
    const due = this.sleepers.filter((s) => s.at <= this.current);
    this.sleepers = this.sleepers.filter((s) => s.at > this.current);
    for (const s of due) {
      if (s.signal && s.onAbort) s.signal.removeEventListener('abort', s.onAbort);
      s.resolve();
    }
  }
}
