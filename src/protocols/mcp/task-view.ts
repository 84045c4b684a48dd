/**
 * @module protocols/mcp/task-view
 * The MCP views of one Belay task row: the 2025-11-25 `Task`, the tool result `tasks/result` returns, and the tasks
 * extension's `DetailedTask` with the result or the input requests inlined.
 *
 * Status (DESIGN.md §4, `mcpStatus`): submitted and working are `working`; input_required and auth_required are
 * `input_required`; failed and rejected are `failed`; canceled is `cancelled`. One refinement: a task whose
 * cancellation is committed (`cancel_requested_at`) but whose worker has not stopped yet is already `cancelled`,
 * because that outcome is decided (its next commit is refused and it ends canceled) and 2025-11-25 requires
 * `tasks/cancel` to answer with a cancelled task. `tasks/result` still waits for the worker to stop, so the result
 * lists the effects it applied.
 *
 * Results: a completed task's result is the tool result (JSON text plus `structuredContent`, artifacts as embedded
 * resources). A failed task's result has `isError: true`: in 2025-11-25 such a result means status `failed`; the
 * extension forbids `failed` for tool errors, so there the task is `completed` with that `isError` result, and
 * `failed` (with a JSON-RPC error) is kept for a task the runtime refused (`rejected`).
 */
