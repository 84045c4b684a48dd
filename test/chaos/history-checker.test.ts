/**
 * The chaos history checker must catch every invariant it claims to check: a clean history passes, and each
 * history below, broken in exactly one way, is reported under the right invariant.
 */
import { describe, expect, it } from 'vitest';
import type { Json, SideEffectRecord, Task, TaskEvent } from '../../src/core/task.js';
import type { TaskState } from '../../src/core/task-state.js';
import { checkHistory, fenceAt } from '../../chaos/history-checker.js';
import { emptyHistory, type FenceGrant, type FinalState, type History } from '../../chaos/history.js';

const T = 'task_000000000001aaaa';

function task(over: Partial<Task> = {}): Task {
  return {
    id: T,
    tenant: 'acme',
    contextId: 'ctx-1',
    type: 'synthetic',
    typeVersion: 1,
    state: 'completed',
    step: 1,
    checkpoint: { done: 2 },
    input: {},
    progress: { current: 2, total: 2, message: null },
    pendingInput: null,
    answers: {},
    cancelRequestedAt: null,
    result: { steps_done: 2 },
    artifacts: [],
    error: null,
    leaseOwner: null,
    leaseUntil: null,
    fence: 2,
    version: 5,
    nextSeq: 6,
    attempts: 1,
    wakeAt: null,
    createdAt: 1,
    updatedAt: 9,
    terminalAt: 9,
    expiresAt: null,
    createdBy: 'alice',
    callbackUrl: null,
    ...over,
  };
}

function ev(seq: number, kind: string, body: Record<string, Json>, taskId = T): TaskEvent {
  return { taskId, seq, kind: kind as TaskEvent['kind'], body, at: seq };
}

/** created, started (fence 1), progress (fence 1), lease lost; re-claim (fence 2), progress, completed. */
function cleanEvents(): TaskEvent[] {
  return [
    ev(1, 'created', { state: 'submitted' }),
    ev(2, 'started', { state: 'working' }),
    ev(3, 'progress', { state: 'working', step: 0, substep: true, fence: 1 }),
    ev(4, 'progress', { state: 'working', step: 0, substep: true, fence: 2 }),
    ev(5, 'completed', { state: 'completed', step: 1, fence: 2 }),
  ];
}

function grants(): FenceGrant[] {
  const g = (fence: number, nextSeq: number, owner: string): FenceGrant => ({
    taskId: T, fence, nextSeq, owner, prevOwner: null, prevLeaseUntil: null, leaseUntil: 100, oldState: 'working', newState: 'working', dbTime: fence,
  });
  return [g(1, 3, 'w1'), g(2, 4, 'w2')];
}

function effect(key: string, status: 'applied' | 'pending' = 'applied'): SideEffectRecord {
  return { taskId: T, key, status, result: status === 'applied' ? { ok: true } : null, startedAt: 1, appliedAt: status === 'applied' ? 2 : null, fence: 1 };
}

function world(over: { task?: Partial<Task>; events?: TaskEvent[]; fenceLog?: FenceGrant[] | null; effects?: SideEffectRecord[] } = {}): FinalState {
  const t = task(over.task);
  return {
    tasks: new Map([[t.id, t]]),
    events: new Map([[t.id, over.events ?? cleanEvents()]]),
    effects: new Map([[t.id, over.effects ?? [effect('s0-e0'), effect('s1-e0')]]]),
    tombstones: new Map(),
    fenceLog: over.fenceLog === undefined ? grants() : over.fenceLog,
  };
}

function history(): History {
  const h = emptyHistory();
  h.creates.push({
    tenant: 'acme',
    type: 'synthetic',
    key: 'k1',
    contextId: 'ctx-1',
    attempts: [
      { at: 1, status: 'network' },
      { at: 2, status: 202, taskId: T, replayed: true },
    ],
    plannedEffects: ['s0-e0', 's1-e0'],
  });
  for (const [step, fresh] of [[0, true], [0, false], [1, true]] as const) {
    h.receipts.push({ key: `${T}:s${step}-e0`, route: 'effects', body: { taskId: T, step, n: 0 }, at: 3, fresh });
  }
  h.sse.push({
    taskId: T,
    connections: [
      { taskId: T, lastEventId: null, status: 200, events: [{ seq: 1, kind: 'created' }, { seq: 2, kind: 'started' }], end: 'aborted' },
      { taskId: T, lastEventId: 2, status: 200, events: [{ seq: 3, kind: 'progress' }, { seq: 4, kind: 'progress' }, { seq: 5, kind: 'completed' }], end: 'terminal' },
    ],
  });
  return h;
}

const invariants = (h: History, f: FinalState, o = {}) => checkHistory(h, f, o).map((x) => x.invariant);

