/**
 * The history checker: given what a chaos run saw from outside (acknowledged creates, answers to inputs and
 * cancellations, SSE events, the downstream's receipts) and the store's final contents, it lists every violation
 * of the invariants in reliability-security.md §1. It uses its own copy of the state machine (an oracle must not
 * borrow the code it judges).
 *
 * Checks:
 * - I1 no lost task: every create acknowledged 2xx names a task that exists (or was expired into a tombstone) and,
 *   at the end, is terminal or waiting; one logical create (one Idempotency-Key) makes at most one task and every
 *   2xx answer to it names that task.
 * - I2 effects once: every downstream receipt carries the key of its logical effect (`<task>:s<step>-e<n>` for the
 *   synthetic type), belongs to an existing task and has a ledger row; a completed task applied exactly its planned
 *   effects; a completed task has no `pending` ledger row.
 * - I3 checkpoint and event together: the row's `next_seq`, state and step agree with its last events.
 * - I4 legal history: seq 1..n without gaps, `created` first, kinds agree with states, only allowed transitions,
 *   at most one terminal event and it is the last; answers and cancellations agree with the outcome.
 * - I5 no stale writer: every worker commit carries its lease's fence in its event body (`fence`). With the fence
 *   log, the fence of the commit at seq s must EQUAL the fence current at s (the last grant with nextSeq <= s):
 *   sound and complete for worker commits. Without it, fences must not decrease along seq and never exceed the
 *   row's final fence (sound, incomplete: it misses a stale commit landing between a grant and the new holder's
 *   first commit).
 * - SSE: each connection delivers seq last+1, last+2, ... matching the stored kinds, never repeating what the
 *   client already had; a chain that ended on a terminal event received the whole log.
 */
import type { Task, TaskEvent } from '../src/core/task.js';
import type { FenceGrant, FinalState, History, SseChain, Violation } from './history.js';

const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);
const WAITING = new Set(['input_required', 'auth_required']);

/** The state machine of DESIGN.md §4, restated (self-transitions only where an event may keep the state). */
const ALLOWED: Record<string, readonly string[]> = {
  submitted: ['submitted', 'working', 'canceled', 'failed', 'rejected'],
  working: ['working', 'input_required', 'auth_required', 'completed', 'failed', 'canceled'],
  input_required: ['working', 'canceled', 'failed'],
  auth_required: ['working', 'canceled', 'failed'],
  completed: [],
  failed: [],
  canceled: [],
  rejected: [],
};

/** States an event kind must carry (kinds not listed carry the task's current state). */
const KIND_STATES: Record<string, readonly string[]> = {
  created: ['submitted'],
  started: ['working'],
  progress: ['working'],
  retry_scheduled: ['working'],
  input_required: ['input_required', 'auth_required'],
  input_received: ['working', 'submitted'],
  completed: ['completed'],
  failed: ['failed'],
  canceled: ['canceled'],
};

export interface CheckOptions {
  /** At the end every acknowledged task must be: `terminal`, `terminal-or-waiting` (default), or `any`. */
  settled?: 'terminal' | 'terminal-or-waiting' | 'any';
  /** Tasks that must have completed (not failed or cancelled): the scenario never cancels or fails them. */
  mustComplete?: (task: Task) => boolean;
}

export function checkHistory(history: History, final: FinalState, options: CheckOptions = {}): Violation[] {
  const v: Violation[] = [];
  const add = (invariant: string, detail: string, taskId?: string) => v.push({ invariant, detail, ...(taskId ? { taskId } : {}) });
  checkCreates(history, final, options, add);
  for (const task of final.tasks.values()) checkTaskLog(task, final.events.get(task.id) ?? [], add);
  checkFences(final, add);
  checkEffects(history, final, add);
  checkAnswersAndCancels(history, final, add);
  for (const chain of history.sse) checkSse(chain, final, add);
  return v;
}

type Add = (invariant: string, detail: string, taskId?: string) => void;

function finalStateOf(final: FinalState, id: string): string | null {
  return final.tasks.get(id)?.state ?? final.tombstones.get(id)?.finalState ?? null;
}

