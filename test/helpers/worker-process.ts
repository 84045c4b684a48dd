/** Real worker processes for crash tests: `node bin/belay.js worker`, killed with real signals. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/belay.js', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  id: Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

export function spawnWorker(opts: { db: string; downstreamUrl: string; leaseMs: number; crashAt?: string; concurrency?: number; pollMs?: number }): WorkerProcess {
  const child = spawn(
    process.execPath,
    [BIN, 'worker', '--db', opts.db, '--lease-ms', String(opts.leaseMs), '--poll-ms', String(opts.pollMs ?? 50), '--concurrency', String(opts.concurrency ?? 4)],
    {
      env: { ...process.env, BELAY_DOWNSTREAM_URL: opts.downstreamUrl, BELAY_CRASH_AT: opts.crashAt ?? '', BELAY_LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let err = '';
  child.stderr.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-20_000);
  });
  const id = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', () => reject(new Error(`worker exited before READY: ${err}`)));
  });
  id.catch(() => {});
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, id, exited, stderr: () => err };
}
