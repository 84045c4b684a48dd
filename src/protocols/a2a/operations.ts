/**
 * @module protocols/a2a/operations
 * The A2A operations, independent of the binding: each takes validated params and the authenticated principal,
 * calls the TaskService (the only API a front may call) and returns A2A wire objects. The JSON-RPC and HTTP+JSON
 * bindings only decode requests into these calls and encode what they return.
 *
 * Tenancy: the principal's tenant (from its credential) is authoritative. A request that names a tenant (the
 * `tenant` member, or the `/{tenant}/…` path prefix) must name the caller's own; for a task-addressed operation
 * another tenant is TaskNotFound (a foreign task looks exactly like a missing one), for SendMessage and ListTasks it
 * is PermissionDenied (403).
 */
import { BelayError, isBelayError } from '../../core/errors.js';
import { isTerminal, isWaiting } from '../../core/task-state.js';
import type { Task } from '../../core/task.js';
import { checkPushConfig, type Principal, type PushConfigInput, type TaskService } from '../../service/task-service.js';
import type { PushConfig } from '../../core/task.js';
import { A2aError } from './a2a-error.js';
import {
  answerFrom,
  checkAcceptedOutputModes,
  checkParts,
  echoedInputVersion,
  inputFrom,
  messageIdempotencyKey,
  pickSkill,
  recordOf,
} from './message-mapping.js';
import type {
  CancelTaskParams,
  GetTaskParams,
  ListPushConfigsParams,
  ListTasksParams,
  PushConfigParams,
  PushConfigRefParams,
  SendMessageParams,
  SubscribeParams,
} from './request-schemas.js';
import type { StreamPlan } from './task-stream.js';
import { historyFrom, stateFromWire, toWireTask } from './task-view.js';
import type { WireListTasksResponse, WireMessage, WirePushConfig, WireTask } from './wire-types.js';
import { followTask } from '../../service/task-follower.js';

export interface A2aOperationsOptions {
  service: TaskService;
  /** How long a blocking SendMessage waits for a terminal or interrupted state before returning the working task. */
  blockingTimeoutMs: number;
  /** How long CancelTask waits for a running task's worker to settle the cancellation. */
  cancelWaitMs: number;
  /** The skill (task type) a message starts when it names none. */
  defaultSkill?: string;
}

export interface CallContext {
  who: Principal;
  /** Fires when the client goes away: a blocking wait stops early. */
  signal: AbortSignal;
}

const DEFAULT_PAGE_SIZE = 50;
/** History is rebuilt from at most this many events per task. */
const MAX_HISTORY_EVENTS = 10_000;

export class A2aOperations {
  constructor(private readonly options: A2aOperationsOptions) {}

  get service(): TaskService {
    return this.options.service;
  }

  // ---- tenancy ---------------------------------------------------------------------------------------------------

  private checkTenant(who: Principal, tenant: string | undefined, taskAddressed: boolean): void {
    if (tenant === undefined || tenant === '' || tenant === who.tenant) return;
    if (taskAddressed) throw new BelayError('NOT_FOUND', 'No such task');
    throw new BelayError('FORBIDDEN', 'The tenant named in the request is not the caller\'s');
  }

  // ---- rendering -------------------------------------------------------------------------------------------------

  async history(who: Principal, task: Task): Promise<WireMessage[]> {
    const events = [];
    let after = 0;
    while (events.length < MAX_HISTORY_EVENTS) {
      const page = await this.service.listEvents(who, task.id, after, 1000);
      events.push(...page);
      if (page.length < 1000) break;
      after = page.at(-1)!.seq;
    }
    return historyFrom(task, events);
  }

  private async render(who: Principal, task: Task, historyLength: number | undefined, includeArtifacts = true): Promise<WireTask> {
    const history = historyLength === 0 ? null : await this.history(who, task);
    return toWireTask(task, { history, ...(historyLength === undefined ? {} : { historyLength }), includeArtifacts });
  }

  // ---- SendMessage -----------------------------------------------------------------------------------------------

