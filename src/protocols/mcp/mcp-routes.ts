/**
 * @module protocols/mcp/mcp-routes
 * The Streamable HTTP endpoint `/mcp` (authenticated by the shared bearer middleware, like REST). Per POST:
 *
 * 1. Responses to Belay's elicitations (`belay-input.…` ids) are answered here, on whatever gateway they land, through
 *    `TaskService.answer`: no session or process memory is needed (elicitation-answers.ts).
 * 2. A message carrying the 2026-07-28 per-request envelope is served by the tasks extension (tasks-extension.ts).
 * 3. Everything else is MCP 2025-11-25 on the SDK: `initialize` opens a session on this gateway (for pushes:
 *    status notifications and questions on the GET stream); a request naming a session this gateway knows goes to
 *    it; any other request (another gateway's session, a session from before a restart, or no session) is served by
 *    a per-request server over the same durable store, so tasks/get, tasks/result, tasks/list and tasks/cancel work
 *    from anywhere without sticky routing.
 */
import { randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { JsonLimits } from '../../core/limits.js';
import type { Principal, TaskService } from '../../service/task-service.js';
import { readJsonBody } from '../http/body.js';
import { principalOf, type BelayEnv } from '../http/middleware.js';
import { applyElicitationResponse, InputKicks, isElicitationResponse } from './elicitation-answers.js';
import { createLegacyServer } from './legacy-server.js';
import { mcpContext, type McpContext, type McpFrontOptions } from './mcp-context.js';
import { RPC, httpStatusFor, rpcErrorFor, rpcErrorResponse } from './mcp-errors.js';
import { McpSession } from './mcp-session.js';
import { SessionRegistry } from './session-registry.js';
import { handleModernMessage, isModernMessage } from './tasks-extension.js';

export const MCP_PATH = '/mcp';

export interface McpRouteOptions {
  service: TaskService;
  limits: JsonLimits;
  mcp?: McpFrontOptions;
}

/** JSON-RPC requests that can wait long; the HTTP request's abort signal ends their wait. */
const LONG_METHODS = new Set(['tools/call', 'tasks/result']);

function authInfoFor(who: Principal): AuthInfo {
  return { token: '', clientId: who.principal, scopes: who.role === 'admin' ? ['admin'] : [], extra: { tenant: who.tenant } };
}

function requestsIn(messages: unknown[]): Array<{ id: string | number; method: string }> {
  return messages.filter((m): m is { id: string | number; method: string } => typeof m === 'object' && m !== null && 'method' in m && 'id' in m);
}

export interface McpFront {
  routes: Hono<BelayEnv>;
  ctx: McpContext;
  sessions: SessionRegistry;
  close(): Promise<void>;
}

export function createMcpFront(options: McpRouteOptions): McpFront {
  const { service, limits } = options;
  const ctx = mcpContext(service, options.mcp);
  const sessions = new SessionRegistry(ctx.sessionIdleMs);
  const kicks = new InputKicks();
  const app = new Hono<BelayEnv>();

  async function openSession(req: Request, who: Principal, parsedBody: unknown): Promise<Response> {
    const id = randomUUID();
    let session: McpSession | null = null;
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: () => {
        if (session) sessions.add(session);
      },
      onsessionclosed: () => sessions.remove(id),
    });
    const live = (session = new McpSession(id, who, transport, ctx));
    const server = createLegacyServer(ctx, who, { session: live, signalFor: (rid) => live.takeSignal(rid), kicks });
    live.server = server;
    server.onclose = () => {
      sessions.remove(id);
      live.notifier.close();
    };
    await server.connect(transport);
    return transport.handleRequest(req, { parsedBody, authInfo: authInfoFor(who) });
  }

  app.post(MCP_PATH, async (c) => {
    const who = principalOf(c);
    let body: unknown;
    try {
      body = await readJsonBody(c.req.raw, limits);
    } catch (e) {
      return rpcErrorResponse(null, rpcErrorFor(e), httpStatusFor(e));
    }
    const batch = Array.isArray(body);
    const messages: unknown[] = batch ? (body as unknown[]) : [body];
    if (messages.length === 0 || messages.length > 100) return rpcErrorResponse(null, { code: RPC.INVALID_REQUEST, message: 'Invalid Request: 1-100 messages per POST' }, 400);
    const session = sessions.get(c.req.header('mcp-session-id'), who);

    const rest: unknown[] = [];
    for (const m of messages) {
      if (!isElicitationResponse(m)) {
        rest.push(m);
        continue;
      }
      // Still open after this response (declined, refused): the question may be asked again on this session.
      await applyElicitationResponse(service, who, m, kicks, (ref) => session?.release(ref.taskId, ref.version));
    }
    if (rest.length === 0) return c.body(null, 202);

    if (rest.some(isModernMessage)) {
      if (batch || rest.length !== 1) return rpcErrorResponse(null, { code: RPC.INVALID_REQUEST, message: 'Invalid Request: protocol 2026-07-28 takes one JSON-RPC message per POST' }, 400);
      return handleModernMessage(c.req.raw, rest[0], { ctx, who, signal: c.req.raw.signal });
    }

    const parsedBody = batch ? rest : rest[0];
    if (session) {
      for (const r of requestsIn(rest)) if (LONG_METHODS.has(r.method)) session.setSignal(r.id, c.req.raw.signal);
      return session.transport.handleRequest(c.req.raw, { parsedBody, authInfo: authInfoFor(who) });
    }
    if (rest.some((m) => isInitializeRequest(m))) return openSession(c.req.raw, who, parsedBody);
    // Served without a session: another gateway's session, one from before a restart, or a stateless client.
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const server = createLegacyServer(ctx, who, { session: null, signalFor: () => c.req.raw.signal, kicks });
    await server.connect(transport);
    return transport.handleRequest(c.req.raw, { parsedBody, authInfo: authInfoFor(who) });
  });

  // The standalone stream of a 2025-11-25 session: status notifications, and questions for clients that only poll.
  app.get(MCP_PATH, async (c) => {
    const who = principalOf(c);
    const id = c.req.header('mcp-session-id');
    if (!id) return rpcErrorResponse(null, { code: RPC.INVALID_REQUEST, message: 'Method not allowed: open a session first (this endpoint streams per session)' }, 405, { allow: 'POST, GET, DELETE' });
    const session = sessions.get(id, who);
    if (!session) return rpcErrorResponse(null, { code: -32001, message: 'Session not found' }, 404);
    const res = await session.transport.handleRequest(c.req.raw);
    if (res.status === 200 && (res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      session.standaloneOpen = true;
      c.req.raw.signal.addEventListener('abort', () => (session.standaloneOpen = false), { once: true });
      session.notifier.replayInputRequests();
    }
    return res;
  });

  app.delete(MCP_PATH, async (c) => {
    const who = principalOf(c);
    const session = sessions.get(c.req.header('mcp-session-id'), who);
    if (!session) return rpcErrorResponse(null, { code: -32001, message: 'Session not found' }, 404);
    return session.transport.handleRequest(c.req.raw);
  });

  app.all(MCP_PATH, () => rpcErrorResponse(null, { code: RPC.INVALID_REQUEST, message: 'Method not allowed' }, 405, { allow: 'POST, GET, DELETE' }));

  return { routes: app, ctx, sessions, close: () => sessions.closeAll() };
}
