/**
 * The durable core's promises, on both stores, with an injected clock: pauses answered a day later, stale and
 * invalid answers, deadlines, cancellation races, version pinning, stale workers, retries, the ledger, bad input.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { BelayError, RetryableError, TerminalError } from '../../src/core/errors.js';
import type { Json } from '../../src/core/task.js';
import { exampleRegistry, InMemoryDownstream, type Downstream } from '../../src/examples/index.js';
import { defineTaskType, TaskTypeRegistry, type TaskType } from '../../src/runtime/task-type.js';
import { Worker } from '../../src/runtime/worker.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { Gate } from '../helpers/gate.js';
import { expectCleanHistory } from '../helpers/history.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';

const DAY = 24 * 3600_000;
const who = { tenant: 'acme', principal: 'alice' };

for (const kind of storesUnderTest()) {
  describe(`runtime on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store;
    let clock: FakeClock;
    let downstream: InMemoryDownstream;
    let registry: TaskTypeRegistry;
    let service: TaskService;
    let worker: Worker;
    const extra: Store[] = [];

    function makeWorker(reg: TaskTypeRegistry = registry, c: FakeClock = clock, s: Store = store) {
      return new Worker({ store: s, registry: reg, clock: c, leaseMs: 10_000, pollMs: 1000, random: () => 0.5 });
    }

    beforeEach(async () => {
      store = await stores.open();
      clock = new FakeClock();
      downstream = new InMemoryDownstream();
      registry = exampleRegistry(downstream);
      service = new TaskService({ store, registry, clock });
      worker = makeWorker();
    });
    afterEach(async () => {
      for (const s of extra.splice(0)) await s.close();
      await store.close();
    });
    afterAll(() => stores.teardown());

    it('access review: paused for approval, answered a day later, resumes exactly once', async () => {
      const { task } = await service.createTask(who, { type: 'access-review', input: {} });
      await worker.drain();
      const paused = await service.getTask(who, task.id);
      expect(paused.state).toBe('input_required');
      expect(paused.pendingInput).toMatchObject({ key: 'approval' });
      expect(paused.leaseOwner).toBeNull();
      expect(downstream.countByKind('revoke')).toBe(0);
      clock.advance(DAY);
      await service.answer(who, task.id, { version: paused.version, answer: { approved: true } });
      await worker.drain();
      const done = await service.getTask(who, task.id);
      expect(done.state).toBe('completed');
      expect(done.result).toEqual({ systems_reviewed: 40, revocations_applied: 14 });
      expect(done.artifacts.map((a) => a.name)).toEqual(['access-review-report']);
      expect(downstream.countByKind('revoke')).toBe(14);
      expect([...downstream.applied.values()].every((a) => a.calls === 1)).toBe(true);
      const kinds = await expectCleanHistory(store, task.id);
      expect(kinds.filter((k) => k === 'input_received')).toHaveLength(1);
      // A second answer to the same question changes nothing.
      await expect(service.answer(who, task.id, { version: paused.version, answer: { approved: true } })).rejects.toBeInstanceOf(BelayError);
      // 40 systems committed one by one: the measured progress ran 1..40.
      const events = await store.listEvents(task.id, 0, 1000);
      const fetched = events.filter((e) => (e.body.progress as { message?: string } | undefined)?.message?.startsWith('fetched grants'));
      expect(fetched).toHaveLength(40);
    });

    it('stale and schema-invalid answers are rejected with clear codes and change nothing', async () => {
      const { task } = await service.createTask(who, { type: 'access-review', input: { systems: 3, revocations: 2 } });
      await worker.drain();
      const paused = await service.getTask(who, task.id);
      await expect(service.answer(who, task.id, { version: paused.version - 1, answer: { approved: true } })).rejects.toMatchObject({ code: 'STALE_VERSION' });
      await expect(service.answer(who, task.id, { version: paused.version, answer: { approved: 'yes' } })).rejects.toMatchObject({ code: 'VALIDATION' });
      await expect(service.answer(who, task.id, { version: paused.version, answer: { approved: true }, key: 'other' })).rejects.toMatchObject({ code: 'NOT_WAITING_FOR_INPUT' });
      const after = await service.getTask(who, task.id);
      expect(after).toMatchObject({ state: 'input_required', version: paused.version, nextSeq: paused.nextSeq });
      await expect(service.answer({ tenant: 'globex', principal: 'mallory' }, task.id, { version: paused.version, answer: { approved: true } })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('an unanswered question expires at its deadline with a stable code', async () => {
      const { task } = await service.createTask(who, { type: 'access-review', input: { systems: 2, revocations: 1, approvalTimeoutMs: 3600_000 } });
      await worker.drain();
      const paused = await service.getTask(who, task.id);
      clock.advance(3600_000);
      // Late by a moment, before any sweep ran: refused all the same.
      await expect(service.answer(who, task.id, { version: paused.version, answer: { approved: true } })).rejects.toMatchObject({ code: 'INPUT_DEADLINE_PASSED' });
      await worker.drain();
      const expired = await service.getTask(who, task.id);
      expect(expired).toMatchObject({ state: 'failed', error: { code: 'INPUT_DEADLINE_EXPIRED' } });
      expect(downstream.countByKind('revoke')).toBe(0);
      await expectCleanHistory(store, task.id);
    });

    it('an answer that arrives before the question is asked is not lost', async () => {
      const { task } = await service.createTask(who, { type: 'synthetic', input: { steps: 3, askAtStep: 1 } });
      await service.answer(who, task.id, { version: task.version, key: 'step-1', answer: { ok: true } });
      await worker.drain();
      const done = await service.getTask(who, task.id);
      expect(done.state).toBe('completed');
      const kinds = await expectCleanHistory(store, task.id);
      expect(kinds).not.toContain('input_required');
    });

    it('cancel before start: canceled at once, nothing runs', async () => {
      const { task } = await service.createTask(who, { type: 'access-review', input: {} });
      const { task: canceled, outcome } = await service.cancel(who, task.id);
      expect(outcome).toBe('canceled');
      expect(canceled.state).toBe('canceled');
      expect(await worker.drain()).toBe(0);
      expect(downstream.calls).toBe(0);
      // Idempotent.
      expect((await service.cancel(who, task.id)).outcome).toBe('already_terminal');
      await expectCleanHistory(store, task.id);
    });

    it('cancel in the middle of a batch stops before the next write and reports what was applied', async () => {
      const gate = new Gate();
      let calls = 0;
      const gated: Downstream = {
        apply: async (k, key, payload) => {
          if (k === 'migrate') calls += 1;
          if (calls === 150 && k === 'migrate') await gate.wait();
          return downstream.apply(k, key, payload);
        },
        lookup: (key) => downstream.lookup(key),
      };
      registry = exampleRegistry(gated);
      service = new TaskService({ store, registry, clock });
      worker = makeWorker();
      const { task } = await service.createTask(who, { type: 'account-migration', input: { records: 1000, batchSize: 100, ambiguousEvery: 0 } });
      const run = worker.drain();
      await gate.arrived;
      const { outcome } = await service.cancel(who, task.id, 'operator asked');
      expect(outcome).toBe('requested');
      gate.open();
      await run;
      const canceled = await service.getTask(who, task.id);
      expect(canceled.state).toBe('canceled');
      expect(downstream.countByKind('migrate')).toBe(150);
      const details = canceled.error!.details as { effects_applied: string[]; effects_uncertain: string[] };
      expect(details.effects_applied).toHaveLength(150);
      expect(details.effects_uncertain).toEqual([]);
      // The migration declares a compensation: each migrated record was moved back once.
      expect(downstream.countByKind('unmigrate')).toBe(150);
      // The batch checkpoint before the cancel is kept: 100 records were committed as a batch.
      expect(canceled.checkpoint).toMatchObject({ next: 100 });
      await expectCleanHistory(store, task.id);
    });

    describe('races at the final commit', () => {
      let gate: Gate;
      let gatedType: TaskType<any, any>;
      beforeEach(() => {
        gate = new Gate();
        gatedType = defineTaskType({
          name: 'gated',
          version: 1,
          input: z.object({}),
          initialCheckpoint: () => ({ n: 0 }),
          steps: [
            { name: 'first', run: async (ctx) => ({ n: (ctx.checkpoint).n + 1 }) },
            {
              name: 'last',
              run: async (ctx) => {
                await gate.wait();
                return { n: (ctx.checkpoint).n + 1 };
              },
            },
          ],
        });
        registry = new TaskTypeRegistry([gatedType]);
        service = new TaskService({ store, registry, clock });
        worker = makeWorker();
      });

      it('cancellation committed before the final commit wins: canceled', async () => {
        const { task } = await service.createTask(who, { type: 'gated', input: {} });
        const run = worker.drain();
        await gate.arrived;
        expect((await service.cancel(who, task.id)).outcome).toBe('requested');
        gate.open();
        await run;
        expect((await service.getTask(who, task.id)).state).toBe('canceled');
        await expectCleanHistory(store, task.id);
      });

      it('completion committed before the cancellation wins: completed', async () => {
        const { task } = await service.createTask(who, { type: 'gated', input: {} });
        gate.open();
        await worker.drain();
        const { task: after, outcome } = await service.cancel(who, task.id);
        expect(outcome).toBe('already_terminal');
        expect(after.state).toBe('completed');
        await expectCleanHistory(store, task.id);
      });
    });

    it('a task started on version 1 finishes on version 1 after version 2 is registered', async () => {
      const make = (version: number) =>
        defineTaskType({
          name: 'versioned',
          version,
          input: z.object({}),
          initialCheckpoint: () => ({ path: [] as string[] }),
          steps: [
            { name: `a-v${version}`, run: async (ctx) => ({ path: [...(ctx.checkpoint).path, `a-v${version}`] }) },
            {
              name: `b-v${version}`,
              run: async (ctx) => {
                ctx.ask('go', { question: 'go?', schema: { type: 'boolean' } });
                return { path: [...(ctx.checkpoint).path, `b-v${version}`] };
              },
            },
          ],
        });
      const v1 = new TaskTypeRegistry([make(1)]);
      service = new TaskService({ store, registry: v1, clock });
      const { task } = await service.createTask(who, { type: 'versioned', input: {} });
      await makeWorker(v1).drain();
      const paused = await service.getTask(who, task.id);
      expect(paused.state).toBe('input_required');
      // The release: v2 is registered next to v1; a worker with only v2 leaves the v1 task alone.
      const v2only = new TaskTypeRegistry([make(2)]);
      const both = new TaskTypeRegistry([make(1), make(2)]);
      const service2 = new TaskService({ store, registry: both, clock });
      await service2.answer(who, task.id, { version: paused.version, answer: true });
      expect(await makeWorker(v2only).drain()).toBe(0);
      const fresh = await service2.createTask(who, { type: 'versioned', input: {} });
      expect(fresh.task.typeVersion).toBe(2);
      await makeWorker(both).drain();
      const done = await service2.getTask(who, task.id);
      expect(done).toMatchObject({ state: 'completed', typeVersion: 1, result: { path: ['a-v1', 'b-v1'] } });
    });

    it('a stale worker paused past its lease cannot overwrite its successor', async () => {
      const gate = new Gate();
      let runs = 0;
      const slow = defineTaskType({
        name: 'slow',
        version: 1,
        input: z.object({}),
        initialCheckpoint: () => ({ by: 'none' }),
        steps: [
          {
            name: 'work',
            run: async (ctx) => {
              runs += 1;
              if (runs === 1) await gate.wait();
              await ctx.once('effect', async (key) => downstream.apply('slow', key, { run: runs }));
              return { by: runs === 1 ? 'stale' : 'successor' };
            },
          },
        ],
      });
      const reg = new TaskTypeRegistry([slow]);
      service = new TaskService({ store, registry: reg, clock });
      const { task } = await service.createTask(who, { type: 'slow', input: {} });
      // Worker A's clock stands still (a process frozen by SIGSTOP or a long GC pause): it never renews.
      const frozen = new FakeClock(clock.now());
      const a = makeWorker(reg, frozen);
      const aRun = a.drain();
      await gate.arrived;
      clock.advance(10_001);
      const b = makeWorker(reg, clock);
      await b.drain();
      expect((await service.getTask(who, task.id)).state).toBe('completed');
      gate.open();
      await aRun;
      const final = await service.getTask(who, task.id);
      expect(final).toMatchObject({ state: 'completed', checkpoint: { by: 'successor' }, fence: 2 });
      expect(downstream.countByKind('slow')).toBe(1);
      expect(downstream.calls).toBe(1);
      await expectCleanHistory(store, task.id);
    });

    it('retries with backoff, then succeeds; terminal errors fail at once; attempts are bounded', async () => {
      let failures = 2;
      const flaky = defineTaskType({
        name: 'flaky',
        version: 1,
        input: z.object({ mode: z.enum(['flaky', 'terminal', 'always']) }),
        initialCheckpoint: () => ({}),
        retry: { maxAttempts: 3, initialDelayMs: 1000, factor: 2, maxDelayMs: 60_000 },
        steps: [
          {
            name: 'call',
            run: async (ctx) => {
              const mode = (ctx.input as { mode: string }).mode;
              if (mode === 'terminal') throw new TerminalError('grant_not_found', 'No such grant');
              if (mode === 'always') throw new Error('downstream down');
              if (failures-- > 0) throw new RetryableError('busy', { retryAfterMs: 5000 });
              return { ok: true };
            },
          },
        ],
      });
      const reg = new TaskTypeRegistry([flaky]);
      service = new TaskService({ store, registry: reg, clock });
      const w = makeWorker(reg);
      const flakyTask = (await service.createTask(who, { type: 'flaky', input: { mode: 'flaky' } })).task;
      await w.drain();
      let t = await service.getTask(who, flakyTask.id);
      expect(t).toMatchObject({ state: 'working', wakeAt: clock.now() + 5000, leaseOwner: null, error: { code: 'STEP_FAILED', retryable: true } });
      clock.advance(4999);
      expect(await w.drain()).toBe(0);
      clock.advance(1);
      await w.drain();
      clock.advance(5000);
      await w.drain();
      t = await service.getTask(who, flakyTask.id);
      expect(t.state).toBe('completed');

      const terminal = (await service.createTask(who, { type: 'flaky', input: { mode: 'terminal' } })).task;
      await w.drain();
      expect(await service.getTask(who, terminal.id)).toMatchObject({ state: 'failed', error: { code: 'grant_not_found', retryable: false } });

      const always = (await service.createTask(who, { type: 'flaky', input: { mode: 'always' } })).task;
      for (let i = 0; i < 5; i++) {
        await w.drain();
        clock.advance(60_000);
      }
      expect(await service.getTask(who, always.id)).toMatchObject({ state: 'failed', error: { code: 'ATTEMPTS_EXHAUSTED' } });
      for (const id of [flakyTask.id, terminal.id, always.id]) await expectCleanHistory(store, id);
    });

    it('a retry after 9 of 14 revocations replays the 9 from the ledger and applies only the other 5', async () => {
      let calls = 0;
      const failing: Downstream = {
        apply: async (k, key, payload) => {
          calls += 1;
          if (calls === 10) throw new Error('network error');
          return downstream.apply(k, key, payload);
        },
        lookup: (key) => downstream.lookup(key),
      };
      registry = exampleRegistry(failing);
      service = new TaskService({ store, registry, clock });
      worker = makeWorker();
      const { task } = await service.createTask(who, { type: 'access-review', input: {} });
      await worker.drain();
      const paused = await service.getTask(who, task.id);
      await service.answer(who, task.id, { version: paused.version, answer: { approved: true } });
      await worker.drain();
      expect(downstream.countByKind('revoke')).toBe(9);
      clock.advance(60_000);
      await worker.drain();
      expect((await service.getTask(who, task.id)).state).toBe('completed');
      expect(downstream.countByKind('revoke')).toBe(14);
      // 14 keys, 15 calls: the failed call is retried under the same key; no key was applied twice.
      expect(calls).toBe(15);
      const effects = await store.listEffects(task.id);
      expect(effects.filter((e) => e.status === 'applied')).toHaveLength(14);
    });

    it('pauses and sub-step saves are not failed attempts: a step that asks twelve times completes under maxAttempts 3', async () => {
      const chatty = defineTaskType({
        name: 'chatty',
        version: 1,
        input: z.object({}),
        initialCheckpoint: () => ({ asked: 0 }),
        retry: { maxAttempts: 3 },
        steps: [
          {
            name: 'ask-many',
            run: async (ctx) => {
              let cp = ctx.checkpoint;
              while (cp.asked < 12) {
                ctx.ask(`q${cp.asked}`, { question: `question ${cp.asked}?`, schema: { type: 'boolean' } });
                cp = { asked: cp.asked + 1 };
                await ctx.save(cp);
              }
              return cp;
            },
          },
        ],
      });
      const reg = new TaskTypeRegistry([chatty]);
      service = new TaskService({ store, registry: reg, clock });
      const w = makeWorker(reg);
      const { task } = await service.createTask(who, { type: 'chatty', input: {} });
      for (let i = 0; i < 12; i++) {
        await w.drain();
        const t = await service.getTask(who, task.id);
        expect(t.state, JSON.stringify(t.error)).toBe('input_required');
        await service.answer(who, task.id, { version: t.version, answer: true });
      }
      await w.drain();
      expect(await service.getTask(who, task.id)).toMatchObject({ state: 'completed', result: { asked: 12 } });
    });

    it('bad input gets a clear code and persists nothing', async () => {
      const deep: Record<string, unknown> = {};
      let cur = deep;
      for (let i = 0; i < 100_000; i++) cur = (cur.a = {});
      const cases: Array<[unknown, string, string]> = [
        ['no-such-type', {}, 'UNKNOWN_TASK_TYPE'],
        ['access-review', { systems: 'forty' }, 'VALIDATION'],
        ['access-review', { systems: -1 }, 'VALIDATION'],
        ['synthetic', { pad: 'x'.repeat(2_000_000) }, 'PAYLOAD_TOO_LARGE'],
        ['synthetic', deep, 'PAYLOAD_TOO_DEEP'],
        ['synthetic', JSON.parse('{"__proto__": {"polluted": true}}'), 'INVALID_JSON'],
      ].map(([type, input, code]) => [type, input, code] as [unknown, string, string]);
      for (const [type, input, code] of cases.map(([t, i, c]) => [t, i, c] as const)) {
        await expect(service.createTask(who, { type: type as string, input })).rejects.toMatchObject({ code });
      }
      expect(await store.countByState()).toEqual({});
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it('a checkpoint that cannot be serialised fails its task with a clear code and crashes no worker', async () => {
      const poison = defineTaskType({
        name: 'poison',
        version: 1,
        input: z.object({}),
        initialCheckpoint: () => ({}),
        steps: [
          {
            name: 'nest',
            run: async () => {
              const deep: Record<string, Json> = {};
              let cur = deep;
              for (let i = 0; i < 100_000; i++) cur = (cur.a = {});
              return deep;
            },
          },
        ],
      });
      const reg = new TaskTypeRegistry([poison, defineTaskType({ name: 'fine', version: 1, input: z.object({}), initialCheckpoint: () => ({}), steps: [{ name: 's', run: async () => ({ ok: true }) }] })]);
      service = new TaskService({ store, registry: reg, clock });
      const bad = (await service.createTask(who, { type: 'poison', input: {} })).task;
      const good = (await service.createTask(who, { type: 'fine', input: {} })).task;
      await makeWorker(reg).drain();
      expect(await service.getTask(who, bad.id)).toMatchObject({ state: 'failed', error: { code: 'PAYLOAD_TOO_DEEP' } });
      expect((await service.getTask(who, good.id)).state).toBe('completed');
    });

    it('idempotent create: the same request twice is one task; a different request under the key is refused', async () => {
      const a = await service.createTask(who, { type: 'synthetic', input: { steps: 1 }, idempotencyKey: 'k-1' });
      const b = await service.createTask(who, { type: 'synthetic', input: { steps: 1 }, idempotencyKey: 'k-1' });
      expect(b).toMatchObject({ created: false, task: { id: a.task.id } });
      await expect(service.createTask(who, { type: 'synthetic', input: { steps: 2 }, idempotencyKey: 'k-1' })).rejects.toMatchObject({ code: 'IDEMPOTENCY_MISMATCH' });
      expect(await worker.drain()).toBe(1);
    });

    it('graceful stop finishes the current step and gives the lease back', async () => {
      const gate = new Gate();
      const twoStep = defineTaskType({
        name: 'two-step',
        version: 1,
        input: z.object({}),
        initialCheckpoint: () => ({ n: 0 }),
        steps: [
          {
            name: 'one',
            run: async () => {
              await gate.wait();
              return { n: 1 };
            },
          },
          { name: 'two', run: async () => ({ n: 2 }) },
        ],
      });
      const reg = new TaskTypeRegistry([twoStep]);
      service = new TaskService({ store, registry: reg, clock });
      const { task } = await service.createTask(who, { type: 'two-step', input: {} });
      const w = makeWorker(reg);
      w.start();
      clock.advance(0);
      await gate.arrived;
      const stopping = w.stop();
      gate.open();
      await stopping;
      const t = await service.getTask(who, task.id);
      expect(t).toMatchObject({ state: 'working', step: 1, leaseOwner: null, wakeAt: clock.now() });
      await makeWorker(reg).drain();
      expect((await service.getTask(who, task.id)).state).toBe('completed');
    });

    it("a slot takes its next task while the last task's completing commit is in flight; step code stays within concurrency", async () => {
      let inStep = 0;
      let maxInStep = 0;
      const stepsStarted: string[] = [];
      const oneStep = defineTaskType({
        name: 'one-step',
        version: 1,
        input: z.object({ n: z.number() }),
        initialCheckpoint: () => ({}),
        steps: [
          {
            name: 'only',
            run: async (ctx) => {
              inStep += 1;
              maxInStep = Math.max(maxInStep, inStep);
              stepsStarted.push(String(ctx.input.n));
              await Promise.resolve();
              inStep -= 1;
              return { done: true };
            },
          },
        ],
      });
      const reg = new TaskTypeRegistry([oneStep]);
      service = new TaskService({ store, registry: reg, clock });
      const first = (await service.createTask(who, { type: 'one-step', input: { n: 1 } })).task;
      clock.advance(1);
      const second = (await service.createTask(who, { type: 'one-step', input: { n: 2 } })).task;
      // Hold the first task's completing commit until the second task's step has run.
      const held = new Gate();
      const gated: Store = Object.create(store, {
        commit: {
          value: async (c: Parameters<Store['commit']>[0]) => {
            if (c.kind === 'complete' && c.lease.taskId === first.id) await held.wait();
            return store.commit(c);
          },
        },
      }) as Store;
      const w = new Worker({ store: gated, registry: reg, clock, concurrency: 1, leaseMs: 10_000, pollMs: 600_000, random: () => 0.5 });
      w.start();
      await held.arrived;
      await vi.waitFor(() => expect(stepsStarted).toEqual(['1', '2']));
      expect((await service.getTask(who, first.id)).state).toBe('working');
      held.open();
      await vi.waitFor(async () => expect((await service.getTask(who, first.id)).state).toBe('completed'));
      await vi.waitFor(async () => expect((await service.getTask(who, second.id)).state).toBe('completed'));
      expect(maxInStep).toBe(1);
      await w.stop();
    });

    it("an idle worker wakes when a dead worker's lease lapses, not a whole poll later", async () => {
      const oneStep = defineTaskType({
        name: 'one-step',
        version: 1,
        input: z.object({}),
        initialCheckpoint: () => ({}),
        steps: [{ name: 'only', run: async () => ({ done: true }) }],
      });
      const reg = new TaskTypeRegistry([oneStep]);
      service = new TaskService({ store, registry: reg, clock });
      const { task } = await service.createTask(who, { type: 'one-step', input: {} });
      // A worker that claims and then dies: its lease (10 s) is the only thing that will ever free the task.
      const [held] = await store.claimTasks({ workerId: 'dead', now: clock.now(), leaseMs: 10_000, limit: 1, kinds: reg.kinds() });
      expect(held!.task.id).toBe(task.id);
      // A poll interval far longer than the lease: only the look-up of the next lapse can wake the worker in time.
      const w = new Worker({ store, registry: reg, clock, leaseMs: 10_000, pollMs: 600_000, random: () => 0.5 });
      w.start();
      await vi.waitFor(() => expect(clock.pendingSleeps).toBeGreaterThan(0));
      clock.advance(9_999);
      await new Promise((r) => setTimeout(r, 50));
      expect((await service.getTask(who, task.id)).leaseOwner).toBe('dead');
      clock.advance(2);
      await vi.waitFor(async () => expect((await service.getTask(who, task.id)).state).toBe('completed'), { timeout: 10_000 });
      await w.stop();
    });
  });
}