  /** Starts a task, or continues one waiting for input. Returns the task as it is right after. */
  private async deliver(ctx: CallContext, p: SendMessageParams): Promise<Task> {
    const { who } = ctx;
    const message = p.message;
    this.checkTenant(who, p.tenant, message.taskId !== undefined);
    checkParts(message);
    checkAcceptedOutputModes(p.configuration?.acceptedOutputModes);
    const push = p.configuration?.taskPushNotificationConfig;
    if (push) checkPushConfig(pushInput(push));
    const task = message.taskId === undefined ? await this.start(who, p) : await this.continueTask(who, p);
    if (push) await this.service.putPushConfig(who, task.id, pushInput(push));
    return task;
  }

  private async start(who: Principal, p: SendMessageParams): Promise<Task> {
    const message = p.message;
    const skill = pickSkill(this.service.registry, message, p.metadata, this.options.defaultSkill);
    const { task } = await this.service.createTask(who, {
      type: skill,
      input: inputFrom(message),
      ...(message.contextId ? { contextId: message.contextId } : {}),
      idempotencyKey: messageIdempotencyKey(who.principal, message.messageId),
      idempotencyScope: 'a2a-message',
      createdEvent: recordOf(message),
    });
    return task;
  }

  private async continueTask(who: Principal, p: SendMessageParams): Promise<Task> {
    const message = p.message;
    const id = message.taskId!;
    const task = await this.service.getTask(who, id);
    if (message.contextId && message.contextId !== task.contextId) {
      throw new A2aError('INVALID_PARAMS', 'message.contextId does not match the task\'s contextId', { fieldViolations: [{ field: 'message.contextId', description: 'must match the task or be omitted' }] });
    }
    const pending = task.pendingInput;
    if (!isWaiting(task.state) || !pending) {
      // A retried send of a message already delivered gets the task back instead of an error.
      if (await this.alreadyDelivered(who, id, message.messageId)) return task;
      if (isTerminal(task.state)) {
        throw new A2aError('UNSUPPORTED_OPERATION', `The task is ${task.state}: a terminal task cannot be continued; start a new task in the same contextId`);
      }
      throw new A2aError('UNSUPPORTED_OPERATION', `The task is ${task.state} and not waiting for input`);
    }
    const version = echoedInputVersion(message) ?? task.version;
    try {
      return await this.service.answer(who, id, { version, key: pending.key, answer: answerFrom(message), eventExtras: recordOf(message) });
    } catch (e) {
      if ((isBelayError(e, 'STALE_VERSION') || isBelayError(e, 'NOT_WAITING_FOR_INPUT')) && (await this.alreadyDelivered(who, id, message.messageId))) {
        return this.service.getTask(who, id);
      }
      throw e;
    }
  }

  private async alreadyDelivered(who: Principal, taskId: string, messageId: string): Promise<boolean> {
    let after = 0;
    for (let i = 0; i < MAX_HISTORY_EVENTS / 1000; i++) {
      const page = await this.service.listEvents(who, taskId, after, 1000);
      for (const e of page) {
        const m = e.body.message;
        if ((e.kind === 'created' || e.kind === 'input_received') && m && typeof m === 'object' && !Array.isArray(m) && m.messageId === messageId) return true;
      }
      if (page.length < 1000) return false;
      after = page.at(-1)!.seq;
    }
    return false;
  }

  /**
   * Blocking by default (§3.2.2): returns when the task is terminal or interrupted (input_required, auth_required),
   * or after `blockingTimeoutMs` with the task as it is then (still working). `returnImmediately` returns at once.
   */
  async sendMessage(ctx: CallContext, p: SendMessageParams): Promise<{ task: WireTask }> {
    let task = await this.deliver(ctx, p);
    if (p.configuration?.returnImmediately !== true) task = await this.waitSettled(ctx, task, this.options.blockingTimeoutMs);
    return { task: await this.render(ctx.who, task, p.configuration?.historyLength) };
  }

  async sendStreamingMessage(ctx: CallContext, p: SendMessageParams): Promise<StreamPlan> {
    const task = await this.deliver(ctx, p);
    return { task, history: await this.history(ctx.who, task), afterSeq: task.nextSeq - 1, closeOnInputRequired: true };
  }