describe('chaos history checker', () => {
  it('passes a clean history (lost responses, deduplicated repeats, a re-claim and an SSE reconnect included)', () => {
    expect(checkHistory(history(), world(), { settled: 'terminal' })).toEqual([]);
    expect(checkHistory(history(), world({ fenceLog: null }), { settled: 'terminal' })).toEqual([]);
  });

  it('fenceAt is the last grant at or before the seq', () => {
    expect([1, 2, 3, 4, 9].map((s) => fenceAt(grants(), s))).toEqual([0, 0, 1, 2, 2]);
  });

  describe('I1: no lost task, one task per idempotency key', () => {
    it('an acknowledged create whose task is gone', () => {
      const f = world();
      f.tasks.clear();
      f.events.clear();
      expect(invariants(history(), f)).toContain('I1');
    });
    it('an expired task (tombstone) is not lost', () => {
      const f = world();
      f.tasks.clear();
      f.events.clear();
      f.tombstones.set(T, { id: T, tenant: 'acme', type: 'synthetic', finalState: 'completed', createdBy: 'alice', createdAt: 1, terminalAt: 9, expiredAt: 10 });
      const h = history();
      h.sse = [];
      expect(checkHistory(h, f)).toEqual([]);
    });
    it('an acknowledged task that never settled', () => {
      const events = cleanEvents().slice(0, 4);
      expect(invariants(history(), world({ task: { state: 'working', nextSeq: 5, step: 0, result: null }, events }))).toContain('I1');
    });
    it('waiting counts as settled unless terminal is required', () => {
      const events = [...cleanEvents().slice(0, 3), ev(4, 'input_required', { state: 'input_required', step: 0, fence: 1 })];
      const f = world({ task: { state: 'input_required', nextSeq: 5, step: 0, result: null, fence: 1 }, events, fenceLog: grants().slice(0, 1), effects: [] });
      const h = history();
      h.sse = [];
      h.receipts = [];
      h.creates[0]!.plannedEffects = undefined;
      expect(checkHistory(h, f)).toEqual([]);
      expect(invariants(h, f, { settled: 'terminal' })).toEqual(['I1']);
    });
    it('one key answered with two different tasks', () => {
      const h = history();
      h.creates[0]!.attempts.push({ at: 3, status: 202, taskId: 'task_other', replayed: true });
      expect(invariants(h, world())).toContain('I1');
    });
    it('one logical create that made two tasks', () => {
      const f = world();
      const twin = task({ id: 'task_twin' });
      f.tasks.set(twin.id, twin);
      f.events.set(twin.id, cleanEvents().map((e) => ({ ...e, taskId: twin.id })));
      expect(checkHistory(history(), f).some((x) => x.invariant === 'I1' && x.detail.includes('made 2 tasks'))).toBe(true);
    });
    it('a key answered "created" twice', () => {
      const h = history();
      h.creates[0]!.attempts = [
        { at: 1, status: 202, taskId: T },
        { at: 2, status: 202, taskId: T },
      ];
      expect(invariants(h, world())).toContain('I1');
    });
    it('a task that must complete but failed', () => {
      const events = [...cleanEvents().slice(0, 4), ev(5, 'failed', { state: 'failed', fence: 2 })];
      const f = world({ task: { state: 'failed', step: 0, result: null }, events });
      const h = history();
      h.sse = [];
      expect(invariants(h, f, { mustComplete: () => true })).toContain('I1');
    });
  });

  describe('I2: effects applied once per key, inside the ledger', () => {
    it('the same logical effect sent under a second key', () => {
      const h = history();
      h.receipts.push({ key: `${T}:s0-e0-retry`, route: 'effects', body: { taskId: T, step: 0, n: 0 }, at: 4, fresh: true });
      expect(invariants(h, world())).toContain('I2');
    });
    it('a downstream receipt the ledger does not know', () => {
      expect(invariants(history(), world({ effects: [effect('s0-e0')] }))).toContain('I2');
    });
    it('a receipt for a task that does not exist', () => {
      const h = history();
      h.receipts.push({ key: 'task_ghost:s0-e0', route: 'effects', body: { taskId: 'task_ghost', step: 0, n: 0 }, at: 4, fresh: true });
      expect(invariants(h, world())).toContain('I2');
    });
    it('a completed task with a planned effect that never arrived', () => {
      const h = history();
      h.receipts = h.receipts.filter((r) => !r.key.endsWith('s1-e0'));
      expect(invariants(h, world())).toContain('I2');
    });
    it('an effect outside the plan', () => {
      const h = history();
      h.receipts.push({ key: `${T}:s7-e0`, route: 'effects', body: { taskId: T, step: 7, n: 0 }, at: 4, fresh: true });
      expect(invariants(h, world({ effects: [effect('s0-e0'), effect('s1-e0'), effect('s7-e0')] }))).toContain('I2');
    });
    it('a completed task with an unconfirmed ledger row', () => {
      expect(invariants(history(), world({ effects: [effect('s0-e0'), effect('s1-e0', 'pending')] }))).toContain('I2');
    });
  });

  describe('I3: checkpoint and event together', () => {
    it('next_seq disagrees with the log', () => {
      expect(invariants(history(), world({ task: { nextSeq: 7 } }))).toContain('I3');
    });
    it('the row state disagrees with the last event', () => {
      const h = history();
      expect(invariants(h, world({ task: { state: 'failed' } }))).toContain('I3');
    });
    it('the row step disagrees with the last worker commit', () => {
      expect(invariants(history(), world({ task: { step: 0 } }))).toContain('I3');
    });
    it('completed without a result', () => {
      expect(invariants(history(), world({ task: { result: null } }))).toContain('I3');
    });
  });

  describe('I4: legal, gapless history', () => {
    it('a gap in the sequence', () => {
      const events = cleanEvents().filter((e) => e.seq !== 3);
      expect(invariants(history(), world({ task: { nextSeq: 5 }, events }))).toContain('I4');
    });
    it('a duplicated sequence number', () => {
      const events = cleanEvents();
      events.splice(3, 0, { ...events[2]! });
      expect(invariants(history(), world({ events }))).toContain('I4');
    });
    it('an event after the terminal one', () => {
      const events = [...cleanEvents(), ev(6, 'progress', { state: 'working', step: 1, fence: 2 })];
      expect(invariants(history(), world({ task: { nextSeq: 7, step: 1 }, events }))).toContain('I4');
    });
    it('an illegal transition (input_required -> completed)', () => {
      const events = [...cleanEvents().slice(0, 4), ev(5, 'input_required', { state: 'input_required', step: 0, fence: 2 }), ev(6, 'completed', { state: 'completed', step: 1, fence: 2 })];
      expect(invariants(history(), world({ task: { nextSeq: 7 }, events }))).toContain('I4');
    });
    it('a kind that disagrees with its state', () => {
      const events = cleanEvents();
      events[1] = ev(2, 'started', { state: 'submitted' });
      expect(invariants(history(), world({ events }))).toContain('I4');
    });
    it('a cancellation answered "canceled" on a task that completed', () => {
      const h = history();
      h.cancels.push({ taskId: T, at: 5, status: 200, outcome: 'canceled' });
      expect(invariants(h, world())).toContain('I4');
    });
    it('two answers accepted for the same version', () => {
      const h = history();
      h.inputs.push({ taskId: T, at: 4, version: 3, status: 202 }, { taskId: T, at: 4, version: 3, status: 202 });
      expect(invariants(h, world())).toContain('I4');
    });
    it('an accepted answer without its event', () => {
      const h = history();
      h.inputs.push({ taskId: T, at: 4, version: 3, status: 202 });
      expect(invariants(h, world())).toContain('I4');
    });
  });

  describe('I5: no commit with an old fence', () => {
    it('a stale writer committing after its successor (caught with or without the fence log)', () => {
      const events = [...cleanEvents().slice(0, 4), ev(5, 'progress', { state: 'working', step: 0, substep: true, fence: 1 }), ev(6, 'completed', { state: 'completed', step: 1, fence: 2 })];
      expect(invariants(history(), world({ task: { nextSeq: 7 }, events }))).toContain('I5');
      expect(invariants(history(), world({ task: { nextSeq: 7 }, events, fenceLog: null }))).toContain('I5');
    });
    it('a stale commit between the grant and the successor\'s first commit (needs the fence log)', () => {
      // Fence 2 was granted at next_seq 4; the old holder (fence 1) still committed seq 4.
      const events = [...cleanEvents().slice(0, 3), ev(4, 'progress', { state: 'working', step: 0, substep: true, fence: 1 }), ev(5, 'completed', { state: 'completed', step: 1, fence: 2 })];
      expect(invariants(history(), world({ events }))).toContain('I5');
      expect(invariants(history(), world({ events, fenceLog: null }))).not.toContain('I5');
    });
    it('a commit with a fence above the row\'s', () => {
      const events = cleanEvents();
      events[4] = ev(5, 'completed', { state: 'completed', step: 1, fence: 3 });
      expect(invariants(history(), world({ events }))).toContain('I5');
    });
    it('a fence log that disagrees with the row', () => {
      expect(invariants(history(), world({ task: { fence: 3 } }))).toContain('I5');
    });
  });

  describe('SSE resumption', () => {
    it('an event replayed after Last-Event-ID', () => {
      const h = history();
      h.sse[0]!.connections[1]!.events.unshift({ seq: 2, kind: 'started' });
      expect(invariants(h, world())).toContain('SSE');
    });
    it('a gap after a reconnect', () => {
      const h = history();
      h.sse[0]!.connections[1]!.events.splice(0, 1);
      expect(invariants(h, world())).toContain('SSE');
    });
    it('an event whose kind differs from the log', () => {
      const h = history();
      h.sse[0]!.connections[1]!.events[0] = { seq: 3, kind: 'retry_scheduled' };
      expect(invariants(h, world())).toContain('SSE');
    });
    it('a stream that ended before the terminal event', () => {
      const h = history();
      h.sse[0]!.connections[1]!.events.pop();
      expect(invariants(h, world())).toContain('SSE');
    });
  });

  it('reports each broken task state with its id', () => {
    const state: TaskState = 'working';
    const out = checkHistory(history(), world({ task: { state } }), { settled: 'terminal' });
    expect(out.every((x) => x.taskId === T)).toBe(true);
    expect(out.length).toBeGreaterThan(0);
  });
});
