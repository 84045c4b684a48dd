/**
 * @module server/app
 * Assembles the HTTP fronts into one fetch-style handler: `app.fetch(request) => Response`, which `belay serve`
 * runs on Node and which mounts into an existing app (Hono, or anything that speaks web-standard Request/Response).
 */
import { Hono } from 'hono';
import { BelayError } from '../core/errors.js';
import { DEFAULT_JSON_LIMITS, type JsonLimits } from '../core/limits.js';
import type { TaskService } from '../service/task-service.js';
import type { Authenticator } from '../protocols/http/auth.js';
import { authenticate, type BelayEnv } from '../protocols/http/middleware.js';
import { problemResponse } from '../protocols/http/problem.js';
import { RateLimiter } from '../protocols/http/rate-limit.js';
import { restRoutes } from '../protocols/rest/rest-routes.js';
import { webhookRoutes } from '../protocols/rest/webhook-routes.js';
import { createBelayMetrics, type BelayMetrics } from '../metrics/belay-metrics.js';
import { PROMETHEUS_CONTENT_TYPE } from '../metrics/registry.js';
import { AdminService } from '../service/admin-service.js';
import { WebhookService } from '../service/webhook-service.js';
import type { McpFrontOptions } from '../protocols/mcp/mcp-context.js';
import { createMcpFront } from '../protocols/mcp/mcp-routes.js';
import { a2aRoutes, type A2aOptions } from '../protocols/a2a/a2a-routes.js';
import { dashboardRoutes } from './dashboard.js';

export interface BelayAppOptions {
  service: TaskService;
  auth: Authenticator;
  /** Requests per second per principal, with a burst; null disables the limit. */
  rateLimit?: { perSecond: number; burst: number } | null;
  limits?: JsonLimits;
  requireIdempotencyKey?: boolean;
  /** SSE heartbeat comment interval (≤ 15 s keeps proxies from closing idle streams). */
  heartbeatMs?: number;
  /** Webhook administration (default: one on the service's store with the default SSRF guard, no allowlist). */
  webhooks?: WebhookService;
  /** `/metrics` (Prometheus text). Default: the store's gauges only; pass the process's metrics for its counters. */
  metrics?: BelayMetrics;
  /** When set, `/metrics` needs `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /** The MCP front (Streamable HTTP at /mcp: 2025-11-25 tasks and the tasks extension); on by default. */
  mcp?: McpFrontOptions | false;
  /** The A2A 1.0 front (agent card, JSON-RPC at /a2a/jsonrpc, HTTP+JSON at /a2a/rest); on by default. */
  a2a?: A2aOptions | false;
  /** The web dashboard's static files at `/dashboard/` (default on); a folder to serve instead of `web/`. */
  dashboard?: boolean | { dir: string };
}

export function createBelayApp(options: BelayAppOptions): Hono<BelayEnv> {
  const { service } = options;
  const app = new Hono<BelayEnv>();
  const limits = options.limits ?? DEFAULT_JSON_LIMITS;
  const rate = options.rateLimit === undefined ? { perSecond: 50, burst: 100 } : options.rateLimit;
  const limiter = rate ? new RateLimiter(service.clock, rate.perSecond, rate.burst) : null;

  app.onError((err, c) => problemResponse(err, new URL(c.req.url).pathname));
  app.notFound((c) => problemResponse(new BelayError('NOT_FOUND', `No route for ${c.req.method} ${new URL(c.req.url).pathname}`)));

  // Liveness and readiness stay unauthenticated so orchestrators can probe them; they reveal nothing about tasks.
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      const version = await service.store.schemaVersion();
      return c.json({ status: 'ready', schema_version: version });
    } catch {
      return c.json({ status: 'unavailable' }, 503);
    }
  });

  // Static dashboard files are public; the data they show comes from the authenticated API below.
  if (options.dashboard !== false) app.route('/', dashboardRoutes(typeof options.dashboard === 'object' ? options.dashboard.dir : undefined));

  options.auth.useDisabledCheck((who) => service.isPrincipalDisabled(who));
  const metrics = options.metrics ?? createBelayMetrics({ store: service.store, now: () => service.clock.now() });
  app.get('/metrics', async (c) => {
    if (options.metricsToken !== undefined && c.req.header('authorization') !== `Bearer ${options.metricsToken}`) throw new BelayError('UNAUTHORIZED', 'Send Authorization: Bearer <metrics token>');
    return c.body(await metrics.registry.render(), 200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
  });

  app.use('/v1/*', authenticate(options.auth, limiter));
  app.route('/', webhookRoutes({
    webhooks: options.webhooks ?? new WebhookService({ store: service.store, clock: service.clock }),
    admin: new AdminService({ store: service.store, clock: service.clock }),
    limits,
  }));
  app.route('/', restRoutes({ service, limits, requireIdempotencyKey: options.requireIdempotencyKey ?? true, heartbeatMs: options.heartbeatMs ?? 15_000 }));
  // The agent card is public; the A2A bindings apply the same authentication and rate limit as REST themselves.
  if (options.a2a !== false) app.route('/', a2aRoutes({ ...options.a2a, service, limits, heartbeatMs: options.heartbeatMs ?? 15_000, auth: options.auth, guard: authenticate(options.auth, limiter) }));
  if (options.mcp !== false) {
    app.use('/mcp', authenticate(options.auth, limiter));
    app.route('/', createMcpFront({ service, limits, ...(options.mcp ? { mcp: options.mcp } : {}) }).routes);
  }
  return app;
}
