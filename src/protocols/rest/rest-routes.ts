/**
 * @module protocols/rest/rest-routes
 * The REST async task contract (second article): create → 202 + Location, status with ETag and a poll hint,
 * events as SSE or JSON pages, input, cancellation, result. Every route calls the TaskService; none touches a store.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { BelayError } from '../../core/errors.js';
import type { JsonLimits } from '../../core/limits.js';
import { TASK_STATES, isTerminal, restStatus, type TaskState } from '../../core/task-state.js';
import type { TaskService } from '../../service/task-service.js';
import type { Task } from '../../core/task.js';
import { readJsonBody } from '../http/body.js';
import { principalOf, type BelayEnv } from '../http/middleware.js';
import { eventStreamResponse } from './event-stream.js';
import { BASE, eventView, pollIntervalMs, taskView } from './representation.js';

export interface RestOptions {
  service: TaskService;
  limits: JsonLimits;
  /** IETF draft semantics: required by default. */
  requireIdempotencyKey: boolean;
  heartbeatMs: number;
}

const CreateBody = z.strictObject({
  type: z.string().min(1).max(64),
  input: z.record(z.string(), z.unknown()).optional(),
  callback_url: z.url({ protocol: /^https?$/ }).max(2048).optional(),
  context_id: z.string().min(1).max(128).optional(),
});

const InputBody = z.strictObject({
  answer: z.unknown(),
  version: z.number().int().min(1),
  key: z.string().min(1).max(64).optional(),
});

const CancelBody = z.strictObject({ reason: z.string().max(1000).optional() });

const REST_STATUS_TO_STATES: Record<string, TaskState[]> = {
  queued: ['submitted'],
  working: ['working'],
  input_required: ['input_required', 'auth_required'],
  completed: ['completed'],
  failed: ['failed', 'rejected'],
  cancelled: ['canceled'],
};

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new BelayError('VALIDATION', `The ${what} does not match the schema`, {
      details: { issues: r.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })) },
    });
  }
  return r.data;
}

/** Idempotency-Key as an RFC 8941 sf-string (`"abc"`) or a bare token, at most 255 characters. */
export function parseIdempotencyKey(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const value = raw.trim();
  const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(value);
  const key = quoted ? quoted[1]!.replace(/\\(.)/g, '$1') : value;
  if (key.length === 0 || key.length > 255 || !/^[\x20-\x7e]+$/.test(key)) {
    throw new BelayError('VALIDATION', 'Idempotency-Key must be 1-255 printable ASCII characters');
  }
  return key;
}

function time(value: string | undefined, what: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new BelayError('VALIDATION', `${what} must be an ISO 8601 time`);
  return ms;
}

