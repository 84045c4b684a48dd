import type { Context, MiddlewareHandler } from 'hono';
import { BelayError } from '../../core/errors.js';
import type { Principal } from '../../service/task-service.js';
import type { Authenticator } from './auth.js';
import type { RateLimiter } from './rate-limit.js';

export type BelayEnv = { Variables: { who: Principal } };

/** Authenticates every request, then applies the per-principal rate limit (429 + Retry-After). */
export function authenticate(auth: Authenticator, limiter: RateLimiter | null): MiddlewareHandler<BelayEnv> {
  return async (c, next) => {
    const who = await auth.authenticate(c.req.header('authorization'));
    if (limiter) {
      const waitMs = limiter.take(`${who.tenant}\u0000${who.principal}`);
      if (waitMs > 0) throw new BelayError('RATE_LIMITED', 'Rate limit exceeded for this principal', { retryAfterMs: waitMs });
    }
    c.set('who', who);
    await next();
  };
}

export function principalOf(c: Context<BelayEnv>): Principal {
  return c.get('who');
}
