/**
 * Step commits per second and commit latency, Belay against the raw limit, alternating rounds in one run.
 * Belay: a Worker with `workers` slots, each running a task whose step commits a sub-step per iteration (the fenced
 * commit of checkpoint + progress + one event). Raw: `workers` lanes issuing the same UPDATE + INSERT on their own
 * task rows through the driver.
 */
import { systemClock } from '../../src/core/clock.js';
import { Worker } from '../../src/runtime/worker.js';
import { TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { TaskService } from '../../src/service/task-service.js';
import { openStore, timedStore, withPlace, type Place } from '../lib/env.js';
import type { BenchOptions } from '../lib/options.js';
import { rawDriver, type RawCommitMode } from '../lib/raw.js';
import { log, type Report } from '../lib/report.js';
import { Recorder, median, percentile, sleep, yieldToLoop } from '../lib/stats.js';
import { commitLoops, commitsType, serviceRegistry, who } from '../lib/task-types.js';

interface Run {
  rate: number;
  p50: number;
  p99: number;
}

function summarize(rec: Recorder, from: number, to: number): Run {
  const w = rec.inWindow(from, to);
  return { rate: w.count / ((to - from) / 1000), p50: percentile(w.latencies, 50), p99: percentile(w.latencies, 99) };
}

async function measureWindow(o: BenchOptions): Promise<[number, number]> {
  await sleep(o.warmupMs);
  const from = performance.now();
  await sleep(o.durationMs);
  return [from, performance.now()];
}

export async function runRawCommits(o: BenchOptions, place: Place, workers: number, mode: RawCommitMode): Promise<Run> {
  const driver = await rawDriver(place, workers);
  try {
    const ids = await driver.seedWorking(workers, 'raw-steps');
    const rec = new Recorder();
    let stop = false;
    const lanes = ids.map(async (id, lane) => {
      for (let i = 1; !stop; i++) {
        const start = performance.now();
        await driver.commit(lane, { id, fence: 1, i, total: 1_000_000_000, final: false }, mode);
        rec.record(start, performance.now());
        await yieldToLoop();
      }
    });
    const [from, to] = await measureWindow(o);
    stop = true;
    await Promise.all(lanes);
    return summarize(rec, from, to);
  } finally {
    await driver.close();
  }
}

export async function runBelayCommits(o: BenchOptions, place: Place, workers: number): Promise<Run> {
  const store = await openStore(place, { poolSize: workers + 4 });
  try {
    const rec = new Recorder();
    const service = new TaskService({ store, registry: serviceRegistry(), clock: systemClock });
    for (let i = 0; i < workers; i++) await service.createTask(who, { type: commitsType.name, input: { max: 1_000_000_000 } });
    commitLoops.stop = false;
    const worker = new Worker({ store: timedStore(store, rec), registry: new TaskTypeRegistry([commitsType]), concurrency: workers, leaseMs: 30_000 });
    worker.start();
    const [from, to] = await measureWindow(o);
    commitLoops.stop = true;
    await worker.stop();
    return summarize(rec, from, to);
  } finally {
    await store.close();
  }
}

export async function stepCommits(o: BenchOptions, report: Report): Promise<void> {
  for (const kind of o.stores) {
    await withPlace(kind, o.pgAdminUrl, 'steps', async (place) => {
      await (await openStore(place)).close(); // migrations: raw lanes use Belay's own tables
      const rawName = kind === 'postgres' ? 'raw pg: same UPDATE+INSERT as one statement, no NOTIFY' : 'raw better-sqlite3: same UPDATE+INSERT in BEGIN IMMEDIATE';
      for (const workers of o.stepWorkers) {
        const raw: Run[] = [];
        const belay: Run[] = [];
        for (let r = 0; r < o.rounds; r++) {
          // Alternate which goes first, so a drifting machine does not favour one side.
          if (r % 2 === 0) {
            raw.push(await runRawCommits(o, place, workers, 'cte'));
            belay.push(await runBelayCommits(o, place, workers));
          } else {
            belay.push(await runBelayCommits(o, place, workers));
            raw.push(await runRawCommits(o, place, workers, 'cte'));
          }
          log(`  step commits ${kind} x${workers} round ${r + 1}: belay ${belay.at(-1)!.rate.toFixed(0)}/s, raw ${raw.at(-1)!.rate.toFixed(0)}/s`);
        }
        const m = (runs: Run[], k: keyof Run) => median(runs.map((x) => x[k]));
        report.add({ figure: 'step_commits', store: kind, workers, value: m(belay, 'rate'), unit: 'commits/s', baseline: m(raw, 'rate'), baselineName: rawName });
        report.add({ figure: 'step_commit_p50', store: kind, workers, value: m(belay, 'p50'), unit: 'ms', baseline: m(raw, 'p50'), baselineName: rawName });
        report.add({ figure: 'step_commit_p99', store: kind, workers, value: m(belay, 'p99'), unit: 'ms', baseline: m(raw, 'p99'), baselineName: rawName });
      }
      if (kind === 'postgres') {
        // What NOTIFY inside the commit costs, and what one statement saves, measured on the raw driver alone.
        // (Quick mode: only at the largest worker count.)
        for (const workers of o.quick ? [Math.max(...o.stepWorkers)] : o.stepWorkers) {
          const plain: number[] = [];
          const notify: number[] = [];
          const multi: number[] = [];
          for (let r = 0; r < o.rounds; r++) {
            plain.push((await runRawCommits(o, place, workers, 'cte')).rate);
            notify.push((await runRawCommits(o, place, workers, 'cte+notify')).rate);
            multi.push((await runRawCommits(o, place, workers, 'multi-statement')).rate);
          }
          const name = 'raw pg: one statement, no NOTIFY';
          report.add({ figure: 'raw_commits_with_notify', store: kind, workers, value: median(notify), unit: 'commits/s', baseline: median(plain), baselineName: name });
          report.add({ figure: 'raw_commits_begin_commit', store: kind, workers, value: median(multi), unit: 'commits/s', baseline: median(plain), baselineName: name });
        }
      }
    });
  }
}
