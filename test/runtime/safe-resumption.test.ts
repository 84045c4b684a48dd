/**
 * Safe resumption, on both stores: authority re-validated on resume, partial effects reported and compensated
 * after cancellation (also when the worker is SIGKILLed while compensating), and effects whose outcome is unknown
 * reconciled before any retry.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { systemClock } from '../../src/core/clock.js';
import { exampleRegistry, InMemoryDownstream, startDownstreamServer, type Downstream } from '../../src/examples/index.js';
import { defineTaskType, TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { Worker } from '../../src/runtime/worker.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { eventually, Gate } from '../helpers/gate.js';
import { expectCleanHistory } from '../helpers/history.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { spawnWorker } from '../helpers/worker-process.js';

const who = { tenant: 'acme', principal: 'alice' };

for (const kind of storesUnderTest()) {
  describe(`safe resumption on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store;
    let clock: FakeClock;
    let downstream: InMemoryDownstream;
    beforeEach(async () => {
      store = await stores.open();
      clock = new FakeClock();
      downstream = new InMemoryDownstream();
    });
    afterEach(() => store.close());
    afterAll(() => stores.teardown());

    it('a requester disabled while the task waits: the resume fails with authorization_revoked and no effect runs', async () => {
      const disabled = new Set<string>();
      const principals = { isDisabled: async (tenant: string, principal: string) => disabled.has(`${tenant}/${principal}`) };
      const registry = exampleRegistry(downstream);
      const service = new TaskService({ store, registry, clock });
      const worker = new Worker({ store, registry, clock, leaseMs: 10_000, principals });
      const { task } = await service.createTask(who, { type: 'access-review', input: { systems: 3, revocations: 2 } });
      await worker.drain();
      const paused = await service.getTask(who, task.id);
      expect(paused.state).toBe('input_required');
      disabled.add('acme/alice');
      clock.advance(3600_000);
      await service.answer({ tenant: 'acme', principal: 'ops', role: 'admin' }, task.id, { version: paused.version, answer: { approved: true } });
      await worker.drain();
      const final = await service.getTask(who, task.id);
      expect(final).toMatchObject({ state: 'failed', error: { code: 'AUTHORIZATION_REVOKED', retryable: false } });
      expect(downstream.calls).toBe(0);
      await expectCleanHistory(store, task.id);
    });

    it('a task type re-validates product state on resume and can fail with its own code', async () => {
      let stillExists = true;
      const type = defineTaskType({
        name: 'guarded',
        version: 1,
        input: z.object({}),
        initialCheckpoint: () => ({ n: 0 }),
        revalidate: async () => (stillExists ? undefined : { fail: { code: 'account_closed', message: 'The account was closed while the task waited' } }),
        steps: [
          { name: 'ask', run: async (ctx) => ({ n: ctx.ask('go', { question: 'go?', schema: { type: 'boolean' } }) ? 1 : 0 }) },
          { name: 'act', run: async (ctx) => ({ n: (await ctx.once('write:1', async (key) => downstream.apply('write', key, null))) ? 2 : 3 }) },
        ],
      });
      const registry = new TaskTypeRegistry([type]);
      const service = new TaskService({ store, registry, clock });
      const worker = new Worker({ store, registry, clock });
      const { task } = await service.createTask(who, { type: 'guarded', input: {} });
      await worker.drain();
      stillExists = false;
      await service.answer(who, task.id, { version: (await service.getTask(who, task.id)).version, answer: true });
      await worker.drain();
      expect(await service.getTask(who, task.id)).toMatchObject({ state: 'failed', error: { code: 'account_closed' } });
      expect(downstream.calls).toBe(0);
    });

    it('cancelling mid-batch lists applied, never-started and uncertain records and compensates each applied one once', async () => {
      const gate = new Gate();
      let migrateCalls = 0;
      // The 120th write reaches downstream and its answer never comes back (a timeout after the downstream applied it).
      const flaky: Downstream = {
        apply: async (k, key, payload) => {
          if (k === 'migrate' && ++migrateCalls === 120) {
            await downstream.apply(k, key, payload);
            await gate.wait();
            throw new Error('timed out');
          }
          return downstream.apply(k, key, payload);
        },
        lookup: async () => {
          throw new Error('lookup service down');
        },
      };
      const registry = exampleRegistry(flaky);
      const service = new TaskService({ store, registry, clock });
      const worker = new Worker({ store, registry, clock, leaseMs: 10_000, random: () => 0.5 });
      const { task } = await service.createTask(who, { type: 'account-migration', input: { records: 500, batchSize: 100, ambiguousEvery: 0 } });
      const run = worker.drain();
      await gate.arrived;
      expect((await service.cancel(who, task.id, 'stop')).outcome).toBe('requested');
      gate.open();
      await run;
      // The timed-out write is uncertain and the lookup is down: the cancellation stays requested.
      let t = await service.getTask(who, task.id);
      expect(t).toMatchObject({ state: 'working', error: { code: 'CANCEL_REQUESTED' } });
      expect(t.cancelRequestedAt).not.toBeNull();
      expect(downstream.countByKind('unmigrate')).toBe(0);
      // The lookup comes back: the outcome is learned (applied), then every applied record is compensated once.
      const healthy = exampleRegistry({ apply: (k, key, p) => downstream.apply(k, key, p), lookup: (key) => downstream.lookup(key) });
      clock.advance(120_000);
      await new Worker({ store, registry: healthy, clock, leaseMs: 10_000 }).drain();
      t = await service.getTask(who, task.id);
      expect(t.state).toBe('canceled');
      const d = t.error!.details as { effects_applied: string[]; effects_uncertain: string[]; effects_not_started: string[]; compensations: Array<{ effect: string }> };
      expect(d.effects_applied).toHaveLength(120);
      expect(d.effects_uncertain).toEqual([]);
      expect(d.effects_not_started).toHaveLength(380);
      expect(d.compensations).toHaveLength(120);
      expect(downstream.countByKind('migrate')).toBe(120);
      expect(downstream.countByKind('unmigrate')).toBe(120);
      expect([...downstream.applied.values()].every((a) => a.calls === 1)).toBe(true);
      await expectCleanHistory(store, task.id);
    });

    it('an effect whose call timed out after the downstream applied it is reconciled, not applied twice', async () => {
      let first = true;
      const timingOut: Downstream = {
        apply: async (k, key, payload) => {
          const receipt = await downstream.apply(k, key, payload);
          if (first && k === 'migrate') {
            first = false;
            throw new Error('ETIMEDOUT');
          }
          return receipt;
        },
        lookup: (key) => downstream.lookup(key),
      };
      const registry = exampleRegistry(timingOut);
      const service = new TaskService({ store, registry, clock });
      const worker = new Worker({ store, registry, clock, random: () => 0.5 });
      const { task } = await service.createTask(who, { type: 'account-migration', input: { records: 10, batchSize: 5, ambiguousEvery: 0 } });
      await worker.drain();
      const effects = await store.listEffects(task.id);
      expect(effects.map((e) => e.status)).toEqual(['pending']);
      clock.advance(60_000);
      await worker.drain();
      expect((await service.getTask(who, task.id)).state).toBe('completed');
      expect(downstream.countByKind('migrate')).toBe(10);
      // The first record was presented once: the retry looked it up instead of writing again.
      expect(downstream.applied.get(`${task.id}:migrate:cust-000001`)!.calls).toBe(1);
      expect(downstream.calls).toBe(10);
    });

    it('compensations run once each even when the worker is SIGKILLed while compensating', async () => {
      const down = await startDownstreamServer();
      const service = new TaskService({ store, registry: exampleRegistry(new InMemoryDownstream()), clock: systemClock });
      const w1 = spawnWorker({ db: stores.url(), downstreamUrl: down.url, leaseMs: 1000, crashAt: 'after-compensation:7' });
      let w2: ReturnType<typeof spawnWorker> | null = null;
      try {
        const { task } = await service.createTask(who, { type: 'account-migration', input: { records: 3000, batchSize: 50, ambiguousEvery: 0, batchDelayMs: 30 } });
        await eventually(async () => (((await store.getTask(task.id))!.checkpoint as { next?: number } | null)?.next ?? 0) >= 100, 30_000);
        await service.cancel(who, task.id);
        const exit = await w1.exited;
        expect(exit.signal).toBe('SIGKILL');
        expect(down.downstream.countByKind('unmigrate')).toBe(7);
        w2 = spawnWorker({ db: stores.url(), downstreamUrl: down.url, leaseMs: 1000 });
        await eventually(async () => (await store.getTask(task.id))!.state === 'canceled', 30_000);
        const t = (await store.getTask(task.id))!;
        const d = t.error!.details as { effects_applied: string[]; compensations: unknown[] };
        expect(d.compensations).toHaveLength(d.effects_applied.length);
        expect(down.downstream.countByKind('unmigrate')).toBe(d.effects_applied.length);
        expect(down.downstream.countByKind('migrate')).toBe(d.effects_applied.length);
        // The 7th compensation was sent, then the worker died before recording it: re-sent under the same key, applied once.
        const repeated = [...down.downstream.applied.values()].filter((a) => a.kind === 'unmigrate' && a.calls > 1);
        expect(repeated, JSON.stringify(repeated)).toHaveLength(1);
        await expectCleanHistory(store, task.id);
      } finally {
        w1.child.kill('SIGKILL');
        w2?.child.kill('SIGKILL');
        await Promise.all([w1.exited, w2?.exited]);
        await down.close();
      }
    }, 90_000);
  });
}
