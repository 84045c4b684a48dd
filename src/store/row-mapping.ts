/**
 * @module store/row-mapping
 * snake_case rows (identical column names in both dialects) to camelCase domain types. Both adapters hand JSON
 * columns back as text (the PostgreSQL adapter turns pg's jsonb parser off), so a JSON string value is never
 * parsed twice.
 */
import { BelayError, type TaskError } from '../core/errors.js';
import type { NewDelivery } from '../core/delivery.js';
import type { Artifact, Json, PendingInput, Progress, PushConfig, SideEffectRecord, Task, TaskEvent, TaskEventKind, Tombstone } from '../core/task.js';
import type { TaskState } from '../core/task-state.js';

export interface TaskRow {
  id: string;
  tenant: string;
  context_id: string;
  type: string;
  type_version: number;
  state: string;
  step: number;
  checkpoint: unknown;
  input: unknown;
  progress: unknown;
  pending_input: unknown;
  answers: unknown;
  cancel_requested_at: number | null;
  result: unknown;
  artifacts: unknown;
  error: unknown;
  lease_owner: string | null;
  lease_until: number | null;
  fence: number;
  version: number;
  next_seq: number;
  attempts: number;
  wake_at: number | null;
  created_at: number;
  updated_at: number;
  terminal_at: number | null;
  expires_at: number | null;
  created_by: string;
  callback_url: string | null;
}

export function json<T = Json>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

function nullableJson<T>(v: unknown): T | null {
  return v === null || v === undefined ? null : json<T>(v);
}

export function taskFromRow(r: TaskRow): Task {
  return {
    id: r.id,
    tenant: r.tenant,
    contextId: r.context_id,
    type: r.type,
    typeVersion: Number(r.type_version),
    state: r.state as TaskState,
    step: Number(r.step),
    checkpoint: json(r.checkpoint),
    input: json(r.input),
    progress: json<Progress>(r.progress),
    pendingInput: nullableJson<PendingInput>(r.pending_input),
    answers: json<Record<string, Json>>(r.answers),
    cancelRequestedAt: r.cancel_requested_at === null ? null : Number(r.cancel_requested_at),
    result: json(r.result),
    artifacts: json<Artifact[]>(r.artifacts),
    error: nullableJson<TaskError>(r.error),
    leaseOwner: r.lease_owner,
    leaseUntil: r.lease_until === null ? null : Number(r.lease_until),
    fence: Number(r.fence),
    version: Number(r.version),
    nextSeq: Number(r.next_seq),
    attempts: Number(r.attempts),
    wakeAt: r.wake_at === null ? null : Number(r.wake_at),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    terminalAt: r.terminal_at === null ? null : Number(r.terminal_at),
    expiresAt: r.expires_at === null ? null : Number(r.expires_at),
    createdBy: r.created_by,
    callbackUrl: r.callback_url,
  };
}

export interface EventRow {
  task_id: string;
  seq: number;
  kind: string;
  body: unknown;
  at: number;
}

/**
 * A pause keeps its question, schema and context once: in the `input_required` event the same commit writes. The
 * row's pending input keeps the rest plus `inEvent: true`, and reads put them back from the task's latest
 * `input_required` event (`pendingFromEvent`). A waiting task is the row kept longest, often for days; the repeat
 * was 176 of its 2,217 bytes on PostgreSQL (docs/benchmarks.md, waiting). Anything else — a transition writing a
 * pending input, an event that does not carry the very same question — stores the whole pending input as before.
 */
export function pendingForStorage(pending: PendingInput | null, event: { kind: string; body: Record<string, Json> } | null): string | null {
  if (pending === null) return null;
  const b = event?.body;
  const same = (a: unknown, c: unknown) => JSON.stringify(a) === JSON.stringify(c);
  if (
    event?.kind !== 'input_required' ||
    !b ||
    b.key !== pending.key ||
    !same(b.question, pending.question) ||
    !same(b.schema, pending.schema) ||
    !same(b.context, pending.context)
  ) {
    return JSON.stringify(pending);
  }
  const { question: _q, schema: _s, context: _c, ...rest } = pending;
  return JSON.stringify({ ...rest, inEvent: true });
}

/** Whether a task read from a row still needs its question from its `input_required` event. */
export function pendingInEvent(task: Task): boolean {
  return task.pendingInput !== null && (task.pendingInput as unknown as { inEvent?: unknown }).inEvent === true;
}

