/**
 * The one store contract suite. `test/store/sqlite.test.ts` and `test/store/postgres.test.ts` run it; a store that
 * cannot pass a test lists it in `skip` by name with the reason, so gaps are written down and reviewed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BelayError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import type { Json, PendingInput, Task } from '../../src/core/task.js';
import { decideAnswer, decideCancel, decideDeadline } from '../../src/core/transitions.js';
import type { Lease, NewTask, Store, StoreNotification, TaskCommit } from '../../src/store/port.js';
import type { NewDelivery } from '../../src/core/delivery.js';

export interface StoreFactory {
  name: string;
  /** A fresh, empty, migrated store. Two calls with the same `shared` value open the same database. */
  open(shared?: string): Promise<Store>;
  /** Drops what `open` created for this test. */
  cleanup?(): Promise<void>;
  skip?: Array<{ test: string; reason: string }>;
  /** The stored `pending_input` column of a task in the store `open()` returned last, read with SQL (JSON text). */
  rawPendingInput(taskId: string): Promise<string | null>;
}

const T0 = Date.UTC(2026, 0, 1);
const KINDS = [{ type: 'demo', version: 1 }];

export function newTask(overrides: Partial<NewTask> = {}): NewTask {
  const now = overrides.now ?? T0;
  return {
    id: newTaskId(now),
    tenant: 'acme',
    contextId: 'ctx_1',
    type: 'demo',
    typeVersion: 1,
    input: { n: 1 },
    createdBy: 'alice',
    callbackUrl: null,
    now,
    ...overrides,
  };
}

export function progressCommit(lease: Lease, task: Pick<Task, 'step'>, now: number, extra: Partial<TaskCommit> = {}): TaskCommit {
  return {
    lease,
    now,
    kind: 'progress',
    state: 'working',
    step: task.step + 1,
    checkpoint: { at: task.step + 1 },
    progress: { current: task.step + 1, total: 5, message: null },
    pendingInput: null,
    result: null,
    artifacts: undefined,
    error: null,
    leaseUntil: now + 30_000,
    wakeAt: now + 30_000,
    resetAttempts: true,
    expiresAt: null,
    event: { kind: 'progress', body: { state: 'working', step: task.step + 1 } },
    ...extra,
  };
}

/** A pause at step 0 that releases the lease until the question's deadline. */
export function pauseCommit(lease: Lease, task: Pick<Task, 'step'>, now: number, pending: PendingInput, body: Record<string, Json> = { state: 'input_required' }): TaskCommit {
  return progressCommit(lease, task, now, {
    kind: 'pause',
    state: 'input_required',
    step: 0,
    pendingInput: pending,
    leaseUntil: null,
    wakeAt: pending.deadlineAt,
    event: { kind: 'input_required', body },
  });
}

