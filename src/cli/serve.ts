/**
 * `belay serve`: the gateway (REST) and, unless `--workers 0`, workers in the same process, on SQLite by default.
 * Prints the URL and a usable API key. Graceful shutdown on SIGTERM/SIGINT.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import type { Logger } from '../core/logger.js';
import { processClock } from './clock.js';
import { exampleRegistry, HttpDownstream, InMemoryDownstream, type Downstream } from '../examples/index.js';
import { Authenticator, parseApiKeySpec, type ApiKeyEntry } from '../protocols/http/auth.js';
import { faultPointsFromSpec } from '../runtime/fault-points.js';
import { Worker } from '../runtime/worker.js';
import { createBelayApp } from '../server/app.js';
import { listen } from '../server/http-server.js';
import { TaskService } from '../service/task-service.js';
import { CONFIG_HELP, intSetting, parseFlags, parseIntSetting, parseServerUrl, pick, resolveStoreSettings, UsageError } from './config.js';
import { openStoreFromUrl } from './open-store.js';
import { UrlGuard } from '../delivery/ssrf-guard.js';
import { createBelayMetrics, meterStore } from '../metrics/belay-metrics.js';
import { startBackground, webhookSettings } from '../server/background.js';
import { WebhookService } from '../service/webhook-service.js';

export const SERVE_USAGE = `Usage: belay serve [options]

The REST API, the web dashboard (/dashboard/) and, unless --workers 0, workers in one process.

Options:
  --db <path|postgres://...>   Store (BELAY_DB, config "db"; default .belay/belay.db)
  --port <n>                   HTTP port (PORT, config "port"; default 8787; 0 picks a free one)
  --host <addr>                Bind address (config "host"; default 127.0.0.1)
  --api-key KEY=TENANT[:PRINCIPAL[:ROLE]]   Accept this bearer key (repeatable; BELAY_API_KEYS, config "apiKeys").
                               Without any, a development admin key is made once and kept in .belay/api-key
  --jwks-url <url>             Also accept JWTs verified against this JWKS (config "jwksUrl")
  --workers <n>                Worker slots in this process (config "workers"; default 4; 0 = gateway only)
  --lease-ms <ms> --poll-ms <ms>   Worker lease length and longest sleep between claims (config "leaseMs", "pollMs")
  --synchronous <full|normal>  SQLite durability (config "synchronous"; default full)
  --insecure-no-auth           Development only: no authentication
  --webhook-allow-host <host|ip|cidr>   Let webhooks reach this non-public address (repeatable; BELAY_WEBHOOK_ALLOWLIST)
  --config <path>              Config file

${CONFIG_HELP}`;

const SERVE_OPTIONS = {
  db: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  'api-key': { type: 'string', multiple: true },
  'jwks-url': { type: 'string' },
  workers: { type: 'string' },
  'lease-ms': { type: 'string' },
  'poll-ms': { type: 'string' },
  synchronous: { type: 'string' },
  'insecure-no-auth': { type: 'boolean' },
  'webhook-allow-host': { type: 'string', multiple: true },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `belay serve` from its command line, environment and config file. */
