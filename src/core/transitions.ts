/**
 * @module core/transitions
 * The cold-path transitions (answer a question, cancel, expire a deadline) as pure decisions over the current row.
 * Both stores apply the resulting patch atomically through `Store.transition`, so the rules live once.
 */
import { BelayError, taskErrorFrom } from './errors.js';
import type { Json, Task } from './task.js';
import { isTerminal, isWaiting } from './task-state.js';
import type { TaskPatch } from '../store/port.js';

export const QUESTION_KEY = /^[A-Za-z0-9_-]{1,64}$/;

export interface AnswerRequest {
  /** The task version the answer was written against (echoed from the question). */
  expectedVersion: number;
  /** The question answered. Defaults to the pending question; required for an early answer. */
  key?: string;
  answer: Json;
  now: number;
  /** Extra members recorded in the `input_received` event (a front's record of the answer, e.g. the A2A message). */
  eventExtras?: Record<string, Json>;
}

/**
 * Decides an answer. While the task waits, the answer must name the current version and arrive before the deadline;
 * the task goes back to `working` and is claimable at once. While the task still works, an answer naming a key is
 * kept for the step that will ask it ("input that arrives early is not lost").
 * Schema validation happens in the service before this runs.
 */
export function decideAnswer(task: Task, req: AnswerRequest): TaskPatch {
  if (isTerminal(task.state)) throw new BelayError('NOT_WAITING_FOR_INPUT', `The task is ${task.state}`, { details: { state: task.state } });
  if (task.version !== req.expectedVersion) {
    throw new BelayError('STALE_VERSION', `The answer names version ${req.expectedVersion}; the task is at version ${task.version}`, {
      details: { current_version: task.version },
    });
  }
  const pending = task.pendingInput;
  if (isWaiting(task.state) && pending) {
    if (req.key !== undefined && req.key !== pending.key) {
      throw new BelayError('NOT_WAITING_FOR_INPUT', `The task is waiting for "${pending.key}", not "${req.key}"`);
    }
    if (req.now >= pending.deadlineAt) throw new BelayError('INPUT_DEADLINE_PASSED', 'The question expired before it was answered');
    return {
      // A resume after an answer starts a fresh count of attempts: pauses are not failures.
      set: { state: 'working', pendingInput: null, answers: { ...task.answers, [pending.key]: req.answer }, wakeAt: req.now, attempts: 0 },
      bumpFence: false,
      event: { kind: 'input_received', body: { ...req.eventExtras, state: 'working', key: pending.key } },
    };
  }
  if ((task.state === 'working' || task.state === 'submitted') && req.key !== undefined) {
    if (!QUESTION_KEY.test(req.key)) throw new BelayError('VALIDATION', 'A question key is 1-64 characters of [A-Za-z0-9_-]');
    if (req.key in task.answers) throw new BelayError('NOT_WAITING_FOR_INPUT', `"${req.key}" was already answered`);
    return {
      set: { answers: { ...task.answers, [req.key]: req.answer } },
      bumpFence: false,
      event: { kind: 'input_received', body: { state: task.state, key: req.key, early: true } },
    };
  }
  throw new BelayError('NOT_WAITING_FOR_INPUT', `The task is ${task.state} and not waiting for input`, { details: { state: task.state } });
}

export type CancelOutcome = 'canceled' | 'requested' | 'already_terminal' | 'already_requested';

/**
 * Decides a cancellation request (DESIGN.md §4). A task nobody holds a live lease on is cancelled at once, and its
 * fence is bumped so a stale worker cannot commit afterwards. A task a worker holds gets `cancel_requested_at`:
 * the worker sees it on its next renewal or wake-up, its step's AbortSignal fires, `once()` refuses new effects,
 * and its next commit is refused, so it commits `canceled`. A finished task stays as it is (completion won).
 */
export function decideCancel(
  task: Task,
  now: number,
  reason?: string,
  options: { settleByWorker?: boolean } = {},
): { patch: TaskPatch | null; outcome: CancelOutcome } {
  if (isTerminal(task.state)) return { patch: null, outcome: 'already_terminal' };
  const leased = task.state === 'working' && task.leaseUntil !== null && task.leaseUntil > now;
  if (!leased && options.settleByWorker) {
    // Effects may need reconciling or compensating: a worker carries the cancellation out (claimable at once).
    if (task.cancelRequestedAt !== null && task.state === 'working') return { patch: null, outcome: 'already_requested' };
    return {
      patch: {
        set: { state: 'working', cancelRequestedAt: task.cancelRequestedAt ?? now, pendingInput: null, leaseOwner: null, leaseUntil: null, wakeAt: now },
        bumpFence: true,
        event: { kind: 'cancel_requested', body: { state: 'working', ...(reason ? { reason } : {}) } },
      },
      outcome: 'requested',
    };
  }
  if (leased) {
    if (task.cancelRequestedAt !== null) return { patch: null, outcome: 'already_requested' };
    return {
      patch: {
        set: { cancelRequestedAt: now },
        bumpFence: false,
        event: { kind: 'cancel_requested', body: { state: task.state, ...(reason ? { reason } : {}) } },
      },
      outcome: 'requested',
    };
  }
  return {
    patch: {
      set: {
        state: 'canceled',
        cancelRequestedAt: task.cancelRequestedAt ?? now,
        pendingInput: null,
        error: taskErrorFrom('CANCELLED', reason ?? 'Cancelled on request'),
        leaseOwner: null,
        leaseUntil: null,
        wakeAt: null,
        terminalAt: now,
      },
      bumpFence: true,
      event: { kind: 'canceled', body: { state: 'canceled', ...(reason ? { reason } : {}) } },
    },
    outcome: 'canceled',
  };
}

/** Decides what an unanswered question's deadline does: fail or cancel, per the question (the task type's choice). */
export function decideDeadline(task: Task, now: number): TaskPatch | null {
  const pending = task.pendingInput;
  if (!isWaiting(task.state) || !pending || pending.deadlineAt > now) return null;
  const state = pending.onDeadline === 'cancel' ? 'canceled' : 'failed';
  const error = taskErrorFrom('INPUT_DEADLINE_EXPIRED', `Nobody answered "${pending.key}" before ${new Date(pending.deadlineAt).toISOString()}`, {
    key: pending.key,
    deadline_at: pending.deadlineAt,
  });
  return {
    set: { state, pendingInput: null, error, leaseOwner: null, leaseUntil: null, wakeAt: null, terminalAt: now },
    bumpFence: true,
    event: { kind: state, body: { state, error: error as unknown as Json } },
  };
}
