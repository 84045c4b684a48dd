/**
 * @module protocols/a2a/a2a-routes
 * The A2A 1.0 front door: the public agent card at `/.well-known/agent-card.json`, the JSON-RPC binding at
 * `POST /a2a/jsonrpc` and the HTTP+JSON binding under `/a2a/rest`. Everything but the card goes through the same
 * authentication and per-principal rate limit as the REST front (the `guard` middleware), then the TaskService.
 */
import { Hono, type Context } from 'hono';
import type { JsonLimits } from '../../core/limits.js';
import type { JsonObject } from '../../core/task.js';
import type { TaskService } from '../../service/task-service.js';
import type { Authenticator } from '../http/auth.js';
import type { BelayEnv } from '../http/middleware.js';
import { HTTP_JSON_PATH, JSONRPC_PATH, buildAgentCard, cardPayload } from './agent-card.js';
import { httpJsonHandler } from './http-json-binding.js';
import { jsonRpcHandler } from './jsonrpc-binding.js';
import { A2aOperations } from './operations.js';

/** What `createBelayApp({ a2a })` accepts. */
export interface A2aOptions {
  /** The URL clients reach this gateway at (for the card's interface URLs); default: the origin of each card request. */
  publicUrl?: string;
  /** How long a blocking SendMessage waits for a terminal or interrupted state. Default 30 s. */
  blockingTimeoutMs?: number;
  /** How long CancelTask waits for a running task's worker to settle the cancellation. Default 5 s. */
  cancelWaitMs?: number;
  /** The skill (task type) a message that names none starts. */
  defaultSkill?: string;
  /** HTTP+JSON response media type. Default `application/json`. */
  responseType?: 'application/json' | 'application/a2a+json';
  name?: string;
  description?: string;
  version?: string;
}

export interface A2aRoutesOptions extends A2aOptions {
  service: TaskService;
  limits: JsonLimits;
  heartbeatMs: number;
  auth: Authenticator;
  /** Authentication + rate limit, the REST front's middleware. */
  guard: (c: Context<BelayEnv>, next: () => Promise<void>) => Promise<unknown>;
}

export const DEFAULT_BLOCKING_TIMEOUT_MS = 30_000;

export function a2aRoutes(o: A2aRoutesOptions): Hono<BelayEnv> {
  const app = new Hono<BelayEnv>();
  const ops = new A2aOperations({
    service: o.service,
    blockingTimeoutMs: o.blockingTimeoutMs ?? DEFAULT_BLOCKING_TIMEOUT_MS,
    cancelWaitMs: o.cancelWaitMs ?? 5_000,
    ...(o.defaultSkill ? { defaultSkill: o.defaultSkill } : {}),
  });
  const builtAt = Date.now();
  const authInfo = { ...o.auth.accepts, insecure: o.auth.insecure };
  const baseUrl = (c: Context<BelayEnv>) => (o.publicUrl ?? new URL(c.req.url).origin).replace(/\/+$/, '');
  const card = (c: Context<BelayEnv>, extended: boolean): JsonObject =>
    buildAgentCard(
      {
        baseUrl: baseUrl(c),
        registry: o.service.registry,
        auth: authInfo,
        ...(o.name ? { name: o.name } : {}),
        ...(o.description ? { description: o.description } : {}),
        ...(o.version ? { version: o.version } : {}),
      },
      extended,
    );
  const payloads = new Map<string, ReturnType<typeof cardPayload>>();

  app.get('/.well-known/agent-card.json', (c) => {
    const key = baseUrl(c);
    let p = payloads.get(key);
    if (!p) {
      p = cardPayload(card(c, false), builtAt);
      if (payloads.size > 100) payloads.clear();
      payloads.set(key, p);
    }
    const headers = { etag: p.etag, 'cache-control': 'public, max-age=300', 'last-modified': p.lastModified };
    const inm = c.req.header('if-none-match');
    if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === p.etag)) return new Response(null, { status: 304, headers });
    return new Response(p.body, { status: 200, headers: { ...headers, 'content-type': 'application/json' } });
  });

  const common = { ops, limits: o.limits, heartbeatMs: o.heartbeatMs, guard: o.guard, extendedCard: (c: Context<BelayEnv>) => card(c, true) };
  app.post(JSONRPC_PATH, jsonRpcHandler(common));
  const rest = httpJsonHandler({ ...common, base: HTTP_JSON_PATH, responseType: o.responseType ?? 'application/json' });
  app.all(`${HTTP_JSON_PATH}/*`, rest);
  return app;
}
