/** Raw callers for the A2A (JSON-RPC, HTTP+JSON) and MCP (Streamable HTTP) fronts, for the matrix and the fuzzer. */
import { randomBytes } from 'node:crypto';

export interface RawReply {
  status: number | 'network';
  contentType: string;
  text: string;
  /** JSON body, or the last JSON-RPC response of an SSE answer. */
  body: any;
}

/** One request, answered as it came; a 429 (the per-principal rate limit) is waited out and sent again. */
export async function rawCall(url: string, init: { method?: string; key: string; headers?: Record<string, string>; body?: string | Uint8Array; timeoutMs?: number }): Promise<RawReply> {
  for (let i = 0; ; i++) {
    const r = await rawCallOnce(url, init);
    if (r.status !== 429 || i >= 30) return r;
    await new Promise((res) => setTimeout(res, 300));
  }
}

async function rawCallOnce(url: string, init: { method?: string; key: string; headers?: Record<string, string>; body?: string | Uint8Array; timeoutMs?: number }): Promise<RawReply> {
  try {
    const res = await fetch(url, {
      method: init.method ?? 'POST',
      headers: { authorization: `Bearer ${init.key}`, ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body }),
      signal: AbortSignal.timeout(init.timeoutMs ?? 15_000),
    });
    const contentType = res.headers.get('content-type') ?? '';
    const text = await res.text();
    let body: unknown = null;
    if (contentType.includes('text/event-stream')) {
      const frames = text
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => {
          try {
            return JSON.parse(l.slice(5)) as Record<string, unknown>;
          } catch {
            return null;
          }
        })
        .filter((f): f is Record<string, unknown> => f !== null);
      body = frames.reverse().find((f) => 'result' in f || 'error' in f) ?? frames[0] ?? null;
    } else if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
    }
    return { status: res.status, contentType, text, body };
  } catch (e) {
    return { status: 'network', contentType: '', text: (e as Error).message, body: null };
  }
}

export const A2A_HEADERS = { 'content-type': 'application/json', 'a2a-version': '1.0' };

export function a2aRpc(base: string, key: string, method: string, params: unknown, timeoutMs = 15_000): Promise<RawReply> {
  return rawCall(`${base}/a2a/jsonrpc`, { key, headers: { ...A2A_HEADERS, accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), timeoutMs });
}

export function a2aRest(base: string, key: string, method: string, path: string, body?: unknown, timeoutMs = 15_000): Promise<RawReply> {
  return rawCall(`${base}/a2a/rest${path}`, {
    key,
    method,
    headers: { ...A2A_HEADERS, accept: 'application/json, text/event-stream' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    timeoutMs,
  });
}

/** A raw MCP 2025-11-25 session: initialize, then requests bound to its id. */
export async function mcpSession(base: string, key: string): Promise<{ id: string; call: (method: string, params: unknown) => Promise<RawReply> } | null> {
  const url = `${base}/mcp`;
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'chaos', version: '0' } } }),
  }).catch(() => null);
  if (!res) return null;
  await res.text();
  const id = res.headers.get('mcp-session-id');
  if (!id) return null;
  const bound = { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
  await rawCall(url, { key, headers: bound, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  let n = 1;
  return { id, call: (method, params) => rawCall(url, { key, headers: bound, body: JSON.stringify({ jsonrpc: '2.0', id: ++n, method, params }) }) };
}

/** A task id in Belay's format that names nothing. */
export function randomTaskId(): string {
  return `task_${Date.now().toString(16).padStart(12, '0')}${randomBytes(16).toString('hex')}`;
}

/** The answer with every occurrence of `id` (and JSON-RPC ids) masked, to compare a foreign id with a missing one. */
export function normalized(r: RawReply, id: string): string {
  const text = r.text.split(id).join('<ID>').replace(/"id":\s*\d+/g, '"id":0');
  return `${String(r.status)} ${text}`;
}
