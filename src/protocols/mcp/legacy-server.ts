/**
 * @module protocols/mcp/legacy-server
 * The MCP 2025-11-25 server on `@modelcontextprotocol/sdk` 1.x: the low-level `Server` with `capabilities.tasks`
 * (`list`, `cancel`, `requests.tools.call`), the durable principal-bound TaskStore, and Belay's own handlers for
 * `tools/list`, `tools/call` and `tasks/*`. One is built per session, or per request when served without one.
 *
 * SDK 1.32.2 deviations patched here (see shared/reference/mcp-tasks.md §2.2):
 * - `tasks/cancel` only writes `updateTaskStatus('cancelled')` and nothing stops the work: here it is
 *   `TaskService.cancel`, which reaches the running step's AbortSignal through the runtime.
 * - `tasks/result` polls the store and delivers elicitations only from an in-memory message queue whose resolvers
 *   die with the process: here it follows the durable row (watch + poll) and renders the durable pending question
 *   as an elicitation whose id any gateway can resolve (input-request.ts, elicitation-answers.ts).
 * - `tasks/list` turned every error into -32602, `tasks/cancel` every non-MCP error into -32600: here the one error
 *   table decides (a bad cursor is -32602, a store outage -32603).
 * - McpError prefixes messages with "MCP error <code>: " on the wire: here the spec's exact wording is sent.
 * - McpServer wraps an unknown tool, and any failure of a task-augmented call, into a `CallToolResult` (a broken
 *   `CreateTaskResult` for task calls, typescript-sdk #1385): here an unknown tool is -32602 and a task-augmented call
 *   with bad arguments is -32602; a plain call with bad arguments is a tool error (`isError: true`), as the tools spec
 *   asks for input validation errors.
 * - A request whose params fail the method's schema is -32603 "Internal error" in the SDK (its handler wrapper
 *   throws the ZodError): here params are validated inside the handlers and answered -32602.
 * - The status never goes back to `working` by itself after input (SDK): here the status is the row's.
 * - `notifications/tasks/status` is only sent by writes through the request-scoped store: here a session follows
 *   the event log (status-notifier.ts).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type RequestId,
  type ServerResult,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { isBelayError } from '../../core/errors.js';
import type { Task } from '../../core/task.js';
import { isTerminal } from '../../core/task-state.js';
import type { Principal } from '../../service/task-service.js';
import { PrincipalTaskStore } from './durable-task-store.js';
import type { InputKicks } from './elicitation-answers.js';
import type { McpContext } from './mcp-context.js';
import { RPC, RpcError, toRpcError } from './mcp-errors.js';
import { sendElicitation, type McpSession } from './mcp-session.js';
import { followTask } from '../../service/task-follower.js';
import { legacyTask, statusMessage, statusOf, taskResultPayload, toolResult } from './task-view.js';
import { toolFor, toolList } from './tool-catalog.js';

export interface LegacyServerHooks {
  /** The live session this server belongs to, or null when a request is served without one. */
  session: McpSession | null;
  /** The abort signal of the HTTP request that carries a JSON-RPC request (the client went away). */
  signalFor(requestId: RequestId): AbortSignal | undefined;
  kicks: InputKicks;
}

export const LEGACY_CAPABILITIES = {
  tools: { listChanged: false },
  tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
} as const;

/** Input errors a plain tool call reports as a tool execution error (isError) rather than a protocol error. */
const INPUT_ERRORS = ['VALIDATION', 'PAYLOAD_TOO_LARGE', 'PAYLOAD_TOO_DEEP', 'INVALID_JSON'] as const;

/** Registers under the method name only, so malformed params reach `strictParams` (and -32602), not the SDK's -32603. */
function lenient<M extends string>(method: M) {
  return z.looseObject({ method: z.literal(method), params: z.unknown().optional() });
}

function strictParams<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } } }, request: unknown, method: string): T {
  const parsed = schema.safeParse(request);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
    throw new RpcError(RPC.INVALID_PARAMS, `Invalid params for ${method}`, { code: 'validation', owner: 'caller', retryable: false, issues });
  }
  return parsed.data;
}

function asResult<T>(value: T): ServerResult {
  return value as unknown as ServerResult;
}

function combine(...signals: Array<AbortSignal | undefined>): AbortSignal | undefined {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  return present.length === 0 ? undefined : present.length === 1 ? present[0] : AbortSignal.any(present);
}

