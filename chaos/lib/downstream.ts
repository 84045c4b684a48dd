/**
 * The fake downstream for chaos runs: the same contract as `src/examples/downstream.ts` (idempotent by
 * `Idempotency-Key`: a repeated key returns the first receipt and applies nothing), but it records every call with
 * its time, so the history checker sees each attempt and each application.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Json } from '../../src/core/task.js';
import type { Receipt } from '../history.js';

export class ChaosDownstream {
  readonly receipts: Receipt[] = [];
  private readonly applied = new Map<string, Json>();
  private server: Server | null = null;
  url = '';
  /** Extra latency per call (ms), to widen the window between sending and recording an effect. */
  delayMs = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const send = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        const path = req.url ?? '';
        if (req.method === 'GET' && path.startsWith('/actions?')) {
          const key = new URL(path, 'http://x').searchParams.get('key') ?? '';
          const found = this.applied.get(key);
          if (found !== undefined) send(200, found);
          else send(404, { error: 'no such action' });
          return;
        }
        const key = req.headers['idempotency-key'];
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
        const m = /^\/actions\/([^/?]+)$/.exec(path);
        const route = path === '/effects' ? 'effects' : m ? `actions/${decodeURIComponent(m[1]!)}` : null;
        if (!route) {
          send(404, { error: 'not found' });
          return;
        }
        const answer = () => {
          const fresh = !this.applied.has(key);
          if (fresh) this.applied.set(key, { key, route, receipt: `r${this.applied.size + 1}` });
          this.receipts.push({ key, route, body, at: Date.now(), fresh });
          send(200, this.applied.get(key));
        };
        if (this.delayMs > 0) setTimeout(answer, this.delayMs);
        else answer();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get effectUrl(): string {
    return `${this.url}/effects`;
  }

  /** Distinct keys applied, and calls in all (repeats were deduplicated by key). */
  counts(): { applied: number; calls: number } {
    return { applied: this.applied.size, calls: this.receipts.length };
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server = null;
  }
}