/**
 * Puts a pending input's question, schema and context back from `body`, the task's latest `input_required` event.
 * @throws BelayError INTERNAL when that event is missing or asks another question (the commit that wrote the row
 *   wrote the event in the same transaction, so this means the store was edited by hand).
 */
export function pendingFromEvent(task: Task, body: Record<string, Json> | undefined): Task {
  if (!pendingInEvent(task)) return task;
  const { inEvent: _i, ...rest } = task.pendingInput as PendingInput & { inEvent?: boolean };
  if (!body || body.key !== rest.key) throw new BelayError('INTERNAL', `The question of task ${task.id} is missing from its event log`);
  const pending: PendingInput = { ...rest, question: body.question as string, schema: body.schema as PendingInput['schema'], ...(body.context === undefined ? {} : { context: body.context }) };
  return { ...task, pendingInput: pending };
}

export function eventFromRow(r: EventRow): TaskEvent {
  return { taskId: r.task_id, seq: Number(r.seq), kind: r.kind as TaskEventKind, body: json(r.body), at: Number(r.at) };
}

export interface EffectRow {
  task_id: string;
  effect_key: string;
  status: string;
  result: unknown;
  fence: number;
  started_at: number;
  applied_at: number | null;
}

export function effectFromRow(r: EffectRow): SideEffectRecord {
  return {
    taskId: r.task_id,
    key: r.effect_key,
    status: r.status as SideEffectRecord['status'],
    result: r.result === null ? null : json(r.result),
    startedAt: Number(r.started_at),
    appliedAt: r.applied_at === null ? null : Number(r.applied_at),
    fence: Number(r.fence),
  };
}

/** Column names of the patchable task fields (TaskPatch.set), shared by both dialects. */
export const PATCH_COLUMNS = {
  state: { column: 'state', json: false },
  pendingInput: { column: 'pending_input', json: true },
  answers: { column: 'answers', json: true },
  cancelRequestedAt: { column: 'cancel_requested_at', json: false },
  error: { column: 'error', json: true },
  leaseOwner: { column: 'lease_owner', json: false },
  leaseUntil: { column: 'lease_until', json: false },
  wakeAt: { column: 'wake_at', json: false },
  terminalAt: { column: 'terminal_at', json: false },
  expiresAt: { column: 'expires_at', json: false },
  attempts: { column: 'attempts', json: false },
} as const;

export interface TombstoneRow {
  id: string;
  tenant: string;
  type: string;
  final_state: string;
  created_by: string;
  created_at: number;
  terminal_at: number | null;
  expired_at: number;
}

export function tombstoneFromRow(r: TombstoneRow): Tombstone {
  return {
    id: r.id,
    tenant: r.tenant,
    type: r.type,
    finalState: r.final_state,
    createdBy: r.created_by,
    createdAt: Number(r.created_at),
    terminalAt: r.terminal_at === null ? null : Number(r.terminal_at),
    expiredAt: Number(r.expired_at),
  };
}

export interface PushConfigRow {
  tenant: string;
  task_id: string;
  id: string;
  created_by: string;
  url: string;
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
  created_at: number;
  updated_at: number;
}

export function pushConfigFromRow(r: PushConfigRow): PushConfig {
  return {
    id: r.id,
    taskId: r.task_id,
    tenant: r.tenant,
    createdBy: r.created_by,
    url: r.url,
    token: r.token,
    authentication: r.auth_scheme === null ? null : { scheme: r.auth_scheme, credentials: r.auth_credentials },
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** A new delivery as the columns `enqueueDeliveries` inserts (both dialects): pending ones are due now, dead ones dead now. */
export function newDeliveryRow(d: NewDelivery) {
  return {
    id: d.id,
    event_id: d.eventId,
    tenant: d.tenant,
    task_id: d.taskId,
    seq: d.seq,
    event_type: d.eventType,
    target_kind: d.targetKind,
    target_id: d.targetId,
    target_key: d.targetKey,
    url: d.url,
    payload: d.payload,
    status: d.status,
    next_attempt_at: d.status === 'pending' ? d.now : null,
    dead_reason: d.deadReason,
    dead_at: d.status === 'dead' ? d.now : null,
    now: d.now,
  };
}