export function createLegacyServer(ctx: McpContext, who: Principal, hooks: LegacyServerHooks): Server {
  const store = new PrincipalTaskStore(ctx, who);
  const server = new Server(ctx.serverInfo, {
    capabilities: LEGACY_CAPABILITIES,
    taskStore: store,
    instructions: 'Each tool starts a durable Belay task. Call it as a task (params.task) to get a handle at once and poll tasks/get; a plain call waits for the end.',
  });
  const { session, kicks } = hooks;
  // Without a session the client's capabilities are unknown: offer the question; a client that cannot answer says so.
  const canElicit = () => (session ? session.canElicit : true);

  /**
   * Waits for the task to finish on behalf of one JSON-RPC request, asking its pending question on that request's
   * response stream (once per question version while it is outstanding, again after a refused answer).
   */
  async function waitForEnd(task: Task, requestId: RequestId, signal: AbortSignal | undefined, onChange?: (t: Task) => Promise<void>): Promise<Task | null> {
    let asked = -1;
    return followTask(
      ctx.service,
      who,
      task.id,
      async (t) => {
        if (isTerminal(t.state)) return true;
        await onChange?.(t);
        if (statusOf(t) === 'input_required' && t.version !== asked && canElicit() && (!session || session.reserve(t.id, t.version))) {
          asked = t.version;
          const transport = server.transport;
          const sent = transport ? await sendElicitation(transport, t, requestId).catch(() => false) : false;
          if (!sent) session?.release(t.id, t.version);
        }
        return false;
      },
      {
        pollMs: ctx.followPollMs,
        ...(signal ? { signal } : {}),
        kicks: (kick) =>
          kicks.subscribe(task.id, () => {
            asked = -1;
            kick();
          }),
      },
    );
  }

  server.setRequestHandler(lenient('tools/list'), (raw) => {
    strictParams(ListToolsRequestSchema, raw, 'tools/list');
    return { tools: toolList(ctx.service.registry) };
  });

  server.setRequestHandler(lenient('tools/call'), async (raw, extra) => {
    const request = strictParams(CallToolRequestSchema, raw, 'tools/call');
    const { name, arguments: args, task: augmentation } = request.params;
    if (!toolFor(ctx.service.registry, name)) throw new RpcError(RPC.INVALID_PARAMS, `Unknown tool: ${name}`);
    if (augmentation) {
      // Task-augmented: the durable task exists (tasks/get resolves) before this answers.
      const created = await store.createBelayTask(name, args, augmentation.ttl).catch((e: unknown) => {
        throw toRpcError(e);
      });
      session?.notifier.follow(created.id, created);
      return asResult({
        task: legacyTask(created, ctx.view),
        _meta: { 'io.modelcontextprotocol/model-immediate-response': `Started durable task ${created.id} (${name}). Poll tasks/get; tasks/result returns the outcome.` },
      });
    }
    let created: Task;
    try {
      created = await store.createBelayTask(name, args, undefined);
    } catch (e) {
      if (INPUT_ERRORS.some((code) => isBelayError(e, code))) {
        const err = toRpcError(e);
        return { content: [{ type: 'text', text: `${err.message}: ${JSON.stringify(err.data?.issues ?? err.data ?? {})}` }], isError: true } satisfies CallToolResult;
      }
      throw toRpcError(e);
    }
    // A plain call is held until the task ends; its progress token stays valid the whole time.
    const progressToken = extra._meta?.progressToken;
    let progress = 0;
    const done = await waitForEnd(created, extra.requestId, combine(hooks.signalFor(extra.requestId), extra.signal), async (t) => {
      if (progressToken !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: ++progress, message: statusMessage(t, ctx.view) } });
      }
    });
    if (!done) throw new RpcError(RPC.INTERNAL_ERROR, 'The request was abandoned; the task goes on', { task_id: created.id });
    return toolResult(done);
  });

  server.setRequestHandler(lenient('tasks/get'), async (raw) => {
    const request = strictParams(GetTaskRequestSchema, raw, 'tasks/get');
    const task = await store.load(request.params.taskId).catch((e: unknown) => {
      throw toRpcError(e);
    });
    session?.notifier.follow(task.id, task);
    // tasks/get carries no related-task metadata: the taskId parameter is the source of truth.
    return asResult(legacyTask(task, ctx.view));
  });

  server.setRequestHandler(lenient('tasks/result'), async (raw, extra) => {
    const request = strictParams(GetTaskPayloadRequestSchema, raw, 'tasks/result');
    const task = await store.load(request.params.taskId).catch((e: unknown) => {
      throw toRpcError(e);
    });
    session?.notifier.follow(task.id, task);
    const done = await waitForEnd(task, extra.requestId, combine(hooks.signalFor(extra.requestId), extra.signal));
    if (!done) throw new RpcError(RPC.INTERNAL_ERROR, 'The request was abandoned; the task goes on');
    return asResult(taskResultPayload(done));
  });

  server.setRequestHandler(lenient('tasks/list'), async (raw) => {
    const request = strictParams(ListTasksRequestSchema, raw, 'tasks/list');
    const page = await store.listTasks(request.params?.cursor);
    return asResult(page);
  });

  server.setRequestHandler(lenient('tasks/cancel'), async (raw) => {
    const request = strictParams(CancelTaskRequestSchema, raw, 'tasks/cancel');
    const task = await store.cancelBelayTask(request.params.taskId).catch((e: unknown) => {
      throw toRpcError(e);
    });
    session?.notifier.follow(task.id, task);
    return asResult(legacyTask(task, ctx.view));
  });

  return server;
}