function checkCreates(history: History, final: FinalState, options: CheckOptions, add: Add): void {
  const byContext = new Map<string, Task[]>();
  const ctxKey = (tenant: string, contextId: string) => `${tenant}\u0000${contextId}`;
  for (const t of final.tasks.values()) byContext.set(ctxKey(t.tenant, t.contextId), [...(byContext.get(ctxKey(t.tenant, t.contextId)) ?? []), t]);
  const settled = options.settled ?? 'terminal-or-waiting';
  for (const op of history.creates) {
    const acked = op.attempts.filter((a) => typeof a.status === 'number' && a.status >= 200 && a.status < 300 && a.taskId);
    const ids = new Set(acked.map((a) => a.taskId!));
    if (ids.size > 1) add('I1', `one Idempotency-Key (${op.key}) was answered with ${ids.size} different tasks: ${[...ids].join(', ')}`);
    const made = byContext.get(ctxKey(op.tenant, op.contextId)) ?? [];
    if (made.length > 1) add('I1', `one logical create (key ${op.key}) made ${made.length} tasks: ${made.map((t) => t.id).join(', ')}`, made[0]!.id);
    for (const id of ids) {
      const task = final.tasks.get(id);
      if (!task) {
        if (!final.tombstones.has(id)) add('I1', `create acknowledged ${acked.find((a) => a.taskId === id)!.status} but the task is gone (no row, no tombstone)`, id);
        continue;
      }
      if (task.contextId !== op.contextId || task.tenant !== op.tenant) add('I1', `the acknowledged task belongs to another request (${task.tenant}/${task.contextId}, expected ${op.tenant}/${op.contextId})`, id);
      const why = () => `${task.type}, ${task.error ? `${task.error.code}: ${task.error.message}; ` : ''}last events ${(final.events.get(id) ?? []).slice(-3).map((e) => e.kind).join(', ')}`;
      if (settled === 'terminal' && !TERMINAL.has(task.state)) add('I1', `acknowledged task ended ${task.state}, not terminal (${why()})`, id);
      if (settled === 'terminal-or-waiting' && !TERMINAL.has(task.state) && !WAITING.has(task.state)) add('I1', `acknowledged task ended ${task.state}, neither terminal nor waiting (${why()})`, id);
      if (options.mustComplete?.(task) && task.state !== 'completed') add('I1', `task ended ${task.state} (${task.error?.code ?? 'no error'}: ${task.error?.message ?? ''}), expected completed`, id);
    }
    // A replay must name the task the first acknowledged answer named; a replayed answer before any creation is odd.
    const firstCreated = acked.find((a) => !a.replayed);
    if (acked.filter((a) => !a.replayed).length > 1) add('I1', `key ${op.key} was answered "created" ${acked.filter((a) => !a.replayed).length} times`, firstCreated?.taskId);
  }
}

function checkTaskLog(task: Task, events: TaskEvent[], add: Add): void {
  const id = task.id;
  const seqs = events.map((e) => e.seq);
  for (let i = 0; i < seqs.length; i++) {
    if (seqs[i] !== i + 1) {
      add('I4', `event sequence is not 1..n: ${seqs.slice(Math.max(0, i - 2), i + 3).join(',')} at position ${i + 1}`, id);
      break;
    }
  }
  if (task.nextSeq !== events.length + 1) add('I3', `next_seq ${task.nextSeq} but ${events.length} events`, id);
  if (events.length === 0) {
    add('I4', 'task has no events', id);
    return;
  }
  if (events[0]!.kind !== 'created') add('I4', `first event is ${events[0]!.kind}, not created`, id);
  let state: string | null = null;
  let terminalSeen: number | null = null;
  for (const e of events) {
    const s = typeof e.body.state === 'string' ? e.body.state : null;
    if (s === null) {
      add('I4', `event ${e.seq} (${e.kind}) carries no state`, id);
      continue;
    }
    const expected = KIND_STATES[e.kind];
    if (expected && !expected.includes(s)) add('I4', `event ${e.seq} ${e.kind} carries state ${s}`, id);
    if (terminalSeen !== null) add('I4', `event ${e.seq} (${e.kind}) after the terminal event ${terminalSeen}`, id);
    if (state !== null && !(ALLOWED[state] ?? []).includes(s)) add('I4', `illegal transition ${state} -> ${s} at event ${e.seq} (${e.kind})`, id);
    if (e.kind === 'started' && state !== 'submitted') add('I4', `started at event ${e.seq} from ${state}`, id);
    if (TERMINAL.has(s)) terminalSeen = e.seq;
    state = s;
  }
  const last = events.at(-1)!;
  if (last.body.state !== task.state) add('I3', `row state ${task.state} but the last event (${last.seq} ${last.kind}) says ${JSON.stringify(last.body.state)}`, id);
  if (TERMINAL.has(task.state) && !TERMINAL.has(last.kind)) add('I3', `row is ${task.state} but the last event is ${last.kind}`, id);
  if (task.state === 'completed' && task.result === null) add('I3', 'completed without a result', id);
  const lastStep = [...events].reverse().find((e) => typeof e.body.step === 'number' && typeof e.body.fence === 'number');
  if (lastStep && lastStep.body.step !== task.step) add('I3', `row step ${task.step} but the last worker commit (${lastStep.seq} ${lastStep.kind}) says step ${JSON.stringify(lastStep.body.step)}`, id);
}

