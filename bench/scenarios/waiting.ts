/**
 * The cost of waiting: N tasks reach `input_required` through the real path (create, claim, the step asks, the
 * pause commit releases the lease). Then: storage per waiting task (PostgreSQL: pg_total_relation_size of Belay's
 * tables, indexes and TOAST; SQLite: dbstat page bytes of Belay's tables and indexes), against the bytes of the
 * rows' contents; the worker's heap after GC, against the idle worker's heap before; claim latency of runnable
 * tasks, against the same with no task waiting.
 *
 * The fill runs without waiting for WAL flushes (PostgreSQL: `synchronous_commit = off` on this scenario's own
 * database; SQLite: `synchronous = NORMAL`): bytes on disk and the worker's memory do not depend on when the WAL is
 * flushed, and 100,000 tasks through the real path would otherwise take many minutes on this disk. The claim
 * latencies before and after are measured under the same setting.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { systemClock } from '../../src/core/clock.js';
import { Worker } from '../../src/runtime/worker.js';
import { TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { BELAY_SCHEMA, adminQuery, openStore, withPlace, type Place } from '../lib/env.js';
import type { BenchOptions } from '../lib/options.js';
import { log, type Report } from '../lib/report.js';
import { forEachLimit, percentile, sleep, waitFor } from '../lib/stats.js';
import { claimProbeType, serviceRegistry, waitType, who } from '../lib/task-types.js';

interface Sizes {
  /** Bytes on disk of every Belay table and index. */
  total: number;
  /** Bytes of row contents (tasks + events). */
  content: number;
}

async function sizes(place: Place): Promise<Sizes> {
  if (place.kind === 'postgres') {
    const c = new pg.Client({ connectionString: place.location });
    await c.connect();
    try {
      const t = await c.query<{ total: string }>(
        `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) AS total FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind = 'r'`,
        [BELAY_SCHEMA],
      );
      const content = await c.query<{ n: string }>(
        `SELECT (SELECT COALESCE(sum(pg_column_size(t.*)), 0) FROM ${BELAY_SCHEMA}.tasks t) + (SELECT COALESCE(sum(pg_column_size(e.*)), 0) FROM ${BELAY_SCHEMA}.task_events e) AS n`,
      );
      return { total: Number(t.rows[0]!.total), content: Number(content.rows[0]!.n) };
    } finally {
      await c.end();
    }
  }
  const db = new Database(place.location);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    const total = db.prepare(`SELECT COALESCE(sum(pgsize), 0) AS n FROM dbstat WHERE name LIKE 'belay_%' OR name LIKE 'sqlite_autoindex_belay_%'`).get() as { n: number };
    const content = db.prepare(`SELECT COALESCE(sum(payload), 0) AS n FROM dbstat WHERE name IN ('belay_tasks', 'belay_task_events')`).get() as { n: number };
    return { total: Number(total.n), content: Number(content.n) };
  } finally {
    db.close();
  }
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  return process.memoryUsage().heapUsed;
}

/** p50 of claiming one runnable task at a time (a kind no worker runs, so only these claims take them). */
export async function claimLatency(store: Store, service: TaskService, samples: number): Promise<number[]> {
  for (let i = 0; i < samples; i++) await service.createTask(who, { type: claimProbeType.name, input: {} });
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    const got = await store.claimTasks({ workerId: 'bench-claimer', now: Date.now(), leaseMs: 3600_000, limit: 1, kinds: [{ type: claimProbeType.name, version: 1 }] });
    out.push(performance.now() - t0);
    if (got.length !== 1) throw new Error(`claim probe got ${got.length} tasks`);
  }
  return out;
}

export async function waiting(o: BenchOptions, report: Report): Promise<void> {
  const n = o.waitingTasks;
  for (const kind of o.stores) {
    await withPlace(kind, o.pgAdminUrl, 'waiting', async (place) => {
      if (place.kind === 'postgres') await adminQuery(place.location, `ALTER DATABASE ${pg.escapeIdentifier(new URL(place.location).pathname.slice(1))} SET synchronous_commit = off`);
      const store = await openStore(place, { poolSize: 12, synchronous: 'normal' });
      try {
        const service = new TaskService({ store, registry: serviceRegistry(), clock: systemClock });
        let paused = 0;
        const worker = new Worker({
          store,
          registry: new TaskTypeRegistry([waitType]),
          concurrency: 8,
          leaseMs: 30_000,
          onRunEnd: (_id, outcome) => {
            if (outcome === 'paused') paused++;
          },
        });
        worker.start();
        await claimLatency(store, service, 20); // warm-up
        const claimBefore = await claimLatency(store, service, o.claimSamples);
        await sleep(200);
        const heapBefore = heapAfterGc();
        const before = await sizes(place);
        const t0 = performance.now();
        let lastLog = t0;
        await forEachLimit(n, 8, async () => {
          await service.createTask(who, { type: waitType.name, input: {} });
          if (performance.now() - lastLog > 10_000) {
            lastLog = performance.now();
            log(`    ${kind}: ${paused}/${n} waiting`);
          }
        });
        if (!(await waitFor(() => paused >= n, 600_000, 20))) throw new Error(`waiting: only ${paused}/${n} tasks paused`);
        const fillSeconds = (performance.now() - t0) / 1000;
        const counts = await store.countByState();
        if ((counts.input_required ?? 0) < n) throw new Error(`waiting: the store shows ${counts.input_required ?? 0} waiting tasks, expected ${n}`);
        await sleep(200);
        const heapAfter = heapAfterGc();
        const after = await sizes(place);
        const claimAfter = await claimLatency(store, service, o.claimSamples);
        await worker.stop();
        const perTask = (after.total - before.total) / n;
        const contentPerTask = (after.content - before.content) / n;
        log(`  waiting ${kind}: ${n} tasks paused in ${fillSeconds.toFixed(1)} s; ${perTask.toFixed(0)} B/task on disk, ${contentPerTask.toFixed(0)} B/task content; heap ${(heapBefore / 2 ** 20).toFixed(1)} -> ${(heapAfter / 2 ** 20).toFixed(1)} MiB`);
        const how = kind === 'postgres' ? 'pg_column_size of task row + its events' : 'dbstat payload of task row + its events';
        report.add({ figure: 'waiting_task_bytes', store: kind, workers: 8, value: perTask, unit: 'bytes/task', baseline: contentPerTask, baselineName: `row contents (${how}); target <= 2048` });
        report.add({ figure: 'waiting_worker_heap', store: kind, workers: 8, value: heapAfter / 2 ** 20, unit: 'MiB', baseline: heapBefore / 2 ** 20, baselineName: `idle worker before ${n} tasks paused (heap after GC)` });
        report.add({ figure: 'waiting_claim_p50', store: kind, workers: 1, value: percentile(claimAfter, 50), unit: 'ms', baseline: percentile(claimBefore, 50), baselineName: 'claim with no task waiting' });
        report.add({ figure: 'waiting_claim_p99', store: kind, workers: 1, value: percentile(claimAfter, 99), unit: 'ms', baseline: percentile(claimBefore, 99), baselineName: 'claim with no task waiting' });
      } finally {
        await store.close();
      }
    });
  }
}