import type { CallToolResult, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import type { Json, JsonObject, Task } from '../../core/task.js';
import { isTerminal, mcpStatus } from '../../core/task-state.js';
import { RPC } from './mcp-errors.js';
import { RELATED_TASK_META, elicitationFor, inputKey } from './input-request.js';
import { reportedTtl } from './task-ttl.js';

export type McpStatus = McpTask['status'];

export interface ViewOptions {
  /** Suggested poll interval while work moves; a paused task suggests a longer one. */
  pollIntervalMs: number;
  /** Step names of the task's type version, for the status message. */
  stepNames?: (task: Task) => readonly string[] | undefined;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The task's MCP status, with a committed cancellation reported as `cancelled` (see the module comment). */
export function statusOf(task: Task): McpStatus {
  if (!isTerminal(task.state) && task.cancelRequestedAt !== null) return 'cancelled';
  return mcpStatus(task.state);
}

function progressText(task: Task): string | null {
  const p = task.progress;
  const counted = p.current !== null ? (p.total !== null ? `${p.current}/${p.total}` : `${p.current}`) : null;
  if (p.message && counted) return `${p.message} (${counted})`;
  return p.message ?? counted;
}

export function statusMessage(task: Task, options: ViewOptions): string {
  if (!isTerminal(task.state) && task.cancelRequestedAt !== null) return 'Cancellation requested: the worker is stopping';
  switch (task.state) {
    case 'submitted':
      return 'Queued';
    case 'working': {
      const steps = options.stepNames?.(task);
      const step = steps ? `step ${task.step + 1}/${steps.length} ${steps[task.step] ?? ''}`.trim() : `step ${task.step + 1}`;
      const progress = progressText(task);
      return progress ? `${step}: ${progress}` : step;
    }
    case 'input_required':
    case 'auth_required':
      return task.pendingInput ? `Waiting for input "${task.pendingInput.key}": ${task.pendingInput.question}` : 'Waiting for input';
    case 'completed':
      return 'Completed';
    case 'failed':
    case 'rejected':
    case 'canceled':
      return task.error ? `${task.error.message} (${task.error.code})` : task.state;
  }
}

function pollInterval(task: Task, options: ViewOptions): number | undefined {
  if (isTerminal(task.state)) return undefined;
  return task.state === 'input_required' || task.state === 'auth_required' ? options.pollIntervalMs * 5 : options.pollIntervalMs;
}

/** The 2025-11-25 `Task`. */
export function legacyTask(task: Task, options: ViewOptions): McpTask {
  const poll = pollInterval(task, options);
  return {
    taskId: task.id,
    status: statusOf(task),
    statusMessage: statusMessage(task, options),
    createdAt: iso(task.createdAt),
    lastUpdatedAt: iso(task.updatedAt),
    ttl: reportedTtl(task),
    ...(poll === undefined ? {} : { pollInterval: poll }),
  };
}

function isObject(v: Json): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * What the tool call returns once the task has finished (a finished task only: callers wait for the end).
 * `tasks/result` adds the related-task metadata.
 */
export function toolResult(task: Task): CallToolResult {
  if (task.state === 'completed') {
    return {
      content: [
        { type: 'text', text: JSON.stringify(task.result) },
        ...task.artifacts.map((a) => ({
          type: 'resource' as const,
          resource: {
            uri: `belay://tasks/${encodeURIComponent(task.id)}/artifacts/${encodeURIComponent(a.name)}`,
            mimeType: a.mediaType,
            text: typeof a.data === 'string' && !a.mediaType.includes('json') ? a.data : JSON.stringify(a.data),
          },
        })),
      ],
      structuredContent: isObject(task.result) ? task.result : { result: task.result },
      isError: false,
    };
  }
  const error = task.error ?? { code: task.state.toUpperCase(), message: `The task is ${task.state}`, owner: 'operator', retryable: false };
  const verb = task.state === 'canceled' ? 'cancelled' : 'failed';
  return {
    content: [{ type: 'text', text: `The task ${verb}: ${error.message} (${error.code})` }],
    structuredContent: { status: verb, error: error as unknown as JsonObject },
    isError: true,
  };
}

/** The tool result with the related-task metadata `tasks/result` must carry. */
export function taskResultPayload(task: Task): CallToolResult {
  const result = toolResult(task);
  return { ...result, _meta: { ...result._meta, [RELATED_TASK_META]: { taskId: task.id } } };
}

// ---- The tasks extension (`io.modelcontextprotocol/tasks`, protocol 2026-07-28) ---------------------------------

export type DetailedTask = JsonObject & { taskId: string; status: McpStatus };

function extensionBase(task: Task, status: McpStatus, options: ViewOptions): DetailedTask {
  const poll = pollInterval(task, options);
  return {
    taskId: task.id,
    status,
    statusMessage: statusMessage(task, options),
    createdAt: iso(task.createdAt),
    lastUpdatedAt: iso(task.updatedAt),
    ttlMs: reportedTtl(task),
    ...(poll === undefined ? {} : { pollIntervalMs: poll }),
  };
}

/** The extension's `DetailedTask`: status plus the inlined result, error or outstanding input requests. */
export function detailedTask(task: Task, options: ViewOptions): DetailedTask {
  const status = statusOf(task);
  if (status === 'input_required') {
    const params = elicitationFor(task, false);
    const inputRequests: JsonObject = {};
    if (params && task.pendingInput) {
      inputRequests[inputKey({ key: task.pendingInput.key, version: task.version })] = { method: 'elicitation/create', params: params as unknown as JsonObject };
    }
    return { ...extensionBase(task, 'input_required', options), inputRequests };
  }
  if (task.state === 'rejected') {
    const error = task.error;
    return {
      ...extensionBase(task, 'failed', options),
      error: { code: RPC.INTERNAL_ERROR, message: error?.message ?? 'The task was rejected', data: { code: error?.code ?? 'rejected' } },
    };
  }
  if (task.state === 'completed' || task.state === 'failed') {
    return { ...extensionBase(task, 'completed', options), result: { resultType: 'complete', ...(toolResult(task) as unknown as JsonObject) } };
  }
  return extensionBase(task, status === 'failed' ? 'completed' : status, options);
}

/** The extension's `CreateTaskResult`: the seed state, marked `resultType: "task"`. */
export function createTaskResultV2(task: Task, options: ViewOptions): JsonObject {
  const poll = pollInterval(task, options);
  return {
    resultType: 'task',
    taskId: task.id,
    status: statusOf(task),
    statusMessage: statusMessage(task, options),
    createdAt: iso(task.createdAt),
    lastUpdatedAt: iso(task.updatedAt),
    ttlMs: reportedTtl(task),
    ...(poll === undefined ? {} : { pollIntervalMs: poll }),
  };
}
