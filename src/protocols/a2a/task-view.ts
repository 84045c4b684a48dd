/**
 * @module protocols/a2a/task-view
 * A Belay task as A2A sees it. The status comes from the task row; history and stream events come from the durable
 * event log, so any gateway (and any restart) renders the same task the same way:
 *
 * - `created` → the user message that started the task (recorded in the event by the A2A front), else nothing;
 * - `input_required` → an agent message: the question as text, and a data part with its key, JSON Schema, context,
 *   deadline (and, while it is the pending question, the `inputVersion` to echo when answering);
 * - `input_received` → the user message that answered (recorded by the A2A front), else the stored answer as data;
 * - progress, retries, cancellation requests and the end → status updates with a short agent message.
 *
 * Message ids of agent messages are derived from the task and the event (`<task>:e<seq>`; a question is
 * `<task>:q:<key>:<deadline>`), so the same message has the same id on every read.
 */
import type { Artifact, Json, JsonObject, Task, TaskEvent } from '../../core/task.js';
import type { TaskState } from '../../core/task-state.js';
import type { WireArtifact, WireMessage, WirePart, WireStatusUpdate, WireTask, WireTaskState } from './wire-types.js';

const WIRE_STATES: Record<TaskState, WireTaskState> = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  input_required: 'TASK_STATE_INPUT_REQUIRED',
  auth_required: 'TASK_STATE_AUTH_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  canceled: 'TASK_STATE_CANCELED',
  rejected: 'TASK_STATE_REJECTED',
};

export function wireState(state: TaskState): WireTaskState {
  return WIRE_STATES[state];
}

