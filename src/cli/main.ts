#!/usr/bin/env node
/**
 * @module cli/main
 * The `belay` command: a composition root. It alone reads the environment, picks a store and installs signal
 * handlers.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { processClock } from './clock.js';
import { coerceError } from '../core/errors.js';
import { exampleRegistry, HttpDownstream, InMemoryDownstream, type Downstream } from '../examples/index.js';
import { faultPointsFromSpec } from '../runtime/fault-points.js';
import { Worker } from '../runtime/worker.js';
import { runDemo } from './demo.js';
import { runServe } from './serve.js';
import { openStoreFromUrl } from './open-store.js';

const USAGE = `Usage: belay <command> [options]

Commands:
  serve     Start the HTTP server (REST API) with workers and the example task types (SQLite by default)
  demo      Run the access-review example end to end on SQLite and print its progress
  worker    Run workers for the example task types until SIGTERM
  migrate   Apply migrations and print the schema version

Options:
  --db <path|postgres://...>   Store (default: .belay/belay.db, or BELAY_DB)
  --concurrency <n>            Tasks run at once by this process (worker; default 4)
  --lease-ms <ms>              Lease length (worker; default 30000)
  --poll-ms <ms>               Longest sleep between claims (worker; default 1000)
  --synchronous <full|normal>  SQLite durability (default full)
  --port <n>                   HTTP port (serve; default 8787)
  --host <addr>                HTTP bind address (serve; default 127.0.0.1)
  --api-key KEY=TENANT[:PRINCIPAL[:ROLE]]   Accept this bearer key (serve; repeatable; also BELAY_API_KEYS)
  --jwks-url <url>             Also accept JWTs verified against this JWKS (serve)
  --workers <n>                Worker slots in the serve process (default 4; 0 = gateway only)
  --insecure-no-auth           Development only: no authentication (serve)

Environment: BELAY_DB, BELAY_API_KEYS, BELAY_LOG_LEVEL, BELAY_DOWNSTREAM_URL (examples act on this HTTP downstream),
BELAY_CRASH_AT (label:nth, chaos tests only).`;

function intOption(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got "${value}"`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      db: { type: 'string' },
      concurrency: { type: 'string' },
      'lease-ms': { type: 'string' },
      'poll-ms': { type: 'string' },
      synchronous: { type: 'string' },
      systems: { type: 'string' },
      revocations: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      port: { type: 'string' },
      host: { type: 'string' },
      'api-key': { type: 'string', multiple: true },
      'jwks-url': { type: 'string' },
      workers: { type: 'string' },
      'insecure-no-auth': { type: 'boolean' },
    },
  });
  const command = positionals[0];
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  const db = values.db ?? process.env.BELAY_DB ?? '.belay/belay.db';
  if (values.synchronous !== undefined && values.synchronous !== 'full' && values.synchronous !== 'normal') {
    throw new Error(`--synchronous must be "full" or "normal", got "${values.synchronous}"`);
  }
  if (!/^postgres(ql)?:\/\//.test(db)) mkdirSync(dirname(db), { recursive: true });
  const logger = pino({ level: process.env.BELAY_LOG_LEVEL ?? 'warn' }, pino.destination(2));
  const synchronous: 'full' | 'normal' | undefined = values.synchronous === 'full' || values.synchronous === 'normal' ? values.synchronous : undefined;
  const storeOptions = synchronous ? { sqliteSynchronous: synchronous } : {};

  switch (command) {
    case 'serve': {
      const workers = values.workers === undefined ? 4 : Number(values.workers);
      if (!Number.isInteger(workers) || workers < 0) throw new Error(`--workers must be a non-negative integer, got "${values.workers}"`);
      const port = values.port === undefined ? Number(process.env.PORT ?? 8787) : Number(values.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a port number, got "${values.port}"`);
      return runServe({
        db,
        port,
        host: values.host ?? '127.0.0.1',
        apiKeys: values['api-key'] ?? [],
        insecureNoAuth: values['insecure-no-auth'] === true,
        workers,
        leaseMs: intOption(values['lease-ms'], 'lease-ms', 30_000),
        pollMs: intOption(values['poll-ms'], 'poll-ms', 1000),
        ...(values['jwks-url'] ? { jwksUrl: values['jwks-url'] } : {}),
        storeOptions,
        logger,
        env: process.env,
      });
    }
    case 'demo':
      return runDemo({
        db,
        systems: intOption(values.systems, 'systems', 40),
        revocations: intOption(values.revocations, 'revocations', 14),
        storeOptions,
      });
    case 'migrate': {
      const store = await openStoreFromUrl(db, storeOptions);
      console.log(`schema version ${await store.schemaVersion()}`);
      await store.close();
      return 0;
    }
    case 'worker': {
      const store = await openStoreFromUrl(db, storeOptions);
      const downstream: Downstream = process.env.BELAY_DOWNSTREAM_URL ? new HttpDownstream(process.env.BELAY_DOWNSTREAM_URL) : new InMemoryDownstream();
      const worker = new Worker({
        store,
        registry: exampleRegistry(downstream),
        clock: processClock(process.env),
        logger,
        concurrency: intOption(values.concurrency, 'concurrency', 4),
        leaseMs: intOption(values['lease-ms'], 'lease-ms', 30_000),
        pollMs: intOption(values['poll-ms'], 'poll-ms', 1000),
        faultPoint: faultPointsFromSpec(process.env.BELAY_CRASH_AT),
      });
      worker.start();
      console.log(`READY ${worker.id}`);
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      await worker.stop();
      await store.close();
      console.log(`STOPPED ${worker.id}`);
      return 0;
    }
    default:
      console.error(`Unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    console.error(`belay: ${coerceError(e).message}`);
    process.exitCode = 1;
  },
);
