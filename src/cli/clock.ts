/**
 * @module cli/clock
 * The clock a `belay` process runs on: the system clock, offset by `BELAY_CLOCK_SKEW_MS` (milliseconds, may be
 * negative). The offset exists for the chaos scorecard (S7), which runs workers on hosts whose clocks are wrong;
 * leave it unset in production. Leases, wake-ups and deadlines are written with the writer's clock, so a skewed
 * process shifts them by its skew (see the scorecard's S7 notes for what that breaks and the skew that stays safe).
 */
import { systemClock, type Clock } from '../core/clock.js';

export function processClock(env: NodeJS.ProcessEnv): Clock {
  const raw = env.BELAY_CLOCK_SKEW_MS;
  if (raw === undefined || raw.trim() === '' || raw.trim() === '0') return systemClock;
  const skew = Number(raw);
  if (!Number.isSafeInteger(skew)) throw new Error(`BELAY_CLOCK_SKEW_MS must be an integer number of milliseconds, got "${raw}"`);
  return { now: () => Date.now() + skew, sleep: (ms, signal) => systemClock.sleep(ms, signal) };
}
