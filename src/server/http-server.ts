import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Serves a fetch-style handler on Node. `close` stops accepting, ends open streams and waits. */
export function listen(fetch: (request: Request) => Response | Promise<Response>, options: { port: number; host: string }): Promise<RunningServer> {
  return new Promise((resolve) => {
    const server: ServerType = serve({ fetch, port: options.port, hostname: options.host }, (info: AddressInfo) => {
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            const s = server as unknown as { closeAllConnections?: () => void; close(cb: () => void): void };
            s.close(() => done());
            s.closeAllConnections?.();
          }),
      });
    });
  });
}
