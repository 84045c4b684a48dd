/** @module cli/migrate — `belay migrate`: applies the store's migrations and prints the schema version. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { CONFIG_HELP, parseFlags, resolveStoreSettings, UsageError } from './config.js';
import { openStoreFromUrl } from './open-store.js';

export const MIGRATE_USAGE = `Usage: belay migrate [--db <path|postgres://...>] [--config <path>] [--json]

Applies the store's migrations (forward-only) and prints the schema version.

${CONFIG_HELP}`;

const OPTIONS = {
  db: { type: 'string' },
  synchronous: { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function migrateCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, MIGRATE_USAGE);
  if (values.help) {
    console.log(MIGRATE_USAGE);
    return 0;
  }
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`, MIGRATE_USAGE);
  const settings = resolveStoreSettings(values, env);
  if (!/^postgres(ql)?:\/\//.test(settings.db)) mkdirSync(dirname(settings.db), { recursive: true });
  const store = await openStoreFromUrl(settings.db, { listen: 'lazy', ...(settings.synchronous ? { sqliteSynchronous: settings.synchronous } : {}) });
  try {
    const version = await store.schemaVersion();
    console.log(values.json ? JSON.stringify({ schema_version: version, dialect: store.capabilities.dialect }) : `schema version ${version}`);
  } finally {
    await store.close();
  }
  return 0;
}
