/**
 * @module examples/downstream
 * The fake downstream service the examples act on: it honours idempotency keys (a repeated key returns the first
 * result and applies nothing) and counts what it applied, so tests can prove "exactly once" from outside Belay.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Json } from '../core/task.js';
import { RetryableError } from '../core/errors.js';

export interface Downstream {
  /** Applies an action once per idempotency key and returns its receipt. */
  apply(kind: string, idempotencyKey: string, payload: Json, signal?: AbortSignal): Promise<Json>;
  /** Looks an action up by its idempotency key: its receipt if it was applied, null if not (reconciliation). */
  lookup(idempotencyKey: string, signal?: AbortSignal): Promise<Json | null>;
}

export interface AppliedAction {
  kind: string;
  key: string;
  payload: Json;
  receipt: Json;
  /** How many times the key was presented (1 = never retried). */
  calls: number;
}

export class InMemoryDownstream implements Downstream {
  readonly applied = new Map<string, AppliedAction>();
  /** Every call, including retries with a known key. */
  calls = 0;

  async apply(kind: string, idempotencyKey: string, payload: Json): Promise<Json> {
    this.calls += 1;
    const known = this.applied.get(idempotencyKey);
    if (known) {
      known.calls += 1;
      return known.receipt;
    }
    const receipt: Json = { action_id: `act_${this.applied.size + 1}`, kind, key: idempotencyKey };
    this.applied.set(idempotencyKey, { kind, key: idempotencyKey, payload, receipt, calls: 1 });
    return receipt;
  }

  async lookup(idempotencyKey: string): Promise<Json | null> {
    return this.applied.get(idempotencyKey)?.receipt ?? null;
  }

  countByKind(kind: string): number {
    return [...this.applied.values()].filter((a) => a.kind === kind).length;
  }
}

/** The same contract over HTTP, so a downstream outside the worker process can count effects across crashes. */
export class HttpDownstream implements Downstream {
  constructor(private readonly baseUrl: string) {}

  async apply(kind: string, idempotencyKey: string, payload: Json, signal?: AbortSignal): Promise<Json> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}/actions/${encodeURIComponent(kind)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify(payload),
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      throw RetryableError.from(e, { code: 'DOWNSTREAM_UNREACHABLE' });
    }
    if (!res.ok) throw new RetryableError(`Downstream answered ${res.status}`, { code: 'DOWNSTREAM_ERROR' });
    return (await res.json()) as Json;
  }

  async lookup(idempotencyKey: string, signal?: AbortSignal): Promise<Json | null> {
    const res = await fetch(`${this.baseUrl}/actions?key=${encodeURIComponent(idempotencyKey)}`, signal ? { signal } : {});
    if (res.status === 404) return null;
    if (!res.ok) throw new RetryableError(`Downstream lookup answered ${res.status}`, { code: 'DOWNSTREAM_ERROR' });
    return (await res.json()) as Json;
  }
}

export interface DownstreamServer {
  url: string;
  downstream: InMemoryDownstream;
  /** Effects received through `effectUrl` (the synthetic task type), by idempotency key. */
  effects: Map<string, { body: Json; calls: number }>;
  close(): Promise<void>;
}

/**
 * An HTTP fake downstream for tests and demos: `POST /actions/:kind` (idempotent by `Idempotency-Key`),
 * `POST /effects` (the synthetic task type's `effectUrl`), `GET /stats`.
 */
export async function startDownstreamServer(port = 0): Promise<DownstreamServer> {
  const downstream = new InMemoryDownstream();
  const effects = new Map<string, { body: Json; calls: number }>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const key = req.headers['idempotency-key'];
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET' && req.url === '/stats') {
        send(200, { calls: downstream.calls, applied: downstream.applied.size, effects: effects.size });
        return;
      }
      if (req.method === 'GET' && req.url?.startsWith('/actions?')) {
        const lookupKey = new URL(req.url, 'http://x').searchParams.get('key') ?? '';
        const found = downstream.applied.get(lookupKey);
        if (found) send(200, found.receipt);
        else send(404, { error: 'no such action' });
        return;
      }
      if (req.method !== 'POST' || typeof key !== 'string') {
        send(400, { error: 'POST with an Idempotency-Key header' });
        return;
      }
      let body: Json = null;
      try {
        body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json) : null;
      } catch {
        send(400, { error: 'invalid JSON' });
        return;
      }
      if (req.url === '/effects') {
        const seen = effects.get(key);
        if (seen) seen.calls += 1;
        else effects.set(key, { body, calls: 1 });
        send(200, { key, applied: !seen });
        return;
      }
      const m = /^\/actions\/([^/?]+)$/.exec(req.url ?? '');
      if (!m) {
        send(404, { error: 'not found' });
        return;
      }
      downstream.apply(decodeURIComponent(m[1]!), key, body).then(
        (receipt) => send(200, receipt),
        (e: unknown) => send(500, { error: String(e) }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const addr = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${addr.port}`,
    downstream,
    effects,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
