/**
 * @module protocols/mcp/mcp-session
 * A live 2025-11-25 session on this gateway: the SDK's stateful Streamable HTTP transport and server, the tasks it
 * follows for `notifications/tasks/status`, and which questions it has asked and not heard back on. A session holds
 * no task state: it is a set of open streams. Requests naming a session this gateway does not know (another
 * gateway's, or one from before a restart) are served without one (mcp-routes.ts), from the durable store.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Task } from '../../core/task.js';
import type { Principal } from '../../service/task-service.js';
import type { McpContext } from './mcp-context.js';
import { elicitationFor, inputRequestId } from './input-request.js';
import { StatusNotifier } from './status-notifier.js';

/**
 * Sends the task's pending question as `elicitation/create` (with related-task metadata and a self-describing id):
 * on a request's response stream when `relatedRequestId` is given, else on the session's standalone GET stream.
 * Returns false when the question cannot be rendered as a form.
 */
export async function sendElicitation(transport: Transport, task: Task, relatedRequestId?: RequestId): Promise<boolean> {
  const params = elicitationFor(task, true);
  if (!params || !task.pendingInput) return false;
  const id = inputRequestId({ taskId: task.id, key: task.pendingInput.key, version: task.version });
  await transport.send({ jsonrpc: '2.0', id, method: 'elicitation/create', params }, relatedRequestId === undefined ? undefined : { relatedRequestId });
  return true;
}

export class McpSession {
  readonly notifier: StatusNotifier;
  /** Questions sent on one of this session's streams with no response yet: task id → task version asked. */
  private readonly outstanding = new Map<string, number>();
  /** Abort signals of the HTTP requests carrying long JSON-RPC requests (client disconnect ends the wait). */
  private readonly signals = new Map<string, AbortSignal>();
  server: Server | null = null;
  standaloneOpen = false;
  lastSeen: number;

  constructor(
    readonly id: string,
    readonly who: Principal,
    readonly transport: WebStandardStreamableHTTPServerTransport,
    ctx: McpContext,
  ) {
    this.lastSeen = Date.now();
    this.notifier = new StatusNotifier(ctx, who, (m) => this.transport.send(m), (task) => this.askOnStandalone(task));
  }

  /** Whether the client declared form elicitation at initialize. */
  get canElicit(): boolean {
    return this.server?.getClientCapabilities()?.elicitation !== undefined;
  }

  setSignal(requestId: RequestId, signal: AbortSignal): void {
    this.signals.set(String(requestId), signal);
  }

  /** The signal registered for a request, removed as it is taken. */
  takeSignal(requestId: RequestId): AbortSignal | undefined {
    const s = this.signals.get(String(requestId));
    this.signals.delete(String(requestId));
    return s;
  }

  /**
   * Reserves the right to ask the task's question (at this version) on one of this session's streams: false when
   * it is already outstanding here, so a client is never asked the same question twice at once.
   */
  reserve(taskId: string, version: number): boolean {
    if (this.outstanding.get(taskId) === version) return false;
    this.outstanding.set(taskId, version);
    return true;
  }

  release(taskId: string, version: number): void {
    if (this.outstanding.get(taskId) === version) this.outstanding.delete(taskId);
  }

  /** Asks the question on this session's standalone stream, for clients that only poll `tasks/get`. */
  private async askOnStandalone(task: Task): Promise<void> {
    if (!this.standaloneOpen || !this.canElicit || !this.reserve(task.id, task.version)) return;
    const sent = await sendElicitation(this.transport, task).catch(() => false);
    if (!sent) this.release(task.id, task.version);
  }

  belongsTo(who: Principal): boolean {
    return who.tenant === this.who.tenant && who.principal === this.who.principal;
  }

  async close(): Promise<void> {
    this.notifier.close();
    this.signals.clear();
    await this.transport.close();
  }
}
