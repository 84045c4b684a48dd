import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
/**
 * Runs the store contract against a real PostgreSQL server. One database per test file, one fresh schema per
 * `open()`. If PostgreSQL cannot be reached this file FAILS (beforeAll throws): CI must not pass with the
 * PostgreSQL tests silently skipped. Select stores with BELAY_STORES (see test/helpers/stores.ts).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineStoreContract, newTask } from '../contract/store-contract.js';
import type { StoreNotification } from '../../src/store/port.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { storesUnderTest } from '../helpers/stores.js';

const ADMIN_URL = process.env.BELAY_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres';
const DATABASE = `belay_test_${randomBytes(6).toString('hex')}`;

function databaseUrl(database: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    throw new Error(`PostgreSQL is not reachable at ${ADMIN_URL} (set BELAY_TEST_PG_URL); the PostgreSQL store tests cannot run`, { cause: err });
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

if (storesUnderTest().includes('postgres')) {
  let created = false;
  beforeAll(async () => {
    await admin((c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(DATABASE)}`));
    created = true;
  });
  afterAll(async () => {
    if (!created) return;
    await admin(async (c) => {
      await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [DATABASE]);
      await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(DATABASE)} WITH (FORCE)`);
    });
  });

  let counter = 0;
  let latest: string | null = null;
  defineStoreContract({
    name: 'postgres',
    async open(shared) {
      // A fresh schema per plain open(); open('shared') is another connection to the latest one (as the SQLite test
      // opens a second handle on a file in the current directory).
      if (!shared || !latest) latest = `t_${++counter}_${randomBytes(4).toString('hex')}`;
      return openPostgresStore({ connectionString: databaseUrl(DATABASE), schema: latest, poolSize: 4 });
    },
    async cleanup() {
      latest = null;
    },
    async rawPendingInput(taskId) {
      const c = new pg.Client({ connectionString: databaseUrl(DATABASE) });
      await c.connect();
      try {
        const r = await c.query<{ p: string | null }>(`SELECT pending_input::text AS p FROM ${pg.escapeIdentifier(latest!)}.tasks WHERE id = $1`, [taskId]);
        return r.rows[0]?.p ?? null;
      } finally {
        await c.end();
      }
    },
  });

  describe('postgres store: adapter specifics', () => {
    const fresh = () => `x_${++counter}_${randomBytes(4).toString('hex')}`;

    it('concurrent opens of a new schema migrate it once', async () => {
      const schema = fresh();
      const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore({ connectionString: databaseUrl(DATABASE), schema, poolSize: 1, listen: 'lazy' })));
      try {
        expect(await stores[0]!.appliedMigrations()).toEqual(POSTGRES_MIGRATIONS.map((m) => ({ version: m.version, breaking: m.breaking })));
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    });

    it('refuses a schema with a breaking migration newer than the code', async () => {
      const schema = fresh();
      const store = await openPostgresStore({ connectionString: databaseUrl(DATABASE), schema, listen: 'lazy' });
      const client = new pg.Client({ connectionString: databaseUrl(DATABASE) });
      await client.connect();
      try {
        await client.query(`INSERT INTO ${pg.escapeIdentifier(schema)}.schema_migrations VALUES (99, 'future', true, 0)`);
      } finally {
        await client.end();
      }
      await store.close();
      await expect(openPostgresStore({ connectionString: databaseUrl(DATABASE), schema })).rejects.toMatchObject({ code: 'SCHEMA_TOO_NEW' });
    });

    it('JSON string values round-trip (jsonb is parsed once)', async () => {
      const store = await openPostgresStore({ connectionString: databaseUrl(DATABASE), schema: fresh(), listen: 'lazy' });
      try {
        const { task } = await store.createTask(newTask({ input: '{"not":"an object"}' }));
        expect((await store.getTask(task.id))!.input).toBe('{"not":"an object"}');
      } finally {
        await store.close();
      }
    });

    it('a prepared plan made stale by a column added under an open connection is dropped and the statement re-sent', async () => {
      const schema = fresh();
      const store = await openPostgresStore({ connectionString: databaseUrl(DATABASE), schema, listen: 'lazy', poolSize: 1 });
      try {
        const { task } = await store.createTask(newTask());
        expect((await store.getTask(task.id))!.id).toBe(task.id);
        // Another process migrates the table under this store's open connection: `SELECT *` now returns one more
        // column, which PostgreSQL refuses to run through the plan prepared before.
        const other = new pg.Client({ connectionString: databaseUrl(DATABASE) });
        await other.connect();
        try {
          await other.query(`ALTER TABLE ${pg.escapeIdentifier(schema)}.tasks ADD COLUMN added_later integer`);
        } finally {
          await other.end();
        }
        expect((await store.getTask(task.id))!.id).toBe(task.id);
        expect((await store.getTask(task.id))!.id).toBe(task.id);
      } finally {
        await store.close();
      }
    });

    it('lazy listening starts with the first subscriber, says ready, then hears other connections', async () => {
      const schema = fresh();
      const lazy = await openPostgresStore({ connectionString: databaseUrl(DATABASE), schema, listen: 'lazy' });
      const writer = await openPostgresStore({ connectionString: databaseUrl(DATABASE), schema, listen: 'lazy' });
      try {
        const heard: StoreNotification[] = [];
        const off = lazy.subscribe((n) => heard.push(n));
        const until = async (check: () => boolean) => {
          for (let i = 0; i < 250 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
          expect(check()).toBe(true);
        };
        await until(() => heard.some((n) => n.type === 'ready'));
        const { task } = await writer.createTask(newTask());
        await until(() => heard.some((n) => n.type === 'event' && n.taskId === task.id && n.kind === 'created'));
        off();
      } finally {
        await lazy.close();
        await writer.close();
      }
    });

    it('an unreachable server is STORE_UNAVAILABLE', async () => {
      await expect(openPostgresStore({ connectionString: 'postgres://root@127.0.0.1:1/none', connectTimeoutMs: 2000 })).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
    });
  });
} else {
  it.skip('postgres store not selected (BELAY_STORES)', () => undefined);
}
