/**
 * One scratch database per scenario: a SQLite file in a temporary folder, or a PostgreSQL schema in the run's own
 * database. The harness migrates it, installs the fence log (a trigger that records every fence change, see
 * `history.ts` FenceGrant), and reads the final contents for the history checker.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { SideEffectRecord, Task, TaskEvent, Tombstone } from '../../src/core/task.js';
import type { Store } from '../../src/store/port.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { FenceGrant, FinalState } from '../history.js';

export type StoreKind = 'sqlite' | 'postgres';

export const PG_ADMIN_URL = process.env.BELAY_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres';

/** The run's PostgreSQL database (created on first use, dropped at the end). */
export class PgRun {
  readonly database = `belay_chaos_${randomBytes(5).toString('hex')}`;
  private created = false;

  url(): string {
    const u = new URL(PG_ADMIN_URL);
    u.pathname = `/${this.database}`;
    return u.toString();
  }

  async ensure(): Promise<void> {
    if (this.created) return;
    await adminQuery(`CREATE DATABASE ${this.database}`);
    this.created = true;
  }

  async drop(): Promise<void> {
    if (!this.created) return;
    await adminQuery(`DROP DATABASE IF EXISTS ${this.database} WITH (FORCE)`);
    this.created = false;
  }
}

async function adminQuery(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_ADMIN_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export interface ChaosDb {
  kind: StoreKind;
  /** The `--db` value for Belay processes. */
  url: string;
  /** The harness's own connection (creates nothing behind Belay's back; reads and the retention sweep). */
  store: Store;
  /** For PostgreSQL: host and port, so a proxy can stand in between workers and the server. */
  pg?: { host: string; port: number; urlVia(host: string, port: number): string };
  readFenceLog(): Promise<FenceGrant[]>;
  final(): Promise<FinalState>;
  close(): Promise<void>;
}

export async function openChaosDb(kind: StoreKind, name: string, pgRun: PgRun): Promise<ChaosDb> {
  return kind === 'sqlite' ? openSqliteChaosDb() : openPostgresChaosDb(name, pgRun);
}

async function openSqliteChaosDb(): Promise<ChaosDb> {
  const dir = mkdtempSync(join(tmpdir(), 'belay-chaos-'));
  const path = join(dir, 'belay.db');
  const store = await openSqliteStore({ path });
  const raw = new Database(path);
  raw.pragma('busy_timeout = 10000');
  raw.exec(`
    CREATE TABLE IF NOT EXISTS chaos_fence_log (
      task_id TEXT NOT NULL, fence INTEGER NOT NULL, next_seq INTEGER NOT NULL, owner TEXT, prev_owner TEXT,
      prev_lease_until INTEGER, lease_until INTEGER, old_state TEXT, new_state TEXT, db_time REAL NOT NULL);
    CREATE TRIGGER IF NOT EXISTS chaos_fence_trg AFTER UPDATE OF fence ON belay_tasks WHEN NEW.fence <> OLD.fence
    BEGIN
      INSERT INTO chaos_fence_log VALUES (NEW.id, NEW.fence, NEW.next_seq, NEW.lease_owner, OLD.lease_owner,
        OLD.lease_until, NEW.lease_until, OLD.state, NEW.state, unixepoch('subsec') * 1000);
    END;`);
  const readFenceLog = async () => (raw.prepare('SELECT * FROM chaos_fence_log ORDER BY rowid').all() as FenceRow[]).map(grantFromRow);
  return {
    kind: 'sqlite',
    url: path,
    store,
    readFenceLog,
    final: async () => {
      const ids = (raw.prepare('SELECT id FROM belay_tasks').all() as Array<{ id: string }>).map((r) => r.id);
      const tombs = (raw.prepare('SELECT id FROM belay_tombstones').all() as Array<{ id: string }>).map((r) => r.id);
      return readFinal(store, ids, tombs, await readFenceLog());
    },
    close: async () => {
      raw.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function openPostgresChaosDb(name: string, pgRun: PgRun): Promise<ChaosDb> {
  await pgRun.ensure();
  const schema = `c_${name.toLowerCase().replace(/[^a-z0-9]/g, '')}_${randomBytes(3).toString('hex')}`;
  const store = await openPostgresStore({ connectionString: pgRun.url(), schema, poolSize: 4 });
  const pool = new pg.Pool({ connectionString: pgRun.url(), max: 2 });
  pool.on('error', () => undefined);
  await pool.query(`
    CREATE TABLE ${schema}.chaos_fence_log (
      task_id TEXT NOT NULL, fence BIGINT NOT NULL, next_seq BIGINT NOT NULL, owner TEXT, prev_owner TEXT,
      prev_lease_until BIGINT, lease_until BIGINT, old_state TEXT, new_state TEXT, db_time DOUBLE PRECISION NOT NULL,
      n BIGSERIAL);
    CREATE FUNCTION ${schema}.chaos_fence_fn() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${schema}.chaos_fence_log (task_id, fence, next_seq, owner, prev_owner, prev_lease_until, lease_until, old_state, new_state, db_time)
      VALUES (NEW.id, NEW.fence, NEW.next_seq, NEW.lease_owner, OLD.lease_owner, OLD.lease_until, NEW.lease_until, OLD.state, NEW.state,
              extract(epoch FROM clock_timestamp()) * 1000);
      RETURN NULL;
    END $$;
    CREATE TRIGGER chaos_fence_trg AFTER UPDATE ON ${schema}.tasks FOR EACH ROW
      WHEN (OLD.fence IS DISTINCT FROM NEW.fence) EXECUTE FUNCTION ${schema}.chaos_fence_fn();`);
  const readFenceLog = async () => (await pool.query<FenceRow>(`SELECT * FROM ${schema}.chaos_fence_log ORDER BY n`)).rows.map(grantFromRow);
  const base = new URL(pgRun.url());
  const urlVia = (host: string, port: number) => {
    const u = new URL(pgRun.url());
    u.hostname = host;
    u.port = String(port);
    u.searchParams.set('schema', schema);
    return u.toString();
  };
  return {
    kind: 'postgres',
    url: `${pgRun.url()}?schema=${schema}`,
    store,
    pg: { host: base.hostname, port: Number(base.port || 5432), urlVia },
    readFenceLog,
    final: async () => {
      const ids = (await pool.query<{ id: string }>(`SELECT id FROM ${schema}.tasks`)).rows.map((r) => r.id);
      const tombs = (await pool.query<{ id: string }>(`SELECT id FROM ${schema}.tombstones`)).rows.map((r) => r.id);
      return readFinal(store, ids, tombs, await readFenceLog());
    },
    close: async () => {
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      await pool.end();
    },
  };
}

interface FenceRow {
  task_id: string;
  fence: number | string;
  next_seq: number | string;
  owner: string | null;
  prev_owner: string | null;
  prev_lease_until: number | string | null;
  lease_until: number | string | null;
  old_state: string;
  new_state: string;
  db_time: number | string;
}

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

function grantFromRow(r: FenceRow): FenceGrant {
  return {
    taskId: r.task_id,
    fence: Number(r.fence),
    nextSeq: Number(r.next_seq),
    owner: r.owner,
    prevOwner: r.prev_owner,
    prevLeaseUntil: num(r.prev_lease_until),
    leaseUntil: num(r.lease_until),
    oldState: r.old_state,
    newState: r.new_state,
    dbTime: Number(r.db_time),
  };
}

async function readFinal(store: Store, ids: string[], tombIds: string[], fenceLog: FenceGrant[]): Promise<FinalState> {
  const tasks = new Map<string, Task>();
  const events = new Map<string, TaskEvent[]>();
  const effects = new Map<string, SideEffectRecord[]>();
  const tombstones = new Map<string, Tombstone>();
  for (const id of ids) {
    const t = await store.getTask(id);
    if (!t) continue;
    tasks.set(id, t);
    events.set(id, await store.listEvents(id, 0, 1_000_000));
    effects.set(id, await store.listEffects(id));
  }
  for (const id of tombIds) {
    const t = await store.getTombstone(id);
    if (t) tombstones.set(id, t);
  }
  return { tasks, events, effects, tombstones, fenceLog };
}
