/**
 * @module core/task
 * The task record as the service, runtime and fronts see it (camelCase). Adapters map their rows to this.
 */
import type { TaskError } from './errors.js';
import type { TaskState } from './task-state.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface Progress {
  current: number | null;
  total: number | null;
  message: string | null;
}

/** What a deadline does to a question nobody answered. */
export type DeadlineAction = 'fail' | 'cancel';

/** The question a paused task is waiting on. */
export interface PendingInput {
  /** Names the answer inside the task; unique per task (`[A-Za-z0-9_-]`). */
  key: string;
  question: string;
  /** JSON Schema the answer must satisfy. */
  schema: JsonObject;
  deadlineAt: number;
  onDeadline: DeadlineAction;
  /** Structured context for the person answering (for example the proposed revocations). */
  context?: Json;
  askedAt: number;
}

export interface Artifact {
  artifactId: string;
  name: string;
  mediaType: string;
  data: Json;
}

export interface Task {
  id: string;
  tenant: string;
  contextId: string;
  type: string;
  typeVersion: number;
  state: TaskState;
  step: number;
  checkpoint: Json;
  input: Json;
  progress: Progress;
  pendingInput: PendingInput | null;
  /** Answers received, keyed by question key; a step that asks an answered question gets it back at once. */
  answers: Record<string, Json>;
  cancelRequestedAt: number | null;
  result: Json;
  artifacts: Artifact[];
  error: TaskError | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  fence: number;
  version: number;
  nextSeq: number;
  attempts: number;
  wakeAt: number | null;
  createdAt: number;
  updatedAt: number;
  terminalAt: number | null;
  expiresAt: number | null;
  createdBy: string;
  callbackUrl: string | null;
}

export type TaskEventKind =
  | 'created'
  | 'started'
  | 'progress'
  | 'input_required'
  | 'input_received'
  | 'retry_scheduled'
  | 'cancel_requested'
  | 'completed'
  | 'failed'
  | 'canceled';

export interface TaskEvent {
  taskId: string;
  seq: number;
  kind: TaskEventKind;
  /** Always carries `state`, plus whatever the kind adds (progress, question, error, artifacts...). */
  body: JsonObject;
  at: number;
}

export interface SideEffectRecord {
  taskId: string;
  key: string;
  /** `pending`: started and not confirmed (its outcome is unknown after a crash); `applied`: result recorded. */
  status: 'pending' | 'applied';
  result: Json;
  startedAt: number;
  appliedAt: number | null;
  fence: number;
}

/** What retention leaves of an expired task, so callers get 410 Gone instead of a bare 404. */
export interface Tombstone {
  id: string;
  tenant: string;
  type: string;
  finalState: string;
  createdBy: string;
  createdAt: number;
  terminalAt: number | null;
  expiredAt: number;
}

/**
 * Where to send a task's updates (an A2A `TaskPushNotificationConfig`, stored durably per tenant and task).
 * Delivery (signing, retries, SSRF checks at dispatch) is the delivery dispatcher's job; the store only keeps these.
 */
export interface PushConfig {
  /** Unique per task: given by the client or generated. */
  id: string;
  taskId: string;
  tenant: string;
  createdBy: string;
  /** An http(s) URL, checked at registration (scheme, length, no userinfo). */
  url: string;
  /** Echoed to the receiver so it can tell this task's notifications apart. */
  token: string | null;
  /** Sent as `Authorization: <scheme> <credentials>`. A secret: never logged. */
  authentication: { scheme: string; credentials: string | null } | null;
  createdAt: number;
  updatedAt: number;
}
