/**
 * @module protocols/rest/representation
 * The REST contract's view of a task (snake_case, the second article's vocabulary). Raw credentials and internal
 * lease details stay out of the caller's representation; operators get them from `?view=operator` as admins.
 */
import type { Task, TaskEvent } from '../../core/task.js';
import { isTerminal, restStatus } from '../../core/task-state.js';

export const BASE = '/v1/agent-tasks';

export function taskLinks(id: string) {
  const self = `${BASE}/${encodeURIComponent(id)}`;
  return {
    status_url: self,
    cancel_url: `${self}/cancellation`,
    events_url: `${self}/events`,
    input_url: `${self}/input`,
    result_url: `${self}/result`,
  };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Recommended poll interval: short while work moves, long while it waits for a person. */
export function pollIntervalMs(task: Task): number | null {
  if (isTerminal(task.state)) return null;
  if (task.state === 'input_required' || task.state === 'auth_required') return 30_000;
  return task.state === 'submitted' ? 1000 : 2000;
}

export function taskView(task: Task, options: { operator?: boolean; stepNames?: readonly string[]; input?: boolean } = {}) {
  const pending = task.pendingInput;
  return {
    id: task.id,
    type: task.type,
    type_version: task.typeVersion,
    status: restStatus(task.state),
    state: task.state,
    context_id: task.contextId,
    // The caller's own input, on the single-task view only (lists stay small): what `belay tasks retry` resubmits.
    ...(options.input ? { input: task.input } : {}),
    version: task.version,
    created_by: task.createdBy,
    created_at: iso(task.createdAt),
    updated_at: iso(task.updatedAt),
    terminal_at: iso(task.terminalAt),
    expires_at: iso(task.expiresAt),
    progress: task.progress,
    step: { index: task.step, name: options.stepNames?.[task.step] ?? null, total: options.stepNames?.length ?? null },
    input_request: pending
      ? {
          key: pending.key,
          question: pending.question,
          schema: pending.schema,
          context: pending.context ?? null,
          deadline_at: iso(pending.deadlineAt),
          on_deadline: pending.onDeadline,
          // The version to echo in the answer: an old browser tab cannot answer a newer question.
          version: task.version,
        }
      : null,
    cancel_requested_at: iso(task.cancelRequestedAt),
    result_available: task.state === 'completed',
    artifacts: task.artifacts.map((a) => ({ artifact_id: a.artifactId, name: a.name, media_type: a.mediaType })),
    error: task.error,
    callback_url: task.callbackUrl,
    poll_interval_ms: pollIntervalMs(task),
    ...taskLinks(task.id),
    ...(options.operator
      ? {
          operator: {
            lease_owner: task.leaseOwner,
            lease_until: iso(task.leaseUntil),
            fence: task.fence,
            attempts: task.attempts,
            wake_at: iso(task.wakeAt),
            checkpoint: task.checkpoint,
            next_seq: task.nextSeq,
          },
        }
      : {}),
  };
}

export function eventView(e: TaskEvent) {
  return { seq: e.seq, kind: e.kind, at: new Date(e.at).toISOString(), ...e.body };
}
