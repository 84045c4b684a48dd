import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newTaskId } from '../../src/core/ids.js';
import { planMigrations } from '../../src/store/migration.js';
import type { Store } from '../../src/store/port.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { POSTGRES_MIGRATIONS, SCHEMA_PLACEHOLDER } from '../../src/store/postgres/migrations.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { newTask } from '../contract/store-contract.js';
import { storesUnderTest } from '../helpers/stores.js';

describe('migrations', () => {
  it('pair up across the two dialects: same versions, names and breaking markers', () => {
    const shape = (ms: typeof SQLITE_MIGRATIONS) => ms.map((m) => [m.version, m.name, m.breaking]);
    expect(shape(POSTGRES_MIGRATIONS)).toEqual(shape(SQLITE_MIGRATIONS));
    const versions = SQLITE_MIGRATIONS.map((m) => m.version);
    expect(versions).toEqual(Array.from({ length: versions.length }, (_, i) => i + 1));
  });

  it('plans only what is missing and refuses a database with a newer breaking migration', () => {
    expect(planMigrations(SQLITE_MIGRATIONS, [{ version: 1, breaking: true }]).map((m) => m.version)).toEqual(SQLITE_MIGRATIONS.slice(1).map((m) => m.version));
    // A newer non-breaking migration (added columns, say) leaves older code able to run.
    expect(() => planMigrations(SQLITE_MIGRATIONS, [...SQLITE_MIGRATIONS.map((m) => ({ version: m.version, breaking: m.breaking })), { version: 999, breaking: false }])).not.toThrow();
    expect(() => planMigrations(SQLITE_MIGRATIONS, [{ version: 999, breaking: true }])).toThrow(expect.objectContaining({ code: 'SCHEMA_TOO_NEW' }));
  });

  it('SQLite: opening is idempotent and a schema from newer code is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'belay-mig-'));
    try {
      const path = join(dir, 'db.sqlite');
      const a = await openSqliteStore({ path });
      const b = await openSqliteStore({ path });
      expect(await b.schemaVersion()).toBe(SQLITE_MIGRATIONS.length);
      await a.close();
      await b.close();
      const raw = new Database(path);
      raw.prepare('INSERT INTO belay_schema_migrations (version, name, breaking, applied_at) VALUES (999, ?, 1, 0)').run('from-the-future');
      raw.close();
      await expect(openSqliteStore({ path })).rejects.toMatchObject({ code: 'SCHEMA_TOO_NEW' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Migration 6 rebuilt the task list indexes as (tenant, created_at) and (tenant, updated_at): the id is no longer in
// them, so ties on the millisecond are ordered by the query's sort. An existing database at version 5, with rows,
// upgrades; the lists keep their order (newest first, ties by id descending) and the keyset cursor pages through a tie.
const T0 = Date.UTC(2026, 0, 1);
const V5 = 5;

interface Row {
  id: string;
  createdAt: number;
  updatedAt: number;
}

/** Four tasks written under schema version 5: one older, three created and updated in the same millisecond. */
function rowsBeforeUpgrade(): Row[] {
  return [
    { id: newTaskId(T0), createdAt: T0, updatedAt: T0 + 9 },
    ...[0, 1, 2].map(() => ({ id: newTaskId(T0 + 1), createdAt: T0 + 1, updatedAt: T0 + 3 })),
  ];
}

const newestFirst = (rows: Row[], key: 'createdAt' | 'updatedAt') =>
  [...rows].sort((a, b) => b[key] - a[key] || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((r) => r.id);

async function expectListOrder(store: Store, rows: Row[]): Promise<void> {
  // One more task, written after the upgrade, joins the tie on created_at.
  const { task } = await store.createTask(newTask({ now: T0 + 1 }));
  const all = [...rows, { id: task.id, createdAt: T0 + 1, updatedAt: T0 + 1 }];
  const list = async (q: Partial<Parameters<Store['listTasks']>[0]>) => (await store.listTasks({ tenant: 'acme', limit: 10, ...q })).map((t) => t.id);
  const byCreated = newestFirst(all, 'createdAt');
  const byUpdated = newestFirst(all, 'updatedAt');
  expect(await list({})).toEqual(byCreated);
  expect(await list({ order: 'updated' })).toEqual(byUpdated);
  // Page boundaries inside the ties.
  for (const size of [1, 2, 3]) {
    const created: string[] = [];
    let after: { createdAt: number; id: string } | undefined;
    for (;;) {
      const page = await store.listTasks({ tenant: 'acme', limit: size, ...(after ? { after } : {}) });
      created.push(...page.map((t) => t.id));
      if (page.length < size) break;
      after = { createdAt: page.at(-1)!.createdAt, id: page.at(-1)!.id };
    }
    expect(created).toEqual(byCreated);
    const updated: string[] = [];
    let afterUpdated: { updatedAt: number; id: string } | undefined;
    for (;;) {
      const page = await store.listTasks({ tenant: 'acme', order: 'updated', limit: size, ...(afterUpdated ? { afterUpdated } : {}) });
      updated.push(...page.map((t) => t.id));
      if (page.length < size) break;
      afterUpdated = { updatedAt: page.at(-1)!.updatedAt, id: page.at(-1)!.id };
    }
    expect(updated).toEqual(byUpdated);
  }
  expect(await list({ states: ['submitted'], type: 'demo', after: { createdAt: T0 + 1, id: byCreated[1]! } })).toEqual(byCreated.slice(2));
}

describe('migration 6: the task list indexes, ascending and without the id', () => {
  it('SQLite: a database at version 5 with tasks upgrades, and the lists keep their order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'belay-mig6-'));
    try {
      const path = join(dir, 'db.sqlite');
      const rows = rowsBeforeUpgrade();
      const raw = new Database(path);
      raw.exec('CREATE TABLE belay_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, breaking INTEGER NOT NULL, applied_at INTEGER NOT NULL) STRICT');
      for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= V5)) {
        raw.exec(m.sql);
        raw.prepare('INSERT INTO belay_schema_migrations VALUES (?, ?, ?, 0)').run(m.version, m.name, m.breaking ? 1 : 0);
      }
      const insert = raw.prepare(
        `INSERT INTO belay_tasks (id, tenant, context_id, type, type_version, state, input, progress, created_at, updated_at, created_by)
         VALUES (?, 'acme', 'ctx_1', 'demo', 1, 'submitted', '{}', '{"current":null,"total":null,"message":null}', ?, ?, 'alice')`,
      );
      for (const r of rows) insert.run(r.id, r.createdAt, r.updatedAt);
      raw.close();

      const store = await openSqliteStore({ path });
      try {
        expect(await store.schemaVersion()).toBe(SQLITE_MIGRATIONS.length);
        const check = new Database(path, { readonly: true });
        const sql = (name: string) => (check.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").get(name) as { sql: string }).sql;
        expect(sql('belay_tasks_tenant_created')).toBe('CREATE INDEX belay_tasks_tenant_created ON belay_tasks (tenant, created_at)');
        expect(sql('belay_tasks_tenant_updated')).toBe('CREATE INDEX belay_tasks_tenant_updated ON belay_tasks (tenant, updated_at)');
        check.close();
        await expectListOrder(store, rows);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  if (storesUnderTest().includes('postgres')) {
    const adminUrl = process.env.BELAY_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres';
    const database = `belay_test_mig_${randomBytes(6).toString('hex')}`;
    const url = new URL(adminUrl);
    url.pathname = `/${database}`;
    const admin = async (sql: string) => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(sql);
      } finally {
        await c.end();
      }
    };
    let created = false;
    beforeAll(async () => {
      await admin(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
      created = true;
    });
    afterAll(async () => {
      if (created) await admin(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
    });

    it('PostgreSQL: a schema at version 5 with tasks upgrades, and the lists keep their order', async () => {
      const schema = `m6_${randomBytes(4).toString('hex')}`;
      const s = pg.escapeIdentifier(schema);
      const rows = rowsBeforeUpgrade();
      const c = new pg.Client({ connectionString: url.toString() });
      await c.connect();
      try {
        await c.query(`CREATE SCHEMA ${s}`);
        await c.query(`CREATE TABLE ${s}.schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, breaking BOOLEAN NOT NULL, applied_at BIGINT NOT NULL)`);
        for (const m of POSTGRES_MIGRATIONS.filter((m) => m.version <= V5)) {
          await c.query(m.sql.replaceAll(SCHEMA_PLACEHOLDER, s));
          await c.query(`INSERT INTO ${s}.schema_migrations VALUES ($1, $2, $3, 0)`, [m.version, m.name, m.breaking]);
        }
        for (const r of rows) {
          await c.query(
            `INSERT INTO ${s}.tasks (id, tenant, context_id, type, type_version, state, input, progress, created_at, updated_at, created_by)
             VALUES ($1, 'acme', 'ctx_1', 'demo', 1, 'submitted', '{}', '{"current":null,"total":null,"message":null}', $2, $3, 'alice')`,
            [r.id, r.createdAt, r.updatedAt],
          );
        }
      } finally {
        await c.end();
      }

      const store = await openPostgresStore({ connectionString: url.toString(), schema, poolSize: 2, listen: 'lazy' });
      try {
        expect(await store.schemaVersion()).toBe(POSTGRES_MIGRATIONS.length);
        const check = new pg.Client({ connectionString: url.toString() });
        await check.connect();
        try {
          const defs = await check.query<{ indexname: string; indexdef: string }>(
            `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE 'tasks_tenant_%' ORDER BY indexname`,
            [schema],
          );
          expect(defs.rows).toEqual([
            { indexname: 'tasks_tenant_created', indexdef: `CREATE INDEX tasks_tenant_created ON ${schema}.tasks USING btree (tenant, created_at)` },
            { indexname: 'tasks_tenant_updated', indexdef: `CREATE INDEX tasks_tenant_updated ON ${schema}.tasks USING btree (tenant, updated_at)` },
          ]);
        } finally {
          await check.end();
        }
        await expectListOrder(store, rows);
      } finally {
        await store.close();
      }
    });
  }
});
