/**
 * A worker process for the crash-recovery figure: the same composition as `belay worker` (open the store from a
 * `--db` value, run a `Worker` until SIGTERM, print `READY <id>`), registering only the synthetic task type, so the
 * benchmark does not depend on the other example task types.
 * Usage: node dist-bench/bench/worker-main.js <db> <leaseMs> [pollMs]
 */
import { systemClock } from '../src/core/clock.js';
import { openStoreFromUrl } from '../src/cli/open-store.js';
import { syntheticType } from '../src/examples/synthetic.js';
import { TaskTypeRegistry } from '../src/runtime/task-type.js';
import { Worker } from '../src/runtime/worker.js';

async function main(): Promise<void> {
  const [db, leaseMs, pollMs] = process.argv.slice(2);
  if (!db || !leaseMs) throw new Error('usage: worker-main <db> <leaseMs> [pollMs]');
  const store = await openStoreFromUrl(db);
  const worker = new Worker({
    store,
    registry: new TaskTypeRegistry([syntheticType]),
    clock: systemClock,
    concurrency: 1,
    leaseMs: Number(leaseMs),
    ...(pollMs ? { pollMs: Number(pollMs) } : {}),
  });
  worker.start();
  process.stdout.write(`READY ${worker.id}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await worker.stop(1000);
  await store.close();
}

main().catch((e: unknown) => {
  process.stderr.write(`worker-main: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
