/**
 * Real Belay processes for the chaos harness: `belay worker` and `belay serve --workers 0` (a gateway), started from
 * the built CLI (`bin/belay.js`), killed and frozen with real signals.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { BELAY_BIN as BIN } from './paths.js';

export interface ProcExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ProcOptions {
  db: string;
  leaseMs?: number;
  pollMs?: number;
  concurrency?: number;
  /** `label:nth` for BELAY_CRASH_AT. */
  crashAt?: string;
  /** BELAY_CLOCK_SKEW_MS: the process's clock runs this far ahead (negative: behind). */
  skewMs?: number;
  downstreamUrl?: string;
  /** Gateways: `KEY=TENANT[:PRINCIPAL[:ROLE]]`. */
  apiKeys?: string[];
  /** BELAY_LOG_LEVEL for this process (default CHAOS_LOG_LEVEL or error). */
  logLevel?: string;
  /** More environment (webhook settings). */
  env?: Record<string, string>;
}

export class BelayProc {
  readonly child: ChildProcess;
  /** Worker id (`READY <id>`) or gateway URL (`READY <url>`). */
  readonly ready: Promise<string>;
  readonly exited: Promise<ProcExit>;
  readyValue: string | null = null;
  readyAt: number | null = null;
  exit: ProcExit | null = null;
  exitAt: number | null = null;
  /** Set when the harness ends the process on purpose (a kill is part of the scenario, not a crash). */
  expectedExit = false;
  startedAt = Date.now();
  /** Times the worker logged that a commit or renewal found its lease gone (needs logLevel info). */
  leaseLostLogs = 0;
  /** Times the process logged a busy SQLite database (another process holds the write lock). */
  busyLogs = 0;
  private err = '';

  constructor(
    readonly kind: 'worker' | 'gateway',
    readonly options: ProcOptions,
  ) {
    const o = options;
    const common = ['--db', o.db, '--lease-ms', String(o.leaseMs ?? 1000), '--poll-ms', String(o.pollMs ?? 50)];
    const args =
      kind === 'worker'
        ? [BIN, 'worker', ...common, '--concurrency', String(o.concurrency ?? 4)]
        : [BIN, 'serve', ...common, '--port', '0', '--host', '127.0.0.1', '--workers', '0', ...(o.apiKeys ?? []).flatMap((k) => ['--api-key', k])];
    this.child = spawn(process.execPath, args, {
      env: {
        ...process.env,
        BELAY_LOG_LEVEL: o.logLevel ?? process.env.CHAOS_LOG_LEVEL ?? 'error',
        BELAY_DOWNSTREAM_URL: o.downstreamUrl ?? '',
        BELAY_CRASH_AT: o.crashAt ?? '',
        BELAY_CLOCK_SKEW_MS: String(o.skewMs ?? 0),
        BELAY_API_KEYS: '',
        BELAY_DB: '',
        BELAY_CONFIG: '',
        BELAY_WEBHOOK_ALLOWLIST: '',
        ...o.env,
      },
      // Not the repository: no `.belay/config.json` of a developer's can change what runs.
      cwd: tmpdir(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stderr!.on('data', (d: Buffer) => {
      const text = d.toString();
      this.leaseLostLogs += text.split('lease lost').length - 1;
      this.busyLogs += text.split(/database is locked|SQLITE_BUSY/).length - 1;
      this.err = (this.err + text).slice(-8000);
    });
    this.ready = new Promise<string>((resolve, reject) => {
      let out = '';
      this.child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /READY (\S+)/.exec(out);
        if (m && this.readyValue === null) {
          this.readyValue = m[1]!;
          this.readyAt = Date.now();
          resolve(m[1]!);
        }
        if (out.length > 100_000) out = out.slice(-1000);
      });
      this.child.once('exit', () => reject(new Error(`${kind} exited before READY: ${this.err.slice(-2000)}`)));
    });
    this.ready.catch(() => undefined);
    this.exited = new Promise<ProcExit>((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        this.exitAt = Date.now();
        resolve(this.exit);
      }),
    );
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /** Sends a signal the scenario means to send. SIGKILL and SIGTERM mark the exit as expected. */
  signal(sig: NodeJS.Signals): void {
    if (!this.alive) return;
    if (sig === 'SIGKILL' || sig === 'SIGTERM') this.expectedExit = true;
    try {
      this.child.kill(sig);
    } catch {
      // already gone
    }
  }

  async kill(): Promise<ProcExit> {
    this.signal('SIGCONT');
    this.signal('SIGKILL');
    return this.exited;
  }

  /** True when the process killed itself at its crash point (BELAY_CRASH_AT). */
  get hitCrashPoint(): boolean {
    return !this.expectedExit && this.exit?.signal === 'SIGKILL' && !!this.options.crashAt;
  }

  /** An exit nobody asked for: neither a harness signal nor the selected crash point. */
  get crashed(): boolean {
    return this.exit !== null && !this.expectedExit && !this.hitCrashPoint;
  }

  stderr(): string {
    return this.err;
  }
}