/** The fence current when event `seq` was written: the last grant with nextSeq <= seq (0 before any). */
export function fenceAt(grants: readonly FenceGrant[], seq: number): number {
  let f = 0;
  for (const g of grants) if (g.nextSeq <= seq && g.fence > f) f = g.fence;
  return f;
}

function checkFences(final: FinalState, add: Add): void {
  const log = new Map<string, FenceGrant[]>();
  for (const g of final.fenceLog ?? []) log.set(g.taskId, [...(log.get(g.taskId) ?? []), g]);
  for (const task of final.tasks.values()) {
    const events = final.events.get(task.id) ?? [];
    const grants = (log.get(task.id) ?? []).sort((a, b) => a.fence - b.fence);
    if (final.fenceLog) {
      const last = grants.at(-1);
      if (last && last.fence !== task.fence) add('I5', `fence log ends at ${last.fence} but the row's fence is ${task.fence}`, task.id);
      for (let i = 1; i < grants.length; i++) {
        if (grants[i]!.nextSeq < grants[i - 1]!.nextSeq) add('I5', `fence ${grants[i]!.fence} granted at next_seq ${grants[i]!.nextSeq}, before fence ${grants[i - 1]!.fence} (${grants[i - 1]!.nextSeq})`, task.id);
      }
    }
    let prev = 0;
    for (const e of events) {
      const f = e.body.fence;
      if (typeof f !== 'number') continue;
      if (f > task.fence) add('I5', `event ${e.seq} (${e.kind}) committed with fence ${f}, above the row's ${task.fence}`, task.id);
      if (final.fenceLog) {
        const current = fenceAt(grants, e.seq);
        if (f !== current) add('I5', `event ${e.seq} (${e.kind}) committed with fence ${f} while the current fence was ${current}: a stale writer`, task.id);
      } else if (f < prev) {
        add('I5', `event ${e.seq} (${e.kind}) committed with fence ${f} after a commit with fence ${prev}: a stale writer`, task.id);
      }
      prev = Math.max(prev, f);
    }
  }
}

function checkEffects(history: History, final: FinalState, add: Add): void {
  const keysByTask = new Map<string, Set<string>>();
  const reported = new Set<string>();
  for (const r of history.receipts) {
    const colon = r.key.indexOf(':');
    const taskId = colon > 0 ? r.key.slice(0, colon) : '';
    const effect = r.key.slice(colon + 1);
    if (r.route === 'effects' && r.body && typeof r.body === 'object' && !Array.isArray(r.body)) {
      const b = r.body;
      const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v));
      const expected = `${str(b.taskId)}:s${str(b.step)}-e${str(b.n)}`;
      if (expected !== r.key) add('I2', `effect ${expected} arrived under another idempotency key (${r.key}): the downstream would apply it twice`, str(b.taskId));
    }
    keysByTask.set(taskId, (keysByTask.get(taskId) ?? new Set()).add(effect));
    if (reported.has(r.key)) continue;
    reported.add(r.key);
    if (!final.tasks.has(taskId)) {
      if (!final.tombstones.has(taskId)) add('I2', `downstream received ${r.key} for a task that does not exist`, taskId || undefined);
      continue;
    }
    const ledger = final.effects.get(taskId) ?? [];
    if (!ledger.some((e) => e.key === effect)) add('I2', `downstream received ${r.key} but the ledger has no row for it (an effect outside the run-once ledger)`, taskId);
  }
  const planned = new Map<string, string[]>();
  for (const op of history.creates) {
    if (!op.plannedEffects) continue;
    for (const a of op.attempts) if (a.taskId) planned.set(a.taskId, op.plannedEffects);
  }
  for (const [taskId, keys] of planned) {
    const task = final.tasks.get(taskId);
    if (!task) continue;
    const got = keysByTask.get(taskId) ?? new Set<string>();
    const extra = [...got].filter((k) => !keys.includes(k));
    if (extra.length) add('I2', `applied effects outside the plan: ${extra.slice(0, 5).join(', ')}`, taskId);
    if (task.state === 'completed') {
      const missing = keys.filter((k) => !got.has(k));
      if (missing.length) add('I2', `completed but ${missing.length} planned effects never reached the downstream: ${missing.slice(0, 5).join(', ')}`, taskId);
    }
  }
  for (const task of final.tasks.values()) {
    if (task.state !== 'completed') continue;
    const pending = (final.effects.get(task.id) ?? []).filter((e) => e.status !== 'applied');
    if (pending.length) add('I2', `completed with ${pending.length} unconfirmed ledger rows (${pending[0]!.key})`, task.id);
  }
}

