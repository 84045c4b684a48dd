/**
 * Connection loss, as a server restart causes it, without restarting the shared server: every backend of this
 * file's own database is terminated (`pg_terminate_backend`, SQLSTATE 57P01, the same FATAL a fast shutdown sends).
 * Fails (never skips) when PostgreSQL cannot be reached.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BelayError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import type { NewTask, StoreNotification } from '../../src/store/port.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { storesUnderTest } from '../helpers/stores.js';

const ADMIN_URL = process.env.BELAY_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres';
const DATABASE = `belay_test_${randomBytes(6).toString('hex')}`;
const T0 = Date.UTC(2026, 0, 1);

function databaseUrl(database: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    throw new Error(`PostgreSQL is not reachable at ${url} (set BELAY_TEST_PG_URL); the PostgreSQL store tests cannot run`, { cause: err });
  }
  return client;
}

function newTask(): NewTask {
  return { id: newTaskId(T0), tenant: 'acme', contextId: 'c', type: 'demo', typeVersion: 1, input: {}, createdBy: 'alice', callbackUrl: null, now: T0 };
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

if (storesUnderTest().includes('postgres')) {
  describe('postgres store: connection loss', () => {
    let admin: pg.Client;
    let created = false;
    let counter = 0;
    const background: unknown[] = [];

    beforeAll(async () => {
      admin = await connect(ADMIN_URL);
      await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(DATABASE)}`);
      created = true;
    });
    afterAll(async () => {
      if (!admin) return;
      if (created) {
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [DATABASE]);
        await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(DATABASE)} WITH (FORCE)`);
      }
      await admin.end();
    });

    const open = (schema = `r_${++counter}_${randomBytes(4).toString('hex')}`) =>
      openPostgresStore({ connectionString: databaseUrl(DATABASE), schema, poolSize: 2, onError: (e) => background.push(e) });

    /** Terminates this database's backends (optionally only those named `app`). */
    const terminate = async (app?: string) => {
      const r = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND ($2::text IS NULL OR application_name = $2)`,
        [DATABASE, app ?? null],
      );
      return r.rowCount ?? 0;
    };

    it('a query on a killed connection fails with STORE_UNAVAILABLE and the next call works', async () => {
      const store: PostgresStore = await open();
      try {
        const { task } = await store.createTask(newTask());
        // Hold the row so the store's transition waits on it, then kill the waiting backend mid-query.
        const locker = await connect(databaseUrl(DATABASE));
        try {
          await locker.query('BEGIN');
          await locker.query(`SELECT 1 FROM ${pg.escapeIdentifier(store.schema)}.tasks WHERE id = $1 FOR UPDATE`, [task.id]);
          const pending = store.transition(task.id, 'acme', T0, () => null);
          const outcome = pending.then(
            () => null,
            (e: unknown) => e,
          );
          await until('the transition to wait on the row lock', async () => {
            const r = await admin.query(`SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = 'belay' AND wait_event_type = 'Lock'`, [DATABASE]);
            return (r.rowCount ?? 0) > 0;
          });
          await terminate('belay');
          const err = await outcome;
          expect(err).toBeInstanceOf(BelayError);
          expect(err).toMatchObject({ code: 'STORE_UNAVAILABLE' });
          expect((err as BelayError).cause).toBeDefined();
          await locker.query('ROLLBACK');
        } finally {
          await locker.end();
        }
        // Broken clients were dropped; the pool connects afresh.
        expect((await store.getTask(task.id))!.id).toBe(task.id);
        expect((await store.createTask(newTask())).created).toBe(true);
      } finally {
        await store.close();
      }
    });

    it('idle pool clients dying does not crash the process, and the store recovers', async () => {
      const store = await open();
      try {
        await store.createTask(newTask());
        expect(await terminate()).toBeGreaterThan(0);
        // The next call may meet a dead client once (STORE_UNAVAILABLE); after that it must work.
        let ok = false;
        for (let i = 0; i < 3 && !ok; i++) {
          try {
            await store.countByState();
            ok = true;
          } catch (e) {
            expect(e).toMatchObject({ code: 'STORE_UNAVAILABLE' });
          }
        }
        expect(ok).toBe(true);
        expect((await store.countByState()).submitted).toBe(1);
      } finally {
        await store.close();
      }
    });

    it('the LISTEN client reconnects, says ready, and hears later commits', async () => {
      const schema = `r_${++counter}_${randomBytes(4).toString('hex')}`;
      const listener = await open(schema);
      const writer = await open(schema);
      try {
        const heard: StoreNotification[] = [];
        const off = listener.subscribe((n) => heard.push(n));
        const first = await writer.createTask(newTask());
        await until('the first event', () => heard.some((n) => n.type === 'event' && n.taskId === first.task.id));
        heard.length = 0;
        expect(await terminate('belay-listen')).toBeGreaterThan(0);
        await until('a ready hint after reconnecting', () => heard.some((n) => n.type === 'ready'));
        const second = await writer.createTask(newTask());
        await until('an event after reconnecting', () => heard.some((n) => n.type === 'event' && n.taskId === second.task.id && n.kind === 'created'));
        off();
      } finally {
        await listener.close();
        await writer.close();
      }
    });
  });
} else {
  it.skip('postgres store not selected (BELAY_STORES)', () => undefined);
}
