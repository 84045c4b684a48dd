/**
 * @module cli/doctor
 * `belay doctor`: is this deployment healthy? Checks the configuration, the store (reachable, schema version, tasks
 * by state, stranded tasks through the store's own `findStranded`) and the server (reachable, ready, same schema
 * version, the API key accepted). Exit 0 when every check passes, 1 when one fails, 2 on bad usage.
 */
import { existsSync } from 'node:fs';
import { CONFIG_HELP, configFileLabel, parseFlags, parseIntSetting, resolveClientSettings, type Setting } from './config.js';
import { openStoreFromUrl } from './open-store.js';
import { ApiError, RestClient, ServerUnreachable } from './rest-client.js';

export const DOCTOR_USAGE = `Usage: belay doctor [options]

Checks the store (reachable, schema version, tasks by state, stranded tasks) and the server (reachable, ready,
schema version, API key accepted). Exit 0 when all pass, 1 when any fails.

Options:
  --db <path|postgres://...>  Store (BELAY_DB, config "db"; default .belay/belay.db)
  --url <url>                 Server (BELAY_URL, config "url"; default http://127.0.0.1:8787)
  --api-key <key>             Bearer key (BELAY_API_KEY, config "apiKey")
  --config <path>             Config file (BELAY_CONFIG; default .belay/config.json)
  --grace <seconds>           A claimable task nobody claimed for this long is stranded (default 60)
  --skip-store                Check only the server          --skip-server   Check only the store
  --json                      One JSON document

${CONFIG_HELP}`;

