/**
 * @module client/retry
 * Backoff with jitter and abortable sleeps.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included (default 5). */
  maxAttempts?: number;
  /** Delay before the first retry (default 200 ms); doubles each retry. */
  initialDelayMs?: number;
  /** Cap on one delay (default 10 s). A longer `Retry-After` from the server is still honoured. */
  maxDelayMs?: number;
  /** Random source in [0, 1) for the jitter (tests). */
  random?: () => number;
}

export interface ResolvedRetryPolicy {
  maxAttempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  random: () => number;
}

export function resolveRetryPolicy(p: RetryPolicy | undefined): ResolvedRetryPolicy {
  return {
    maxAttempts: Math.max(1, p?.maxAttempts ?? 5),
    initialDelayMs: Math.max(0, p?.initialDelayMs ?? 200),
    maxDelayMs: Math.max(0, p?.maxDelayMs ?? 10_000),
    random: p?.random ?? Math.random,
  };
}

/**
 * Delay before retry number `retry` (0-based): exponential, capped, with "equal jitter" (half fixed, half random) so
 * clients that failed together do not retry together. A server's `Retry-After` is a floor, plus up to 20% jitter.
 */
export function backoffDelay(policy: ResolvedRetryPolicy, retry: number, retryAfterMs?: number): number {
  const exp = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(retry, 30));
  const jittered = exp / 2 + (exp / 2) * policy.random();
  if (retryAfterMs === undefined) return jittered;
  return Math.max(jittered, retryAfterMs + retryAfterMs * 0.2 * policy.random());
}

/** Multiplies by a random factor in [1 - spread, 1 + spread]. */
export function jitter(ms: number, random: () => number, spread = 0.2): number {
  return ms * (1 - spread + 2 * spread * random());
}

export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the caller's abort reason, unchanged, as fetch does
      reject(abortReason(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- as above
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A signal that aborts when any of `signals` does (AbortSignal.any is not in every runtime Node 20 supports).
 * `dispose` removes the listeners.
 */
export function anySignal(signals: Array<AbortSignal | undefined>): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const cleanups: Array<() => void> = [];
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    const on = () => controller.abort(s.reason);
    s.addEventListener('abort', on, { once: true });
    cleanups.push(() => s.removeEventListener('abort', on));
  }
  return { signal: controller.signal, dispose: () => cleanups.forEach((c) => c()) };
}
