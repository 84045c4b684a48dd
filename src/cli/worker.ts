/**
 * @module cli/worker
 * `belay worker`: workers for the example task types in their own process, until SIGTERM/SIGINT. `READY <id>` on
 * stdout once claiming (the crash tests wait for it), `STOPPED <id>` after a graceful stop.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino } from 'pino';
import { processClock } from './clock.js';
import { exampleRegistry, HttpDownstream, InMemoryDownstream, type Downstream } from '../examples/index.js';
import { faultPointsFromSpec } from '../runtime/fault-points.js';
import { Worker } from '../runtime/worker.js';
import { CONFIG_HELP, intSetting, parseFlags, resolveStoreSettings, UsageError } from './config.js';
import { openStoreFromUrl } from './open-store.js';
import { UrlGuard } from '../delivery/ssrf-guard.js';
import { createBelayMetrics, meterStore } from '../metrics/belay-metrics.js';
import { startBackground, webhookSettings } from '../server/background.js';

export const WORKER_USAGE = `Usage: belay worker [options]

Options:
  --db <path|postgres://...>   Store (BELAY_DB, config "db"; default .belay/belay.db)
  --concurrency <n>            Tasks run at once by this process (config "concurrency"; default 4)
  --lease-ms <ms>              Lease length (config "leaseMs"; default 30000)
  --poll-ms <ms>               Longest sleep between claims (config "pollMs"; default 1000)
  --synchronous <full|normal>  SQLite durability (config "synchronous"; default full)
  --webhook-allow-host <host|ip|cidr>   Let webhooks reach this non-public address (repeatable; BELAY_WEBHOOK_ALLOWLIST)
  --config <path>              Config file

Environment: BELAY_DOWNSTREAM_URL (examples act on this HTTP downstream), BELAY_CRASH_AT (label:nth, chaos tests).

${CONFIG_HELP}`;

const OPTIONS = {
  db: { type: 'string' },
  concurrency: { type: 'string' },
  'lease-ms': { type: 'string' },
  'poll-ms': { type: 'string' },
  synchronous: { type: 'string' },
  'webhook-allow-host': { type: 'string', multiple: true },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function workerCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, WORKER_USAGE);
  if (values.help) {
    console.log(WORKER_USAGE);
    return 0;
  }
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`, WORKER_USAGE);
  const settings = resolveStoreSettings(values, env);
  const { config } = settings;
  const concurrency = intSetting(['--concurrency', values.concurrency], config, 'concurrency', 4, 1);
  const leaseMs = intSetting(['--lease-ms', values['lease-ms']], config, 'leaseMs', 30_000, 1);
  const pollMs = intSetting(['--poll-ms', values['poll-ms']], config, 'pollMs', 1000, 1);
  if (!/^postgres(ql)?:\/\//.test(settings.db)) mkdirSync(dirname(settings.db), { recursive: true });
  const store = await openStoreFromUrl(settings.db, settings.synchronous ? { sqliteSynchronous: settings.synchronous } : {});
  const downstream: Downstream = env.BELAY_DOWNSTREAM_URL ? new HttpDownstream(env.BELAY_DOWNSTREAM_URL) : new InMemoryDownstream();
  const webhooks = webhookSettings(values['webhook-allow-host'], env);
  const logger = pino({ level: env.BELAY_LOG_LEVEL ?? 'warn' }, pino.destination(2));
  const metrics = createBelayMetrics({ store });
  const faultPoint = faultPointsFromSpec(env.BELAY_CRASH_AT);
  const registry = exampleRegistry(downstream);
  const clock = processClock(env);
  const worker = new Worker({
    store: meterStore(store, metrics),
    registry,
    clock,
    logger,
    concurrency,
    leaseMs,
    pollMs,
    faultPoint,
    expireTasks: false,
  });
  worker.start();
  // The webhook dispatcher and the reconciler (deadlines, stranded tasks, retention) run next to the workers.
  const background = startBackground({
    store,
    clock,
    logger,
    guard: new UrlGuard({ allow: webhooks.allow }),
    webhooks,
    metrics,
    faultPoint,
    runnableKinds: registry.kinds(),
    env,
  });
  console.log(`READY ${worker.id}`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await worker.stop();
  await background.stop();
  await store.close();
  console.log(`STOPPED ${worker.id}`);
  return 0;
}
