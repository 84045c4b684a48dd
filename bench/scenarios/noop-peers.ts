/**
 * No-op job throughput on one PostgreSQL database, Belay next to graphile-worker and pg-boss at equal concurrency.
 * Each system gets N jobs enqueued beforehand (not timed), then its workers start; the rate is jobs completed (as
 * the database shows them) per second, until all are done or `--noop-max-ms` passes. The same monitor query loop
 * watches every system. Peers run with their documented defaults except for concurrency (and pg-boss's polling
 * interval, set to its minimum, 0.5 s, since a pg-boss worker waits out the interval after every fetch).
 */
import { systemClock } from '../../src/core/clock.js';
import { Worker } from '../../src/runtime/worker.js';
import { TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { TaskService } from '../../src/service/task-service.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import pg from 'pg';
import { withPgDatabase } from '../lib/env.js';
import type { BenchOptions } from '../lib/options.js';
import { log, type Report } from '../lib/report.js';
import { forEachLimit, median, sleep } from '../lib/stats.js';
import { noopType, serviceRegistry, who } from '../lib/task-types.js';

interface Outcome {
  completed: number;
  seconds: number;
  /** WAL written while the jobs ran (enqueueing excluded), per completed job. */
  walPerJob?: number;
}

const rate = (o: Outcome) => o.completed / o.seconds;

async function walLsn(monitor: pg.Client): Promise<bigint> {
  const r = await monitor.query<{ b: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint::text AS b`);
  return BigInt(r.rows[0]!.b);
}

/** Polls `count` until it reaches `n` or `maxMs` passes; also the WAL written meanwhile, per completed job. */
async function watch(monitor: pg.Client, countSql: string, params: unknown[], n: number, maxMs: number, t0: number, wal0: bigint): Promise<Outcome> {
  for (;;) {
    const r = await monitor.query<{ n: string }>(countSql, params);
    const done = Number(r.rows[0]?.n ?? 0);
    const elapsed = performance.now() - t0;
    if (done >= n || elapsed >= maxMs) {
      const wal = Number((await walLsn(monitor)) - wal0);
      return { completed: done, seconds: elapsed / 1000, ...(done > 0 ? { walPerJob: wal / done } : {}) };
    }
    await sleep(20);
  }
}

async function belayNoop(url: string, monitor: pg.Client, run: number, concurrency: number, o: BenchOptions): Promise<Outcome> {
  const schema = `belay_noop_${run}`;
  const store = await openPostgresStore({ connectionString: url, schema, poolSize: 10 });
  try {
    const service = new TaskService({ store, registry: serviceRegistry(), clock: systemClock });
    await forEachLimit(o.noopJobs, 8, async () => {
      await service.createTask(who, { type: noopType.name, input: {} });
    });
    const worker = new Worker({ store, registry: new TaskTypeRegistry([noopType]), concurrency, leaseMs: 30_000 });
    const wal0 = await walLsn(monitor);
    const t0 = performance.now();
    worker.start();
    const out = await watch(monitor, `SELECT count(*) AS n FROM ${schema}.tasks WHERE state = 'completed'`, [], o.noopJobs, o.noopMaxMs, t0, wal0);
    await worker.stop(5000);
    return out;
  } finally {
    await store.close();
  }
}

async function graphileNoop(url: string, monitor: pg.Client, run: number, concurrency: number, o: BenchOptions, tuned: boolean): Promise<Outcome> {
  const gw = await import('graphile-worker');
  const schema = `gw_noop_${run}${tuned ? '_t' : ''}`;
  const logger = new gw.Logger(() => (level, message) => {
    if (String(level) === 'error') log(`    graphile-worker: ${message}`);
  });
  const utils = await gw.makeWorkerUtils({ connectionString: url, schema, logger });
  try {
    await utils.migrate();
    for (let i = 0; i < o.noopJobs; i += 1000) {
      await utils.addJobs(Array.from({ length: Math.min(1000, o.noopJobs - i) }, () => ({ identifier: 'noop', payload: {} })));
    }
    const wal0 = await walLsn(monitor);
    const t0 = performance.now();
    const runner = await gw.run({
      connectionString: url,
      schema,
      concurrency,
      noHandleSignals: true,
      logger,
      taskList: { noop: async () => {} },
      // The batching the graphile-worker docs recommend for many short jobs (informational figure only).
      ...(tuned ? { preset: { worker: { localQueue: { size: Math.max(2, concurrency * 4) }, completeJobBatchDelay: 0 } } } : {}),
    });
    const out = await watch(monitor, `SELECT $1::int - count(*) AS n FROM ${schema}._private_jobs`, [o.noopJobs], o.noopJobs, o.noopMaxMs, t0, wal0);
    await runner.stop();
    return out;
  } finally {
    await utils.release();
  }
}

async function pgBossNoop(url: string, monitor: pg.Client, run: number, concurrency: number, o: BenchOptions, batchSize: number): Promise<Outcome> {
  const { default: PgBoss } = await import('pg-boss');
  const schema = `pgboss_noop_${run}_${batchSize}`;
  const boss = new PgBoss({ connectionString: url, schema });
  boss.on('error', (e) => log(`    pg-boss: ${e.message}`));
  await boss.start();
  try {
    const queue = 'noop';
    await boss.createQueue(queue);
    for (let i = 0; i < o.noopJobs; i += 1000) {
      await boss.insert(Array.from({ length: Math.min(1000, o.noopJobs - i) }, () => ({ name: queue, data: {} })));
    }
    const wal0 = await walLsn(monitor);
    const t0 = performance.now();
    // One work() loop per slot; each fetches `batchSize` jobs, runs them, completes them, then waits out the
    // rest of its polling interval (pg-boss 10 worker loop).
    for (let k = 0; k < concurrency; k++) await boss.work(queue, { batchSize, pollingIntervalSeconds: 0.5 }, async () => {});
    const out = await watch(monitor, `SELECT count(*) AS n FROM ${schema}.job WHERE name = $1 AND state = 'completed'`, [queue], o.noopJobs, o.noopMaxMs, t0, wal0);
    return out;
  } finally {
    await boss.stop({ graceful: false, wait: true, timeout: 5000 });
  }
}

export async function noopPeers(o: BenchOptions, report: Report): Promise<void> {
  if (!o.stores.includes('postgres')) return;
  await withPgDatabase(o.pgAdminUrl, 'noop', async (url) => {
    const monitor = new pg.Client({ connectionString: url, application_name: 'belay-bench-monitor' });
    // A server restart (another suite's test) fails the scenario through its next query, not the process.
    monitor.on('error', (e) => log(`    monitor connection: ${e.message}`));
    await monitor.connect();
    try {
      let run = 0;
      for (const c of o.noopWorkers) {
        const belay: number[] = [];
        const graphile: number[] = [];
        const graphileTuned: number[] = [];
        const boss: number[] = [];
        const bossBatched: number[] = [];
        const wal = { belay: [] as number[], graphile: [] as number[], boss: [] as number[] };
        for (let r = 0; r < o.noopRounds; r++) {
          run++;
          const b = await belayNoop(url, monitor, run, c, o);
          const g = await graphileNoop(url, monitor, run, c, o, false);
          const p = await pgBossNoop(url, monitor, run, c, o, 1);
          belay.push(rate(b));
          graphile.push(rate(g));
          boss.push(rate(p));
          if (b.walPerJob !== undefined) wal.belay.push(b.walPerJob);
          if (g.walPerJob !== undefined) wal.graphile.push(g.walPerJob);
          if (p.walPerJob !== undefined) wal.boss.push(p.walPerJob);
          graphileTuned.push(rate(await graphileNoop(url, monitor, run, c, o, true)));
          bossBatched.push(rate(await pgBossNoop(url, monitor, run, c, o, 100)));
          log(
            `  noop x${c} round ${r + 1}: belay ${rate(b).toFixed(0)}/s (${b.completed} in ${b.seconds.toFixed(1)} s), graphile-worker ${rate(g).toFixed(0)}/s, pg-boss ${rate(p).toFixed(1)}/s; ` +
              `tuned: graphile-worker ${graphileTuned.at(-1)!.toFixed(0)}/s, pg-boss batch 100 ${bossBatched.at(-1)!.toFixed(0)}/s`,
          );
        }
        const value = median(belay);
        report.add({ figure: 'noop_vs_graphile_worker', store: 'postgres', workers: c, value, unit: 'jobs/s', baseline: median(graphile), baselineName: `graphile-worker 0.17 defaults, concurrency ${c}` });
        report.add({ figure: 'noop_vs_pg_boss', store: 'postgres', workers: c, value, unit: 'jobs/s', baseline: median(boss), baselineName: `pg-boss 10: ${c} work() loops, batchSize 1, polling 0.5 s` });
        report.add({ figure: 'noop_vs_graphile_worker_batched', store: 'postgres', workers: c, value, unit: 'jobs/s', baseline: median(graphileTuned), baselineName: `graphile-worker: localQueue ${Math.max(2, c * 4)}, completeJobBatchDelay 0` });
        // Why the rates differ: the WAL each system writes per job (Belay keeps a durable event log per task).
        if (wal.belay.length > 0 && wal.graphile.length > 0) {
          report.add({ figure: 'noop_wal_bytes_per_job', store: 'postgres', workers: c, value: median(wal.belay), unit: 'bytes/job', baseline: median(wal.graphile), baselineName: 'graphile-worker, same run' });
        }
        if (wal.belay.length > 0 && wal.boss.length > 0) {
          report.add({ figure: 'noop_wal_bytes_per_job_vs_pg_boss', store: 'postgres', workers: c, value: median(wal.belay), unit: 'bytes/job', baseline: median(wal.boss), baselineName: 'pg-boss (batchSize 1), same run' });
        }
        report.add({ figure: 'noop_vs_pg_boss_batched', store: 'postgres', workers: c, value, unit: 'jobs/s', baseline: median(bossBatched), baselineName: `pg-boss: ${c} loops x batchSize 100 (${c * 100} jobs held)` });
      }
    } finally {
      await monitor.end();
    }
  });
}
