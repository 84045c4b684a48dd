/** Real `node bin/belay.js ...` processes for CLI tests: run to completion, or spawn and watch their output live. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/belay.js', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd: string;
  /** Added to a clean environment: no BELAY_* variable leaks in from the test runner's. */
  env?: Record<string, string>;
  timeoutMs?: number;
  stdin?: string;
}

function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('BELAY_') && k !== 'PORT') env[k] = v;
  return { ...env, BELAY_LOG_LEVEL: 'error', ...extra };
}

export interface LiveCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  done: Promise<CliResult>;
}

export function spawnCli(args: string[], opts: CliOptions): LiveCli {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd, env: cleanEnv(opts.env), stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  if (opts.stdin !== undefined) child.stdin.end(opts.stdin);
  else child.stdin.end();
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  const done = new Promise<CliResult>((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: out, stderr: err });
    }),
  );
  return { child, stdout: () => out, stderr: () => err, done };
}

export function runCli(args: string[], opts: CliOptions): Promise<CliResult> {
  return spawnCli(args, opts).done;
}
