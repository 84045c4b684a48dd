/**
 * @module protocols/mcp/tasks-extension
 * The next revision's tasks extension (`io.modelcontextprotocol/tasks`, protocol 2026-07-28, SEP-2663), served
 * next to 2025-11-25 on the same endpoint over the same task rows. SDK 1.x has no runtime for the 2026-07-28
 * revision (and SDK 2.x dropped 2025-11-25), so this is implemented here directly, statelessly, per request:
 *
 * - The era is chosen per request by its `_meta["io.modelcontextprotocol/protocolVersion"]` (a dual-era server:
 *   an `initialize` selects 2025-11-25 and a session; per-request metadata selects this). Headers
 *   (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) must match the body (-32020), an unknown version gets -32022
 *   with the supported list, an unknown method 404 + -32601 (`tasks/list` and `tasks/result` do not exist here).
 * - `server/discover` advertises `extensions["io.modelcontextprotocol/tasks"]: {}`.
 * - `tools/call` from a client whose per-request capabilities declare the extension returns `resultType: "task"` at
 *   once; from any other client it is held until the task ends, and a question is asked through multi round-trip
 *   `input_required` results whose `requestState` names the task (the retry with `inputResponses` answers it and
 *   holds again). Closing a held call's stream cancels its task, as the revision defines for a cancelled request.
 * - `tasks/get` inlines the result, or the outstanding question as `inputRequests` keyed `<key>@<version>`;
 *   `tasks/update` answers through `TaskService.answer` (responses to keys no longer outstanding are ignored, as the
 *   spec says; an answer that fails the schema is -32602); `tasks/cancel` acknowledges and cancels through the
 *   runtime. Clients that did not declare the extension get -32021 on `tasks/*`.
 * Not served: `subscriptions/listen` (`notifications/tasks` pushes); clients poll `tasks/get`.
 */
import { BelayError, isBelayError } from '../../core/errors.js';
import type { JsonObject, Task } from '../../core/task.js';
import { isTerminal } from '../../core/task-state.js';
import type { Principal } from '../../service/task-service.js';
import { PrincipalTaskStore } from './durable-task-store.js';
import type { McpContext } from './mcp-context.js';
import { RPC, rpcErrorFor, type JsonRpcErrorObject } from './mcp-errors.js';
import { answerFromContent, elicitationFor, inputKey, parseInputKey } from './input-request.js';
import { followTask } from '../../service/task-follower.js';
import { createTaskResultV2, detailedTask, statusOf, toolResult } from './task-view.js';
import { toolFor, toolList } from './tool-catalog.js';

export const MODERN_VERSION = '2026-07-28';
export const SUPPORTED_VERSIONS = [MODERN_VERSION, '2025-11-25'] as const;
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';
const REQUEST_STATE_PREFIX = 'belay-task.';

type Id = string | number;

interface RpcRequest {
  jsonrpc: '2.0';
  id?: Id;
  method: string;
  params?: JsonObject;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Whether a JSON-RPC message is addressed to the 2026-07-28 revision (it carries the per-request envelope). */
export function isModernMessage(message: unknown): boolean {
  if (!isObject(message) || typeof message.method !== 'string') return false;
  const meta = isObject(message.params) && isObject(message.params._meta) ? message.params._meta : null;
  return message.method === 'server/discover' || (meta !== null && PROTOCOL_VERSION_META in meta);
}

class ModernError extends Error {
  constructor(
    readonly error: JsonRpcErrorObject,
    readonly http: number,
  ) {
    super(error.message);
  }
}

const headerMismatch = (message: string) => new ModernError({ code: RPC.HEADER_MISMATCH, message: `Header mismatch: ${message}` }, 400);
const missingExtension = () =>
  new ModernError({ code: RPC.MISSING_REQUIRED_CLIENT_CAPABILITY, message: 'Missing required client capability', data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } }, 400);