function checkAnswersAndCancels(history: History, final: FinalState, add: Add): void {
  for (const c of history.cancels) {
    if (c.outcome === undefined) continue;
    const state = finalStateOf(final, c.taskId);
    if (state === null) continue;
    if (['canceled', 'requested', 'already_requested'].includes(c.outcome) && state !== 'canceled') {
      add('I4', `cancellation answered "${c.outcome}" but the task ended ${state}`, c.taskId);
    }
  }
  const wins = new Map<string, number>();
  for (const i of history.inputs) {
    if (typeof i.status !== 'number' || i.status < 200 || i.status >= 300) continue;
    const k = `${i.taskId}@${i.version}`;
    wins.set(k, (wins.get(k) ?? 0) + 1);
  }
  for (const [k, n] of wins) if (n > 1) add('I4', `${n} answers naming the same version were accepted (${k})`, k.split('@')[0]);
  const acceptedByTask = new Map<string, number>();
  for (const [k, n] of wins) acceptedByTask.set(k.split('@')[0]!, (acceptedByTask.get(k.split('@')[0]!) ?? 0) + n);
  for (const [taskId, n] of acceptedByTask) {
    const events = final.events.get(taskId);
    if (!events) continue;
    const received = events.filter((e) => e.kind === 'input_received' && e.body.early !== true).length;
    if (received !== n) add('I4', `${n} answers accepted but ${received} input_received events`, taskId);
  }
}

function checkSse(chain: SseChain, final: FinalState, add: Add): void {
  const events = final.events.get(chain.taskId);
  const have = new Set<number>();
  for (const c of chain.connections) {
    if (typeof c.status !== 'number' || c.status !== 200) continue;
    let expect = (c.lastEventId ?? 0) + 1;
    for (const e of c.events) {
      if (have.has(e.seq)) add('SSE', `event ${e.seq} delivered again after Last-Event-ID ${c.lastEventId ?? 'none'}`, chain.taskId);
      if (e.seq !== expect) {
        add('SSE', `expected event ${expect}, got ${e.seq} (Last-Event-ID ${c.lastEventId ?? 'none'})`, chain.taskId);
        break;
      }
      const stored = events?.[e.seq - 1];
      if (events && (!stored || stored.kind !== e.kind)) add('SSE', `event ${e.seq} arrived as ${e.kind}, stored as ${stored?.kind ?? 'nothing'}`, chain.taskId);
      have.add(e.seq);
      expect += 1;
    }
    if (c.end === 'terminal') {
      const lastGot = c.events.at(-1);
      if (!lastGot || !TERMINAL.has(lastGot.kind)) add('SSE', 'stream reported terminal without a terminal event', chain.taskId);
      else if (events && lastGot.seq !== events.length) add('SSE', `stream ended at terminal event ${lastGot.seq} but the log has ${events.length}`, chain.taskId);
    }
  }
  const terminalChain = chain.connections.some((c) => c.end === 'terminal');
  if (terminalChain && events) {
    for (let s = (chain.connections[0]?.lastEventId ?? 0) + 1; s <= events.length; s++) {
      if (!have.has(s)) {
        add('SSE', `a client that followed the stream to its end never received event ${s}`, chain.taskId);
        break;
      }
    }
  }
}

/** A one-line summary of violations for the scorecard (first few in full). */
export function describeViolations(violations: readonly Violation[], max = 8): string[] {
  return violations.slice(0, max).map((x) => `  ${x.invariant}${x.taskId ? ` ${x.taskId}` : ''}: ${x.detail}`);
}
