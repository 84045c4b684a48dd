import type { Clock } from '../../core/clock.js';

/**
 * A token bucket per principal, per gateway process: `burst` requests at once, refilled at `perSecond`.
 * In-memory on purpose: it protects this process; a shared limit would need a shared store round trip per request.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  /** Returns 0 when allowed, else the milliseconds until a token is available. */
  take(key: string): number {
    const now = this.clock.now();
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      this.buckets.set(key, b);
      if (this.buckets.size > 100_000) this.buckets.clear();
      return 0;
    }
    this.buckets.set(key, b);
    return Math.ceil(((1 - b.tokens) / this.perSecond) * 1000);
  }
}
