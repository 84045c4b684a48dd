/**
 * An in-process TCP proxy (after pg-boss's `test/halfOpenProxy.ts`) to stand between Belay processes and PostgreSQL
 * or between a client and a gateway. Modes:
 * - `pass`: forward both ways;
 * - `pause`: stop reading both ways (TCP back-pressure; nothing is lost): a partition that heals, so requests sent
 *   during it arrive LATE — the stale-writer case;
 * - `blackhole`: read and discard both ways, keep the sockets open: the peers see a silent, half-open connection.
 *   `heal()` from a black hole destroys those connections (their streams are corrupt), so clients see a reset;
 * - `hold`: forward requests, hold every answer (the upstream is not read): with `resetAll()` after the upstream
 *   committed, the client sees its connection die with no answer.
 */
import { createServer, Socket, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';

export type ProxyMode = 'pass' | 'pause' | 'blackhole' | 'hold';

interface Pair {
  client: Socket;
  upstream: Socket;
  poisoned: boolean;
}

export class TcpProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<Pair>();
  mode: ProxyMode = 'pass';
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = new Socket();
      const pair: Pair = { client, upstream, poisoned: false };
      this.pairs.add(pair);
      const drop = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', drop);
      upstream.on('error', drop);
      client.on('close', drop);
      upstream.on('close', drop);
      const forward = (from: Socket, to: Socket) =>
        from.on('data', (chunk: Buffer) => {
          if (this.mode === 'blackhole' || pair.poisoned) {
            pair.poisoned = true;
            return;
          }
          if (!to.write(chunk)) {
            from.pause();
            to.once('drain', () => {
              if (this.flows(pair, from)) from.resume();
            });
          }
        });
      forward(client, upstream);
      forward(upstream, client);
      if (!this.flows(pair, client)) client.pause();
      if (!this.flows(pair, upstream)) upstream.pause();
      upstream.connect(this.targetPort, this.targetHost);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  private flows(pair: Pair, from: Socket): boolean {
    if (this.mode === 'pause') return false;
    if (this.mode === 'hold') return from === pair.client;
    return true;
  }

  setMode(mode: ProxyMode): void {
    this.mode = mode;
    for (const p of this.pairs) {
      for (const sock of [p.client, p.upstream]) {
        if (this.flows(p, sock)) sock.resume();
        else sock.pause();
      }
    }
  }

  /** Back to `pass`; connections that lost bytes in a black hole are reset (their protocol stream is broken). */
  heal(): void {
    for (const p of [...this.pairs]) {
      if (p.poisoned) {
        p.client.resetAndDestroy();
        p.upstream.destroy();
        this.pairs.delete(p);
      }
    }
    this.setMode('pass');
  }

  /** Resets every connection through the proxy (a gateway or network dying mid-response). */
  resetAll(): void {
    for (const p of [...this.pairs]) {
      p.client.resetAndDestroy();
      p.upstream.destroy();
      this.pairs.delete(p);
    }
  }

  get connections(): number {
    return this.pairs.size;
  }

  async close(): Promise<void> {
    this.resetAll();
    if (this.server) await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server = null;
  }
}
