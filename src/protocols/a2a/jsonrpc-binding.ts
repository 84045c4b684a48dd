/**
 * @module protocols/a2a/jsonrpc-binding
 * The JSON-RPC 2.0 binding (spec §9): `POST /a2a/jsonrpc` with `application/json` (or `application/a2a+json`),
 * one request per body (batches are InvalidRequest), PascalCase method names. Results and errors travel on HTTP 200;
 * errors decided at the HTTP level (authentication 401, rate limit 429, body size 413 and type 415) keep their status
 * with a JSON-RPC error body. Streaming methods answer `text/event-stream` whose `data:` lines are whole JSON-RPC
 * responses with a StreamResponse `result` (an error ends the stream as a JSON-RPC error response).
 */
import type { Context } from 'hono';
import { isBelayError } from '../../core/errors.js';
import type { JsonLimits } from '../../core/limits.js';
import { readJsonBody } from '../http/body.js';
import type { BelayEnv } from '../http/middleware.js';
import { principalOf } from '../http/middleware.js';
import { A2aError } from './a2a-error.js';
import { jsonRpcError, renderError } from './error-map.js';
import type { A2aOperations, CallContext } from './operations.js';
import {
  CancelTaskSchema,
  ExtendedCardSchema,
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

type RpcId = string | number | null;

export interface JsonRpcBindingOptions {
  ops: A2aOperations;
  limits: JsonLimits;
  heartbeatMs: number;
  /** Authenticates and rate-limits (the same middleware as REST); throws BelayError on refusal. */
  guard: (c: Context<BelayEnv>, next: () => Promise<void>) => Promise<unknown>;
  extendedCard: (c: Context<BelayEnv>) => unknown;
}

type Unary = (ctx: CallContext, params: unknown, c: Context<BelayEnv>) => Promise<unknown>;
type Streaming = (ctx: CallContext, params: unknown, c: Context<BelayEnv>) => Promise<StreamPlan>;

export const JSONRPC_METHODS = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
] as const;

function lastEventId(c: Context<BelayEnv>): number | undefined {
  const raw = c.req.header('last-event-id');
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new A2aError('INVALID_PARAMS', 'Last-Event-ID is a non-negative event sequence number');
  return n;
}

export function jsonRpcHandler(o: JsonRpcBindingOptions): (c: Context<BelayEnv>) => Promise<Response> {
  const { ops } = o;
  const unary: Record<string, Unary> = {
    SendMessage: (ctx, p) => ops.sendMessage(ctx, parseParams(SendMessageSchema, p)),
    GetTask: (ctx, p) => ops.getTask(ctx, parseParams(GetTaskSchema, p)),
    ListTasks: (ctx, p) => ops.listTasks(ctx, parseParams(ListTasksSchema, p)),
    CancelTask: (ctx, p) => ops.cancelTask(ctx, parseParams(CancelTaskSchema, p)),
    CreateTaskPushNotificationConfig: (ctx, p) => ops.createPushConfig(ctx, parseParams(PushConfigSchema, p)),
    GetTaskPushNotificationConfig: (ctx, p) => ops.getPushConfig(ctx, parseParams(PushConfigRefSchema, p)),
    ListTaskPushNotificationConfigs: (ctx, p) => ops.listPushConfigs(ctx, parseParams(ListPushConfigsSchema, p)),
    DeleteTaskPushNotificationConfig: async (ctx, p) => {
      await ops.deletePushConfig(ctx, parseParams(PushConfigRefSchema, p));
      return {};
    },
    GetExtendedAgentCard: async (_ctx, p, c) => {
      parseParams(ExtendedCardSchema, p);
      return o.extendedCard(c);
    },
  };
  const streaming: Record<string, Streaming> = {
    SendStreamingMessage: (ctx, p) => ops.sendStreamingMessage(ctx, parseParams(SendMessageSchema, p)),
    SubscribeToTask: (ctx, p, c) => ops.subscribe(ctx, parseParams(SubscribeSchema, p), lastEventId(c)),
  };

  const reply = (id: RpcId, body: { result: unknown } | { error: unknown }, status = 200, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify({ jsonrpc: '2.0', id, ...body }), { status, headers: { 'content-type': 'application/json', ...headers } });

  const fail = (id: RpcId, e: unknown) => {
    const r = renderError(e);
    const headers: Record<string, string> = {};
    if (r.retryAfterSeconds !== undefined) headers['retry-after'] = String(r.retryAfterSeconds);
    if (r.row.http === 401) headers['www-authenticate'] = 'Bearer realm="belay"';
    return reply(id, { error: jsonRpcError(r) }, r.row.httpLevel ? r.row.http : 200, headers);
  };

  return async (c) => {
    let id: RpcId = null;
    try {
      let response: Response | undefined;
      await o.guard(c, async () => {
        let body: unknown;
        try {
          body = await readJsonBody(c.req.raw, o.limits, ['application/json', 'application/a2a+json']);
        } catch (e) {
          if (isBelayError(e, 'INVALID_JSON')) throw new A2aError('PARSE_ERROR', 'The body is not valid JSON');
          throw e;
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new A2aError('INVALID_REQUEST', 'A request is one JSON-RPC 2.0 object (batches are not supported)');
        const req = body as Record<string, unknown>;
        if (typeof req.id === 'string' || typeof req.id === 'number') id = req.id;
        if (req.jsonrpc !== '2.0' || typeof req.method !== 'string' || !('id' in req) || (req.id !== null && id === null)) {
          throw new A2aError('INVALID_REQUEST', 'A JSON-RPC 2.0 request needs jsonrpc "2.0", a method and an id');
        }
        if (req.params !== undefined && (typeof req.params !== 'object' || req.params === null || Array.isArray(req.params))) {
          throw new A2aError('INVALID_PARAMS', 'params is an object');
        }
        const method = req.method;
        const u = Object.hasOwn(unary, method) ? unary[method] : undefined;
        const s = Object.hasOwn(streaming, method) ? streaming[method] : undefined;
        if (!u && !s) throw new A2aError('METHOD_NOT_FOUND', `Method not found: ${method} (A2A 1.0 methods: ${JSONRPC_METHODS.join(', ')})`);
        checkA2aVersion(c.req.header('a2a-version'), c.req.query('A2A-Version'));
        const ctx: CallContext = { who: principalOf(c), signal: c.req.raw.signal };
        if (u) {
          response = reply(id, { result: await u(ctx, req.params, c) });
          return;
        }
        const plan = await s!(ctx, req.params, c);
        const rpcId = id;
        response = taskStreamResponse(
          ops.service,
          ctx.who,
          plan,
          {
            data: (result) => JSON.stringify({ jsonrpc: '2.0', id: rpcId, result }),
            errorFrame: (e) => `data: ${JSON.stringify({ jsonrpc: '2.0', id: rpcId, error: jsonRpcError(renderError(e)) })}\n\n`,
          },
          { heartbeatMs: o.heartbeatMs, signal: c.req.raw.signal },
        );
      });
      return response ?? fail(id, new Error('no response'));
    } catch (e) {
      return fail(id, e);
    }
  };
}