/** The canonical state named by a wire state; `TASK_STATE_UNSPECIFIED` (or an unknown name) is null. */
export function stateFromWire(s: string): TaskState | null {
  const hit = (Object.entries(WIRE_STATES) as Array<[TaskState, WireTaskState]>).find(([, w]) => w === s);
  return hit ? hit[0] : null;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function agentMessage(task: Task, messageId: string, parts: WirePart[], metadata?: JsonObject): WireMessage {
  return { messageId, contextId: task.contextId, taskId: task.id, role: 'ROLE_AGENT', parts, ...(metadata ? { metadata } : {}) };
}

function questionMessage(task: Task, q: { key: string; question: string; schema: Json; context?: Json; deadlineAt: number }, inputVersion: number | null): WireMessage {
  const data: JsonObject = { key: q.key, question: q.question, schema: q.schema, deadline: iso(q.deadlineAt) };
  if (q.context !== undefined) data.context = q.context;
  if (inputVersion !== null) data.inputVersion = inputVersion;
  return agentMessage(task, `${task.id}:q:${q.key}:${q.deadlineAt}`, [{ text: q.question }, { data, mediaType: 'application/json' }], {
    belay: { inputKey: q.key, ...(inputVersion !== null ? { inputVersion } : {}) },
  });
}

/** The status message of the task as it is now (the question while waiting, the error or result at the end). */
export function statusMessage(task: Task): WireMessage | undefined {
  const p = task.pendingInput;
  if ((task.state === 'input_required' || task.state === 'auth_required') && p) {
    return questionMessage(task, { key: p.key, question: p.question, schema: p.schema, ...(p.context === undefined ? {} : { context: p.context }), deadlineAt: p.deadlineAt }, task.version);
  }
  const id = `${task.id}:s${task.version}`;
  switch (task.state) {
    case 'completed':
      return agentMessage(task, id, [{ text: 'Task completed' }, { data: task.result, mediaType: 'application/json' }]);
    case 'failed':
    case 'canceled':
    case 'rejected':
      return task.error ? agentMessage(task, id, [{ text: task.error.message }, { data: task.error as unknown as Json, mediaType: 'application/json' }]) : undefined;
    case 'working':
      return task.progress.message ? agentMessage(task, id, [{ text: task.progress.message }, { data: task.progress as unknown as Json, mediaType: 'application/json' }]) : undefined;
    default:
      return undefined;
  }
}

export function wireArtifact(a: Artifact): WireArtifact {
  const part: WirePart = typeof a.data === 'string' && a.mediaType.startsWith('text/') ? { text: a.data, mediaType: a.mediaType } : { data: a.data, mediaType: a.mediaType };
  return { artifactId: a.artifactId, name: a.name, parts: [part] };
}

function str(v: Json | undefined): string | null {
  return typeof v === 'string' ? v : null;
}

/** A message recorded in an event by the A2A front, re-addressed to the task it belongs to. */
function recordedMessage(task: Task, v: Json | undefined): WireMessage | null {
  if (!v || typeof v !== 'object' || Array.isArray(v) || typeof v.messageId !== 'string' || !Array.isArray(v.parts)) return null;
  return { ...(v as unknown as WireMessage), role: 'ROLE_USER', taskId: task.id, contextId: task.contextId };
}

/** The messages exchanged, oldest first, from the event log. */
export function historyFrom(task: Task, events: readonly TaskEvent[]): WireMessage[] {
  const history: WireMessage[] = [];
  for (const e of events) {
    const b = e.body;
    if (e.kind === 'created') {
      const m = recordedMessage(task, b.message);
      if (m) history.push(m);
    } else if (e.kind === 'input_required') {
      const key = str(b.key);
      if (key === null) continue;
      const deadline = typeof b.deadline_at === 'number' ? b.deadline_at : e.at;
      history.push(questionMessage(task, { key, question: str(b.question) ?? '', schema: b.schema ?? {}, ...(b.context === undefined ? {} : { context: b.context }), deadlineAt: deadline }, null));
    } else if (e.kind === 'input_received' && b.early !== true) {
      const m = recordedMessage(task, b.message);
      if (m) history.push(m);
      else {
        const key = str(b.key);
        const answer = key !== null ? task.answers[key] : undefined;
        if (answer !== undefined) history.push({ messageId: `${task.id}:e${e.seq}`, contextId: task.contextId, taskId: task.id, role: 'ROLE_USER', parts: [{ data: answer, mediaType: 'application/json' }] });
      }
    }
  }
  return history;
}

/** `historyLength` as §3.2.4 says: unset → all, 0 → the key is omitted, N → the most recent N. */
export function toWireTask(task: Task, options: { history?: WireMessage[] | null; historyLength?: number; includeArtifacts?: boolean } = {}): WireTask {
  const message = statusMessage(task);
  const wire: WireTask = {
    id: task.id,
    contextId: task.contextId,
    status: { state: wireState(task.state), ...(message ? { message } : {}), timestamp: iso(task.updatedAt) },
  };
  if (options.includeArtifacts !== false && task.artifacts.length > 0) wire.artifacts = task.artifacts.map(wireArtifact);
  else if (options.includeArtifacts === true) wire.artifacts = [];
  const history = options.history;
  if (history && options.historyLength !== 0) {
    wire.history = options.historyLength === undefined ? history : history.slice(Math.max(0, history.length - options.historyLength));
  }
  wire.metadata = {
    belay: {
      taskType: task.type,
      typeVersion: task.typeVersion,
      version: task.version,
      progress: task.progress as unknown as Json,
      createdAt: iso(task.createdAt),
      ...(task.cancelRequestedAt !== null ? { cancelRequestedAt: iso(task.cancelRequestedAt) } : {}),
    },
  };
  return wire;
}

/**
 * The status update an event announces, or null for events that change nothing a client sees. `current` is the task
 * as read after the event (used for the answer version of a still-pending question and the final result).
 */
export function statusUpdateFor(current: Task, e: TaskEvent): WireStatusUpdate | null {
  const b = e.body;
  const state = typeof b.state === 'string' && b.state in WIRE_STATES ? (b.state as TaskState) : null;
  if (state === null) return null;
  const base = { taskId: current.id, contextId: current.contextId };
  const status = (message?: WireMessage): WireStatusUpdate => ({ ...base, status: { state: wireState(state), ...(message ? { message } : {}), timestamp: iso(e.at) } });
  const id = `${current.id}:e${e.seq}`;
  switch (e.kind) {
    case 'created':
    case 'started':
      return status();
    case 'input_received':
      return b.early === true ? null : status();
    case 'input_required': {
      const key = str(b.key) ?? '';
      const pending = current.pendingInput;
      const stillPending = (current.state === 'input_required' || current.state === 'auth_required') && pending?.key === key;
      const deadline = typeof b.deadline_at === 'number' ? b.deadline_at : e.at;
      return status(questionMessage(current, { key, question: str(b.question) ?? '', schema: b.schema ?? {}, ...(b.context === undefined ? {} : { context: b.context }), deadlineAt: deadline }, stillPending ? current.version : null));
    }
    case 'progress': {
      const progress = b.progress && typeof b.progress === 'object' && !Array.isArray(b.progress) ? b.progress : null;
      const text = str(progress?.message) ?? (str(b.step_name) ? `step ${str(b.step_name)}` : null);
      return status(text ? agentMessage(current, id, [{ text }, { data: { step: b.step ?? null, stepName: b.step_name ?? null, progress }, mediaType: 'application/json' }]) : undefined);
    }
    case 'retry_scheduled': {
      const err = b.error && typeof b.error === 'object' && !Array.isArray(b.error) ? b.error : null;
      return status(agentMessage(current, id, [{ text: `Retrying step ${str(b.step_name) ?? ''} after: ${str(err?.message) ?? 'an error'}` }, { data: b, mediaType: 'application/json' }]));
    }
    case 'cancel_requested':
      return status(agentMessage(current, id, [{ text: 'Cancellation requested' }]));
    case 'completed':
      return status(agentMessage(current, id, [{ text: 'Task completed' }, { data: current.result, mediaType: 'application/json' }]));
    case 'failed':
    case 'canceled': {
      const err = current.error;
      return status(agentMessage(current, id, [{ text: err?.message ?? (e.kind === 'failed' ? 'Task failed' : 'Task canceled') }, { data: (err as unknown as Json) ?? b, mediaType: 'application/json' }]));
    }
    default:
      return status();
  }
}
