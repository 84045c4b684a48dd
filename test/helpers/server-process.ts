/** A real `belay serve` process for tests that restart every process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/belay.js', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  url: Promise<string>;
  exited: Promise<unknown>;
}

export function spawnServer(opts: { db: string; apiKeys: string[]; workers?: number; downstreamUrl?: string; leaseMs?: number; crashAt?: string; port?: number; cwd?: string }): ServerProcess {
  const args = [BIN, 'serve', '--db', opts.db, '--port', String(opts.port ?? 0), '--workers', String(opts.workers ?? 0), '--lease-ms', String(opts.leaseMs ?? 1000), '--poll-ms', '50'];
  for (const k of opts.apiKeys) args.push('--api-key', k);
  const child = spawn(process.execPath, args, {
    env: { ...process.env, BELAY_LOG_LEVEL: 'error', BELAY_DOWNSTREAM_URL: opts.downstreamUrl ?? '', BELAY_CRASH_AT: opts.crashAt ?? '', BELAY_API_KEYS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-10_000)));
  const url = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', () => reject(new Error(`server exited before READY: ${err}`)));
  });
  url.catch(() => {});
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { child, url, exited };
}
