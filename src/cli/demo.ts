/**
 * The first-run demo: the access review of the first article, end to end on SQLite, printed as it goes. The
 * owners' approval is answered by the demo itself once the question is committed.
 */
import { systemClock } from '../core/clock.js';
import { restStatus } from '../core/task-state.js';
import { exampleRegistry, InMemoryDownstream } from '../examples/index.js';
import { Worker } from '../runtime/worker.js';
import { TaskService } from '../service/task-service.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseFlags, parseIntSetting, resolveStoreSettings, UsageError } from './config.js';
import { openStoreFromUrl } from './open-store.js';

export const DEMO_USAGE = `Usage: belay demo [--db path] [--systems n] [--revocations n] [--synchronous full|normal] [--config path]

Runs the access-review example end to end in one process and prints each committed event.`;

const DEMO_OPTIONS = {
  db: { type: 'string' },
  systems: { type: 'string' },
  revocations: { type: 'string' },
  synchronous: { type: 'string' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function demoCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseFlags(argv, DEMO_OPTIONS, DEMO_USAGE);
  if (values.help) {
    console.log(DEMO_USAGE);
    return 0;
  }
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`, DEMO_USAGE);
  const settings = resolveStoreSettings(values, env);
  if (!/^postgres(ql)?:\/\//.test(settings.db)) mkdirSync(dirname(settings.db), { recursive: true });
  return runDemo({
    db: settings.db,
    systems: values.systems === undefined ? 40 : parseIntSetting(values.systems, '--systems', 1, 1000),
    revocations: values.revocations === undefined ? 14 : parseIntSetting(values.revocations, '--revocations', 0),
    storeOptions: settings.synchronous ? { sqliteSynchronous: settings.synchronous } : {},
  });
}

export async function runDemo(options: { db: string; systems: number; revocations: number; storeOptions: { sqliteSynchronous?: 'full' | 'normal' } }): Promise<number> {
  const store = await openStoreFromUrl(options.db, options.storeOptions);
  const downstream = new InMemoryDownstream();
  const registry = exampleRegistry(downstream);
  const service = new TaskService({ store, registry, clock: systemClock });
  const who = { tenant: 'demo', principal: 'demo-user' };
  const worker = new Worker({ store, registry, concurrency: 2, leaseMs: 5000, pollMs: 200 });
  console.log(`Belay demo: access review of ${options.systems} systems on ${options.db}`);
  const { task } = await service.createTask(who, {
    type: 'access-review',
    input: { systems: options.systems, revocations: options.revocations, stepDelayMs: 25 },
    idempotencyKey: `demo-${Date.now()}`,
  });
  console.log(`created ${task.id} (${restStatus(task.state)})`);
  worker.start();
  let seq = 0;
  for (;;) {
    const events = await service.listEvents(who, task.id, seq, 100);
    for (const e of events) {
      seq = e.seq;
      const progress = e.body.progress as { current?: number; total?: number; message?: string } | undefined;
      const line = progress?.message ? ` ${progress.current ?? '?'}/${progress.total ?? '?'} ${progress.message}` : '';
      const stepName = typeof e.body.completed_step === 'string' ? e.body.completed_step : typeof e.body.step_name === 'string' ? e.body.step_name : null;
      console.log(`  #${e.seq} ${e.kind}${stepName ? ` [${stepName}]` : ''}${line}`);
      if (e.kind === 'input_required') {
        const current = await service.getTask(who, task.id);
        console.log(`  question: ${JSON.stringify(e.body.question)} -> answering {"approved": true} for version ${current.version}`);
        await service.answer(who, task.id, { version: current.version, answer: { approved: true } });
      }
    }
    const current = await service.getTask(who, task.id);
    if (['completed', 'failed', 'canceled'].includes(current.state) && events.length === 0) {
      console.log(`task ${restStatus(current.state)}: ${JSON.stringify(current.result)}`);
      console.log(`downstream applied ${downstream.countByKind('revoke')} revocations (${downstream.calls} calls)`);
      await worker.stop();
      await store.close();
      return current.state === 'completed' ? 0 : 1;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