export function restRoutes(options: RestOptions): Hono<BelayEnv> {
  const { service, limits } = options;
  const app = new Hono<BelayEnv>();
  // Requests with an idempotency key being processed by this gateway right now.
  const inFlight = new Set<string>();
  const view = (task: Task, operator = false, input = false) => {
    const type = service.registry.get(task.type, task.typeVersion);
    return taskView(task, { operator, input, ...(type ? { stepNames: type.steps.map((s) => s.name) } : {}) });
  };

  app.post(BASE, async (c) => {
    const who = principalOf(c);
    const body = parse(CreateBody, await readJsonBody(c.req.raw, limits), 'request body');
    const key = parseIdempotencyKey(c.req.header('idempotency-key'));
    if (key === undefined && options.requireIdempotencyKey) throw new BelayError('IDEMPOTENCY_KEY_REQUIRED', 'Send an Idempotency-Key header so a retry cannot start a second task');
    const flightKey = key === undefined ? null : JSON.stringify([who.tenant, body.type, key]);
    if (flightKey && inFlight.has(flightKey)) throw new BelayError('IDEMPOTENCY_IN_FLIGHT', 'A request with this idempotency key is still being processed', { retryAfterMs: 1000 });
    if (flightKey) inFlight.add(flightKey);
    try {
      const { task, created } = await service.createTask(who, {
        type: body.type,
        input: body.input ?? {},
        ...(body.callback_url ? { callbackUrl: body.callback_url } : {}),
        ...(body.context_id ? { contextId: body.context_id } : {}),
        ...(key === undefined ? {} : { idempotencyKey: key }),
      });
      const representation = view(task);
      c.header('location', representation.status_url);
      if (!created) c.header('idempotency-replayed', 'true');
      return c.json(representation, 202);
    } finally {
      if (flightKey) inFlight.delete(flightKey);
    }
  });

  app.get(BASE, async (c) => {
    const who = principalOf(c);
    const q = c.req.query();
    const states = q.status
      ? q.status.split(',').flatMap((s) => {
          const mapped = REST_STATUS_TO_STATES[s] ?? ((TASK_STATES as readonly string[]).includes(s) ? [s as TaskState] : null);
          if (!mapped) throw new BelayError('VALIDATION', `Unknown status "${s}"`);
          return mapped;
        })
      : undefined;
    const limit = q.limit === undefined ? 20 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new BelayError('VALIDATION', 'limit is an integer from 1 to 100');
    const createdFrom = time(q.created_after, 'created_after');
    const createdTo = time(q.created_before, 'created_before');
    const page = await service.listTasks(who, {
      ...(states ? { states } : {}),
      ...(q.type ? { type: q.type } : {}),
      ...(createdFrom !== undefined ? { createdFrom } : {}),
      ...(createdTo !== undefined ? { createdTo } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      limit,
    });
    return c.json({
      tasks: page.tasks.map((t) => view(t)),
      next_cursor: page.nextCursor,
      next_url: page.nextCursor ? `${BASE}?${new URLSearchParams({ ...q, cursor: page.nextCursor }).toString()}` : null,
    });
  });

  app.get(`${BASE}/:id`, async (c) => {
    const who = principalOf(c);
    const task = await service.getTask(who, c.req.param('id'));
    const operator = c.req.query('view') === 'operator';
    if (operator && who.role === 'member') throw new BelayError('FORBIDDEN', 'The operator view needs an admin principal');
    const etag = operator ? `"v${task.version}-f${task.fence}-a${task.attempts}"` : `"v${task.version}"`;
    const poll = pollIntervalMs(task);
    c.header('etag', etag);
    c.header('cache-control', 'no-cache');
    if (poll !== null) c.header('retry-after', String(Math.ceil(poll / 1000)));
    const inm = c.req.header('if-none-match');
    if (inm && inm.split(',').map((s) => s.trim().replace(/^W\//, '')).includes(etag)) return c.body(null, 304);
    return c.json(view(task, operator, true));
  });

  app.get(`${BASE}/:id/events`, async (c) => {
    const who = principalOf(c);
    const id = c.req.param('id');
    const log = await service.openEventLog(who, id);
    const lastEventId = c.req.header('last-event-id') ?? c.req.query('after');
    const after = lastEventId === undefined || lastEventId === '' ? 0 : Number(lastEventId);
    if (!Number.isInteger(after) || after < 0) throw new BelayError('VALIDATION', 'Last-Event-ID / after must be a non-negative integer sequence number');
    const wantsStream = (c.req.header('accept') ?? '').includes('text/event-stream');
    if (!wantsStream) {
      const limit = Math.min(Math.max(1, Number(c.req.query('limit') ?? 100) || 100), 1000);
      const events = await log.read(after, limit + 1);
      const page = events.slice(0, limit);
      return c.json({ events: page.map(eventView), next_after: page.at(-1)?.seq ?? after, has_more: events.length > limit });
    }
    return eventStreamResponse(() => log.follow({ heartbeatMs: options.heartbeatMs }), after, {
      retryMs: 2000,
      terminal: isTerminal(log.task.state),
      signal: c.req.raw.signal,
    });
  });

  app.post(`${BASE}/:id/input`, async (c) => {
    const who = principalOf(c);
    const body = parse(InputBody, await readJsonBody(c.req.raw, limits), 'request body');
    const task = await service.answer(who, c.req.param('id'), { version: body.version, answer: body.answer, ...(body.key ? { key: body.key } : {}) });
    return c.json(view(task), 202);
  });

  app.post(`${BASE}/:id/cancellation`, async (c) => {
    const who = principalOf(c);
    const hasBody = (c.req.header('content-length') ?? '0') !== '0' || c.req.header('transfer-encoding') !== undefined;
    const body = hasBody ? parse(CancelBody, await readJsonBody(c.req.raw, limits), 'request body') : {};
    const { task, outcome } = await service.cancel(who, c.req.param('id'), body.reason);
    return c.json({ ...view(task), cancellation: outcome }, outcome === 'requested' || outcome === 'already_requested' ? 202 : 200);
  });

  app.get(`${BASE}/:id/result`, async (c) => {
    const who = principalOf(c);
    const task = await service.getResult(who, c.req.param('id'));
    return c.json({
      id: task.id,
      status: restStatus(task.state),
      result: task.state === 'completed' ? task.result : null,
      artifacts: task.artifacts.map((a) => ({ artifact_id: a.artifactId, name: a.name, media_type: a.mediaType, data: a.data })),
      error: task.error,
    });
  });

  app.get(`${BASE}/:id/effects`, async (c) => {
    const who = principalOf(c);
    const effects = await service.listEffects(who, c.req.param('id'));
    return c.json({
      effects: effects.map((e) => ({ key: e.key, status: e.status === 'pending' ? 'uncertain' : 'applied', result: e.result, started_at: new Date(e.startedAt).toISOString(), applied_at: e.appliedAt === null ? null : new Date(e.appliedAt).toISOString() })),
    });
  });

  const PrincipalBody = z.strictObject({ reason: z.string().max(1000).optional() });
  for (const action of ['disable', 'enable'] as const) {
    app.post(`/v1/principals/:principal/${action}`, async (c) => {
      const who = principalOf(c);
      const hasBody = (c.req.header('content-length') ?? '0') !== '0';
      const body = hasBody ? parse(PrincipalBody, await readJsonBody(c.req.raw, limits), 'request body') : {};
      const principal = c.req.param('principal');
      await service.setPrincipalEnabled(who, principal, action === 'enable', body.reason);
      return c.json({ tenant: who.tenant, principal, disabled: action === 'disable' });
    });
  }

  app.get('/v1/task-types', (c) =>
    c.json({
      task_types: service.registry.list().map((t) => ({
        name: t.name,
        version: t.version,
        latest: service.registry.latest(t.name).version === t.version,
        description: t.description ?? null,
        steps: t.steps.map((s) => s.name),
        input_schema: t.inputJsonSchema,
      })),
    }),
  );

  return app;
}
