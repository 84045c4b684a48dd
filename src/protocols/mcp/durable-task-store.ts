/**
 * @module protocols/mcp/durable-task-store
 * The SDK's `TaskStore`, bound to the authenticated principal and backed by the TaskService, so the task a client
 * created is the same durable row REST and A2A serve. It ignores the MCP session id on purpose: sessions change on
 * every reconnect and do not exist across gateways or restarts, principals do. A task of another tenant, or of
 * another member of the tenant, is exactly a missing one.
 *
 * What maps where:
 * - `createTask`: `TaskService.createTask` for the tool's task type; the ttl is clamped and recorded (task-ttl.ts).
 * - `getTask` / `listTasks`: the principal's tasks, MCP view, minus those whose ttl has elapsed.
 * - `getTaskResult`: the finished task's tool result with related-task metadata.
 * - `updateTaskStatus('cancelled')`: `TaskService.cancel`, which stops the work through the runtime (the SDK's only
 *   hook for `tasks/cancel` is this status write; the store turns it into a real cancellation).
 * - `storeTaskResult`: refused. Results are committed by the worker that ran the steps, in the same transaction as
 *   the final checkpoint; a front writing them would break that. (A result with `isError: true` is a failed task by
 *   construction: only a failed or cancelled task yields one, and it reports status `failed`/`cancelled`.)
 */
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { CallToolResult, Request, RequestId, Result, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import { BelayError, isBelayError } from '../../core/errors.js';
import type { Task } from '../../core/task.js';
import { isTerminal } from '../../core/task-state.js';
import type { Principal } from '../../service/task-service.js';
import type { McpContext } from './mcp-context.js';
import { RPC, RpcError, toRpcError } from './mcp-errors.js';
import { assertNotExpired, clampTtl, contextIdForTtl, ttlElapsed } from './task-ttl.js';
import { legacyTask, statusOf, taskResultPayload } from './task-view.js';

const LIST_PAGE = 50;

export class PrincipalTaskStore implements TaskStore {
  constructor(
    private readonly ctx: McpContext,
    readonly who: Principal,
  ) {}

  /** The row, if this principal may see it and its MCP ttl has not elapsed. @throws BelayError NOT_FOUND | TASK_EXPIRED */
  async load(taskId: string): Promise<Task> {
    if (typeof taskId !== 'string' || taskId.length === 0 || taskId.length > 200) throw new BelayError('NOT_FOUND', 'No such task');
    return assertNotExpired(await this.ctx.service.getTask(this.who, taskId), this.ctx.now());
  }

  /**
   * Creates the Belay task for a `tools/call` (the tool name is the task type).
   * @throws BelayError UNKNOWN_TASK_TYPE | VALIDATION | PAYLOAD_TOO_LARGE | PAYLOAD_TOO_DEEP | INVALID_JSON
   */
  async createBelayTask(name: string, args: unknown, ttl: number | null | undefined): Promise<Task> {
    const granted = clampTtl(ttl, this.ctx.ttl);
    const { task } = await this.ctx.service.createTask(this.who, { type: name, input: args ?? {}, contextId: contextIdForTtl(granted) });
    return task;
  }

  async createTask(taskParams: CreateTaskOptions, _requestId: RequestId, request: Request): Promise<McpTask> {
    const params = (request.params ?? {}) as { name?: unknown; arguments?: unknown };
    if (request.method !== 'tools/call' || typeof params.name !== 'string') throw new RpcError(RPC.INVALID_PARAMS, 'Only tools/call creates Belay tasks');
    try {
      return legacyTask(await this.createBelayTask(params.name, params.arguments, taskParams.ttl), this.ctx.view);
    } catch (e) {
      throw toRpcError(e);
    }
  }

  /** The MCP task, or null when it is missing or foreign (the SDK turns null into -32602 "Task not found"). */
  async getTask(taskId: string): Promise<McpTask | null> {
    try {
      return legacyTask(await this.load(taskId), this.ctx.view);
    } catch (e) {
      if (isBelayError(e, 'NOT_FOUND')) return null;
      throw toRpcError(e);
    }
  }

  async storeTaskResult(taskId: string, _status: 'completed' | 'failed', _result: Result): Promise<void> {
    await this.getTask(taskId);
    throw new RpcError(RPC.INVALID_REQUEST, 'Belay task results are committed by the runtime that ran the task; a front cannot store one');
  }

  async getTaskResult(taskId: string): Promise<CallToolResult> {
    try {
      const task = await this.load(taskId);
      if (!isTerminal(task.state)) throw new BelayError('RESULT_NOT_READY', `The task is ${task.state}`, { details: { state: task.state } });
      return taskResultPayload(task);
    } catch (e) {
      throw toRpcError(e);
    }
  }

  async updateTaskStatus(taskId: string, status: McpTask['status'], statusMessage?: string): Promise<void> {
    if (status === 'cancelled') {
      await this.cancel(taskId, statusMessage);
      return;
    }
    const current = await this.getTask(taskId);
    if (!current) throw toRpcError(new BelayError('NOT_FOUND'));
    if (current.status !== status) throw new RpcError(RPC.INVALID_PARAMS, `The Belay runtime owns this task's status (${current.status}); only cancellation can be requested`);
  }

  /**
   * Cancels through the runtime (service.cancel): at once when nobody runs the task, else the worker's step sees
   * its AbortSignal and the task ends canceled with the effects it applied listed.
   * @throws BelayError NOT_FOUND | TASK_EXPIRED | ALREADY_TERMINAL (-32602 "Cannot cancel task in terminal status")
   */
  async cancelBelayTask(taskId: string, reason?: string): Promise<Task> {
    const current = await this.load(taskId);
    const before = statusOf(current);
    if (before === 'completed' || before === 'failed' || before === 'cancelled') {
      throw new BelayError('ALREADY_TERMINAL', `Cannot cancel task in terminal status: ${before}`);
    }
    const { task, outcome } = await this.ctx.service.cancel(this.who, taskId, reason ?? 'Cancelled by the MCP client');
    if (outcome === 'already_terminal') throw new BelayError('ALREADY_TERMINAL', `Cannot cancel task in terminal status: ${statusOf(task)}`);
    return task;
  }

  async cancel(taskId: string, reason?: string): Promise<McpTask> {
    try {
      return legacyTask(await this.cancelBelayTask(taskId, reason), this.ctx.view);
    } catch (e) {
      throw toRpcError(e);
    }
  }

  async listTasks(cursor?: string): Promise<{ tasks: McpTask[]; nextCursor?: string }> {
    try {
      const page = await this.ctx.service.listTasks(this.who, { limit: LIST_PAGE, ...(cursor ? { cursor } : {}) });
      const now = this.ctx.now();
      return {
        tasks: page.tasks.filter((t) => !ttlElapsed(t, now)).map((t) => legacyTask(t, this.ctx.view)),
        ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
      };
    } catch (e) {
      // An unreadable cursor is the caller's (VALIDATION → -32602); a store outage stays an internal error.
      throw toRpcError(e);
    }
  }
}