/** An `Mcp-Name` value, decoded from the `=?base64?…?=` sentinel form. */
function decodeHeaderValue(v: string): string {
  const m = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(v);
  return m ? Buffer.from(m[1]!, 'base64').toString('utf8') : v;
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

function errorResponse(id: Id | null, error: JsonRpcErrorObject, status: number): Response {
  return json({ jsonrpc: '2.0', id, error }, status);
}

function checkHeaders(req: Request, msg: RpcRequest, version: string | undefined): string {
  const header = req.headers.get('mcp-protocol-version');
  if (!version) throw headerMismatch(`the request carries no ${PROTOCOL_VERSION_META} in _meta`);
  if (header === null) throw headerMismatch('MCP-Protocol-Version header is required');
  if (header !== version) throw headerMismatch(`MCP-Protocol-Version header value '${header}' does not match body value '${version}'`);
  if (version !== MODERN_VERSION) {
    throw new ModernError({ code: RPC.UNSUPPORTED_PROTOCOL_VERSION, message: 'Unsupported protocol version', data: { supported: [...SUPPORTED_VERSIONS], requested: version } }, 400);
  }
  const method = req.headers.get('mcp-method');
  if (method === null) throw headerMismatch('Mcp-Method header is required');
  if (method !== msg.method) throw headerMismatch(`Mcp-Method header value '${method}' does not match body value '${msg.method}'`);
  const nameSource = msg.method === 'tools/call' ? msg.params?.name : msg.method.startsWith('tasks/') ? msg.params?.taskId : undefined;
  if (typeof nameSource === 'string') {
    const raw = req.headers.get('mcp-name');
    if (raw === null) throw headerMismatch('Mcp-Name header is required');
    const name = decodeHeaderValue(raw);
    if (name !== nameSource) throw headerMismatch(`Mcp-Name header value '${name}' does not match body value '${nameSource}'`);
  }
  return version;
}

function requestStateFor(task: Task): string {
  return `${REQUEST_STATE_PREFIX}${Buffer.from(JSON.stringify([task.id])).toString('base64url')}`;
}

function taskIdFromRequestState(state: unknown): string | null {
  if (typeof state !== 'string' || !state.startsWith(REQUEST_STATE_PREFIX) || state.length > 400) return null;
  try {
    const v = JSON.parse(Buffer.from(state.slice(REQUEST_STATE_PREFIX.length), 'base64url').toString('utf8')) as unknown;
    return Array.isArray(v) && typeof v[0] === 'string' ? v[0] : null;
  } catch {
    return null;
  }
}

export interface ModernDeps {
  ctx: McpContext;
  who: Principal;
  /** Aborts when the client closes the HTTP request (a held call's cancellation). */
  signal: AbortSignal;
}

/** Serves one 2026-07-28 JSON-RPC message. */
export async function handleModernMessage(req: Request, message: unknown, deps: ModernDeps): Promise<Response> {
  if (!isObject(message) || message.jsonrpc !== '2.0' || typeof message.method !== 'string') {
    return errorResponse(null, { code: RPC.INVALID_REQUEST, message: 'Invalid Request: expected one JSON-RPC request' }, 400);
  }
  const msg = message as unknown as RpcRequest;
  const id = msg.id;
  if (id === undefined) return new Response(null, { status: 202 });
  if (typeof id !== 'string' && typeof id !== 'number') return errorResponse(null, { code: RPC.INVALID_REQUEST, message: 'Invalid Request: id must be a string or number' }, 400);
  if (msg.params !== undefined && !isObject(msg.params)) return errorResponse(id, { code: RPC.INVALID_PARAMS, message: 'params must be an object' }, 200);
  const params = msg.params ?? {};
  const meta = isObject(params._meta) ? params._meta : {};
  try {
    checkHeaders(req, msg, typeof meta[PROTOCOL_VERSION_META] === 'string' ? meta[PROTOCOL_VERSION_META] : undefined);
    const caps = meta[CLIENT_CAPABILITIES_META];
    const withTasks = isObject(caps) && isObject(caps.extensions) && isObject(caps.extensions[TASKS_EXTENSION]);
    const result = await dispatch(msg.method, params, withTasks, deps, id);
    if (result instanceof Response) return result;
    return json({ jsonrpc: '2.0', id, result });
  } catch (e) {
    if (e instanceof ModernError) return errorResponse(id, e.error, e.http);
    const err = rpcErrorFor(e);
    return errorResponse(id, err, err.code === RPC.METHOD_NOT_FOUND ? 404 : 200);
  }
}

function taskIdParam(params: JsonObject): string {
  if (typeof params.taskId !== 'string') throw new BelayError('VALIDATION', 'params.taskId must be a string');
  return params.taskId;
}

async function dispatch(method: string, params: JsonObject, withTasks: boolean, deps: ModernDeps, id: Id): Promise<JsonObject | Response> {
  const { ctx, who } = deps;
  const store = new PrincipalTaskStore(ctx, who);
  switch (method) {
    case 'server/discover':
      return {
        resultType: 'complete',
        supportedVersions: [...SUPPORTED_VERSIONS],
        capabilities: { tools: { listChanged: false }, extensions: { [TASKS_EXTENSION]: {} } },
        instructions: 'Each tool starts a durable Belay task; with the tasks extension a call returns a task handle at once.',
        ttlMs: 0,
        cacheScope: 'private',
        _meta: { [SERVER_INFO_META]: ctx.serverInfo },
      };
    case 'ping':
      return { resultType: 'complete' };
    case 'tools/list':
      return {
        resultType: 'complete',
        // The server decides per call whether it becomes a task: no per-tool execution hints in this revision.
        tools: toolList(ctx.service.registry).map(({ execution: _hint, ...tool }) => tool as unknown as JsonObject),
        ttlMs: 0,
        cacheScope: 'private',
      };
    case 'tools/call':
      return callTool(params, withTasks, deps, store, id);
    case 'tasks/get': {
      if (!withTasks) throw missingExtension();
      const task = await store.load(taskIdParam(params));
      return { resultType: 'complete', ...detailedTask(task, ctx.view) };
    }
    case 'tasks/update': {
      if (!withTasks) throw missingExtension();
      await answerInputResponses(deps, store, taskIdParam(params), params.inputResponses);
      return { resultType: 'complete' };
    }
    case 'tasks/cancel': {
      if (!withTasks) throw missingExtension();
      const taskId = taskIdParam(params);
      try {
        await store.cancelBelayTask(taskId, 'Cancelled by the MCP client');
      } catch (e) {
        // Cancellation is cooperative and acknowledged even when the work already finished.
        if (!isBelayError(e, 'ALREADY_TERMINAL')) throw e;
      }
      return { resultType: 'complete' };
    }
    default:
      throw new ModernError({ code: RPC.METHOD_NOT_FOUND, message: `Method not found: ${method}` }, 404);
  }
}

/** Answers each response whose key is outstanding; others are ignored (already answered, superseded, unknown). */
async function answerInputResponses(deps: ModernDeps, store: PrincipalTaskStore, taskId: string, responses: unknown): Promise<void> {
  if (!isObject(responses)) throw new BelayError('VALIDATION', 'params.inputResponses must be an object');
  const task = await store.load(taskId);
  for (const [key, response] of Object.entries(responses)) {
    const ref = parseInputKey(key);
    if (!ref || !isObject(response) || response.action !== 'accept') continue;
    const pending = task.pendingInput && task.pendingInput.key === ref.key ? task.pendingInput : null;
    const content = isObject(response.content) ? response.content : {};
    try {
      await deps.ctx.service.answer(deps.who, taskId, { version: ref.version, key: ref.key, answer: answerFromContent(pending, content) });
    } catch (e) {
      if (isBelayError(e, 'STALE_VERSION') || isBelayError(e, 'NOT_WAITING_FOR_INPUT') || isBelayError(e, 'INPUT_DEADLINE_PASSED')) continue;
      throw e;
    }
  }
}

async function callTool(params: JsonObject, withTasks: boolean, deps: ModernDeps, store: PrincipalTaskStore, id: Id): Promise<JsonObject | Response> {
  const { ctx } = deps;
  const name = params.name;
  if (typeof name !== 'string') throw new BelayError('VALIDATION', 'params.name must be a string');
  if (!toolFor(ctx.service.registry, name)) throw new BelayError('UNKNOWN_TASK_TYPE', `Unknown tool: ${name}`);
  // A retry of a held call after input: the request state names the task, the responses answer its question.
  const resumed = taskIdFromRequestState(params.requestState);
  let task: Task;
  if (resumed) {
    await answerInputResponses(deps, store, resumed, params.inputResponses ?? {});
    task = await store.load(resumed);
  } else {
    try {
      task = await store.createBelayTask(name, params.arguments, null);
    } catch (e) {
      if (!withTasks && (isBelayError(e, 'VALIDATION') || isBelayError(e, 'PAYLOAD_TOO_LARGE') || isBelayError(e, 'PAYLOAD_TOO_DEEP'))) {
        const err = rpcErrorFor(e);
        return { resultType: 'complete', content: [{ type: 'text', text: `${err.message}: ${JSON.stringify(err.data?.issues ?? {})}` }], isError: true };
      }
      throw e;
    }
  }
  if (withTasks) return createTaskResultV2(task, ctx.view);
  return holdCall(task, deps, id);
}

/**
 * A call from a client without the extension: wait for the end (SSE with keep-alives, then the result), or return an
 * `input_required` result for the task's question.
 */
function holdCall(task: Task, deps: ModernDeps, id: Id): Response {
  const { ctx, who, signal } = deps;
  const encoder = new TextEncoder();
  let keepAlive: NodeJS.Timeout | null = null;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      keepAlive = setInterval(() => controller.enqueue(encoder.encode(': keep-alive\n\n')), 15_000);
      void (async () => {
        let result: JsonObject | null = null;
        try {
          const last = await followTask(ctx.service, who, task.id, (t) => isTerminal(t.state) || statusOf(t) === 'input_required', { signal, pollMs: ctx.followPollMs });
          if (!last) {
            // The client closed the request: for a call it holds, that is a cancellation.
            await ctx.service.cancel(who, task.id, 'The MCP request was cancelled').catch(() => undefined);
            return;
          }
          if (isTerminal(last.state)) result = { resultType: 'complete', ...(toolResult(last) as unknown as JsonObject) };
          else {
            const params = elicitationFor(last, false);
            result = {
              resultType: 'input_required',
              ...(params && last.pendingInput ? { inputRequests: { [inputKey({ key: last.pendingInput.key, version: last.version })]: { method: 'elicitation/create', params: params as unknown as JsonObject } } } : {}),
              requestState: requestStateFor(last),
            };
          }
          controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`));
        } catch (e) {
          controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, error: rpcErrorFor(e) })}\n\n`));
        } finally {
          if (keepAlive) clearInterval(keepAlive);
          try {
            controller.close();
          } catch {
            // closed by the client
          }
        }
      })();
    },
    cancel() {
      if (keepAlive) clearInterval(keepAlive);
    },
  });
  return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' } });
}
