/**
 * Crash recovery: two real worker processes (`bench/worker-main.ts`: the composition of `belay worker`, with the
 * default 1 s poll) share a store. A synthetic
 * task commits a sub-step every 200 ms; once its first sub-step is committed, the process holding the lease is
 * SIGKILLed 100 ms into the next sub-step. Recovery time: from the kill to the next sub-step commit by the other
 * process (the `at` of that event), against the lease length as baseline. A fresh process replaces the killed one
 * before the next trial.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { systemClock } from '../../src/core/clock.js';
import { syntheticType } from '../../src/examples/synthetic.js';
import { TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { openStore, withPlace, type Place } from '../lib/env.js';
import type { BenchOptions } from '../lib/options.js';
import { log, type Report } from '../lib/report.js';
import { median, sleep, waitFor } from '../lib/stats.js';

const WORKER_MAIN = fileURLToPath(new URL('../worker-main.js', import.meta.url));
const STEP_MS = 200;

interface WorkerProc {
  id: string;
  child: ChildProcess;
  exited: Promise<void>;
}

async function spawnWorker(place: Place, leaseMs: number): Promise<WorkerProc> {
  const child = spawn(process.execPath, [WORKER_MAIN, place.dbArg, String(leaseMs)], {
    env: { ...process.env, BELAY_LOG_LEVEL: 'error', BELAY_CRASH_AT: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-5000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const id = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code, signal) => reject(new Error(`worker exited before READY (${code ?? signal}): ${err}`)));
  });
  return { id, child, exited };
}

async function trial(store: Store, service: TaskService, workers: WorkerProc[], leaseMs: number): Promise<{ ms: number; killed: WorkerProc }> {
  const { task } = await service.createTask({ tenant: 'bench', principal: 'bench' }, { type: syntheticType.name, input: { steps: 1000, stepMs: STEP_MS, effectsPerStep: 0 } });
  let firstSeq = 0;
  const committed = await waitFor(
    async () => {
      const events = await store.listEvents(task.id, 0, 100);
      const p = events.find((e) => e.kind === 'progress');
      if (p) firstSeq = p.seq;
      return p !== undefined;
    },
    10_000,
    5,
  );
  if (!committed) throw new Error('recovery: the task never committed a sub-step');
  const owner = (await store.getTask(task.id))?.leaseOwner;
  const victim = workers.find((w) => w.id === owner);
  if (!victim) throw new Error(`recovery: lease owner ${owner ?? 'none'} is not one of the spawned workers`);
  await sleep(100);
  victim.child.kill('SIGKILL');
  const killedAt = Date.now();
  await victim.exited;
  let recoveredAt = 0;
  const recovered = await waitFor(
    async () => {
      const events = await store.listEvents(task.id, firstSeq, 100);
      const next = events.find((e) => e.kind === 'progress' && e.at > killedAt);
      if (next) recoveredAt = next.at;
      return next !== undefined;
    },
    leaseMs + 30_000,
    10,
  );
  if (!recovered) throw new Error('recovery: no other worker committed the next sub-step');
  await service.cancel({ tenant: 'bench', principal: 'bench' }, task.id, 'trial over');
  return { ms: recoveredAt - killedAt, killed: victim };
}

export async function recovery(o: BenchOptions, report: Report): Promise<void> {
  for (const kind of o.stores) {
    await withPlace(kind, o.pgAdminUrl, 'recovery', async (place) => {
      const store = await openStore(place);
      const workers: WorkerProc[] = [];
      try {
        const service = new TaskService({ store, registry: new TaskTypeRegistry([syntheticType]), clock: systemClock });
        workers.push(await spawnWorker(place, o.leaseMs), await spawnWorker(place, o.leaseMs));
        const times: number[] = [];
        for (let i = 0; i < o.recoveryTrials; i++) {
          const { ms, killed } = await trial(store, service, workers, o.leaseMs);
          times.push(ms);
          log(`  recovery ${kind} trial ${i + 1}: ${ms} ms (lease ${o.leaseMs} ms)`);
          workers.splice(workers.indexOf(killed), 1);
          workers.push(await spawnWorker(place, o.leaseMs));
        }
        const name = 'lease length (target: recovery <= lease + 1 s)';
        report.add({ figure: 'recovery_after_sigkill', store: kind, workers: 2, value: median(times), unit: 'ms', baseline: o.leaseMs, baselineName: name });
        report.add({ figure: 'recovery_after_sigkill_max', store: kind, workers: 2, value: Math.max(...times), unit: 'ms', baseline: o.leaseMs, baselineName: name });
      } finally {
        for (const w of workers) w.child.kill('SIGTERM');
        await Promise.all(workers.map((w) => Promise.race([w.exited, sleep(5000).then(() => w.child.kill('SIGKILL'))])));
        await store.close();
      }
    });
  }
}
