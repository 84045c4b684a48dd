/**
 * The example agent (`agent-access-review`, a scripted AI SDK model with tools) in real worker processes
 * (`node bin/belay.js worker`, run `npm run build` first), SIGKILLed at named crash points:
 * - right after a model turn was committed, and between the last tool call of a turn and the next model turn: the
 *   clean worker that takes over repeats neither a committed model call nor a tool call;
 * - a question asked by a tool, answered after every process was restarted, resumes exactly once.
 * Model calls are counted outside the workers: the scripted model reports each request it receives to the fake
 * downstream under `<taskId>:model-turn-<n>`, and the downstream counts how often each key was presented.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import type { Task } from '../../src/core/task.js';
import { exampleRegistry, InMemoryDownstream, startDownstreamServer, type DownstreamServer } from '../../src/examples/index.js';
import type { AgentCheckpoint } from '../../src/agent/index.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { eventually } from '../helpers/gate.js';
import { expectCleanHistory } from '../helpers/history.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { spawnWorker, type WorkerProcess } from '../helpers/worker-process.js';

const LEASE_MS = 1000;
const who = { tenant: 'agents', principal: 'owner' };
/** systems: 4, revocations: 3 => turns: list, fetch x4, propose, ask, revoke x3, report, final answer. */
const INPUT = { systems: 4, revocations: 3 };
const TURNS = 7;

/** How often each key of a kind was presented to the downstream, by key suffix after `<taskId>:`. */
function presented(downstream: DownstreamServer, taskId: string, kind: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of downstream.downstream.applied.values()) {
    if (a.kind === kind && a.key.startsWith(`${taskId}:`)) out[a.key.slice(taskId.length + 1)] = a.calls;
  }
  return out;
}

async function waitForState(store: Store, id: string, state: Task['state'], timeoutMs = 30_000): Promise<Task> {
  return eventually(async () => {
    const t = await store.getTask(id);
    return t?.state === state ? t : null;
  }, timeoutMs);
}

