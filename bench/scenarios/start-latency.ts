/**
 * Create → first step start latency, one task at a time on an idle worker (8 slots, default 1 s poll): from the
 * `createTask` call to the moment the step function runs. Baseline: the raw driver creating the same rows and
 * claiming on the wake-up (PostgreSQL: a NOTIFY in the create statement heard by a LISTENing client, then the
 * claim; SQLite: create, then claim, in-process).
 */
import pg from 'pg';
import { systemClock } from '../../src/core/clock.js';
import { Worker } from '../../src/runtime/worker.js';
import { TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { TaskService } from '../../src/service/task-service.js';
import { openStore, withPlace, type Place } from '../lib/env.js';
import type { BenchOptions } from '../lib/options.js';
import { rawDriver } from '../lib/raw.js';
import { log, type Report } from '../lib/report.js';
import { percentile, sleep } from '../lib/stats.js';
import { noopHooks, noopType, serviceRegistry, who } from '../lib/task-types.js';

const WORKERS = 8;
const GAP_MS = 10;

async function belayLatency(place: Place, samples: number): Promise<number[]> {
  const store = await openStore(place);
  const starts = new Map<string, number>();
  const waiting = new Map<string, (t: number) => void>();
  noopHooks.onStart = (id, at) => {
    const w = waiting.get(id);
    if (w) w(at);
    else starts.set(id, at);
  };
  try {
    const service = new TaskService({ store, registry: serviceRegistry(), clock: systemClock });
    const worker = new Worker({ store, registry: new TaskTypeRegistry([noopType]), concurrency: WORKERS, leaseMs: 30_000 });
    worker.start();
    const out: number[] = [];
    for (let i = 0; i < samples + 5; i++) {
      const t0 = performance.now();
      const { task } = await service.createTask(who, { type: noopType.name, input: {} });
      const started =
        starts.get(task.id) ??
        (await new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`task ${task.id} did not start within 10 s`)), 10_000);
          waiting.set(task.id, (t) => {
            clearTimeout(timer);
            resolve(t);
          });
        }));
      waiting.delete(task.id);
      starts.delete(task.id);
      if (i >= 5) out.push(started - t0); // the first few warm the connections and plans
      await sleep(GAP_MS);
    }
    await worker.stop();
    return out;
  } finally {
    noopHooks.onStart = null;
    await store.close();
  }
}

async function rawLatency(place: Place, samples: number): Promise<number[]> {
  const driver = await rawDriver(place, 2);
  let listener: pg.Client | null = null;
  let heard: (() => void) | null = null;
  try {
    if (place.kind === 'postgres') {
      listener = new pg.Client({ connectionString: place.location, application_name: 'belay-bench-listen' });
      listener.on('error', () => undefined); // a lost listener shows as a sample that never wakes
      await listener.connect();
      listener.on('notification', () => heard?.());
      await listener.query('LISTEN belay_raw');
    }
    const out: number[] = [];
    for (let i = 0; i < samples + 5; i++) {
      const t0 = performance.now();
      if (place.kind === 'postgres') {
        const woke = new Promise<void>((resolve) => {
          heard = resolve;
        });
        await driver.create(0, 'raw-noop', true);
        await woke;
      } else {
        await driver.create(0, 'raw-noop');
      }
      const c = await driver.claim(1, 'raw-noop', 30_000);
      if (!c) throw new Error('raw claim found nothing');
      if (i >= 5) out.push(performance.now() - t0);
      await sleep(GAP_MS);
    }
    return out;
  } finally {
    await listener?.end();
    await driver.close();
  }
}

export async function startLatency(o: BenchOptions, report: Report): Promise<void> {
  for (const kind of o.stores) {
    await withPlace(kind, o.pgAdminUrl, 'latency', async (place) => {
      await (await openStore(place)).close();
      const raw = await rawLatency(place, o.latencySamples);
      const belay = await belayLatency(place, o.latencySamples);
      const name = kind === 'postgres' ? 'raw pg: create with NOTIFY, claim when LISTEN hears it' : 'raw better-sqlite3: create, then claim';
      log(`  create→start ${kind}: belay p50 ${percentile(belay, 50).toFixed(2)} ms, raw p50 ${percentile(raw, 50).toFixed(2)} ms`);
      report.add({ figure: 'create_to_start_p50', store: kind, workers: WORKERS, value: percentile(belay, 50), unit: 'ms', baseline: percentile(raw, 50), baselineName: name });
      report.add({ figure: 'create_to_start_p99', store: kind, workers: WORKERS, value: percentile(belay, 99), unit: 'ms', baseline: percentile(raw, 99), baselineName: name });
    });
  }
}
