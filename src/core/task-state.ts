/**
 * @module core/task-state
 * One state machine, three vocabularies (DESIGN.md §4). The canonical states are A2A's.
 */

export const TASK_STATES = ['submitted', 'working', 'input_required', 'auth_required', 'completed', 'failed', 'canceled', 'rejected'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TERMINAL_STATES: readonly TaskState[] = ['completed', 'failed', 'canceled', 'rejected'];
export const WAITING_STATES: readonly TaskState[] = ['input_required', 'auth_required'];
/** States a worker may claim (when `wake_at` has passed). */
export const CLAIMABLE_STATES: readonly TaskState[] = ['submitted', 'working'];

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.includes(state);
}

export function isWaiting(state: TaskState): boolean {
  return WAITING_STATES.includes(state);
}

const TRANSITIONS: Record<TaskState, readonly TaskState[]> = {
  submitted: ['working', 'canceled', 'failed', 'rejected'],
  working: ['working', 'input_required', 'auth_required', 'completed', 'failed', 'canceled'],
  input_required: ['working', 'canceled', 'failed'],
  auth_required: ['working', 'canceled', 'failed'],
  completed: [],
  failed: [],
  canceled: [],
  rejected: [],
};

export function canTransition(from: TaskState, to: TaskState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** The REST contract's vocabulary (second article). */
export function restStatus(state: TaskState): 'queued' | 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled' {
  switch (state) {
    case 'submitted':
      return 'queued';
    case 'working':
      return 'working';
    case 'input_required':
    case 'auth_required':
      return 'input_required';
    case 'completed':
      return 'completed';
    case 'failed':
    case 'rejected':
      return 'failed';
    case 'canceled':
      return 'cancelled';
  }
}

/** The MCP Tasks vocabulary (2025-11-25 and the `io.modelcontextprotocol/tasks` extension): REST's, but MCP has no queued state. */
export function mcpStatus(state: TaskState): 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled' {
  const status = restStatus(state);
  return status === 'queued' ? 'working' : status;
}
