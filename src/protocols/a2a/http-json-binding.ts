/**
 * @module protocols/a2a/http-json-binding
 * The HTTP+JSON binding (spec §11) under `/a2a/rest`, every route also under `/a2a/rest/{tenant}/…`:
 *
 *   POST /message:send            POST /message:stream (SSE)
 *   GET  /tasks/{id}              GET  /tasks                     POST /tasks/{id}:cancel
 *   GET|POST /tasks/{id}:subscribe (SSE; the spec's proto says GET, its prose POST: both are accepted)
 *   POST|GET /tasks/{id}/pushNotificationConfigs   GET|DELETE /tasks/{id}/pushNotificationConfigs/{configId}
 *   GET  /extendedAgentCard
 *
 * Requests may be `application/json` or `application/a2a+json`; responses use the configured type
 * (`application/json` by default, which the v1.0.0 spec and the a2a-tck expect). Errors are `google.rpc.Status`
 * bodies (`{"error":{code,status,message,details}}`) with the HTTP status from the error table; create-push answers
 * 201 and delete 204. Stream frames are `data: <StreamResponse>`; an error that ends a stream is `event: error`.
 */
import type { Context } from 'hono';
import type { JsonLimits } from '../../core/limits.js';
import { readJsonBody } from '../http/body.js';
import type { BelayEnv } from '../http/middleware.js';
import { principalOf } from '../http/middleware.js';
import { A2aError } from './a2a-error.js';
import { renderError, statusBody } from './error-map.js';
import type { A2aOperations, CallContext } from './operations.js';
import {
  CancelTaskSchema,
  GetTaskSchema,
  ListPushConfigsSchema,
  ListTasksSchema,
  PushConfigRefSchema,
  PushConfigSchema,
  SendMessageSchema,
  SubscribeSchema,
  parseParams,
} from './request-schemas.js';
import { taskStreamResponse, type StreamPlan } from './task-stream.js';
import { checkA2aVersion } from './version.js';

export const REQUEST_TYPES = ['application/json', 'application/a2a+json'] as const;

export interface HttpJsonBindingOptions {
  ops: A2aOperations;
  limits: JsonLimits;
  heartbeatMs: number;
  /** The binding's base path (`/a2a/rest`). */
  base: string;
  responseType: 'application/json' | 'application/a2a+json';
  guard: (c: Context<BelayEnv>, next: () => Promise<void>) => Promise<unknown>;
  extendedCard: (c: Context<BelayEnv>) => unknown;
}

type Outcome = { json: unknown; status?: number } | { empty: true } | { stream: StreamPlan };
type Handler = (ctx: CallContext, m: { tenant: string | undefined; args: string[] }, c: Context<BelayEnv>) => Promise<Outcome>;

interface Route {
  methods: string[];
  pattern: RegExp;
  handler: Handler;
}

const T = '(?:/([^/]+))?';

/** Query values as the schemas expect them: integers and booleans parsed, everything else kept as text. */
function queryParams(c: Context<BelayEnv>, ints: string[], bools: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c.req.query())) {
    if (k === 'A2A-Version' || k === 'tenant') continue;
    if (ints.includes(k)) out[k] = /^-?\d+$/.test(v) ? Number(v) : v;
    else if (bools.includes(k)) out[k] = v === 'true' ? true : v === 'false' ? false : v;
    else out[k] = v;
  }
  return out;
}

async function body(c: Context<BelayEnv>, limits: JsonLimits, optional: boolean): Promise<Record<string, unknown>> {
  const length = c.req.header('content-length');
  const hasBody = (length !== undefined && length !== '0') || c.req.header('transfer-encoding') !== undefined;
  if (!hasBody) {
    if (optional) return {};
    throw new A2aError('INVALID_PARAMS', 'This operation needs a JSON body');
  }
  const value = await readJsonBody(c.req.raw, limits, REQUEST_TYPES);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new A2aError('INVALID_PARAMS', 'The body is a JSON object');
  return value as Record<string, unknown>;
}

function lastEventId(c: Context<BelayEnv>): number | undefined {
  const raw = c.req.header('last-event-id');
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new A2aError('INVALID_PARAMS', 'Last-Event-ID is a non-negative event sequence number');
  return n;
}

