/**
 * Found by the chaos scorecard (S10, cancel races): cancelling a task that declares `plannedEffects` before its first
 * commit handed the plan a null checkpoint; the task type's function threw, the run aborted, and every later claim
 * did the same, so the cancellation never settled and the task stayed `working` forever.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { systemClock } from '../../src/core/clock.js';
import { defineTaskType, TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { Worker } from '../../src/runtime/worker.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { eventually, Gate } from '../helpers/gate.js';
import { expectCleanHistory } from '../helpers/history.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';

const who = { tenant: 'acme', principal: 'alice' };

for (const kind of storesUnderTest()) {
  describe(`cancellation before the first commit on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store;
    beforeEach(async () => {
      store = await stores.open();
    });
    afterEach(() => store.close());
    afterAll(() => stores.teardown());

    it('settles as canceled, with the plan computed from the initial checkpoint', async () => {
      const gate = new Gate();
      const type = defineTaskType({
        name: 'planned',
        version: 1,
        input: z.object({}),
        initialCheckpoint: () => ({ done: [] as string[] }),
        // Reads its own checkpoint shape, as account-migration does.
        plannedEffects: (cp) => ['a', 'b'].filter((k) => !cp.done.includes(k)),
        steps: [
          {
            name: 'work',
            run: async (ctx) => {
              await ctx.once('a', async () => ({ ok: true }));
              await gate.wait();
              ctx.throwIfStopped();
              await ctx.once('b', async () => ({ ok: true }));
              return { done: ['a', 'b'] };
            },
          },
        ],
      });
      const registry = new TaskTypeRegistry([type]);
      const service = new TaskService({ store, registry, clock: systemClock });
      const worker = new Worker({ store, registry, clock: systemClock, leaseMs: 10_000, pollMs: 20 });
      worker.start();
      try {
        const { task } = await service.createTask(who, { type: 'planned', input: {} });
        await gate.arrived;
        const { outcome } = await service.cancel(who, task.id);
        expect(outcome).toBe('requested');
        gate.open();
        const final = await eventually(async () => {
          const t = await service.getTask(who, task.id);
          return t.state === 'canceled' ? t : null;
        }, 10_000);
        expect(final.error?.details).toMatchObject({ effects_applied: ['a'], effects_not_started: ['b'] });
        await expectCleanHistory(store, task.id);
      } finally {
        gate.open();
        await worker.stop(1000);
      }
    });
  });
}