for (const kind of storesUnderTest()) {
  describe(`agent crash recovery on ${kind} (real processes)`, () => {
    const stores = testStores(kind);
    afterAll(() => stores.teardown());

    it('SIGKILL after a committed model turn and between a tool call and the next turn: nothing committed is requested or run again', async () => {
      const store = await stores.open();
      const downstream = await startDownstreamServer();
      // The test only creates and answers; its registry's downstream is never called.
      const service = new TaskService({ store, registry: exampleRegistry(new InMemoryDownstream()), clock: systemClock });
      const spawned: WorkerProcess[] = [];
      const spawn = (crashAt?: string) => {
        const w = spawnWorker({ db: stores.url(), downstreamUrl: downstream.url, leaseMs: LEASE_MS, concurrency: 1, ...(crashAt ? { crashAt } : {}) });
        spawned.push(w);
        return w;
      };
      try {
        const { task } = await service.createTask(who, { type: 'agent-access-review', input: INPUT });

        // Worker A dies right after turn 2 (fetch the grants of 4 systems) was committed, before any of its calls ran.
        const a = spawn('after-model-turn:2');
        expect(await a.exited).toEqual({ code: null, signal: 'SIGKILL' });
        const afterA = (await store.getTask(task.id))!;
        const cpA = afterA.checkpoint as unknown as AgentCheckpoint;
        expect(cpA.turn).toBe(2);
        expect(cpA.calls.map((c) => [c.toolName, c.output])).toEqual(Array.from({ length: 4 }, () => ['fetch_grants', undefined]));
        expect(presented(downstream, task.id, 'model-call')).toEqual({ 'model-turn-1': 1, 'model-turn-2': 1 });

        // Worker B takes over, pauses on the owners' question, and after the answer dies right after the ledger
        // recorded the third (last) revocation of turn 5: between a tool call and the next model turn.
        const b = spawn('after-ledger-write:3');
        const paused = await waitForState(store, task.id, 'input_required');
        expect(paused.pendingInput).toMatchObject({ key: 'turn-4-call-0', question: 'Approve revoking 3 stale grants?' });
        await service.answer(who, task.id, { version: paused.version, answer: { approved: true } });
        expect(await b.exited).toEqual({ code: null, signal: 'SIGKILL' });
        const afterB = (await store.getTask(task.id))!;
        const cpB = afterB.checkpoint as unknown as AgentCheckpoint;
        expect(cpB.turn).toBe(5);
        // The crash came before the third result was committed to the conversation; the ledger already has it.
        expect(cpB.calls.map((c) => [c.toolName, c.output?.type ?? null])).toEqual([
          ['revoke', 'json'],
          ['revoke', 'json'],
          ['revoke', null],
        ]);
        expect((await store.listEffects(task.id)).map((e) => [e.key, e.status])).toEqual([
          ['revoke:turn-5/call-0', 'applied'],
          ['revoke:turn-5/call-1', 'applied'],
          ['revoke:turn-5/call-2', 'applied'],
        ]);

        // A clean worker finishes.
        spawn();
        const done = await waitForState(store, task.id, 'completed');
        expect(done.result).toMatchObject({ summary: 'Reviewed 4 systems: revoked 3 stale grants, kept 0.', turns: TURNS });

        // Every model turn was requested exactly once, across three processes and two SIGKILLs ...
        expect(presented(downstream, task.id, 'model-call')).toEqual(Object.fromEntries(Array.from({ length: TURNS }, (_, i) => [`model-turn-${i + 1}`, 1])));
        // ... and every revocation reached the downstream exactly once (never even re-presented under its key).
        expect(presented(downstream, task.id, 'revoke')).toEqual({ 'revoke:turn-5/call-0': 1, 'revoke:turn-5/call-1': 1, 'revoke:turn-5/call-2': 1 });
        // The committed history: one commit per model turn, in order, none repeated.
        const events = await store.listEvents(task.id, 0, 1000);
        const turnCommits = events
          .map((e) => (e.body.progress as { current: number; message: string } | undefined))
          .filter((p) => p && (/requested|final answer/.test(p.message)))
          .map((p) => p!.current);
        expect(turnCommits).toEqual([1, 2, 3, 4, 5, 6, 7]);
        const report = done.artifacts.find((x) => x.name === 'access-review-report');
        expect((report?.data as { revoked: string[] }).revoked).toHaveLength(3);
        await expectCleanHistory(store, task.id);
      } finally {
        for (const w of spawned) w.child.kill('SIGKILL');
        await Promise.all(spawned.map((w) => w.exited));
        await downstream.close();
        await store.close();
      }
    }, 120_000);

    it('a question asked by a tool, answered after every process restarted, resumes exactly once', async () => {
      let store = await stores.open();
      const downstream = await startDownstreamServer();
      let service = new TaskService({ store, registry: exampleRegistry(new InMemoryDownstream()), clock: systemClock });
      const spawned: WorkerProcess[] = [];
      const spawn = () => {
        const w = spawnWorker({ db: stores.url(), downstreamUrl: downstream.url, leaseMs: LEASE_MS, concurrency: 2 });
        spawned.push(w);
        return w;
      };
      try {
        const { task } = await service.createTask(who, { type: 'agent-access-review', input: INPUT });
        const first = spawn();
        const paused = await waitForState(store, task.id, 'input_required');
        const proposed = (paused.pendingInput!.context as { grants: string[] }).grants;
        expect(proposed).toHaveLength(3);
        expect(paused.leaseOwner).toBeNull();

        // Every process goes away: the worker, and this process's connection to the store.
        first.child.kill('SIGKILL');
        await first.exited;
        await store.close();
        store = await stores.reopen();
        service = new TaskService({ store, registry: exampleRegistry(new InMemoryDownstream()), clock: systemClock });

        // The owners keep one grant. Two fresh workers race for the resumed task.
        const keep = proposed[1]!;
        await service.answer(who, task.id, { version: paused.version, answer: { approved: true, keep: [keep] } });
        spawn();
        spawn();
        const done = await waitForState(store, task.id, 'completed');
        expect(done.result).toMatchObject({ summary: 'Reviewed 4 systems: revoked 2 stale grants, kept 1.', turns: TURNS });

        // Resumed exactly once: one question, one answer, the tool's result (the answer) in the conversation once,
        // and the turn that read it requested once.
        const kinds = await expectCleanHistory(store, task.id);
        expect(kinds.filter((k) => k === 'input_required')).toHaveLength(1);
        expect(kinds.filter((k) => k === 'input_received')).toHaveLength(1);
        const cp = done.checkpoint as unknown as AgentCheckpoint;
        const askResults = cp.messages.flatMap((m) => (m.role === 'tool' ? m.content.filter((p) => p.type === 'tool-result' && p.toolName === 'ask_owner') : []));
        expect(askResults).toHaveLength(1);
        expect(askResults[0]).toMatchObject({ output: { type: 'json', value: { approved: true, keep: [keep] } } });
        expect(presented(downstream, task.id, 'model-call')).toEqual(Object.fromEntries(Array.from({ length: TURNS }, (_, i) => [`model-turn-${i + 1}`, 1])));
        const revoked = [...downstream.downstream.applied.values()].filter((a) => a.kind === 'revoke' && a.key.startsWith(`${task.id}:`));
        expect(revoked.map((a) => (a.payload as { grant: string }).grant).sort()).toEqual(proposed.filter((g) => g !== keep).sort());
        expect(revoked.every((a) => a.calls === 1)).toBe(true);
        // A second answer changes nothing.
        await expect(service.answer(who, task.id, { version: paused.version, answer: { approved: false } })).rejects.toMatchObject({ code: expect.stringMatching(/STALE_VERSION|NOT_WAITING_FOR_INPUT/) });
      } finally {
        for (const w of spawned) w.child.kill('SIGKILL');
        await Promise.all(spawned.map((w) => w.exited));
        await downstream.close();
        await store.close();
      }
    }, 120_000);
  });
}
