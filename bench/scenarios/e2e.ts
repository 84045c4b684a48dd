/**
 * End-to-end 5-step task throughput: a producer creates N tasks (4 creates in flight) while a Worker with
 * `workers` slots runs them: create, claim, four progress commits and the completing commit per task. Time runs
 * from the first create to the last completion. Baseline: the same creates, claims and commits issued through
 * the driver by the same number of lanes.
 */
import { systemClock } from '../../src/core/clock.js';
import { Worker } from '../../src/runtime/worker.js';
import { TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { TaskService } from '../../src/service/task-service.js';
import { openStore, withPlace, type Place } from '../lib/env.js';
import type { BenchOptions } from '../lib/options.js';
import { rawDriver } from '../lib/raw.js';
import { log, type Report } from '../lib/report.js';
import { forEachLimit, sleep, waitFor, yieldToLoop } from '../lib/stats.js';
import { fiveStepType, serviceRegistry, who } from '../lib/task-types.js';

const CREATORS = 4;

async function belayE2e(place: Place, workers: number, n: number): Promise<number> {
  const store = await openStore(place, { poolSize: workers + CREATORS + 2 });
  try {
    const service = new TaskService({ store, registry: serviceRegistry(), clock: systemClock });
    let completed = 0;
    const worker = new Worker({
      store,
      registry: new TaskTypeRegistry([fiveStepType]),
      concurrency: workers,
      leaseMs: 30_000,
      onRunEnd: (_id, outcome) => {
        if (outcome === 'completed') completed++;
      },
    });
    worker.start();
    const t0 = performance.now();
    await forEachLimit(n, CREATORS, async () => {
      await service.createTask(who, { type: fiveStepType.name, input: {} });
    });
    if (!(await waitFor(() => completed >= n, 600_000, 1))) throw new Error(`e2e: only ${completed}/${n} tasks completed`);
    const elapsed = performance.now() - t0;
    await worker.stop();
    return n / (elapsed / 1000);
  } finally {
    await store.close();
  }
}

async function rawE2e(place: Place, workers: number, n: number): Promise<number> {
  const driver = await rawDriver(place, workers + CREATORS);
  const type = 'raw-five';
  try {
    let completed = 0;
    const t0 = performance.now();
    const producer = forEachLimit(n, CREATORS, async (_i, lane) => {
      await driver.create(workers + lane, type);
    });
    const lanes = Array.from({ length: workers }, async (_, lane) => {
      while (completed < n) {
        const c = await driver.claim(lane, type, 30_000);
        if (!c) {
          if (place.kind === 'postgres') await sleep(1);
          else await yieldToLoop();
          continue;
        }
        for (let i = 1; i <= 5; i++) await driver.commit(lane, { id: c.id, fence: c.fence, i, total: 5, final: i === 5 });
        completed++;
      }
    });
    await producer;
    await Promise.all(lanes);
    return n / ((performance.now() - t0) / 1000);
  } finally {
    await driver.close();
  }
}

export async function e2e(o: BenchOptions, report: Report): Promise<void> {
  for (const kind of o.stores) {
    for (const workers of o.e2eWorkers) {
      // A fresh database per worker count: the task tables start empty each time.
      await withPlace(kind, o.pgAdminUrl, 'e2e', async (place) => {
        await (await openStore(place)).close();
        const raw = await rawE2e(place, workers, o.e2eTasks);
        const belay = await belayE2e(place, workers, o.e2eTasks);
        log(`  e2e ${kind} x${workers}: belay ${belay.toFixed(0)} tasks/s, raw ${raw.toFixed(0)} tasks/s`);
        report.add({
          figure: 'e2e_5step_tasks',
          store: kind,
          workers,
          value: belay,
          unit: 'tasks/s',
          baseline: raw,
          baselineName: 'raw driver: same create, claim and 5 commits per task',
        });
      });
    }
  }
}
