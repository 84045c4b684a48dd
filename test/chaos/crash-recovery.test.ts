/**
 * Crash recovery with real processes: worker processes running the examples are SIGKILLed at random moments and
 * at named crash points (at least 50 kills per store). Every task still completes, every downstream effect is
 * applied exactly once, and every task's event sequence is gapless with no event lost or duplicated.
 * Also: a worker frozen by SIGSTOP past its lease cannot overwrite its successor when it wakes up.
 */
import type { ChildProcess } from 'node:child_process';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { FAULT_LABELS } from '../../src/runtime/fault-points.js';
import { startDownstreamServer, type DownstreamServer } from '../../src/examples/downstream.js';
import { recordId } from '../../src/examples/account-migration.js';
import { systemClock } from '../../src/core/clock.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Task } from '../../src/core/task.js';
import { expectCleanHistory } from '../helpers/history.js';
import { eventually } from '../helpers/gate.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { spawnWorker, type WorkerProcess } from '../helpers/worker-process.js';
import { prng } from '../helpers/prng.js';

const KILLS = Number(process.env.BELAY_CHAOS_KILLS ?? 50);
// Long enough that a loaded 2-core machine renews in time; recovery takes at most this long after each kill.
const LEASE_MS = 3000;
const who = { tenant: 'chaos', principal: 'chaos' };

/** SIGSTOPs a process; with a SQLite path, retries until the process is frozen while not holding the write lock. */
async function freezeOutsideWriteLock(child: ChildProcess, sqlitePath: string | null): Promise<void> {
  for (let tries = 0; ; tries++) {
    child.kill('SIGSTOP');
    if (!sqlitePath) return;
    const probe = new Database(sqlitePath, { timeout: 200 });
    try {
      probe.exec('BEGIN IMMEDIATE');
      probe.exec('ROLLBACK');
      return;
    } catch (e) {
      if (tries > 50) throw e;
      child.kill('SIGCONT');
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 50));
    } finally {
      probe.close();
    }
  }
}


