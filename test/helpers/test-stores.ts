/**
 * Fresh stores for integration tests. SQLite: a temp-file database per store (not :memory:, so several
 * connections and processes are real). PostgreSQL: one database per test file, one schema per store.
 * PostgreSQL tests fail, never skip, when the server cannot be reached.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Store } from '../../src/store/port.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';

export const PG_ADMIN_URL = process.env.BELAY_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres';

export interface TestStores {
  kind: 'sqlite' | 'postgres';
  /** A fresh, empty store. */
  open(): Promise<Store>;
  /** Another connection to the database of the last `open()` (a second process would use `url`). */
  reopen(): Promise<Store>;
  /** `--db` value for a subprocess, naming the database of the last `open()`. */
  url(): string;
  teardown(): Promise<void>;
}

export function sqliteTestStores(): TestStores {
  const dirs: string[] = [];
  let path = '';
  return {
    kind: 'sqlite',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'belay-test-'));
      dirs.push(dir);
      path = join(dir, 'belay.db');
      return openSqliteStore({ path, pollMs: 20 });
    },
    reopen: () => openSqliteStore({ path, pollMs: 20 }),
    url: () => path,
    async teardown() {
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    },
  };
}

export function postgresTestStores(): TestStores {
  const database = `belay_test_${randomBytes(6).toString('hex')}`;
  let created = false;
  let schema = '';
  let counter = 0;
  const dbUrl = () => {
    const u = new URL(PG_ADMIN_URL);
    u.pathname = `/${database}`;
    return u.toString();
  };
  async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
    const c = new pg.Client({ connectionString: PG_ADMIN_URL });
    try {
      await c.connect();
    } catch (e) {
      throw new Error(`PostgreSQL tests need a server at ${PG_ADMIN_URL} (set BELAY_TEST_PG_URL): ${(e as Error).message}`, { cause: e });
    }
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  }
  return {
    kind: 'postgres',
    async open() {
      if (!created) {
        await admin((c) => c.query(`CREATE DATABASE ${database}`));
        created = true;
      }
      schema = `s${++counter}_${randomBytes(3).toString('hex')}`;
      return openPostgresStore({ connectionString: dbUrl(), schema, poolSize: 8 });
    },
    reopen: () => openPostgresStore({ connectionString: dbUrl(), schema, poolSize: 8 }),
    url: () => `${dbUrl()}?schema=${schema}`,
    async teardown() {
      if (created) await admin((c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
      created = false;
    },
  };
}

export function testStores(kind: 'sqlite' | 'postgres'): TestStores {
  return kind === 'sqlite' ? sqliteTestStores() : postgresTestStores();
}
