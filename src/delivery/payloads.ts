/**
 * @module delivery/payloads
 * What a delivery says. REST callbacks and endpoints get a thin, signed notice (the seed article: "treat the callback
 * as notice that state may have changed, and keep the result in the task store"): the event id and type, the task's
 * id, type, status and links, plus the error or question when there is one — never the result or the input. Receivers
 * fetch the task. A2A push configs get a `StreamResponse` with a `statusUpdate` (A2A 1.0 §4.3.3); a front can pass
 * its own renderer.
 */
import type { FeedEvent } from '../core/delivery.js';
import { webhookEventId } from '../core/delivery.js';
import type { Json, TaskEventKind } from '../core/task.js';
import { restStatus, type TaskState } from '../core/task-state.js';

/** Every event type a tenant endpoint may subscribe to: `task.` + the event log's kind. */
export const EVENT_TYPES: readonly string[] = (
  ['created', 'started', 'progress', 'input_required', 'input_received', 'retry_scheduled', 'cancel_requested', 'completed', 'failed', 'canceled'] satisfies TaskEventKind[]
).map((k) => `task.${k}`);

/** What callbacks (`callback_url`) and endpoints without a filter receive: the status changes a caller acts on. */
export const DEFAULT_EVENT_TYPES: readonly string[] = ['task.started', 'task.input_required', 'task.completed', 'task.failed', 'task.canceled'];

/** Event kinds pushed to A2A push configs: the task's status changes. */
export const PUSH_EVENT_KINDS: readonly string[] = ['started', 'input_required', 'input_received', 'completed', 'failed', 'canceled'];

export function eventType(kind: string): string {
  return `task.${kind}`;
}

export interface RenderedPayload {
  body: string;
  contentType: string;
}

export type PayloadRenderer = (event: FeedEvent) => RenderedPayload | null;

const iso = (ms: number) => new Date(ms).toISOString();

function stateOf(event: FeedEvent): TaskState | null {
  const s = event.body.state;
  return typeof s === 'string' ? (s as TaskState) : null;
}

/** The REST notice. `taskUrl` makes links absolute when the public base URL is known. */
export function restPayload(event: FeedEvent, taskUrl: (taskId: string) => string = (id) => `/v1/agent-tasks/${encodeURIComponent(id)}`): RenderedPayload {
  const state = stateOf(event);
  const data: Record<string, Json> = {
    task_id: event.taskId,
    task_type: event.taskType,
    context_id: event.contextId,
    seq: event.seq,
    state,
    status: state ? restStatus(state) : null,
    task_url: taskUrl(event.taskId),
    events_url: `${taskUrl(event.taskId)}/events`,
  };
  const err = event.body.error;
  if (err && typeof err === 'object' && !Array.isArray(err)) {
    data.error = { code: (err.code as Json) ?? null, message: (err.message as Json) ?? null };
  }
  if (event.kind === 'input_required') {
    const pending = (event.body.pending_input ?? event.body.input_request ?? null) as Record<string, Json> | null;
    const key = event.body.key ?? pending?.key ?? null;
    data.input_request = { key: key ?? null, question: (event.body.question ?? pending?.question ?? null) };
  }
  const payload = { id: webhookEventId(event.taskId, event.seq), type: eventType(event.kind), timestamp: iso(event.at), data };
  return { body: JSON.stringify(payload), contentType: 'application/json' };
}

/** A2A 1.0 `StreamResponse` with a `statusUpdate`; null for events that change no status. */
export function a2aPayload(event: FeedEvent): RenderedPayload | null {
  const state = stateOf(event);
  if (!state || !PUSH_EVENT_KINDS.includes(event.kind)) return null;
  const body = {
    statusUpdate: {
      taskId: event.taskId,
      contextId: event.contextId,
      status: { state: `TASK_STATE_${state.toUpperCase()}`, timestamp: iso(event.at) },
      metadata: { belay: { event_id: webhookEventId(event.taskId, event.seq), seq: event.seq, kind: event.kind } },
    },
  };
  return { body: JSON.stringify(body), contentType: 'application/a2a+json' };
}
