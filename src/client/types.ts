/**
 * @module client/types
 * The REST contract's wire representations, snake_case exactly as the server sends them. Declared here rather than
 * imported so `belay/client` has no server code in it (it runs in browsers and other services); a type-level test
 * (test/client/client.test.ts) checks that the server's representations stay assignable to these.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The REST contract's status vocabulary. */
export type TaskStatus = 'queued' | 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** The canonical (A2A) state behind `status`; finer grained. */
export type TaskState = 'submitted' | 'working' | 'input_required' | 'auth_required' | 'completed' | 'failed' | 'canceled' | 'rejected';

export const TERMINAL_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];

export function isTerminalStatus(status: TaskStatus | TaskState): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled' || status === 'canceled' || status === 'rejected';
}

/** Who has to act on an error: the caller, the worker retrying by itself, or an operator. */
export type ErrorOwner = 'caller' | 'worker' | 'operator';

export interface TaskErrorView {
  code: string;
  message: string;
  owner: ErrorOwner;
  retryable: boolean;
  details?: Record<string, unknown>;
}

export interface ProgressView {
  current: number | null;
  total: number | null;
  message: string | null;
}

export interface InputRequestView {
  key: string;
  question: string;
  /** JSON Schema the answer must satisfy. */
  schema: Record<string, unknown>;
  context: Json | null;
  deadline_at: string | null;
  on_deadline: 'fail' | 'cancel';
  /** Echo this in `answer({ version })`: an old browser tab cannot answer a newer question. */
  version: number;
}

export interface ArtifactRefView {
  artifact_id: string;
  name: string;
  media_type: string;
}

export interface ArtifactView extends ArtifactRefView {
  data: Json;
}

export interface OperatorView {
  lease_owner: string | null;
  lease_until: string | null;
  fence: number;
  attempts: number;
  wake_at: string | null;
  checkpoint: Json;
  next_seq: number;
}

/** `GET /v1/agent-tasks/{id}` and every response that returns the task. */
export interface TaskView {
  id: string;
  type: string;
  type_version: number;
  status: TaskStatus;
  state: TaskState;
  context_id: string;
  version: number;
  created_by: string;
  created_at: string | null;
  updated_at: string | null;
  terminal_at: string | null;
  expires_at: string | null;
  progress: ProgressView;
  step: { index: number; name: string | null; total: number | null };
  input_request: InputRequestView | null;
  cancel_requested_at: string | null;
  result_available: boolean;
  artifacts: ArtifactRefView[];
  error: TaskErrorView | null;
  callback_url: string | null;
  /** Recommended poll interval; null once the task is terminal. */
  poll_interval_ms: number | null;
  status_url: string;
  cancel_url: string;
  events_url: string;
  input_url: string;
  result_url: string;
  operator?: OperatorView;
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

export const TERMINAL_EVENT_KINDS: readonly TaskEventKind[] = ['completed', 'failed', 'canceled'];

/** One entry of the task's event log (SSE `data:` and JSON pages alike). Always carries `state`. */
export interface TaskEventView {
  seq: number;
  kind: TaskEventKind;
  at: string;
  state: TaskState;
  [member: string]: unknown;
}

export interface TaskListPage {
  tasks: TaskView[];
  next_cursor: string | null;
  next_url: string | null;
}

export interface EventPage {
  events: TaskEventView[];
  next_after: number;
  has_more: boolean;
}

export type CancelOutcome = 'canceled' | 'requested' | 'already_terminal' | 'already_requested';

export interface CancellationView extends TaskView {
  cancellation: CancelOutcome;
}

export interface ResultView {
  id: string;
  status: TaskStatus;
  /** The task's result when it completed; null otherwise. */
  result: Json;
  artifacts: ArtifactView[];
  error: TaskErrorView | null;
}

export interface EffectView {
  key: string;
  /** `uncertain`: started, outcome not confirmed (e.g. a crash in between); `applied`: result recorded. */
  status: 'applied' | 'uncertain';
  result: Json;
  started_at: string;
  applied_at: string | null;
}

export interface TaskTypeView {
  name: string;
  version: number;
  latest: boolean;
  description: string | null;
  steps: string[];
  input_schema: Record<string, unknown>;
}

/** RFC 9457 problem details with Belay's stable members. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  owner: ErrorOwner;
  retryable: boolean;
  instance?: string;
  [extension: string]: unknown;
}
