/**
 * Where each scenario runs: its own PostgreSQL database (created, then dropped WITH (FORCE)) and its own temp
 * directory for SQLite files. Also the Belay pieces every scenario uses.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Store, TaskCommit, CommitOutcome } from '../../src/store/port.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { StoreKind } from './options.js';
import type { Recorder } from './stats.js';

export const BELAY_SCHEMA = 'belay';

export interface Place {
  kind: StoreKind;
  /** SQLite: the database file. PostgreSQL: the connection string of the scenario's database. */
  location: string;
  /** `--db` value for a `belay worker` process. */
  dbArg: string;
}

export async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: adminUrl, application_name: 'belay-bench-admin' });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** Runs `fn` in a fresh PostgreSQL database that is dropped afterwards, whatever happens. */
export async function withPgDatabase<T>(adminUrl: string, label: string, fn: (url: string) => Promise<T>): Promise<T> {
  const name = `belay_bench_${label.replace(/[^a-z0-9]/g, '_')}_${randomBytes(3).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  try {
    return await fn(u.toString());
  } finally {
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

/** Runs `fn` with a fresh temp directory that is removed afterwards. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'belay-bench-'));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A fresh place for one store kind: a database (PostgreSQL) or a temp file (SQLite), removed afterwards. */
export async function withPlace<T>(kind: StoreKind, adminUrl: string, label: string, fn: (place: Place) => Promise<T>): Promise<T> {
  if (kind === 'postgres') {
    return withPgDatabase(adminUrl, label, (url) => fn({ kind, location: url, dbArg: `${url}?schema=${BELAY_SCHEMA}` }));
  }
  return withTempDir((dir) => {
    const file = join(dir, 'belay.db');
    return fn({ kind, location: file, dbArg: file });
  });
}

/** `synchronous: 'normal'` (SQLite) is for filling a store fast where flush timing does not matter to the figure. */
export async function openStore(place: Place, options: { poolSize?: number; synchronous?: 'full' | 'normal' } = {}): Promise<Store> {
  return place.kind === 'postgres'
    ? openPostgresStore({ connectionString: place.location, schema: BELAY_SCHEMA, poolSize: options.poolSize ?? 10 })
    : openSqliteStore({ path: place.location, synchronous: options.synchronous ?? 'full' });
}

export type AnyStore = PostgresStore | SqliteStore;

/** The same store, with every `commit` timed into `recorder` (the wrapper adds one closure call per commit). */
export function timedStore(store: Store, recorder: Recorder): Store {
  const commit = async (c: TaskCommit): Promise<CommitOutcome> => {
    const start = performance.now();
    const out = await store.commit(c);
    recorder.record(start, performance.now());
    return out;
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'commit') return commit;
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