const OPTIONS = {
  db: { type: 'string' },
  url: { type: 'string' },
  'api-key': { type: 'string' },
  config: { type: 'string' },
  grace: { type: 'string' },
  'skip-store': { type: 'boolean' },
  'skip-server': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface Check {
  name: string;
  status: 'ok' | 'fail' | 'skipped';
  detail: string;
}

export interface DoctorReport {
  ok: boolean;
  checks: Check[];
  config: { file: string | null; url: string; url_from: string; api_key_from: string | null; db: string; db_from: string };
  store: { schema_version: number; tasks_by_state: Record<string, number>; stranded: Array<Record<string, unknown>> } | null;
  server: { url: string; schema_version: number | null; task_types: string[] } | null;
}

const isPostgres = (db: string) => /^postgres(ql)?:\/\//.test(db);
/** A URL's password never reaches the output. */
const redact = (db: string) => (isPostgres(db) ? db.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@') : db);
const from = (s: Setting<unknown> | null) => (s ? s.from : null);

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms / 1000} s`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

export async function doctorCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values } = parseFlags(argv, OPTIONS, DOCTOR_USAGE);
  if (values.help) {
    console.log(DOCTOR_USAGE);
    return 0;
  }
  const graceMs = (values.grace === undefined ? 60 : parseIntSetting(values.grace, '--grace', 0)) * 1000;
  const settings = resolveClientSettings(values, env);
  const checks: Check[] = [];
  const report: DoctorReport = {
    ok: false,
    checks,
    config: {
      file: configFileLabel(settings.config),
      url: settings.url.value,
      url_from: settings.url.from,
      api_key_from: from(settings.apiKey),
      db: redact(settings.db.value),
      db_from: settings.db.from,
    },
    store: null,
    server: null,
  };
  checks.push({
    name: 'config',
    status: 'ok',
    detail: `${report.config.file ?? 'no config file'}; url from ${settings.url.from}; API key from ${settings.apiKey ? settings.apiKey.from : 'nowhere (none configured)'}; store from ${settings.db.from}`,
  });

  let storeSchema: number | null = null;
  if (values['skip-store']) checks.push({ name: 'store', status: 'skipped', detail: '--skip-store' });
  else {
    const db = settings.db.value;
    if (!isPostgres(db) && !existsSync(db)) {
      checks.push({ name: 'store', status: 'fail', detail: `no SQLite database at ${db} (set --db or BELAY_DB; \`belay migrate\` creates one)` });
    } else {
      try {
        const store = await withTimeout(openStoreFromUrl(db, { poolSize: 2, listen: 'lazy' }), 15_000, 'the store');
        try {
          storeSchema = await store.schemaVersion();
          const counts = await store.countByState();
          const stranded = await store.findStranded(Date.now(), graceMs, 100);
          report.store = {
            schema_version: storeSchema,
            tasks_by_state: counts,
            stranded: stranded.map((t) => ({
              id: t.id,
              tenant: t.tenant,
              type: t.type,
              state: t.state,
              lease_owner: t.leaseOwner,
              lease_until: t.leaseUntil === null ? null : new Date(t.leaseUntil).toISOString(),
              wake_at: t.wakeAt === null ? null : new Date(t.wakeAt).toISOString(),
              updated_at: new Date(t.updatedAt).toISOString(),
            })),
          };
          checks.push({ name: 'store', status: 'ok', detail: `${store.capabilities.dialect} ${redact(db)}, schema version ${storeSchema}` });
          const summary = Object.entries(counts)
            .filter(([, n]) => n > 0)
            .map(([s, n]) => `${n} ${s}`)
            .join(', ');
          checks.push({ name: 'tasks', status: 'ok', detail: summary || 'no tasks' });
          checks.push(
            stranded.length === 0
              ? { name: 'stranded', status: 'ok', detail: `no stranded tasks (claimable tasks unclaimed for over ${graceMs / 1000} s, or without a wake-up)` }
              : {
                  name: 'stranded',
                  status: 'fail',
                  detail: `${stranded.length}${stranded.length === 100 ? '+' : ''} stranded: ${stranded
                    .slice(0, 5)
                    .map((t) => `${t.id} (${t.state}, wake ${t.wakeAt === null ? 'none' : new Date(t.wakeAt).toISOString()})`)
                    .join(', ')}${stranded.length > 5 ? ', ...' : ''}; is a worker running for these task types?`,
                },
          );
        } finally {
          await store.close();
        }
      } catch (e) {
        checks.push({ name: 'store', status: 'fail', detail: `cannot open ${redact(db)}: ${(e as Error).message}` });
      }
    }
  }

  if (values['skip-server']) checks.push({ name: 'server', status: 'skipped', detail: '--skip-server' });
  else {
    const client = new RestClient(settings.url.value, settings.apiKey?.value ?? null, 10_000);
    try {
      await client.get('/healthz');
      let serverSchema: number | null = null;
      try {
        serverSchema = (await client.get<{ schema_version: number }>('/readyz')).body.schema_version;
        checks.push({ name: 'server', status: 'ok', detail: `${settings.url.value} is up and ready, schema version ${serverSchema}` });
      } catch (e) {
        checks.push({ name: 'server', status: 'fail', detail: `${settings.url.value} is up but not ready (its store is unavailable): ${(e as Error).message}` });
      }
      report.server = { url: settings.url.value, schema_version: serverSchema, task_types: [] };
      if (storeSchema !== null && serverSchema !== null && storeSchema !== serverSchema) {
        checks.push({ name: 'schema', status: 'fail', detail: `the server's store is at schema version ${serverSchema}, ${redact(settings.db.value)} at ${storeSchema}: are they the same database?` });
      }
      try {
        const types = (await client.get<{ task_types: Array<{ name: string; version: number }> }>('/v1/task-types')).body.task_types;
        report.server.task_types = types.map((t) => `${t.name}@${t.version}`);
        checks.push({ name: 'auth', status: 'ok', detail: `API key accepted; task types: ${report.server.task_types.join(', ') || 'none'}` });
      } catch (e) {
        checks.push({ name: 'auth', status: 'fail', detail: e instanceof ApiError ? e.detail : (e as Error).message });
      }
    } catch (e) {
      checks.push({ name: 'server', status: 'fail', detail: e instanceof ServerUnreachable ? e.message : (e as Error).message });
    }
  }

  report.ok = checks.every((c) => c.status !== 'fail');
  if (values.json) console.log(JSON.stringify(report, null, 2));
  else {
    for (const c of checks) console.log(`${c.status === 'ok' ? 'ok  ' : c.status === 'fail' ? 'FAIL' : 'skip'}  ${c.name.padEnd(9)} ${c.detail}`);
    console.log(report.ok ? 'all checks passed' : `${checks.filter((c) => c.status === 'fail').length} check(s) failed`);
  }
  return report.ok ? 0 : 1;
}