for (const kind of storesUnderTest()) {
  describe(`crash recovery on ${kind} (real processes, SIGKILL)`, () => {
    const stores = testStores(kind);
    afterAll(() => stores.teardown());

    it(`survives ${KILLS} SIGKILLs: every task completes, every effect applied once, histories gapless`, async () => {
      const seed = Number(process.env.BELAY_CHAOS_SEED ?? Date.now() % 1_000_000);
      const random = prng(seed);
      console.log(`crash-recovery ${kind}: seed ${seed}`);
      const store = await stores.open();
      const downstream = await startDownstreamServer();
      // The test only creates and answers tasks; its registry's downstream is never called.
      const service = new TaskService({ store, registry: exampleRegistry(new InMemoryDownstream()), clock: systemClock });
      const workers = new Set<WorkerProcess>();
      const ready = new WeakSet<WorkerProcess>();
      let kills = 0;
      let crashPointKills = 0;
      let running = true;
      let finished = false;
      const tasks: Task[] = [];

      const spawnOne = (withCrashPoint: boolean) => {
        const crashAt = withCrashPoint && random() < 0.4 ? `${FAULT_LABELS[Math.floor(random() * FAULT_LABELS.length)]}:${1 + Math.floor(random() * 12)}` : undefined;
        const w = spawnWorker({ db: stores.url(), downstreamUrl: downstream.url, leaseMs: LEASE_MS, ...(crashAt ? { crashAt } : {}) });
        workers.add(w);
        w.id.then(
          () => ready.add(w),
          () => undefined,
        );
        void w.exited.then(({ signal }) => {
          workers.delete(w);
          if (signal === 'SIGKILL' && crashAt && !w.child.killed) crashPointKills += 1;
          if (!finished && (running || workers.size < 2)) spawnOne(running);
        });
        return w;
      };

      const createBatch = async () => {
        for (let i = 0; i < 6; i++) {
          tasks.push((await service.createTask(who, { type: 'synthetic', input: { steps: 6, stepMs: 25, effectsPerStep: 2, effectUrl: `${downstream.url}/effects` } })).task);
        }
        tasks.push((await service.createTask(who, { type: 'access-review', input: { systems: 6, revocations: 4, stepDelayMs: 15 } })).task);
        tasks.push((await service.createTask(who, { type: 'account-migration', input: { records: 300, batchSize: 4, ambiguousEvery: 0, batchDelayMs: 15 } })).task);
      };

      // The owners answer every approval question as soon as it is asked (from outside the workers).
      const answerer = (async () => {
        while (running || tasks.some((t) => t.type === 'access-review')) {
          const waiting = await store.listTasks({ tenant: 'chaos', states: ['input_required'], limit: 100 });
          for (const t of waiting) await service.answer(who, t.id, { version: t.version, answer: { approved: true } }).catch(() => undefined);
          const open = await store.listTasks({ tenant: 'chaos', states: ['submitted', 'working', 'input_required'], limit: 1 });
          if (!running && open.length === 0) return;
          await new Promise((r) => setTimeout(r, 50));
        }
      })();

      try {
        await createBatch();
        spawnOne(true);
        spawnOne(true);
        while (kills < KILLS) {
          await new Promise((r) => setTimeout(r, 150 + random() * 350));
          // Only workers that are up and claiming count: a kill before READY would prove nothing.
          const live = [...workers].filter((w) => ready.has(w));
          const victim = live[Math.floor(random() * live.length)];
          if (victim && victim.child.exitCode === null && victim.child.signalCode === null) {
            victim.child.kill('SIGKILL');
            kills += 1;
          }
          const open = await store.listTasks({ tenant: 'chaos', states: ['submitted', 'working', 'input_required'], limit: 20 });
          if (open.length < 8) await createBatch();
        }
        running = false;
        // Replace any worker that still carries a crash point with a clean one, then let everything finish.
        for (const w of [...workers]) w.child.kill('SIGKILL');
        await eventually(async () => workers.size >= 2, 20_000);
        const started = Date.now();
        await eventually(
          async () => {
            const open = await store.listTasks({ tenant: 'chaos', states: ['submitted', 'working', 'input_required'], limit: 1 });
            return open.length === 0;
          },
          120_000,
          100,
        );
        await answerer;
        console.log(`crash-recovery ${kind}: drained in ${Date.now() - started} ms after the last kill`);
      } finally {
        // No more respawns: a worker left running after the test would keep claiming from a deleted database.
        finished = true;
        running = false;
        for (const w of [...workers]) w.child.kill('SIGKILL');
        await Promise.all([...workers].map((w) => w.exited));
      }

      // Invariants.
      let effectsExpected = 0;
      for (const t of tasks) {
        const final = (await store.getTask(t.id))!;
        expect(final.state, `${t.type} ${t.id} ${JSON.stringify(final.error)}`).toBe('completed');
        await expectCleanHistory(store, t.id);
        const ledger = await store.listEffects(t.id);
        expect(ledger.every((e) => e.status === 'applied')).toBe(true);
        if (t.type === 'synthetic') {
          const keys = [];
          for (let s = 0; s < 6; s++) for (let n = 0; n < 2; n++) keys.push(`${t.id}:s${s}-e${n}`);
          for (const k of keys) expect(downstream.effects.get(k), k).toBeDefined();
          expect(ledger).toHaveLength(12);
          effectsExpected += 12;
          // No event duplicated: each unit's progress was committed exactly once, in order.
          const events = await store.listEvents(t.id, 0, 1000);
          const units = events.filter((e) => e.kind === 'progress' || e.kind === 'completed').map((e) => (e.body.progress as { current: number }).current);
          expect(units).toEqual([1, 2, 3, 4, 5, 6]);
        } else if (t.type === 'access-review') {
          const revoked = [...downstream.downstream.applied.keys()].filter((k) => k.startsWith(`${t.id}:revoke:`));
          expect(revoked).toHaveLength(4);
          expect(final.result).toEqual({ systems_reviewed: 6, revocations_applied: 4 });
          effectsExpected += 4;
        } else {
          const migrated = [...downstream.downstream.applied.keys()].filter((k) => k.startsWith(`${t.id}:migrate:`));
          expect(migrated).toHaveLength(300);
          expect(new Set(migrated)).toEqual(new Set(Array.from({ length: 300 }, (_, i) => `${t.id}:migrate:${recordId(i)}`)));
          effectsExpected += 300;
        }
      }
      const applied = downstream.effects.size + downstream.downstream.applied.size;
      // Exactly once: every effect the tasks define arrived, and nothing else did.
      expect(applied).toBe(effectsExpected);
      const presented = [...downstream.effects.values()].reduce((n, e) => n + e.calls, 0) + downstream.downstream.calls;
      console.log(
        `crash-recovery ${kind}: ${kills} SIGKILLs (+${crashPointKills} at crash points), ${tasks.length} tasks completed, ${applied} effects applied once (${presented - applied} repeated deliveries deduplicated by key)`,
      );
      expect(kills).toBeGreaterThanOrEqual(KILLS);
      await downstream.close();
      await store.close();
    }, 300_000);

    it('a worker frozen by SIGSTOP past its lease cannot overwrite its successor', async () => {
      const store = await stores.open();
      const downstream: DownstreamServer = await startDownstreamServer();
      const service = new TaskService({ store, registry: exampleRegistry(new InMemoryDownstream()), clock: systemClock });
      const first = spawnWorker({ db: stores.url(), downstreamUrl: downstream.url, leaseMs: 1000, concurrency: 1 });
      let second: WorkerProcess | null = null;
      try {
        const firstId = await first.id;
        const { task } = await service.createTask(who, { type: 'synthetic', input: { steps: 12, stepMs: 150, effectsPerStep: 1, effectUrl: `${downstream.url}/effects` } });
        await eventually(async () => (((await store.getTask(task.id))!.checkpoint as { done?: number } | null)?.done ?? 0) >= 2);
        // A process frozen inside a SQLite write transaction holds the file's write lock until it resumes or dies:
        // every other writer waits (SQLite's single-writer design; SIGKILL releases the lock, SIGSTOP does not).
        // So on SQLite, freeze the worker at a moment it holds no write lock, which is most of the time.
        await freezeOutsideWriteLock(first.child, kind === 'sqlite' ? stores.url() : null);
        second = spawnWorker({ db: stores.url(), downstreamUrl: downstream.url, leaseMs: 1000, concurrency: 1 });
        const secondId = await second.id;
        await eventually(async () => {
          const t = (await store.getTask(task.id))!;
          return t.leaseOwner === secondId && ((t.checkpoint as { done: number }).done ?? 0) >= 5;
        }, 20_000);
        first.child.kill('SIGCONT');
        await eventually(async () => (await store.getTask(task.id))!.state === 'completed', 30_000);
        // Give the woken worker time to try (and fail) to write.
        await new Promise((r) => setTimeout(r, 1500));
        const final = (await store.getTask(task.id))!;
        expect(final.state).toBe('completed');
        expect(final.fence).toBeGreaterThanOrEqual(2);
        expect(firstId).not.toBe(secondId);
        await expectCleanHistory(store, task.id);
        const events = await store.listEvents(task.id, 0, 1000);
        const units = events.filter((e) => e.kind === 'progress' || e.kind === 'completed').map((e) => (e.body.progress as { current: number }).current);
        expect(units).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
        expect(downstream.effects.size).toBe(12);
        expect(first.child.exitCode).toBeNull();
      } finally {
        first.child.kill('SIGCONT');
        first.child.kill('SIGKILL');
        second?.child.kill('SIGKILL');
        await Promise.all([first.exited, second?.exited]);
        await downstream.close();
        await store.close();
      }
    }, 120_000);
  });
}
