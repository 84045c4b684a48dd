/**
 * @module delivery/schedule
 * The published retry schedule (Standard Webhooks' example): attempt 1 at once, then retries 5 s, 5 min, 30 min,
 * 2 h, 5 h, 10 h, 14 h, 20 h and 24 h after the previous failure — 10 attempts over about 75.5 hours — each delay
 * with ±20 % jitter. A receiver's `Retry-After` (seconds or an HTTP date) raises the next delay to at least what it
 * asks, capped at 24 h so the schedule stays bounded. After the last attempt the delivery is dead-lettered.
 */

export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3600_000,
  5 * 3600_000,
  10 * 3600_000,
  14 * 3600_000,
  20 * 3600_000,
  24 * 3600_000,
];

export interface RetryPolicy {
  /** Delays before retry 1, 2, ...; the delivery is dead after `schedule.length + 1` attempts. */
  schedule: readonly number[];
  /** Each delay is multiplied by a factor in [1 - jitter, 1 + jitter]. */
  jitter: number;
  /** The most a `Retry-After` may push the next attempt out. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { schedule: DEFAULT_RETRY_SCHEDULE_MS, jitter: 0.2, maxRetryAfterMs: 24 * 3600_000 };

/** Total attempts the policy allows. */
export function maxAttempts(policy: RetryPolicy): number {
  return policy.schedule.length + 1;
}

/**
 * When to try again after failed attempt number `attempts` (1-based), or null when the schedule is exhausted.
 */
export function nextAttemptDelay(policy: RetryPolicy, attempts: number, retryAfterMs: number | null, random: () => number = Math.random): number | null {
  const base = policy.schedule[attempts - 1];
  if (base === undefined) return null;
  const jittered = Math.round(base * (1 - policy.jitter + 2 * policy.jitter * random()));
  if (retryAfterMs === null) return jittered;
  return Math.max(jittered, Math.min(retryAfterMs, policy.maxRetryAfterMs));
}

/** `Retry-After` as milliseconds from `now`: delta seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  if (value === null || value === undefined) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}
