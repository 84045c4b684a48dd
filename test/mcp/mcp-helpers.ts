/**
 * Helpers for the MCP front tests: a Belay gateway (app + in-process worker) on a real socket, the real SDK 1.x client,
 * and a raw JSON-RPC poster for the wire-level checks.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type ApplicationInputHandler, type RawClientDispatch, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { Clock } from '../../src/core/clock.js';
import { systemClock } from '../../src/core/clock.js';
import { Authenticator, parseApiKeySpec } from '../../src/protocols/http/auth.js';
import type { TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { Worker } from '../../src/runtime/worker.js';
import { createBelayApp } from '../../src/server/app.js';
import { listen, type RunningServer } from '../../src/server/http-server.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';

export const ALICE = 'key-alice-0123456789abcdef';
export const BOB = 'key-bob-0123456789abcdefgh';
export const MALLORY = 'key-mallory-0123456789abcdef';
export const KEYS = [`${ALICE}=acme:alice`, `${BOB}=acme:bob`, `${MALLORY}=globex:mallory`];

/** A clock the test can move forward (for ttl expiry) while the worker keeps real time. */
export class OffsetClock implements Clock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }
}

export interface Gateway {
  url: string;
  service: TaskService;
  clock: OffsetClock;
  server: RunningServer;
  close(): Promise<void>;
}

export async function startGateway(store: Store, registry: TaskTypeRegistry, options: { ttl?: { minMs?: number; defaultMs?: number; maxMs?: number } } = {}): Promise<Gateway> {
  const clock = new OffsetClock();
  const service = new TaskService({ store, registry, clock });
  const app = createBelayApp({
    service,
    auth: new Authenticator({ apiKeys: KEYS.map(parseApiKeySpec) }),
    rateLimit: null,
    a2a: false,
    mcp: { pollIntervalMs: 100, followPollMs: 200, ...(options.ttl ? { ttl: options.ttl } : {}) },
  });
  const server = await listen(app.fetch, { port: 0, host: '127.0.0.1' });
  return { url: `${server.url}/mcp`, service, clock, server, close: () => server.close() };
}

export function startWorker(store: Store, registry: TaskTypeRegistry): Worker {
  const worker = new Worker({ store, registry, concurrency: 4, leaseMs: 2000, pollMs: 50, deadlineSweepMs: 200 });
  worker.start();
  return worker;
}

export interface ClientOptions {
  /** Answers elicitations (declares the elicitation capability). */
  onElicit?: (request: ElicitRequest) => ElicitResult | Promise<ElicitResult>;
  sessionId?: string;
}

export async function connectClient(url: string, key: string, options: ClientOptions = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'belay-test', version: '1.0.0' }, { capabilities: options.onElicit ? { elicitation: { form: {} } } : {} });
  if (options.onElicit) {
    const handler = options.onElicit;
    client.setRequestHandler(ElicitRequestSchema, async (request) => handler(request));
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    ...(options.sessionId ? { sessionId: options.sessionId } : {}),
  });
  await client.connect(transport);
  return { client, transport };
}

export interface RpcReply {
  status: number;
  headers: Headers;
  body: any;
}

/** Posts one raw JSON-RPC body and reads a JSON or SSE answer (the last `data:` frame that is a response). */
export async function rpc(url: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<RpcReply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const frames = text
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trim())
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    parsed = frames.reverse().find((f) => 'result' in f || 'error' in f) ?? null;
  } else if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      // keep the text
    }
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Opens a raw 2025-11-25 session and returns its id and a poster bound to it. */
export async function rawSession(url: string, key: string): Promise<{ sessionId: string; post: (body: unknown) => Promise<RpcReply> }> {
  const init = await rpc(url, key, {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
  });
  const sessionId = init.headers.get('mcp-session-id');
  if (!sessionId) throw new Error(`no session: ${JSON.stringify(init.body)}`);
  const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  await rpc(url, key, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return { sessionId, post: (body) => rpc(url, key, body, headers) };
}

// ---- The 2026-07-28 revision (SDK 2.x client) and the independent ext-tasks requester ----------------------------


export const MODERN = '2026-07-28';

/**
 * An SDK 2.x client: pinned to 2026-07-28 (`modern`), or the plain 2025-11-25 handshake (`legacy`). It declares
 * form elicitation when it answers questions itself (`onElicit`) or lets ext-tasks answer them (`elicitation`).
 */
export async function connectV2Client(
  url: string,
  key: string,
  era: 'modern' | 'legacy',
  onElicit?: (params: Record<string, unknown>) => { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> },
  elicitation = false,
): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'belay-ext-test', version: '1.0.0' },
    { capabilities: onElicit || elicitation ? { elicitation: { form: {} } } : {}, ...(era === 'modern' ? { versionNegotiation: { mode: { pin: MODERN } } } : {}) },
  );
  if (onElicit) client.setRequestHandler('elicitation/create', (request) => onElicit(request.params as Record<string, unknown>) as never);
  await client.connect(new ModernTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

/** Posts 2026-07-28 requests as the spec frames them (the host-owned raw path ext-tasks needs for tasks/*). */
export function modernDispatch(url: string, key: string): RawClientDispatch {
  let n = 0;
  return async (request, options) => {
    const r = request as { method: string; params?: Record<string, any> };
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(options?.context?.headers ?? {})) headers[k.toLowerCase()] = v;
    Object.assign(headers, {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': String(r.params?._meta?.['io.modelcontextprotocol/protocolVersion'] ?? ''),
      'mcp-method': r.method,
    });
    const name = r.method === 'tools/call' ? r.params?.name : r.params?.taskId;
    if (typeof name === 'string') headers['mcp-name'] = name;
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: `d${++n}`, ...r }), ...(options?.signal ? { signal: options.signal } : {}) });
    const text = await res.text();
    const msg = (res.headers.get('content-type') ?? '').includes('text/event-stream')
      ? text
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => JSON.parse(l.slice(5)) as Record<string, any>)
          .at(-1)!
      : (JSON.parse(text) as Record<string, any>);
    return msg.error ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
  };
}

/** ext-tasks over an SDK 2.x client; for `modern` it frames requests for 2026-07-28 through `modernDispatch`. */
export function extTasksSession(client: ModernClient, url: string, key: string, onInputRequest?: ApplicationInputHandler['handle']): TaskEnabledSession {
  const common = { endpointId: `belay:${url}`, ...(onInputRequest ? { onInputRequest } : {}) };
  if (client.getProtocolEra() !== 'modern') return createTaskSessionFromClient(client, common);
  return createTaskSessionFromClient(client, {
    ...common,
    rawDispatch: modernDispatch(url, key),
    v2RequestFraming: { protocolVersion: MODERN, clientInfo: { name: 'belay-ext-test', version: '1.0.0' }, clientCapabilities: { elicitation: { form: {} } } },
  });
}

/** One raw 2026-07-28 request with the envelope and headers (overridable, to break them on purpose). */
export function modernRpc(url: string, key: string, method: string, params: Record<string, unknown>, options: { extension?: boolean; version?: string; headers?: Record<string, string> } = {}): Promise<RpcReply> {
  const version = options.version ?? MODERN;
  const meta = {
    'io.modelcontextprotocol/protocolVersion': version,
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
    'io.modelcontextprotocol/clientCapabilities': options.extension === false ? {} : { extensions: { 'io.modelcontextprotocol/tasks': {} } },
  };
  const name = method === 'tools/call' ? params.name : params.taskId;
  return rpc(url, key, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }, {
    'mcp-protocol-version': version,
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    ...options.headers,
  });
}