export function httpJsonHandler(o: HttpJsonBindingOptions): (c: Context<BelayEnv>) => Promise<Response> {
  const { ops, limits } = o;
  const withTenant = (tenant: string | undefined, p: Record<string, unknown>) => (tenant === undefined ? p : { ...p, tenant });
  const routes: Route[] = [
    {
      methods: ['POST'],
      pattern: new RegExp(`^${T}/message:send$`),
      handler: async (ctx, m, c) => ({ json: await ops.sendMessage(ctx, parseParams(SendMessageSchema, withTenant(m.tenant, await body(c, limits, false)))) }),
    },
    {
      methods: ['POST'],
      pattern: new RegExp(`^${T}/message:stream$`),
      handler: async (ctx, m, c) => ({ stream: await ops.sendStreamingMessage(ctx, parseParams(SendMessageSchema, withTenant(m.tenant, await body(c, limits, false)))) }),
    },
    {
      methods: ['POST'],
      pattern: new RegExp(`^${T}/tasks/([^/:]+):cancel$`),
      handler: async (ctx, m, c) => ({ json: await ops.cancelTask(ctx, parseParams(CancelTaskSchema, withTenant(m.tenant, { ...(await body(c, limits, true)), id: m.args[0] }))) }),
    },
    {
      methods: ['GET', 'POST'],
      pattern: new RegExp(`^${T}/tasks/([^/:]+):subscribe$`),
      handler: async (ctx, m, c) => {
        const extra = c.req.method === 'POST' ? await body(c, limits, true) : {};
        return { stream: await ops.subscribe(ctx, parseParams(SubscribeSchema, withTenant(m.tenant, { ...extra, id: m.args[0] })), lastEventId(c)) };
      },
    },
    {
      methods: ['GET', 'POST'],
      pattern: new RegExp(`^${T}/tasks/([^/:]+)/pushNotificationConfigs$`),
      handler: async (ctx, m, c) => {
        if (c.req.method === 'POST') {
          const p = parseParams(PushConfigSchema, withTenant(m.tenant, { ...(await body(c, limits, false)), taskId: m.args[0] }));
          return { json: await ops.createPushConfig(ctx, p), status: 201 };
        }
        return { json: await ops.listPushConfigs(ctx, parseParams(ListPushConfigsSchema, withTenant(m.tenant, { ...queryParams(c, ['pageSize'], []), taskId: m.args[0] }))) };
      },
    },
    {
      methods: ['GET', 'DELETE'],
      pattern: new RegExp(`^${T}/tasks/([^/:]+)/pushNotificationConfigs/([^/]+)$`),
      handler: async (ctx, m, c) => {
        const p = parseParams(PushConfigRefSchema, withTenant(m.tenant, { taskId: m.args[0], id: m.args[1] }));
        if (c.req.method === 'DELETE') {
          await ops.deletePushConfig(ctx, p);
          return { empty: true };
        }
        return { json: await ops.getPushConfig(ctx, p) };
      },
    },
    {
      methods: ['GET'],
      pattern: new RegExp(`^${T}/tasks/([^/:]+)$`),
      handler: async (ctx, m, c) => ({ json: await ops.getTask(ctx, parseParams(GetTaskSchema, withTenant(m.tenant, { ...queryParams(c, ['historyLength'], []), id: m.args[0] }))) }),
    },
    {
      methods: ['GET'],
      pattern: new RegExp(`^${T}/tasks$`),
      handler: async (ctx, m, c) => ({ json: await ops.listTasks(ctx, parseParams(ListTasksSchema, withTenant(m.tenant, queryParams(c, ['pageSize', 'historyLength'], ['includeArtifacts'])))) }),
    },
    {
      methods: ['GET'],
      pattern: new RegExp(`^${T}/extendedAgentCard$`),
      handler: async (_ctx, _m, c) => ({ json: o.extendedCard(c) }),
    },
  ];

  const fail = (e: unknown) => {
    const r = renderError(e);
    const headers: Record<string, string> = { 'content-type': o.responseType };
    if (r.retryAfterSeconds !== undefined) headers['retry-after'] = String(r.retryAfterSeconds);
    if (r.row.http === 401) headers['www-authenticate'] = 'Bearer realm="belay"';
    return new Response(JSON.stringify(statusBody(r)), { status: r.row.http, headers });
  };

  return async (c) => {
    try {
      let response: Response | undefined;
      await o.guard(c, async () => {
        const path = new URL(c.req.url).pathname.slice(o.base.length);
        let route: Route | undefined;
        let match: RegExpExecArray | null = null;
        for (const r of routes) {
          match = r.pattern.exec(path);
          if (match) {
            route = r;
            break;
          }
        }
        if (!route || !match) throw new A2aError('METHOD_NOT_FOUND', `No A2A operation at ${c.req.method} ${o.base}${path}`);
        if (!route.methods.includes(c.req.method)) throw new A2aError('METHOD_NOT_FOUND', `${c.req.method} is not allowed on ${o.base}${path} (use ${route.methods.join(' or ')})`);
        checkA2aVersion(c.req.header('a2a-version'), c.req.query('A2A-Version'));
        const decode = (s: string | undefined) => {
          if (s === undefined) return undefined;
          try {
            return decodeURIComponent(s);
          } catch {
            throw new A2aError('INVALID_PARAMS', 'Malformed path segment');
          }
        };
        const tenant = decode(match[1]);
        const args = match.slice(2).map((s) => decode(s) ?? '');
        const ctx: CallContext = { who: principalOf(c), signal: c.req.raw.signal };
        const out = await route.handler(ctx, { tenant, args }, c);
        if ('stream' in out) {
          response = taskStreamResponse(
            ops.service,
            ctx.who,
            out.stream,
            {
              data: (r) => JSON.stringify(r),
              errorFrame: (e) => `event: error\ndata: ${JSON.stringify(statusBody(renderError(e)))}\n\n`,
            },
            { heartbeatMs: o.heartbeatMs, signal: c.req.raw.signal },
          );
        } else if ('empty' in out) {
          response = new Response(null, { status: 204 });
        } else {
          response = new Response(JSON.stringify(out.json), { status: out.status ?? 200, headers: { 'content-type': o.responseType } });
        }
      });
      return response ?? fail(new Error('no response'));
    } catch (e) {
      return fail(e);
    }
  };
}