  /** Waits (real time, woken by the store's notifications, re-reading at least every second) until settled. */
  private async waitSettled(ctx: CallContext, task: Task, timeoutMs: number): Promise<Task> {
    const settled = (t: Task) => isTerminal(t.state) || isWaiting(t.state);
    if (settled(task)) return task;
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]);
    // Timed out or the caller went away: the task as it is now.
    return (await followTask(this.service, ctx.who, task.id, settled, { signal, pollMs: 1000 })) ?? this.service.getTask(ctx.who, task.id);
  }

  // ---- reads -----------------------------------------------------------------------------------------------------

  async getTask(ctx: CallContext, p: GetTaskParams): Promise<WireTask> {
    this.checkTenant(ctx.who, p.tenant, true);
    const task = await this.service.getTask(ctx.who, p.id);
    return this.render(ctx.who, task, p.historyLength);
  }

  /**
   * Newest status change first, keyset-paged (`pageToken` is opaque). `pageSize` 1-100 (default 50);
   * `nextPageToken` is "" on the last page; `totalSize` counts every match before paging. History is included only
   * when `historyLength` > 0 (the list default is none, to keep pages cheap); artifacts only with
   * `includeArtifacts: true` (otherwise the key is absent).
   */
  async listTasks(ctx: CallContext, p: ListTasksParams): Promise<WireListTasksResponse> {
    this.checkTenant(ctx.who, p.tenant, false);
    const pageSize = p.pageSize ?? DEFAULT_PAGE_SIZE;
    let states: Task['state'][] | undefined;
    if (p.status !== undefined && p.status !== '' && p.status !== 'TASK_STATE_UNSPECIFIED') {
      const s = stateFromWire(p.status);
      if (!s) throw new A2aError('INVALID_PARAMS', `Unknown status "${p.status}"`, { fieldViolations: [{ field: 'status', description: 'a TASK_STATE_* name' }] });
      states = [s];
    }
    let updatedFrom: number | undefined;
    if (p.statusTimestampAfter !== undefined && p.statusTimestampAfter !== '') {
      updatedFrom = Date.parse(p.statusTimestampAfter);
      if (!/^\d{4}-\d{2}-\d{2}T/.test(p.statusTimestampAfter) || !Number.isFinite(updatedFrom)) {
        throw new A2aError('INVALID_PARAMS', 'statusTimestampAfter is an ISO 8601 timestamp', { fieldViolations: [{ field: 'statusTimestampAfter', description: 'an ISO 8601 timestamp' }] });
      }
    }
    let page;
    try {
      page = await this.service.listTasks(ctx.who, {
        order: 'updated',
        limit: pageSize,
        withTotal: true,
        ...(states ? { states } : {}),
        ...(p.contextId ? { contextId: p.contextId } : {}),
        ...(updatedFrom !== undefined ? { updatedFrom } : {}),
        ...(p.pageToken ? { cursor: p.pageToken } : {}),
      });
    } catch (e) {
      if (isBelayError(e, 'VALIDATION')) throw new A2aError('INVALID_PARAMS', 'Invalid pageToken', { fieldViolations: [{ field: 'pageToken', description: 'not a token this server issued' }] });
      throw e;
    }
    const historyLength = p.historyLength ?? 0;
    const tasks = await Promise.all(page.tasks.map((t) => this.render(ctx.who, t, historyLength, p.includeArtifacts === true)));
    if (p.includeArtifacts !== true) for (const t of tasks) delete t.artifacts;
    return { tasks, nextPageToken: page.nextCursor ?? '', pageSize, totalSize: page.total ?? tasks.length };
  }

  // ---- CancelTask ------------------------------------------------------------------------------------------------

  /**
   * Idempotent: an already canceled task is returned as it is; another terminal task is TaskNotCancelable. A task a
   * worker is running gets the request and the reply waits up to `cancelWaitMs` for the worker to settle it.
   */
  async cancelTask(ctx: CallContext, p: CancelTaskParams): Promise<WireTask> {
    this.checkTenant(ctx.who, p.tenant, true);
    const before = await this.service.getTask(ctx.who, p.id);
    const notCancelable = (t: Task) => new A2aError('TASK_NOT_CANCELABLE', `The task is ${t.state} and cannot be canceled`);
    if (isTerminal(before.state)) {
      if (before.state === 'canceled') return this.render(ctx.who, before, undefined);
      throw notCancelable(before);
    }
    const reason = typeof p.metadata?.reason === 'string' ? p.metadata.reason.slice(0, 500) : undefined;
    let { task } = await this.service.cancel(ctx.who, p.id, reason);
    if (isTerminal(task.state) && task.state !== 'canceled') throw notCancelable(task);
    if (!isTerminal(task.state)) task = await this.waitSettled(ctx, task, this.options.cancelWaitMs);
    return this.render(ctx.who, task, undefined);
  }

  // ---- SubscribeToTask -------------------------------------------------------------------------------------------

  /** A terminal task cannot be subscribed to (UnsupportedOperation); `lastEventId` replays what a client missed. */
  async subscribe(ctx: CallContext, p: SubscribeParams, lastEventId: number | undefined): Promise<StreamPlan> {
    this.checkTenant(ctx.who, p.tenant, true);
    const task = await this.service.getTask(ctx.who, p.id);
    if (isTerminal(task.state)) throw new A2aError('UNSUPPORTED_OPERATION', `The task is ${task.state}; there is nothing to subscribe to`);
    const snapshotSeq = task.nextSeq - 1;
    const afterSeq = lastEventId !== undefined && lastEventId < snapshotSeq ? lastEventId : snapshotSeq;
    return { task, history: await this.history(ctx.who, task), afterSeq, closeOnInputRequired: false };
  }

  // ---- push-notification configs ---------------------------------------------------------------------------------

  async createPushConfig(ctx: CallContext, p: PushConfigParams): Promise<WirePushConfig> {
    this.checkTenant(ctx.who, p.tenant, true);
    if (!p.taskId) throw new A2aError('INVALID_PARAMS', 'taskId is required', { fieldViolations: [{ field: 'taskId', description: 'required' }] });
    return wirePushConfig(await this.service.putPushConfig(ctx.who, p.taskId, pushInput(p)));
  }

  async getPushConfig(ctx: CallContext, p: PushConfigRefParams): Promise<WirePushConfig> {
    this.checkTenant(ctx.who, p.tenant, true);
    return wirePushConfig(await this.service.getPushConfig(ctx.who, p.taskId, p.id));
  }

  async listPushConfigs(ctx: CallContext, p: ListPushConfigsParams): Promise<{ configs: WirePushConfig[]; nextPageToken: string }> {
    this.checkTenant(ctx.who, p.tenant, true);
    try {
      const page = await this.service.listPushConfigs(ctx.who, p.taskId, { ...(p.pageSize ? { limit: p.pageSize } : {}), ...(p.pageToken ? { cursor: p.pageToken } : {}) });
      return { configs: page.configs.map(wirePushConfig), nextPageToken: page.nextCursor ?? '' };
    } catch (e) {
      if (isBelayError(e, 'VALIDATION')) throw new A2aError('INVALID_PARAMS', 'Invalid pageToken', { fieldViolations: [{ field: 'pageToken', description: 'not a token this server issued' }] });
      throw e;
    }
  }

  async deletePushConfig(ctx: CallContext, p: PushConfigRefParams): Promise<void> {
    this.checkTenant(ctx.who, p.tenant, true);
    await this.service.deletePushConfig(ctx.who, p.taskId, p.id);
  }
}

function pushInput(p: PushConfigParams): PushConfigInput {
  return {
    ...(p.id ? { id: p.id } : {}),
    url: p.url,
    ...(p.token ? { token: p.token } : {}),
    ...(p.authentication ? { authentication: { scheme: p.authentication.scheme, ...(p.authentication.credentials ? { credentials: p.authentication.credentials } : {}) } } : {}),
  };
}

function wirePushConfig(c: PushConfig): WirePushConfig {
  return {
    id: c.id,
    taskId: c.taskId,
    url: c.url,
    ...(c.token !== null ? { token: c.token } : {}),
    ...(c.authentication ? { authentication: { scheme: c.authentication.scheme, ...(c.authentication.credentials !== null ? { credentials: c.authentication.credentials } : {}) } } : {}),
  };
}
