/**
 * @module protocols/rest/webhook-routes
 * REST admin routes for webhooks (tenant admins only; members get 403): endpoints and their secrets, the tenant's
 * callback signing secret, the delivery log, dead letters and redrive; and the stranded-task report. Every route
 * calls a service; none touches a store.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Delivery, WebhookEndpoint, WebhookSecret } from '../../core/delivery.js';
import { BelayError } from '../../core/errors.js';
import type { JsonLimits } from '../../core/limits.js';
import type { AdminService } from '../../service/admin-service.js';
import type { WebhookService } from '../../service/webhook-service.js';
import { readJsonBody } from '../http/body.js';
import { principalOf, type BelayEnv } from '../http/middleware.js';

export interface WebhookRouteOptions {
  webhooks: WebhookService;
  admin: AdminService;
  limits: JsonLimits;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const CreateBody = z.strictObject({
  url: z.string().min(1).max(2048),
  description: z.string().max(500).nullable().optional(),
  event_types: z.array(z.string().max(64)).max(20).nullable().optional(),
  secret: z.string().max(200).optional(),
});
const PatchBody = z.strictObject({
  url: z.string().min(1).max(2048).optional(),
  description: z.string().max(500).nullable().optional(),
  event_types: z.array(z.string().max(64)).max(20).nullable().optional(),
  enabled: z.boolean().optional(),
});
const RotateBody = z.strictObject({ secret: z.string().max(200).optional(), overlap_ms: z.number().int().min(0).optional() });

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new BelayError('VALIDATION', 'The request body does not match the schema', {
      details: { issues: r.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })) },
    });
  }
  return r.data;
}

async function optionalBody(req: Request, limits: JsonLimits): Promise<unknown> {
  const hasBody = (req.headers.get('content-length') ?? '0') !== '0' || req.headers.get('transfer-encoding') !== null;
  return hasBody ? readJsonBody(req, limits) : {};
}

export function endpointView(e: WebhookEndpoint) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    event_types: e.eventTypes,
    enabled: e.enabled,
    disabled_reason: e.disabledReason,
    disabled_at: iso(e.disabledAt),
    created_by: e.createdBy,
    created_at: iso(e.createdAt),
    updated_at: iso(e.updatedAt),
  };
}

const secretView = (s: WebhookSecret) => ({ secret: s.secret, created_at: iso(s.createdAt), expires_at: iso(s.expiresAt) });

export function deliveryView(d: Delivery) {
  let payload: unknown = d.payload;
  try {
    payload = JSON.parse(d.payload);
  } catch {
    // keep the text
  }
  return {
    id: d.id,
    event_id: d.eventId,
    event_type: d.eventType,
    task_id: d.taskId,
    seq: d.seq,
    target: { kind: d.targetKind, id: d.targetId === '' ? null : d.targetId, url: d.url },
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
    last_status: d.lastStatus,
    last_error: d.lastError,
    last_attempt_at: iso(d.lastAttemptAt),
    dead_reason: d.deadReason,
    dead_at: iso(d.deadAt),
    created_at: iso(d.createdAt),
    delivered_at: iso(d.deliveredAt),
    payload,
  };
}

function intQuery(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new BelayError('VALIDATION', `${name} is an integer from ${min} to ${max}`);
  return n;
}

export function webhookRoutes(options: WebhookRouteOptions): Hono<BelayEnv> {
  const { webhooks, admin, limits } = options;
  const app = new Hono<BelayEnv>();
  const E = '/v1/webhook-endpoints';

  app.post(E, async (c) => {
    const body = parse(CreateBody, await readJsonBody(c.req.raw, limits));
    const { endpoint, secret } = await webhooks.createEndpoint(principalOf(c), {
      url: body.url,
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.event_types !== undefined ? { eventTypes: body.event_types } : {}),
      ...(body.secret !== undefined ? { secret: body.secret } : {}),
    });
    c.header('location', `${E}/${endpoint.id}`);
    return c.json({ ...endpointView(endpoint), secret }, 201);
  });

  app.get(E, async (c) => {
    const limit = intQuery(c.req.query('limit'), 'limit', 1, 100);
    const cursor = c.req.query('cursor');
    const page = await webhooks.listEndpoints(principalOf(c), { ...(limit ? { limit } : {}), ...(cursor ? { cursor } : {}) });
    return c.json({ endpoints: page.endpoints.map(endpointView), next_cursor: page.nextCursor });
  });

  app.get(`${E}/:id`, async (c) => c.json(endpointView(await webhooks.getEndpoint(principalOf(c), c.req.param('id')))));

  app.patch(`${E}/:id`, async (c) => {
    const body = parse(PatchBody, await readJsonBody(c.req.raw, limits));
    const ep = await webhooks.updateEndpoint(principalOf(c), c.req.param('id'), {
      ...(body.url !== undefined ? { url: body.url } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.event_types !== undefined ? { eventTypes: body.event_types } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
    });
    return c.json(endpointView(ep));
  });

  app.delete(`${E}/:id`, async (c) => {
    await webhooks.deleteEndpoint(principalOf(c), c.req.param('id'));
    return c.body(null, 204);
  });

  app.get(`${E}/:id/secret`, async (c) => c.json({ secrets: (await webhooks.getEndpointSecrets(principalOf(c), c.req.param('id'))).map(secretView) }));

  app.post(`${E}/:id/secret/rotate`, async (c) => {
    const body = parse(RotateBody, await optionalBody(c.req.raw, limits));
    const { secret } = await webhooks.rotateEndpointSecret(principalOf(c), c.req.param('id'), {
      ...(body.secret !== undefined ? { secret: body.secret } : {}),
      ...(body.overlap_ms !== undefined ? { overlapMs: body.overlap_ms } : {}),
    });
    return c.json({ secret });
  });

  app.post(`${E}/:id/redrive`, async (c) => c.json({ redriven: await webhooks.redrive(principalOf(c), { endpointId: c.req.param('id') }) }));

  app.get('/v1/webhook-callback-secret', async (c) => c.json({ secrets: (await webhooks.getCallbackSecrets(principalOf(c))).map(secretView) }));

  app.post('/v1/webhook-callback-secret/rotate', async (c) => {
    const body = parse(RotateBody, await optionalBody(c.req.raw, limits));
    const secret = await webhooks.rotateCallbackSecret(principalOf(c), {
      ...(body.secret !== undefined ? { secret: body.secret } : {}),
      ...(body.overlap_ms !== undefined ? { overlapMs: body.overlap_ms } : {}),
    });
    return c.json({ secret });
  });

  app.get('/v1/webhook-deliveries', async (c) => {
    const q = c.req.query();
    const limit = intQuery(q.limit, 'limit', 1, 100);
    const page = await webhooks.listDeliveries(principalOf(c), {
      ...(q.status ? { status: q.status as Delivery['status'] } : {}),
      ...(q.task_id ? { taskId: q.task_id } : {}),
      ...(q.endpoint_id ? { endpointId: q.endpoint_id } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      ...(limit ? { limit } : {}),
    });
    return c.json({ deliveries: page.deliveries.map(deliveryView), next_cursor: page.nextCursor });
  });

  app.get('/v1/webhook-deliveries/:id', async (c) => c.json(deliveryView(await webhooks.getDelivery(principalOf(c), c.req.param('id')))));

  app.post('/v1/webhook-deliveries/:id/redrive', async (c) => c.json({ redriven: await webhooks.redrive(principalOf(c), { deliveryId: c.req.param('id') }) }));

  app.get('/v1/admin/stranded', async (c) => {
    const graceSeconds = intQuery(c.req.query('grace_seconds'), 'grace_seconds', 0, 30 * 86_400);
    const limit = intQuery(c.req.query('limit'), 'limit', 1, 1000);
    const stranded = await admin.stranded(principalOf(c), { ...(graceSeconds !== undefined ? { graceMs: graceSeconds * 1000 } : {}), ...(limit ? { limit } : {}) });
    return c.json({
      count: stranded.length,
      stranded: stranded.map((t) => ({
        id: t.id,
        type: t.type,
        type_version: t.typeVersion,
        state: t.state,
        reason: t.reason,
        wake_at: iso(t.wakeAt),
        lease_owner: t.leaseOwner,
        lease_until: iso(t.leaseUntil),
        attempts: t.attempts,
        updated_at: iso(t.updatedAt),
        overdue_ms: t.overdueMs,
      })),
    });
  });

  return app;
}
