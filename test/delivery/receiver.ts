/**
 * Test receivers on loopback: a scripted webhook receiver that records every request (and can fail on cue), and a
 * canary that counts connections (an SSRF test passes only when it stays silent).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  id: string;
  timestamp: number;
  signature: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  path: string;
  /** 1-based: which delivery of this webhook-id this was. */
  nth: number;
}

/** What to answer: a status (with headers), `hang` (never answer), or a custom handler. */
export type Reply =
  | { status: number; headers?: Record<string, string>; body?: string }
  | 'hang'
  | ((req: IncomingMessage, body: string, res: ServerResponse) => void | Promise<void>);

export class TestReceiver {
  readonly received: Received[] = [];
  connections = 0;
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  url = '';
  /** Decides the reply for a request; default 204. */
  script: (r: Received) => Reply = () => ({ status: 204 });

  static async start(host = '127.0.0.1'): Promise<TestReceiver> {
    const r = new TestReceiver();
    r.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const id = String(req.headers['webhook-id'] ?? '');
        const rec: Received = {
          id,
          timestamp: Number(req.headers['webhook-timestamp'] ?? NaN),
          signature: String(req.headers['webhook-signature'] ?? ''),
          headers: req.headers,
          body,
          path: req.url ?? '/',
          nth: r.received.filter((x) => x.id === id).length + 1,
        };
        r.received.push(rec);
        const reply = r.script(rec);
        if (reply === 'hang') return;
        if (typeof reply === 'function') {
          void Promise.resolve(reply(req, body, res));
          return;
        }
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? '');
      });
    });
    r.server.on('connection', (s: Socket) => {
      r.connections += 1;
      r.sockets.add(s);
      s.on('close', () => r.sockets.delete(s));
    });
    await new Promise<void>((resolve) => r.server.listen(0, host, resolve));
    const a = r.server.address() as AddressInfo;
    r.url = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
    return r;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  ids(): string[] {
    return [...new Set(this.received.map((x) => x.id))];
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Verifies a recorded request with the reference `standardwebhooks` library (an independent implementation), with
 * its clock set to the request's own timestamp (tests move an injected clock far from the wall clock).
 */
export function verifiesWith(secret: string, r: Received): boolean {
  const realNow = Date.now;
  Date.now = () => r.timestamp * 1000;
  try {
    new Webhook(secret).verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': String(r.timestamp), 'webhook-signature': r.signature });
    return true;
  } catch {
    return false;
  } finally {
    Date.now = realNow;
  }
}