export function defineStoreContract(factory: StoreFactory): void {
  const skipped = new Map((factory.skip ?? []).map((s) => [s.test, s.reason]));
  const test = (name: string, fn: () => Promise<void>) => {
    const reason = skipped.get(name);
    if (reason) it.skip(`${name} (skipped: ${reason})`, fn);
    else it(name, fn);
  };

  describe(`store contract: ${factory.name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await factory.open();
    });
    afterEach(async () => {
      await store.close();
      await factory.cleanup?.();
    });

    async function claimOne(now = T0, leaseMs = 30_000, workerId = 'w1') {
      const claimed = await store.claimTasks({ workerId, now, leaseMs, limit: 1, kinds: KINDS });
      expect(claimed).toHaveLength(1);
      return claimed[0]!;
    }

    test('reports its schema version', async () => {
      expect(await store.schemaVersion()).toBeGreaterThanOrEqual(1);
    });

    test('creates a task with its created event', async () => {
      const { task, created } = await store.createTask(newTask());
      expect(created).toBe(true);
      expect(task).toMatchObject({ state: 'submitted', version: 1, nextSeq: 2, fence: 0, step: 0, input: { n: 1 }, wakeAt: T0 });
      const events = await store.listEvents(task.id, 0, 10);
      expect(events.map((e) => [e.seq, e.kind])).toEqual([[1, 'created']]);
      expect(events[0]!.body).toMatchObject({ state: 'submitted' });
    });

    test('idempotent create: same key and fingerprint replays, different fingerprint is refused', async () => {
      const idem = { scope: 'demo', key: 'k1', fingerprint: 'f1', expiresAt: T0 + 86_400_000 };
      const first = await store.createTask(newTask(), idem);
      const replay = await store.createTask(newTask(), idem);
      expect(replay.created).toBe(false);
      expect(replay.task.id).toBe(first.task.id);
      await expect(store.createTask(newTask(), { ...idem, fingerprint: 'f2' })).rejects.toMatchObject({ code: 'IDEMPOTENCY_MISMATCH' });
      // Scoped per tenant: another tenant's identical key is a different request.
      const other = await store.createTask(newTask({ tenant: 'globex' }), idem);
      expect(other.created).toBe(true);
      expect((await store.countByState()).submitted).toBe(2);
    });

    test('an expired idempotency key names a new request', async () => {
      const idem = { scope: 'demo', key: 'k1', fingerprint: 'f1', expiresAt: T0 + 1000 };
      const first = await store.createTask(newTask(), idem);
      const later = await store.createTask(newTask({ now: T0 + 2000 }), { ...idem, fingerprint: 'f2', expiresAt: T0 + 90_000 });
      expect(later.created).toBe(true);
      expect(later.task.id).not.toBe(first.task.id);
    });

    test('concurrent creates with one key make one task', async () => {
      const idem = { scope: 'demo', key: 'same', fingerprint: 'f', expiresAt: T0 + 86_400_000 };
      const results = await Promise.all(Array.from({ length: 8 }, () => store.createTask(newTask(), idem)));
      expect(new Set(results.map((r) => r.task.id)).size).toBe(1);
      expect(results.filter((r) => r.created)).toHaveLength(1);
    });

    test('a foreign tenant sees nothing', async () => {
      const { task } = await store.createTask(newTask());
      expect(await store.getTask(task.id, 'globex')).toBeNull();
      expect(await store.getTask(task.id, 'acme')).not.toBeNull();
      expect(await store.listTasks({ tenant: 'globex', limit: 10 })).toEqual([]);
      await expect(store.transition(task.id, 'globex', T0, (t) => decideCancel(t, T0).patch)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect((await store.getTask(task.id))!.state).toBe('submitted');
    });

    test('lists newest first with filters and a cursor', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await store.createTask(newTask({ now: T0 + i, type: i % 2 ? 'odd' : 'demo' }))).task.id);
      const page1 = await store.listTasks({ tenant: 'acme', limit: 2 });
      expect(page1.map((t) => t.id)).toEqual([ids[4], ids[3]]);
      const last = page1[1]!;
      const page2 = await store.listTasks({ tenant: 'acme', limit: 2, after: { createdAt: last.createdAt, id: last.id } });
      expect(page2.map((t) => t.id)).toEqual([ids[2], ids[1]]);
      expect((await store.listTasks({ tenant: 'acme', limit: 10, type: 'odd' })).map((t) => t.id)).toEqual([ids[3], ids[1]]);
      expect(await store.listTasks({ tenant: 'acme', limit: 10, states: ['completed'] })).toEqual([]);
      await store.createTask(newTask({ now: T0 + 9, createdBy: 'bob' }));
      expect((await store.listTasks({ tenant: 'acme', limit: 10, createdBy: 'bob' })).map((t) => t.createdBy)).toEqual(['bob']);
      expect(await store.listTasks({ tenant: 'acme', limit: 10, createdFrom: T0 + 1, createdTo: T0 + 3 })).toHaveLength(2);
    });

    test('claim grants a lease, bumps the fence and starts the task once', async () => {
      const { task } = await store.createTask(newTask());
      const { task: claimed, lease } = await claimOne();
      expect(claimed.id).toBe(task.id);
      expect(lease.fence).toBe(1);
      expect(claimed).toMatchObject({ state: 'working', leaseOwner: 'w1', leaseUntil: T0 + 30_000, wakeAt: T0 + 30_000, attempts: 1, version: 2 });
      expect(await store.claimTasks({ workerId: 'w2', now: T0 + 1000, leaseMs: 30_000, limit: 5, kinds: KINDS })).toEqual([]);
      const events = await store.listEvents(task.id, 0, 10);
      expect(events.map((e) => e.kind)).toEqual(['created', 'started']);
    });

    test('concurrent claimers never share a task', async () => {
      for (let i = 0; i < 20; i++) await store.createTask(newTask({ now: T0 + i }));
      const batches = await Promise.all(
        Array.from({ length: 6 }, (_, w) => store.claimTasks({ workerId: `w${w}`, now: T0 + 100, leaseMs: 30_000, limit: 5, kinds: KINDS })),
      );
      const ids = batches.flat().map((c) => c.task.id);
      expect(ids).toHaveLength(20);
      expect(new Set(ids).size).toBe(20);
    });

    test('claim honours task kinds and versions, and wake_at', async () => {
      await store.createTask(newTask({ typeVersion: 2 }));
      await store.createTask(newTask({ type: 'other' }));
      await store.createTask(newTask({ now: T0 + 5000 }));
      expect(await store.claimTasks({ workerId: 'w', now: T0, leaseMs: 1000, limit: 10, kinds: KINDS })).toEqual([]);
      expect(await store.claimTasks({ workerId: 'w', now: T0 + 5000, leaseMs: 1000, limit: 10, kinds: KINDS })).toHaveLength(1);
      const v2 = await store.claimTasks({ workerId: 'w', now: T0, leaseMs: 1000, limit: 10, kinds: [{ type: 'demo', version: 2 }] });
      expect(v2.map((c) => c.task.typeVersion)).toEqual([2]);
    });

    test('nextClaimAt names the next lapsing lease or due retry, leaving out the asker\'s own leases', async () => {
      expect(await store.nextClaimAt({ workerId: 'w9', now: T0, kinds: KINDS })).toBeNull();
      await store.createTask(newTask());
      // Queued and due now: a claim takes it; nothing is scheduled after now.
      expect(await store.nextClaimAt({ workerId: 'w9', now: T0, kinds: KINDS })).toBeNull();
      await store.createTask(newTask({ now: T0 + 7000 }));
      await store.createTask(newTask({ type: 'other', now: T0 + 3000 }));
      expect(await store.nextClaimAt({ workerId: 'w9', now: T0, kinds: KINDS })).toBe(T0 + 7000);
      await claimOne(T0, 2000, 'w1');
      // w1's lease lapses at T0 + 2000: the earliest for anyone else, invisible to w1, which renews it.
      expect(await store.nextClaimAt({ workerId: 'w9', now: T0, kinds: KINDS })).toBe(T0 + 2000);
      expect(await store.nextClaimAt({ workerId: 'w1', now: T0, kinds: KINDS })).toBe(T0 + 7000);
      expect(await store.nextClaimAt({ workerId: 'w9', now: T0, kinds: [{ type: 'other', version: 1 }] })).toBe(T0 + 3000);
      expect(await store.nextClaimAt({ workerId: 'w9', now: T0, kinds: [] })).toBeNull();
      expect(await store.nextClaimAt({ workerId: 'w9', now: T0 + 8000, kinds: KINDS })).toBeNull();
    });

    test('an expired lease is claimed again with a higher fence and the stale holder is fenced out', async () => {
      const { task } = await store.createTask(newTask());
      const first = await claimOne(T0, 1000, 'w1');
      expect(await store.claimTasks({ workerId: 'w2', now: T0 + 999, leaseMs: 1000, limit: 1, kinds: KINDS })).toEqual([]);
      const second = await claimOne(T0 + 1000, 1000, 'w2');
      expect(second.lease.fence).toBe(first.lease.fence + 1);
      expect(second.task.attempts).toBe(2);
      expect(await store.commit(progressCommit(first.lease, first.task, T0 + 1001))).toEqual({ ok: false, reason: 'lease_lost' });
      expect((await store.renewLease(first.lease, T0 + 1001, 1000)).status).toBe('lost');
      expect(await store.beginEffect(first.lease, 'e1', T0 + 1001)).toEqual({ status: 'lease_lost' });
      const ok = await store.commit(progressCommit(second.lease, second.task, T0 + 1002));
      expect(ok).toMatchObject({ ok: true, seq: 3 });
      expect((await store.getTask(task.id))!.step).toBe(1);
    });

    test('renewal extends the lease and reports a cancellation request', async () => {
      await store.createTask(newTask());
      const { task, lease } = await claimOne(T0, 1000);
      expect(await store.renewLease(lease, T0 + 500, 1000)).toEqual({ status: 'ok', cancelRequested: false });
      expect(await store.claimTasks({ workerId: 'w2', now: T0 + 1200, leaseMs: 1000, limit: 1, kinds: KINDS })).toEqual([]);
      await store.transition(task.id, 'acme', T0 + 1300, (t) => decideCancel(t, T0 + 1300).patch);
      expect(await store.renewLease(lease, T0 + 1400, 1000)).toEqual({ status: 'ok', cancelRequested: true });
    });

    test('step commits write checkpoint, state and one event with gapless sequence numbers', async () => {
      const { task } = await store.createTask(newTask());
      const claimed = await claimOne();
      const lease = claimed.lease;
      let t = claimed.task;
      for (let i = 0; i < 3; i++) {
        const out = await store.commit(progressCommit(lease, t, T0 + i + 1));
        expect(out.ok).toBe(true);
        t = (await store.getTask(task.id))!;
      }
      expect(t).toMatchObject({ step: 3, checkpoint: { at: 3 }, progress: { current: 3, total: 5 }, version: 5, attempts: 1 });
      const done = await store.commit({
        ...progressCommit(lease, t, T0 + 10),
        kind: 'complete',
        state: 'completed',
        result: { ok: true },
        artifacts: [{ artifactId: 'a1', name: 'report', mediaType: 'application/json', data: { lines: 1 } }],
        leaseUntil: null,
        wakeAt: null,
        expiresAt: T0 + 999_999,
        event: { kind: 'completed', body: { state: 'completed' } },
      });
      expect(done.ok).toBe(true);
      const final = (await store.getTask(task.id))!;
      expect(final).toMatchObject({ state: 'completed', leaseOwner: null, leaseUntil: null, wakeAt: null, terminalAt: T0 + 10, result: { ok: true } });
      expect(final.artifacts).toHaveLength(1);
      const seqs = (await store.listEvents(task.id, 0, 100)).map((e) => e.seq);
      expect(seqs).toEqual([1, 2, 3, 4, 5, 6]);
      expect((await store.listEvents(task.id, 4, 100)).map((e) => e.seq)).toEqual([5, 6]);
      // Terminal is absorbing: even the current fence cannot write again.
      expect(await store.commit(progressCommit(lease, final, T0 + 11))).toEqual({ ok: false, reason: 'lease_lost' });
    });

    test('a pause releases the lease, and an answer already given makes the pause commit fail', async () => {
      const { task } = await store.createTask(newTask());
      const { task: t, lease } = await claimOne();
      const pending = { key: 'approve', question: 'OK?', schema: { type: 'boolean' }, deadlineAt: T0 + 60_000, onDeadline: 'fail' as const, askedAt: T0 };
      // An early answer arrives while the step is still running.
      await store.transition(task.id, 'acme', T0 + 1, (cur) => decideAnswer(cur, { expectedVersion: cur.version, key: 'approve', answer: true, now: T0 + 1 }));
      const pause: TaskCommit = {
        ...progressCommit(lease, t, T0 + 2),
        kind: 'pause',
        state: 'input_required',
        step: t.step,
        pendingInput: pending,
        leaseUntil: null,
        wakeAt: pending.deadlineAt,
        event: { kind: 'input_required', body: { state: 'input_required' } },
      };
      expect(await store.commit(pause)).toEqual({ ok: false, reason: 'answer_arrived' });
      const again = (await store.getTask(task.id))!;
      expect(again.answers).toEqual({ approve: true });
      // Another key pauses normally and releases the lease.
      const out = await store.commit({ ...pause, pendingInput: { ...pending, key: 'second' } });
      expect(out.ok).toBe(true);
      const paused = (await store.getTask(task.id))!;
      expect(paused).toMatchObject({ state: 'input_required', leaseOwner: null, leaseUntil: null, wakeAt: T0 + 60_000 });
      expect(paused.pendingInput?.key).toBe('second');
      expect(await store.claimTasks({ workerId: 'w2', now: T0 + 70_000, leaseMs: 1000, limit: 1, kinds: KINDS })).toEqual([]);
    });

    test('a paused task reads back its whole question, kept once in its input_required event, from every read', async () => {
      const { task } = await store.createTask(newTask());
      const { task: t, lease } = await claimOne();
      const pending = {
        key: 'approval',
        question: 'Revoke these grants?',
        schema: { type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] },
        context: { grants: ['g1', 'g2'] },
        deadlineAt: T0 + 60_000,
        onDeadline: 'fail' as const,
        askedAt: T0,
      };
      const body = { state: 'input_required', key: pending.key, question: pending.question, schema: pending.schema, context: pending.context };
      expect((await store.commit(pauseCommit(lease, t, T0 + 1, pending, body))).ok).toBe(true);
      // Stored once: the row keeps the key and the deadline, the event the question, schema and context.
      const raw = JSON.parse((await factory.rawPendingInput(task.id))!) as Record<string, unknown>;
      expect(raw).toMatchObject({ key: 'approval', deadlineAt: T0 + 60_000, inEvent: true });
      expect(raw).not.toHaveProperty('question');
      expect(raw).not.toHaveProperty('schema');
      expect(raw).not.toHaveProperty('context');
      expect((await store.getTask(task.id))!.pendingInput).toEqual(pending);
      expect((await store.getTask(task.id, 'acme'))!.pendingInput).toEqual(pending);
      expect((await store.listTasks({ tenant: 'acme', limit: 10 })).find((x) => x.id === task.id)!.pendingInput).toEqual(pending);
      // The transition's decision sees it whole, and a transition that leaves it alone returns it whole.
      let seen: unknown = null;
      const same = await store.transition(task.id, 'acme', T0 + 2, (cur) => {
        seen = cur.pendingInput;
        return null;
      });
      expect(seen).toEqual(pending);
      expect(same.pendingInput).toEqual(pending);
      const touched = await store.transition(task.id, 'acme', T0 + 2, () => ({ set: { wakeAt: T0 + 50_000 }, bumpFence: false, event: null }));
      expect(touched.pendingInput).toEqual(pending);
      // The event keeps the question it was written with.
      const events = await store.listEvents(task.id, 0, 10);
      expect(events.at(-1)).toMatchObject({ kind: 'input_required', body });
      // Answered: the pending input is gone and the next read finds none.
      const resumed = await store.transition(task.id, 'acme', T0 + 3, (cur) => decideAnswer(cur, { expectedVersion: cur.version, answer: { approved: true }, now: T0 + 3 }));
      expect(resumed.pendingInput).toBeNull();
    });

    test('a pause whose event does not repeat the question keeps the question in the row', async () => {
      const { task } = await store.createTask(newTask());
      const { task: t, lease } = await claimOne();
      const pending = { key: 'approve', question: 'OK?', schema: { type: 'boolean' }, deadlineAt: T0 + 60_000, onDeadline: 'fail' as const, askedAt: T0 };
      await store.commit(pauseCommit(lease, t, T0 + 1, pending, { state: 'input_required', key: 'approve', question: 'Something else?' }));
      expect(JSON.parse((await factory.rawPendingInput(task.id))!)).toEqual(pending);
      expect((await store.getTask(task.id))!.pendingInput).toEqual(pending);
    });

    test('answering resumes a paused task once; stale versions and late answers change nothing', async () => {
      const { task } = await store.createTask(newTask());
      const { task: t, lease } = await claimOne();
      const pending = { key: 'approve', question: 'OK?', schema: { type: 'boolean' }, deadlineAt: T0 + 60_000, onDeadline: 'fail' as const, askedAt: T0 };
      await store.commit(pauseCommit(lease, t, T0 + 1, pending));
      const paused = (await store.getTask(task.id))!;
      const answer = (version: number, now: number, value: Json = true) => store.transition(task.id, 'acme', now, (cur) => decideAnswer(cur, { expectedVersion: version, answer: value, now }));
      await expect(answer(paused.version - 1, T0 + 2)).rejects.toMatchObject({ code: 'STALE_VERSION' });
      await expect(answer(paused.version, T0 + 60_000)).rejects.toMatchObject({ code: 'INPUT_DEADLINE_PASSED' });
      expect((await store.getTask(task.id))!.version).toBe(paused.version);
      const resumed = await answer(paused.version, T0 + 3);
      expect(resumed).toMatchObject({ state: 'working', pendingInput: null, answers: { approve: true }, wakeAt: T0 + 3, version: paused.version + 1 });
      await expect(answer(paused.version, T0 + 4)).rejects.toBeInstanceOf(BelayError);
      const again = await store.claimTasks({ workerId: 'w2', now: T0 + 4, leaseMs: 1000, limit: 1, kinds: KINDS });
      expect(again.map((c) => c.task.answers)).toEqual([{ approve: true }]);
    });

    test('an unanswered question expires at its deadline', async () => {
      const { task } = await store.createTask(newTask());
      const { task: t, lease } = await claimOne();
      await store.commit(pauseCommit(lease, t, T0 + 1, { key: 'q', question: '?', schema: {}, deadlineAt: T0 + 5000, onDeadline: 'cancel', askedAt: T0 }));
      expect(await store.listDueDeadlines(T0 + 4999, 10)).toEqual([]);
      expect(await store.listDueDeadlines(T0 + 5000, 10)).toEqual([{ id: task.id, tenant: 'acme' }]);
      const expired = await store.transition(task.id, undefined, T0 + 5000, (cur) => decideDeadline(cur, T0 + 5000));
      expect(expired).toMatchObject({ state: 'canceled', error: { code: 'INPUT_DEADLINE_EXPIRED' }, terminalAt: T0 + 5000 });
      expect((await store.listEvents(task.id, 0, 10)).at(-1)!.kind).toBe('canceled');
    });

    test('cancel before start cancels at once and fences', async () => {
      const { task } = await store.createTask(newTask());
      const out = await store.transition(task.id, 'acme', T0 + 1, (t) => decideCancel(t, T0 + 1).patch);
      expect(out).toMatchObject({ state: 'canceled', fence: 1, cancelRequestedAt: T0 + 1 });
      expect(await store.claimTasks({ workerId: 'w', now: T0 + 2, leaseMs: 1000, limit: 1, kinds: KINDS })).toEqual([]);
    });

    test('cancel of a leased task is a request; the holder cannot commit progress but can commit canceled', async () => {
      const { task } = await store.createTask(newTask());
      const { task: t, lease } = await claimOne();
      const requested = await store.transition(task.id, 'acme', T0 + 1, (cur) => decideCancel(cur, T0 + 1).patch);
      expect(requested).toMatchObject({ state: 'working', cancelRequestedAt: T0 + 1 });
      expect(await store.commit(progressCommit(lease, t, T0 + 2))).toEqual({ ok: false, reason: 'cancel_requested' });
      expect(await store.beginEffect(lease, 'e', T0 + 2)).toEqual({ status: 'cancel_requested' });
      const out = await store.commit({
        ...progressCommit(lease, t, T0 + 3),
        kind: 'cancel',
        state: 'canceled',
        step: t.step,
        leaseUntil: null,
        wakeAt: null,
        event: { kind: 'canceled', body: { state: 'canceled' } },
      });
      expect(out.ok).toBe(true);
      expect((await store.getTask(task.id))!.state).toBe('canceled');
    });

    test('completion committed first stays completed when cancellation comes later', async () => {
      const { task } = await store.createTask(newTask());
      const { task: t, lease } = await claimOne();
      await store.commit({ ...progressCommit(lease, t, T0 + 1), kind: 'complete', state: 'completed', leaseUntil: null, wakeAt: null, event: { kind: 'completed', body: { state: 'completed' } } });
      let outcome = '';
      const after = await store.transition(task.id, 'acme', T0 + 2, (cur) => {
        const d = decideCancel(cur, T0 + 2);
        outcome = d.outcome;
        return d.patch;
      });
      expect(outcome).toBe('already_terminal');
      expect(after.state).toBe('completed');
    });

    test('the run-once ledger: begin, complete, replay, uncertain', async () => {
      const { task } = await store.createTask(newTask());
      const { lease } = await claimOne(T0, 1000);
      expect(await store.beginEffect(lease, 'send', T0)).toEqual({ status: 'started' });
      await store.completeEffect(task.id, 'send', { id: 'msg_1' }, T0 + 1);
      expect(await store.beginEffect(lease, 'send', T0 + 2)).toEqual({ status: 'applied', result: { id: 'msg_1' } });
      expect(await store.beginEffect(lease, 'charge', T0 + 3)).toEqual({ status: 'started' });
      // The holder dies between sending and recording: the next holder finds the effect uncertain.
      const next = await claimOne(T0 + 1000, 1000, 'w2');
      expect(await store.beginEffect(next.lease, 'charge', T0 + 1001)).toEqual({ status: 'uncertain', startedAt: T0 + 3 });
      // Applied results are returned even to a stale holder: the truth about the downstream does not depend on the lease.
      expect(await store.beginEffect(lease, 'send', T0 + 1002)).toEqual({ status: 'applied', result: { id: 'msg_1' } });
      const effects = await store.listEffects(task.id);
      expect(effects.map((e) => [e.key, e.status])).toEqual([
        ['send', 'applied'],
        ['charge', 'pending'],
      ]);
    });

    test('retry releases the lease until wake_at', async () => {
      await store.createTask(newTask());
      const { task: t, lease } = await claimOne(T0, 1000);
      const out = await store.commit({
        ...progressCommit(lease, t, T0 + 1),
        kind: 'retry',
        step: t.step,
        resetAttempts: false,
        leaseUntil: null,
        wakeAt: T0 + 5000,
        error: { code: 'STEP_FAILED', message: 'boom', owner: 'worker', retryable: true },
        event: { kind: 'retry_scheduled', body: { state: 'working' } },
      });
      expect(out.ok).toBe(true);
      expect(await store.claimTasks({ workerId: 'w', now: T0 + 4999, leaseMs: 1000, limit: 1, kinds: KINDS })).toEqual([]);
      const again = await store.claimTasks({ workerId: 'w', now: T0 + 5000, leaseMs: 1000, limit: 1, kinds: KINDS });
      expect(again[0]!.task.attempts).toBe(2);
    });

    test('release gives the task back without counting an attempt', async () => {
      await store.createTask(newTask());
      const { lease } = await claimOne(T0, 30_000);
      await store.releaseLease(lease, T0 + 1);
      const again = await store.claimTasks({ workerId: 'w2', now: T0 + 1, leaseMs: 1000, limit: 1, kinds: KINDS });
      expect(again[0]!.task.attempts).toBe(1);
      expect(again[0]!.lease.fence).toBe(2);
    });

    test('stranded tasks: claimable long past their wake-up', async () => {
      const { task } = await store.createTask(newTask());
      expect(await store.findStranded(T0 + 1000, 60_000, 10)).toEqual([]);
      expect((await store.findStranded(T0 + 61_000, 60_000, 10)).map((t) => t.id)).toEqual([task.id]);
      await claimOne(T0 + 61_000);
      expect(await store.findStranded(T0 + 62_000, 60_000, 10)).toEqual([]);
    });

    test('retention turns expired finished tasks into tombstones and deletes their rows', async () => {
      const idem = { scope: 'demo', key: 'k-exp', fingerprint: 'f', expiresAt: T0 + 10 * 86_400_000 };
      const { task } = await store.createTask(newTask(), idem);
      const live = (await store.createTask(newTask())).task;
      const { task: t, lease } = await claimOne();
      expect(t.id).toBe(task.id);
      await store.beginEffect(lease, 'e', T0);
      await store.completeEffect(task.id, 'e', 1, T0);
      await store.commit({ ...progressCommit(lease, t, T0 + 1), kind: 'complete', state: 'completed', leaseUntil: null, wakeAt: null, expiresAt: T0 + 5000, event: { kind: 'completed', body: { state: 'completed' } } });
      expect(await store.expireTasks(T0 + 4999, 10)).toBe(0);
      expect(await store.expireTasks(T0 + 5000, 10)).toBe(1);
      expect(await store.getTask(task.id)).toBeNull();
      expect(await store.listEvents(task.id, 0, 10)).toEqual([]);
      expect(await store.listEffects(task.id)).toEqual([]);
      expect(await store.getTombstone(task.id, 'acme')).toMatchObject({ id: task.id, finalState: 'completed', expiredAt: T0 + 5000, createdBy: 'alice' });
      expect(await store.getTombstone(task.id, 'globex')).toBeNull();
      // The idempotency key went with the task: reusing it is a new request.
      expect((await store.createTask(newTask({ now: T0 + 6000 }), { ...idem, fingerprint: 'other' })).created).toBe(true);
      expect((await store.getTask(live.id))!.state).toBe('submitted');
      expect(await store.expireTasks(T0 + 99_999_999, 10)).toBe(0);
    });

    test('the created event carries the extra members a front records, never overriding the state', async () => {
      const { task } = await store.createTask(newTask({ createdEvent: { message: { messageId: 'm1', parts: [{ text: 'hi' }] }, state: 'bogus' } }));
      const [created] = await store.listEvents(task.id, 0, 1);
      expect(created!.body).toMatchObject({ state: 'submitted', type: 'demo', message: { messageId: 'm1', parts: [{ text: 'hi' }] } });
    });

    test('lists by last change, newest first, with context and time filters, keyset paging and a count', async () => {
      const a = (await store.createTask(newTask({ contextId: 'ctx_a', now: T0 + 1 }))).task;
      const b = (await store.createTask(newTask({ contextId: 'ctx_b', now: T0 + 2 }))).task;
      const c = (await store.createTask(newTask({ contextId: 'ctx_a', now: T0 + 3 }))).task;
      await store.createTask(newTask({ tenant: 'globex', contextId: 'ctx_a', now: T0 + 4 }));
      // Touch `a` last: it moves to the front of the `updated` order and stays last in the `created` order.
      await store.transition(a.id, 'acme', T0 + 10, () => ({ set: { cancelRequestedAt: T0 + 10 }, bumpFence: false, event: null }));
      const ids = async (q: Partial<Parameters<Store['listTasks']>[0]>) => (await store.listTasks({ tenant: 'acme', limit: 10, ...q })).map((t) => t.id);
      expect(await ids({ order: 'updated' })).toEqual([a.id, c.id, b.id]);
      expect(await ids({})).toEqual([c.id, b.id, a.id]);
      expect(await ids({ order: 'updated', contextId: 'ctx_a' })).toEqual([a.id, c.id]);
      expect(await ids({ order: 'updated', updatedFrom: T0 + 3 })).toEqual([a.id, c.id]);
      const first = await store.listTasks({ tenant: 'acme', order: 'updated', limit: 2 });
      const last = first.at(-1)!;
      expect(await ids({ order: 'updated', limit: 2, afterUpdated: { updatedAt: last.updatedAt, id: last.id } })).toEqual([b.id]);
      expect(await store.countTasks({ tenant: 'acme' })).toBe(3);
      expect(await store.countTasks({ tenant: 'acme', contextId: 'ctx_a' })).toBe(2);
      expect(await store.countTasks({ tenant: 'acme', contextId: 'ctx_a', updatedFrom: T0 + 5 })).toBe(1);
      expect(await store.countTasks({ tenant: 'acme', states: ['completed'] })).toBe(0);
      expect(await store.countTasks({ tenant: 'globex' })).toBe(1);
    });

    test('push configs: create, replace by id, get, list in id order with paging, delete; scoped by tenant and task', async () => {
      const { task } = await store.createTask(newTask());
      const other = (await store.createTask(newTask())).task;
      const base = { taskId: task.id, tenant: 'acme', createdBy: 'alice', token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret' }, createdAt: T0, updatedAt: T0 };
      const b = await store.putPushConfig({ ...base, id: 'b', url: 'https://hooks.example/b' });
      expect(b).toMatchObject({ id: 'b', taskId: task.id, tenant: 'acme', url: 'https://hooks.example/b', token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret' }, createdAt: T0 });
      await store.putPushConfig({ ...base, id: 'a', url: 'https://hooks.example/a', token: null, authentication: null });
      // Same id again: replaced, keeping who created it and when.
      const replaced = await store.putPushConfig({ ...base, id: 'b', url: 'https://hooks.example/b2', createdBy: 'bob', authentication: null, createdAt: T0 + 5, updatedAt: T0 + 5 });
      expect(replaced).toMatchObject({ url: 'https://hooks.example/b2', createdBy: 'alice', createdAt: T0, updatedAt: T0 + 5, authentication: null });
      expect(await store.getPushConfig('acme', task.id, 'a')).toMatchObject({ url: 'https://hooks.example/a', token: null, authentication: null });
      expect(await store.getPushConfig('globex', task.id, 'a')).toBeNull();
      expect(await store.getPushConfig('acme', other.id, 'a')).toBeNull();
      expect((await store.listPushConfigs('acme', task.id, { limit: 10 })).map((p) => p.id)).toEqual(['a', 'b']);
      expect((await store.listPushConfigs('acme', task.id, { limit: 1, afterId: 'a' })).map((p) => p.id)).toEqual(['b']);
      expect(await store.listPushConfigs('globex', task.id, { limit: 10 })).toEqual([]);
      // A task of another tenant, or no task at all, takes no config.
      expect(await store.putPushConfig({ ...base, tenant: 'globex', id: 'x', url: 'https://hooks.example/x' })).toBeNull();
      expect(await store.putPushConfig({ ...base, taskId: 'task_missing', id: 'x', url: 'https://hooks.example/x' })).toBeNull();
      expect(await store.deletePushConfig('globex', task.id, 'a')).toBe(false);
      expect(await store.deletePushConfig('acme', task.id, 'a')).toBe(true);
      expect(await store.deletePushConfig('acme', task.id, 'a')).toBe(false);
      expect((await store.listPushConfigs('acme', task.id, { limit: 10 })).map((p) => p.id)).toEqual(['b']);
    });

    test('retention deletes the push configs of expired tasks', async () => {
      const { task } = await store.createTask(newTask());
      await store.putPushConfig({ id: 'p', taskId: task.id, tenant: 'acme', createdBy: 'alice', url: 'https://hooks.example/p', token: null, authentication: null, createdAt: T0, updatedAt: T0 });
      const { task: t, lease } = await claimOne();
      await store.commit({ ...progressCommit(lease, t, T0 + 1), kind: 'complete', state: 'completed', leaseUntil: null, wakeAt: null, expiresAt: T0 + 5000, event: { kind: 'completed', body: { state: 'completed' } } });
      expect(await store.expireTasks(T0 + 5000, 10)).toBe(1);
      expect(await store.listPushConfigs('acme', task.id, { limit: 10 })).toEqual([]);
      expect(await store.getPushConfig('acme', task.id, 'p')).toBeNull();
    });

    test('disabled principals are recorded per tenant and can be re-enabled', async () => {
      expect(await store.isPrincipalDisabled('acme', 'alice')).toBe(false);
      await store.setPrincipalDisabled('acme', 'alice', true, T0, 'left the company');
      await store.setPrincipalDisabled('acme', 'alice', true, T0 + 1);
      expect(await store.isPrincipalDisabled('acme', 'alice')).toBe(true);
      expect(await store.isPrincipalDisabled('globex', 'alice')).toBe(false);
      await store.setPrincipalDisabled('acme', 'alice', false, T0 + 2);
      expect(await store.isPrincipalDisabled('acme', 'alice')).toBe(false);
    });

    // ---- webhook delivery ----------------------------------------------------------------------------------------

    /** Reads the feed until it holds `n` events: PostgreSQL shows an event once every older transaction (in the whole
     * cluster) has ended, so under a parallel test load it may lag a few milliseconds behind the commit. */
    async function feedWith(n: number, limit = 10) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const feed = await store.readEventFeed(limit);
        if (feed.events.length >= n || Date.now() > deadline) return feed;
        await new Promise((r) => setTimeout(r, 20));
      }
    }

    const newDelivery = (e: { taskId: string; seq: number; tenant?: string }, target: Partial<NewDelivery> = {}, now = T0): NewDelivery => ({
      id: `dlv_${e.taskId.slice(-8)}_${e.seq}_${Math.random().toString(16).slice(2, 8)}`,
      eventId: `evt_${e.taskId}_${e.seq}`,
      tenant: e.tenant ?? 'acme',
      taskId: e.taskId,
      seq: e.seq,
      eventType: 'task.created',
      targetKind: 'callback',
      targetId: '',
      targetKey: `callback:${e.taskId}`,
      url: 'https://hooks.example/cb',
      payload: '{"x":1}',
      status: 'pending',
      deadReason: null,
      now,
      ...target,
    });

    test('webhook feed: committed events in commit order after the cursor; enqueue moves it once, duplicates are ignored', async () => {
      const empty = await store.readEventFeed(10);
      expect(empty.events).toEqual([]);
      expect(empty.next).toBe(empty.cursor);
      const a = (await store.createTask(newTask({ callbackUrl: 'https://hooks.example/a' }))).task;
      const b = (await store.createTask(newTask({ tenant: 'globex' }))).task;
      await claimOne();
      const feed = await feedWith(3);
      expect(feed.events.map((e) => [e.taskId, e.seq, e.kind])).toEqual([
        [a.id, 1, 'created'],
        [b.id, 1, 'created'],
        [a.id, 2, 'started'],
      ]);
      expect(feed.events[0]).toMatchObject({ tenant: 'acme', callbackUrl: 'https://hooks.example/a', taskType: 'demo', contextId: 'ctx_1', createdBy: 'alice' });
      expect(feed.events[1]!.tenant).toBe('globex');
      // A page of one, then the rest.
      const first = await store.readEventFeed(1);
      expect(first.events.map((e) => e.seq)).toEqual([1]);
      const d = newDelivery({ taskId: a.id, seq: 1 });
      expect(await store.enqueueDeliveries(first.cursor, first.next, [d])).toBe(true);
      // A second router with the same stale cursor writes nothing.
      expect(await store.enqueueDeliveries(first.cursor, first.next, [newDelivery({ taskId: b.id, seq: 1, tenant: 'globex' })])).toBe(false);
      const rest = await store.readEventFeed(10);
      expect(rest.cursor).toBe(first.next);
      expect(rest.events.map((e) => [e.taskId, e.seq])).toEqual([
        [b.id, 1],
        [a.id, 2],
      ]);
      // Re-routing the same (target, task, seq) after a crash keeps the first delivery.
      expect(await store.enqueueDeliveries(rest.cursor, rest.next, [{ ...d, id: 'dlv_other' }])).toBe(true);
      const all = await store.listDeliveries({ tenant: 'acme', limit: 10 });
      expect(all.map((x) => x.id)).toEqual([d.id]);
      expect(await store.listDeliveries({ tenant: 'globex', limit: 10 })).toEqual([]);
      expect((await store.readEventFeed(10)).events).toEqual([]);
      // Events committed after the read come next, never behind the cursor.
      const c = (await store.createTask(newTask({ now: T0 + 5 }))).task;
      expect((await feedWith(1)).events.map((e) => e.taskId)).toEqual([c.id]);
    });

    test('deliveries: claims lease due ones with a fence; a stale finish is refused; retry reschedules; a lapsed lease is claimable again', async () => {
      const { task } = await store.createTask(newTask());
      const feed = await feedWith(1);
      const d = newDelivery({ taskId: task.id, seq: 1 });
      await store.enqueueDeliveries(feed.cursor, feed.next, [d, newDelivery({ taskId: task.id, seq: 1 }, { targetKind: 'endpoint', targetId: 'whe_1', targetKey: 'endpoint:whe_1', now: T0 + 10 })]);
      expect(await store.claimDeliveries({ workerId: 'd1', now: T0 - 1, leaseMs: 1000, limit: 10 })).toEqual([]);
      const [c1, c2] = await store.claimDeliveries({ workerId: 'd1', now: T0 + 10, leaseMs: 1000, limit: 10 });
      expect(c1).toMatchObject({ id: d.id, attempts: 1, fence: 1, leaseOwner: 'd1', leaseUntil: T0 + 1010, nextAttemptAt: T0 + 1010, status: 'pending', eventId: d.eventId, payload: '{"x":1}' });
      expect(c2!.targetKind).toBe('endpoint');
      // Nobody else gets them while leased.
      expect(await store.claimDeliveries({ workerId: 'd2', now: T0 + 500, leaseMs: 1000, limit: 10 })).toEqual([]);
      // The lease lapses (the dispatcher died): another dispatcher takes it over with a new fence.
      const [again] = await store.claimDeliveries({ workerId: 'd2', now: T0 + 1010, leaseMs: 1000, limit: 1 });
      expect(again).toMatchObject({ id: d.id, attempts: 2, fence: 2, leaseOwner: 'd2' });
      // The stale dispatcher's outcome is refused.
      expect(await store.finishDelivery({ id: d.id, fence: 1 }, { kind: 'delivered', status: 200 }, T0 + 1011)).toBe(false);
      expect(await store.finishDelivery({ id: d.id, fence: 2 }, { kind: 'retry', nextAttemptAt: T0 + 9000, status: 500, error: 'HTTP 500' }, T0 + 1012)).toBe(true);
      expect(await store.getDelivery('acme', d.id)).toMatchObject({ status: 'pending', nextAttemptAt: T0 + 9000, lastStatus: 500, lastError: 'HTTP 500', leaseOwner: null });
      expect(await store.getDelivery('globex', d.id)).toBeNull();
      expect((await store.claimDeliveries({ workerId: 'd2', now: T0 + 8999, leaseMs: 1000, limit: 10 })).map((x) => x.id)).toEqual([c2!.id]);
      const [third] = await store.claimDeliveries({ workerId: 'd2', now: T0 + 9000, leaseMs: 1000, limit: 10 });
      expect(await store.finishDelivery({ id: d.id, fence: third!.fence }, { kind: 'delivered', status: 204 }, T0 + 9001)).toBe(true);
      expect(await store.getDelivery('acme', d.id)).toMatchObject({ status: 'delivered', deliveredAt: T0 + 9001, attempts: 3, nextAttemptAt: null });
      // A finished delivery takes no second outcome.
      expect(await store.finishDelivery({ id: d.id, fence: third!.fence }, { kind: 'dead', reason: 'x', status: null, error: 'x' }, T0 + 9002)).toBe(false);
      expect(await store.countDeliveries()).toMatchObject({ delivered: 1, pending: 1 });
      expect(await store.pruneDeliveries(T0 + 9001, 10)).toBe(0);
      expect(await store.pruneDeliveries(T0 + 9002, 10)).toBe(1);
      expect(await store.getDelivery('acme', d.id)).toBeNull();
    });

    test('410 Gone disables the target and dead-letters its pending deliveries; redrive brings them back and clears the marker', async () => {
      const { task } = await store.createTask(newTask());
      await claimOne();
      const ep = await store.putWebhookEndpoint({
        id: 'whe_a', tenant: 'acme', url: 'https://hooks.example/e', description: null, eventTypes: null,
        secrets: [{ secret: 'whsec_x', createdAt: T0, expiresAt: null }], enabled: true, disabledReason: null, disabledAt: null, createdBy: 'ops', createdAt: T0, updatedAt: T0,
      });
      const feed = await feedWith(2);
      const onEndpoint = (seq: number) => newDelivery({ taskId: task.id, seq }, { targetKind: 'endpoint', targetId: ep.id, targetKey: `endpoint:${ep.id}` });
      await store.enqueueDeliveries(feed.cursor, feed.next, [newDelivery({ taskId: task.id, seq: 1 }), newDelivery({ taskId: task.id, seq: 2 }), onEndpoint(1), onEndpoint(2)]);
      const claimed = await store.claimDeliveries({ workerId: 'd', now: T0, leaseMs: 1000, limit: 10 });
      const cb = claimed.find((x) => x.targetKind === 'callback' && x.seq === 1)!;
      const e1 = claimed.find((x) => x.targetKind === 'endpoint' && x.seq === 1)!;
      // Release the others (as if they had failed and been rescheduled).
      for (const x of claimed.filter((y) => y !== cb && y !== e1)) await store.finishDelivery(x, { kind: 'retry', nextAttemptAt: T0 + 100, status: 500, error: 'HTTP 500' }, T0 + 1);
      expect(await store.finishDelivery(cb, { kind: 'gone', status: 410, error: 'gone' }, T0 + 2)).toBe(true);
      expect(await store.goneTargets([`callback:${task.id}`, 'callback:other'])).toEqual([`callback:${task.id}`]);
      expect(await store.finishDelivery(e1, { kind: 'gone', status: 410, error: 'gone' }, T0 + 3)).toBe(true);
      expect(await store.getWebhookEndpoint('acme', ep.id)).toMatchObject({ enabled: false, disabledReason: 'gone', disabledAt: T0 + 3 });
      const dead = await store.listDeliveries({ tenant: 'acme', status: 'dead', limit: 10 });
      expect(dead).toHaveLength(4);
      expect(dead.filter((x) => x.deadReason === 'target_gone')).toHaveLength(2);
      expect(await store.listDeliveries({ tenant: 'acme', status: 'dead', endpointId: ep.id, limit: 10 })).toHaveLength(2);
      // Another tenant cannot redrive them.
      expect(await store.redriveDeliveries('globex', { ids: dead.map((x) => x.id) }, T0 + 10)).toBe(0);
      expect(await store.redriveDeliveries('acme', { endpointId: ep.id }, T0 + 10)).toBe(2);
      expect(await store.redriveDeliveries('acme', { ids: [cb.id] }, T0 + 10)).toBe(1);
      expect(await store.goneTargets([`callback:${task.id}`])).toEqual([]);
      const back = await store.getDelivery('acme', cb.id);
      expect(back).toMatchObject({ status: 'pending', attempts: 0, nextAttemptAt: T0 + 10, deadReason: null, eventId: cb.eventId });
    });

    test('webhook endpoints and callback secrets are scoped by tenant; retention deletes deliveries with their task', async () => {
      const base = { tenant: 'acme', url: 'https://hooks.example/e', description: 'd', eventTypes: ['task.completed'], secrets: [{ secret: 'whsec_x', createdAt: T0, expiresAt: null }], enabled: true, disabledReason: null, disabledAt: null, createdBy: 'ops', createdAt: T0, updatedAt: T0 };
      await store.putWebhookEndpoint({ ...base, id: 'whe_b' });
      await store.putWebhookEndpoint({ ...base, id: 'whe_a' });
      const replaced = await store.putWebhookEndpoint({ ...base, id: 'whe_a', url: 'https://hooks.example/a2', eventTypes: null, updatedAt: T0 + 5 });
      expect(replaced).toMatchObject({ id: 'whe_a', url: 'https://hooks.example/a2', eventTypes: null, createdAt: T0, updatedAt: T0 + 5, enabled: true });
      expect((await store.listWebhookEndpoints('acme', { limit: 10 })).map((e) => e.id)).toEqual(['whe_a', 'whe_b']);
      expect((await store.listWebhookEndpoints('acme', { limit: 10, afterId: 'whe_a' })).map((e) => e.id)).toEqual(['whe_b']);
      expect(await store.listWebhookEndpoints('globex', { limit: 10 })).toEqual([]);
      expect(await store.getWebhookEndpoint('globex', 'whe_a')).toBeNull();
      expect(await store.deleteWebhookEndpoint('globex', 'whe_a')).toBe(false);
      expect(await store.deleteWebhookEndpoint('acme', 'whe_a')).toBe(true);
      expect(await store.getWebhookEndpoint('acme', 'whe_a')).toBeNull();

      expect(await store.getCallbackSecrets('acme')).toBeNull();
      const s1 = [{ secret: 'whsec_one', createdAt: T0, expiresAt: null }];
      expect(await store.putCallbackSecrets('acme', s1, T0, true)).toEqual(s1);
      // put-if-absent keeps the first; an explicit put replaces.
      expect(await store.putCallbackSecrets('acme', [{ secret: 'whsec_two', createdAt: T0, expiresAt: null }], T0, true)).toEqual(s1);
      const s2 = [{ secret: 'whsec_two', createdAt: T0 + 1, expiresAt: null }, { secret: 'whsec_one', createdAt: T0, expiresAt: T0 + 100 }];
      expect(await store.putCallbackSecrets('acme', s2, T0 + 1, false)).toEqual(s2);
      expect(await store.getCallbackSecrets('globex')).toBeNull();

      const { task } = await store.createTask(newTask());
      const { task: t, lease } = await claimOne();
      const feed = await feedWith(2);
      await store.enqueueDeliveries(feed.cursor, feed.next, [newDelivery({ taskId: task.id, seq: 1 }), newDelivery({ taskId: task.id, seq: 2 }, { status: 'dead', deadReason: 'target_gone' })]);
      const [cl] = await store.claimDeliveries({ workerId: 'd', now: T0, leaseMs: 1000, limit: 1 });
      await store.finishDelivery(cl!, { kind: 'gone', status: 410, error: 'gone' }, T0);
      await store.commit({ ...progressCommit(lease, t, T0 + 1), kind: 'complete', state: 'completed', leaseUntil: null, wakeAt: null, expiresAt: T0 + 5000, event: { kind: 'completed', body: { state: 'completed' } } });
      expect(await store.expireTasks(T0 + 5000, 10)).toBe(1);
      expect(await store.listDeliveries({ tenant: 'acme', limit: 10 })).toEqual([]);
      expect(await store.goneTargets([`callback:${task.id}`])).toEqual([]);
    });

    test('subscribers hear committed events', async () => {
      const heard: StoreNotification[] = [];
      const off = store.subscribe((n) => heard.push(n));
      const { task } = await store.createTask(newTask());
      await claimOne();
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline && !heard.some((n) => n.type === 'event' && n.taskId === task.id && n.kind === 'started')) {
        await new Promise((r) => setTimeout(r, 20));
      }
      off();
      expect(heard.some((n) => n.type === 'event' && n.taskId === task.id && n.kind === 'created')).toBe(true);
      expect(heard.some((n) => n.type === 'event' && n.taskId === task.id && n.kind === 'started')).toBe(true);
    });

    test('a second connection to the same database sees commits and hears them', async () => {
      const a = await factory.open('shared');
      const b = await factory.open('shared');
      try {
        const heard: StoreNotification[] = [];
        const off = b.subscribe((n) => heard.push(n));
        const { task } = await a.createTask(newTask());
        expect((await b.getTask(task.id))!.id).toBe(task.id);
        const deadline = Date.now() + 5000;
        while (Date.now() < deadline && !heard.some((n) => n.type === 'event' && n.taskId === task.id)) await new Promise((r) => setTimeout(r, 20));
        off();
        expect(heard.some((n) => n.type === 'event' && n.taskId === task.id && n.kind === 'created')).toBe(true);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
}
