/**
 * Claim latency against queue depth: 1k, 10k, 100k queued tasks (inserted in bulk with the rows `createTask`
 * writes: the task and its `created` event), then one-at-a-time claims through Belay's store. The figure for each
 * depth is set against the smallest depth measured in the same run. The query plans are printed as notes, naming
 * the index each claim uses.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Store } from '../../src/store/port.js';
import { BELAY_SCHEMA, openStore, withPlace, type Place } from '../lib/env.js';
import type { BenchOptions } from '../lib/options.js';
import { rawTaskId } from '../lib/raw.js';
import type { Report } from '../lib/report.js';
import { percentile } from '../lib/stats.js';
import { claimProbeType } from '../lib/task-types.js';

const TYPE = claimProbeType.name;
const CREATED_BODY = JSON.stringify({ state: 'submitted', type: TYPE, type_version: 1 });
const PROGRESS_NULL = JSON.stringify({ current: null, total: null, message: null });

async function fill(place: Place, n: number): Promise<void> {
  const base = Date.now() - n - 60_000;
  if (place.kind === 'postgres') {
    const c = new pg.Client({ connectionString: place.location });
    await c.connect();
    try {
      const s = BELAY_SCHEMA;
      await c.query(
        `INSERT INTO ${s}.tasks (id, tenant, context_id, type, type_version, state, input, progress, version, next_seq, wake_at, created_at, updated_at, created_by)
         SELECT 'task_' || lpad(to_hex($1::bigint + g), 12, '0') || md5(g::text), 'bench', 'ctx_' || md5(g::text), $3::text, 1, 'submitted',
                '{}'::jsonb, $4::jsonb, 1, 2, $1::bigint + g, $1::bigint + g, $1::bigint + g, 'bench'
           FROM generate_series(1, $2::int) AS g`,
        [base, n, TYPE, PROGRESS_NULL],
      );
      await c.query(`INSERT INTO ${s}.task_events (task_id, seq, kind, body, at) SELECT id, 1, 'created', $1::jsonb, created_at FROM ${s}.tasks`, [CREATED_BODY]);
    } finally {
      await c.end();
    }
    return;
  }
  const db = new Database(place.location);
  try {
    db.pragma('journal_mode = WAL');
    const task = db.prepare(
      `INSERT INTO belay_tasks (id, tenant, context_id, type, type_version, state, input, progress, version, next_seq, wake_at, created_at, updated_at, created_by)
       VALUES (?, 'bench', ?, ?, 1, 'submitted', '{}', ?, 1, 2, ?, ?, ?, 'bench')`,
    );
    const event = db.prepare(`INSERT INTO belay_task_events (task_id, seq, kind, body, at) VALUES (?, 1, 'created', ?, ?)`);
    db.transaction(() => {
      for (let g = 1; g <= n; g++) {
        const id = rawTaskId();
        task.run(id, `ctx_${id}`, TYPE, PROGRESS_NULL, base + g, base + g, base + g);
        event.run(id, CREATED_BODY, base + g);
      }
    }).immediate();
  } finally {
    db.close();
  }
}

/** The claim's candidate query plan: PostgreSQL as Belay runs it (bitmap scans and sorts off) and with planner defaults. */
async function plan(place: Place): Promise<string> {
  const now = Date.now();
  if (place.kind === 'postgres') {
    const c = new pg.Client({ connectionString: place.location });
    await c.connect();
    try {
      const explain = async () => {
        const r = await c.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
           SELECT id, state FROM ${BELAY_SCHEMA}.tasks
            WHERE state IN ('submitted', 'working') AND wake_at <= ${now}
              AND (type, type_version) IN (SELECT * FROM unnest(ARRAY['${TYPE}']::text[], ARRAY[1]::int[]))
            ORDER BY wake_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
        );
        return r.rows.map((row) => row['QUERY PLAN'].trim()).join(' / ');
      };
      await c.query('BEGIN');
      const defaults = await explain();
      await c.query(`SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true)`);
      const belay = await explain();
      await c.query('ROLLBACK');
      return `as Belay claims: ${belay} || with planner defaults (no fresh statistics): ${defaults}`;
    } finally {
      await c.end();
    }
  }
  const db = new Database(place.location, { readonly: true });
  try {
    const rows = db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT id, state FROM belay_tasks
          WHERE state IN ('submitted', 'working') AND wake_at <= ? AND (type || '@' || type_version) IN (SELECT value FROM json_each(?))
          ORDER BY wake_at LIMIT ?`,
      )
      .all(now, JSON.stringify([`${TYPE}@1`]), 1) as Array<{ detail: string }>;
    return rows.map((r) => r.detail).join(' / ');
  } finally {
    db.close();
  }
}

async function claims(store: Store, samples: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < samples + 5; i++) {
    const t0 = performance.now();
    const got = await store.claimTasks({ workerId: 'bench-claimer', now: Date.now(), leaseMs: 3600_000, limit: 1, kinds: [{ type: TYPE, version: 1 }] });
    if (got.length !== 1) throw new Error(`claim got ${got.length} tasks`);
    if (i >= 5) out.push(performance.now() - t0);
  }
  return out;
}

export async function scaling(o: BenchOptions, report: Report): Promise<void> {
  for (const kind of o.stores) {
    let first: { size: number; p50: number; p99: number } | null = null;
    for (const size of o.scalingSizes) {
      await withPlace(kind, o.pgAdminUrl, 'scaling', async (place) => {
        await (await openStore(place)).close();
        await fill(place, size);
        const store = await openStore(place);
        try {
          const t = await claims(store, o.claimSamples);
          const p50 = percentile(t, 50);
          const p99 = percentile(t, 99);
          first ??= { size, p50, p99 };
          const name = `claim with ${first.size} queued (same run)`;
          report.add({ figure: `claim_p50_queued_${size}`, store: kind, workers: 1, value: p50, unit: 'ms', baseline: first.p50, baselineName: name });
          report.add({ figure: `claim_p99_queued_${size}`, store: kind, workers: 1, value: p99, unit: 'ms', baseline: first.p99, baselineName: name });
          if (size === Math.max(...o.scalingSizes)) report.note(`claim plan, ${kind}, ${size} queued: ${await plan(place)}`);
        } finally {
          await store.close();
        }
      });
    }
  }
}