export async function serveCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseFlags(argv, SERVE_OPTIONS, SERVE_USAGE);
  if (values.help) {
    console.log(SERVE_USAGE);
    return 0;
  }
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`, SERVE_USAGE);
  const store = resolveStoreSettings(values, env);
  const { config } = store;
  const portSetting = pick<string | number>({ flag: ['--port', values.port], env: ['PORT', env.PORT || undefined], config: [config, 'port', config.values.port] }, 8787);
  const jwks = pick<string | undefined>({ flag: ['--jwks-url', values['jwks-url']], config: [config, 'jwksUrl', config.values.jwksUrl] }, undefined);
  if (!/^postgres(ql)?:\/\//.test(store.db)) mkdirSync(dirname(store.db), { recursive: true });
  const flagKeys = values['api-key'] ?? [];
  return runServe({
    db: store.db,
    port: parseIntSetting(portSetting.value, portSetting.from, 0, 65535),
    host: pick({ flag: ['--host', values.host], config: [config, 'host', config.values.host] }, '127.0.0.1').value,
    apiKeys: flagKeys.length > 0 || env.BELAY_API_KEYS ? flagKeys : (config.values.apiKeys ?? []),
    insecureNoAuth: values['insecure-no-auth'] === true,
    workers: intSetting(['--workers', values.workers], config, 'workers', 4, 0),
    leaseMs: intSetting(['--lease-ms', values['lease-ms']], config, 'leaseMs', 30_000, 1),
    pollMs: intSetting(['--poll-ms', values['poll-ms']], config, 'pollMs', 1000, 1),
    ...(jwks.value !== undefined ? { jwksUrl: parseServerUrl(jwks.value, jwks.from) } : {}),
    storeOptions: store.synchronous ? { sqliteSynchronous: store.synchronous } : {},
    logger: pino({ level: env.BELAY_LOG_LEVEL ?? 'warn' }, pino.destination(2)),
    webhookAllowHosts: values['webhook-allow-host'] ?? [],
    env,
  });
}

export interface ServeOptions {
  db: string;
  port: number;
  host: string;
  apiKeys: string[];
  insecureNoAuth: boolean;
  workers: number;
  leaseMs: number;
  pollMs: number;
  jwksUrl?: string;
  storeOptions: { sqliteSynchronous?: 'full' | 'normal' };
  logger: Logger;
  /** Non-public webhook targets allowed (`--webhook-allow-host`); BELAY_WEBHOOK_ALLOWLIST adds to them. */
  webhookAllowHosts?: string[];
  env: NodeJS.ProcessEnv;
}

/** Without configured keys, a development key is made once and kept next to the database, so it survives restarts. */
function devKey(db: string): ApiKeyEntry {
  const dir = /^postgres(ql)?:\/\//.test(db) ? '.belay' : dirname(db);
  const file = join(dir, 'api-key');
  let key: string;
  if (existsSync(file)) key = readFileSync(file, 'utf8').trim();
  else {
    key = `belay_dev_${randomBytes(24).toString('base64url')}`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, `${key}\n`, { mode: 0o600 });
  }
  return { key, tenant: 'default', principal: 'admin', role: 'admin' };
}

export async function runServe(o: ServeOptions): Promise<number> {
  const specs = [...o.apiKeys, ...(o.env.BELAY_API_KEYS ? o.env.BELAY_API_KEYS.split(',').map((s) => s.trim()).filter(Boolean) : [])];
  const keys = specs.map(parseApiKeySpec);
  const generated = !o.insecureNoAuth && keys.length === 0 && !o.jwksUrl ? devKey(o.db) : null;
  if (generated) keys.push(generated);
  const auth = new Authenticator({
    apiKeys: keys,
    insecureNoAuth: o.insecureNoAuth,
    ...(o.jwksUrl ? { jwt: { jwksUrl: o.jwksUrl } } : {}),
  });
  const store = await openStoreFromUrl(o.db, o.storeOptions);
  const downstream: Downstream = o.env.BELAY_DOWNSTREAM_URL ? new HttpDownstream(o.env.BELAY_DOWNSTREAM_URL) : new InMemoryDownstream();
  const registry = exampleRegistry(downstream);
  const webhooks = webhookSettings(o.webhookAllowHosts, o.env);
  const guard = new UrlGuard({ allow: webhooks.allow });
  const metrics = createBelayMetrics({ store });
  const clock = processClock(o.env);
  const service = new TaskService({ store, registry, clock, urlGuard: guard });
  const app = createBelayApp({
    service,
    auth,
    webhooks: new WebhookService({ store, clock, guard }),
    metrics,
    ...(o.env.BELAY_METRICS_TOKEN ? { metricsToken: o.env.BELAY_METRICS_TOKEN } : {}),
  });
  const server = await listen(app.fetch, { port: o.port, host: o.host });
  const faultPoint = faultPointsFromSpec(o.env.BELAY_CRASH_AT);
  const worker =
    o.workers > 0
      ? new Worker({ store: meterStore(store, metrics), registry, clock, logger: o.logger, concurrency: o.workers, leaseMs: o.leaseMs, pollMs: o.pollMs, faultPoint, expireTasks: false })
      : null;
  worker?.start();
  // The webhook dispatcher and the reconciler (deadlines, stranded tasks, retention) run in every serve process.
  const background = startBackground({ store, clock, logger: o.logger, guard, webhooks, metrics, faultPoint, runnableKinds: worker ? registry.kinds() : [], env: o.env });
  console.log(`Belay listening on ${server.url} (store: ${o.db}, ${worker ? `${o.workers} worker slots` : 'no workers'})`);
  if (o.insecureNoAuth) {
    console.log('WARNING: --insecure-no-auth: every request runs as tenant "default" with admin rights. Never use this outside development.');
  } else if (generated) {
    console.log(`API key (tenant "default", admin): ${generated.key}`);
  }
  console.log(`Task types: ${registry.list().map((t) => `${t.name}@${t.version}`).join(', ')}`);
  // The key rides in the fragment: browsers never send it to the server or keep it in logs; the page stores it.
  console.log(`Dashboard: ${server.url}/dashboard/${generated ? `#key=${encodeURIComponent(generated.key)}` : ''}`);
  console.log(`READY ${server.url}`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  console.log('shutting down: finishing current steps');
  await server.close();
  await worker?.stop();
  await background.stop();
  await store.close();
  console.log('STOPPED');
  return 0;
}
