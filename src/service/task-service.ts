/**
 * @module service/task-service
 * The only API the fronts (REST, A2A, MCP, CLI, dashboard) call. It authorises by tenant, validates and bounds
 * input before anything is persisted, applies idempotency, and drives the cold-path transitions. It holds no task
 * state: every call reads or writes the store (the event-log tails it keeps for streams hold only the reads in
 * flight and the streams' wake-ups, see `task-log-tail.ts`).
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Clock } from '../core/clock.js';
import { BelayError } from '../core/errors.js';
import { newId, newTaskId } from '../core/ids.js';
import { DEFAULT_JSON_LIMITS, serializeJson, type JsonLimits } from '../core/limits.js';
import type { Json, PushConfig, SideEffectRecord, Task, TaskEvent } from '../core/task.js';
import type { TaskState } from '../core/task-state.js';
import { decideAnswer, decideCancel, type CancelOutcome } from '../core/transitions.js';
import type { Store, TaskPatch } from '../store/port.js';
import type { TaskTypeRegistry } from '../runtime/task-type.js';
import { fingerprint } from './canonical-json.js';
import { TaskLogTails, type EventLogFollower } from './task-log-tail.js';

/** Who is calling: every read and write is scoped to the tenant. */
export interface Principal {
  tenant: string;
  principal: string;
  /** A member sees the tasks it created; an admin sees every task of the tenant. Default: admin. */
  role?: 'member' | 'admin';
}

/** Inside a tenant, a member's view is limited to its own tasks; a task it may not see looks missing. */
function canSee(who: Principal, task: Task): boolean {
  return who.role !== 'member' || task.createdBy === who.principal;
}

export interface CreateTaskRequest {
  type: string;
  input: unknown;
  callbackUrl?: string | null;
  contextId?: string;
  /** When given, a retry with the same key and request returns the same task. */
  idempotencyKey?: string;
  /** Where the key is unique inside the tenant (default: the task type). A2A uses one scope for every skill. */
  idempotencyScope?: string;
  /** Extra members for the task's `created` event: a front's durable record of the request (the A2A message). */
  createdEvent?: Record<string, Json>;
}

export interface ListTasksRequest {
  states?: TaskState[];
  type?: string;
  createdFrom?: number;
  createdTo?: number;
  cursor?: string;
  limit?: number;
  contextId?: string;
  /** Only tasks whose last change (the status timestamp) is at or after this instant. */
  updatedFrom?: number;
  /** `created` (default): newest first by creation. `updated`: newest status change first (A2A ListTasks). */
  order?: 'created' | 'updated';
  /** Also count the matching tasks before paging (one more query). */
  withTotal?: boolean;
}

export interface TaskServiceOptions {
  store: Store;
  registry: TaskTypeRegistry;
  clock: Clock;
  limits?: JsonLimits;
  /** How long an idempotency key is remembered (published; at least 24 h). */
  idempotencyTtlMs?: number;
  /**
   * Registration-time SSRF check for `callback_url` and push-config URLs (`delivery/ssrf-guard.ts` UrlGuard): refused
   * URLs are VALIDATION (422) before anything is stored. The webhook dispatcher checks every connect regardless.
   */
  urlGuard?: { checkUrl(url: string): Promise<unknown> };
}

export const DEFAULT_IDEMPOTENCY_TTL_MS = 7 * 24 * 3600_000;
const MAX_PAGE = 100;

export class TaskService {
  readonly store: Store;
  readonly registry: TaskTypeRegistry;
  readonly clock: Clock;
  private readonly limits: JsonLimits;
  private readonly idempotencyTtlMs: number;
  private readonly urlGuard: TaskServiceOptions['urlGuard'];
  private readonly ajv = new Ajv2020({ allErrors: true, strict: false });
  private readonly validators = new Map<string, ValidateFunction>();
  /** Streams following a task's log in this process share its tail: one store read per wake-up, not one per stream. */
  private readonly tails: TaskLogTails;

  constructor(options: TaskServiceOptions) {
    this.store = options.store;
    this.registry = options.registry;
    this.clock = options.clock;
    this.limits = options.limits ?? DEFAULT_JSON_LIMITS;
    this.idempotencyTtlMs = options.idempotencyTtlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS;
    this.urlGuard = options.urlGuard;
    this.tails = new TaskLogTails({
      read: (taskId, afterSeq, limit) => this.store.listEvents(taskId, afterSeq, Math.min(Math.max(1, limit), 1000)),
      subscribe: (listener) => this.store.subscribe(listener),
      clock: this.clock,
    });
  }

  /**
   * Validates, then commits the task, its first event and its idempotency key in one transaction before anything
   * is dispatched. Returns `created: false` for a replay of an earlier identical request.
   * @throws BelayError UNKNOWN_TASK_TYPE | VALIDATION | PAYLOAD_TOO_LARGE | PAYLOAD_TOO_DEEP | INVALID_JSON | IDEMPOTENCY_MISMATCH
   */
  async createTask(who: Principal, req: CreateTaskRequest): Promise<{ task: Task; created: boolean }> {
    serializeJson(req.input, 'input', this.limits);
    const type = this.registry.latest(req.type);
    const parsed = type.input.safeParse(req.input ?? {});
    if (!parsed.success) {
      throw new BelayError('VALIDATION', `Input does not match the "${type.name}" schema`, {
        details: { issues: parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })) },
      });
    }
    const input = parsed.data as Json;
    serializeJson(input, 'input', this.limits);
    if (req.idempotencyKey !== undefined && (req.idempotencyKey.length === 0 || req.idempotencyKey.length > 255)) {
      throw new BelayError('VALIDATION', 'An idempotency key is 1-255 characters');
    }
    if (req.createdEvent !== undefined) serializeJson(req.createdEvent, 'request record', this.limits);
    if (req.callbackUrl && this.urlGuard) await this.urlGuard.checkUrl(req.callbackUrl);
    const now = this.clock.now();
    const id = newTaskId(now);
    return this.store.createTask(
      {
        id,
        tenant: who.tenant,
        contextId: req.contextId ?? newId('ctx'),
        type: type.name,
        typeVersion: type.version,
        input,
        createdBy: who.principal,
        callbackUrl: req.callbackUrl ?? null,
        now,
        ...(req.createdEvent === undefined ? {} : { createdEvent: req.createdEvent }),
      },
      req.idempotencyKey === undefined
        ? undefined
        : {
            scope: req.idempotencyScope ?? type.name,
            key: req.idempotencyKey,
            fingerprint: fingerprint({ type: req.type, input: req.input ?? {}, callback_url: req.callbackUrl ?? null, context_id: req.contextId ?? null }),
            expiresAt: now + this.idempotencyTtlMs,
          },
    );
  }

  /** @throws BelayError NOT_FOUND (also for another tenant's task) */
  async getTask(who: Principal, id: string): Promise<Task> {
    const task = await this.store.getTask(id, who.tenant);
    if (!task || !canSee(who, task)) throw await this.missing(who, id);
    return task;
  }

  /**
   * The error for a task this caller cannot find: TASK_EXPIRED (410) when retention turned it into a tombstone the
   * caller may see, otherwise NOT_FOUND, identical for a foreign and a missing task.
   */
  private async missing(who: Principal, id: string): Promise<BelayError> {
    const tomb = await this.store.getTombstone(id, who.tenant);
    if (tomb && (who.role !== 'member' || tomb.createdBy === who.principal)) {
      return new BelayError('TASK_EXPIRED', 'The task expired under the retention policy', {
        details: { final_state: tomb.finalState, expired_at: new Date(tomb.expiredAt).toISOString() },
      });
    }
    return new BelayError('NOT_FOUND', 'No such task');
  }

  /** Runs a store transition, turning a missing task into NOT_FOUND or TASK_EXPIRED as `getTask` does. */
  private async transitionFor(who: Principal, id: string, decide: (task: Task) => TaskPatch | null): Promise<Task> {
    try {
      return await this.store.transition(id, who.tenant, this.clock.now(), (task) => {
        if (!canSee(who, task)) throw new BelayError('NOT_FOUND', 'No such task');
        return decide(task);
      });
    } catch (e) {
      if (e instanceof BelayError && e.code === 'NOT_FOUND') throw await this.missing(who, id);
      throw e;
    }
  }

  async listTasks(who: Principal, req: ListTasksRequest = {}): Promise<{ tasks: Task[]; nextCursor: string | null; total?: number }> {
    const limit = Math.min(Math.max(1, req.limit ?? 20), MAX_PAGE);
    const order = req.order ?? 'created';
    const filters = {
      tenant: who.tenant,
      ...(who.role === 'member' ? { createdBy: who.principal } : {}),
      ...(req.states ? { states: req.states } : {}),
      ...(req.type ? { type: req.type } : {}),
      ...(req.createdFrom !== undefined ? { createdFrom: req.createdFrom } : {}),
      ...(req.createdTo !== undefined ? { createdTo: req.createdTo } : {}),
      ...(req.contextId !== undefined ? { contextId: req.contextId } : {}),
      ...(req.updatedFrom !== undefined ? { updatedFrom: req.updatedFrom } : {}),
    };
    const cursor = req.cursor ? decodeCursor(req.cursor, order) : null;
    const tasks = await this.store.listTasks({
      ...filters,
      order,
      ...(cursor && order === 'created' ? { after: { createdAt: cursor.at, id: cursor.id } } : {}),
      ...(cursor && order === 'updated' ? { afterUpdated: { updatedAt: cursor.at, id: cursor.id } } : {}),
      limit: limit + 1,
    });
    const page = tasks.slice(0, limit);
    const last = page.at(-1);
    const total = req.withTotal ? await this.store.countTasks(filters) : undefined;
    return { tasks: page, nextCursor: tasks.length > limit && last ? encodeCursor(last, order) : null, ...(total === undefined ? {} : { total }) };
  }

  /**
   * Authorises once and returns a reader of the task's event log, and `follow` for streams that re-read the log on
   * every wake-up: the caller's right to the task was checked here, so a follower's re-reads need no further check
   * and are shared with every other stream of the task in this process that is at the same sequence (one query per
   * wake-up, not one per stream; see `task-log-tail.ts`). Close the follower when the stream ends.
   * @throws BelayError NOT_FOUND | TASK_EXPIRED
   */
  async openEventLog(
    who: Principal,
    id: string,
  ): Promise<{ task: Task; read(afterSeq: number, limit: number): Promise<TaskEvent[]>; follow(options: { heartbeatMs: number }): EventLogFollower }> {
    const task = await this.getTask(who, id);
    return {
      task,
      read: (afterSeq, limit) => this.store.listEvents(id, afterSeq, Math.min(Math.max(1, limit), 1000)),
      follow: (options) => this.tails.follow(id, { heartbeatMs: options.heartbeatMs }),
    };
  }

  /**
   * Follows a task's log for a stream that reads it through `read`, its own reader authorised per call (the A2A
   * task stream): wake-ups and heartbeats come from the task's shared tail, reads do not. Close it when done.
   */
  followEventLog(taskId: string, options: { heartbeatMs: number; read: (afterSeq: number, limit: number) => Promise<TaskEvent[]> }): EventLogFollower {
    return this.tails.follow(taskId, { heartbeatMs: options.heartbeatMs, read: options.read });
  }

  /** Streams following a task's log in this process, and how many of them are waiting for a wake-up. */
  eventLogFollowers(taskId: string): { following: number; waiting: number } {
    return this.tails.followers(taskId);
  }

  async listEvents(who: Principal, id: string, afterSeq = 0, limit = 100): Promise<TaskEvent[]> {
    await this.getTask(who, id);
    return this.store.listEvents(id, afterSeq, Math.min(Math.max(1, limit), 1000));
  }

  async listEffects(who: Principal, id: string): Promise<SideEffectRecord[]> {
    await this.getTask(who, id);
    return this.store.listEffects(id);
  }

  /**
   * Delivers an answer: checked against the question's JSON Schema and the task's version, before the deadline.
   * @throws BelayError NOT_FOUND | STALE_VERSION | NOT_WAITING_FOR_INPUT | INPUT_DEADLINE_PASSED | VALIDATION
   */
  async answer(who: Principal, id: string, req: { version: number; answer: unknown; key?: string; eventExtras?: Record<string, Json> }): Promise<Task> {
    serializeJson(req.answer, 'answer', this.limits);
    if (req.eventExtras !== undefined) serializeJson(req.eventExtras, 'answer record', this.limits);
    const now = this.clock.now();
    return this.transitionFor(who, id, (task) => {
      const pending = task.pendingInput;
      if (pending && (req.key === undefined || req.key === pending.key) && task.version === req.version) this.checkAnswer(pending.schema, req.answer);
      return decideAnswer(task, {
        expectedVersion: req.version,
        ...(req.key === undefined ? {} : { key: req.key }),
        answer: req.answer as Json,
        now,
        ...(req.eventExtras === undefined ? {} : { eventExtras: req.eventExtras }),
      });
    });
  }

  /** Requests cancellation; idempotent. See `decideCancel` for the race outcomes. */
  async cancel(who: Principal, id: string, reason?: string): Promise<{ task: Task; outcome: CancelOutcome }> {
    let outcome: CancelOutcome = 'already_terminal';
    // A task type that reconciles or compensates effects needs a worker to settle the cancellation when effects exist.
    const current = await this.getTask(who, id);
    const type = this.registry.get(current.type, current.typeVersion);
    const settles = !!type && (Object.keys(type.compensations ?? {}).length > 0 || Object.keys(type.reconcilers ?? {}).length > 0);
    const settleByWorker = settles && (await this.store.listEffects(id)).length > 0;
    const task = await this.transitionFor(who, id, (t) => {
      const d = decideCancel(t, this.clock.now(), reason, { settleByWorker });
      outcome = d.outcome;
      return d.patch;
    });
    return { task, outcome };
  }

  /**
   * Withdraws a principal's authority in the caller's tenant (admins only): its requests are refused and its tasks
   * fail with AUTHORIZATION_REVOKED when they next resume. Idempotent; `enabled: true` restores it.
   */
  async setPrincipalEnabled(who: Principal, principal: string, enabled: boolean, reason?: string): Promise<void> {
    if (who.role === 'member') throw new BelayError('FORBIDDEN', 'Only a tenant admin may disable or enable principals');
    if (!/^[A-Za-z0-9_.@-]{1,128}$/.test(principal)) throw new BelayError('VALIDATION', 'A principal is 1-128 characters of [A-Za-z0-9_.@-]');
    await this.store.setPrincipalDisabled(who.tenant, principal, !enabled, this.clock.now(), reason);
  }

  isPrincipalDisabled(who: Principal): Promise<boolean> {
    return this.store.isPrincipalDisabled(who.tenant, who.principal);
  }

  /**
   * Calls `onChange` whenever something may have happened to the task (an event committed here or in another
   * process, or a "re-read" hint after a reconnect). Hints only: re-read the log. Returns the unsubscribe function.
   */
  watch(taskId: string, onChange: () => void): () => void {
    return this.store.subscribe((n) => {
      if (n.type === 'ready' || n.taskId === taskId) onChange();
    });
  }

  /** @throws BelayError RESULT_NOT_READY while the task has not finished */
  async getResult(who: Principal, id: string): Promise<Task> {
    const task = await this.getTask(who, id);
    if (!['completed', 'failed', 'canceled', 'rejected'].includes(task.state)) {
      throw new BelayError('RESULT_NOT_READY', `The task is ${task.state}`, { details: { state: task.state } });
    }
    return task;
  }

  // ---- push-notification configs (A2A) ----------------------------------------------------------------------------
  // Whoever may see a task may manage its configs; another tenant's (or, for a member, another member's) task
  // looks missing. URLs are checked for shape here; SSRF checks (resolved addresses, redirects) happen at dispatch,
  // in the delivery dispatcher, because DNS can change between registration and delivery.

  /**
   * Registers (or, with an existing id, replaces) a push config for a task the caller can see.
   * @throws BelayError NOT_FOUND | TASK_EXPIRED | VALIDATION
   */
  async putPushConfig(who: Principal, taskId: string, input: PushConfigInput): Promise<PushConfig> {
    const checked = checkPushConfig(input);
    if (this.urlGuard) await this.urlGuard.checkUrl(checked.url);
    await this.getTask(who, taskId);
    const id = checked.id ?? newId('pnc');
    if (!(await this.store.getPushConfig(who.tenant, taskId, id))) {
      const existing = await this.store.listPushConfigs(who.tenant, taskId, { limit: MAX_PUSH_CONFIGS });
      if (existing.length >= MAX_PUSH_CONFIGS) throw new BelayError('VALIDATION', `A task has at most ${MAX_PUSH_CONFIGS} push configs`);
    }
    const now = this.clock.now();
    const saved = await this.store.putPushConfig({
      id,
      taskId,
      tenant: who.tenant,
      createdBy: who.principal,
      url: checked.url,
      token: checked.token,
      authentication: checked.authentication,
      createdAt: now,
      updatedAt: now,
    });
    if (!saved) throw await this.missing(who, taskId);
    return saved;
  }

  /** @throws BelayError NOT_FOUND for a missing config as for a missing task (the caller cannot tell them apart) */
  async getPushConfig(who: Principal, taskId: string, id: string): Promise<PushConfig> {
    await this.getTask(who, taskId);
    const config = await this.store.getPushConfig(who.tenant, taskId, id);
    if (!config) throw new BelayError('NOT_FOUND', 'No such push config', { details: { push_config_id: id } });
    return config;
  }

  /** The task's configs in id order; `cursor` is the last id of the previous page. */
  async listPushConfigs(who: Principal, taskId: string, req: { limit?: number; cursor?: string } = {}): Promise<{ configs: PushConfig[]; nextCursor: string | null }> {
    await this.getTask(who, taskId);
    const limit = Math.min(Math.max(1, req.limit ?? MAX_PUSH_CONFIGS), MAX_PUSH_CONFIGS);
    let afterId: string | undefined;
    if (req.cursor) {
      afterId = Buffer.from(req.cursor, 'base64url').toString('utf8');
      if (!PUSH_CONFIG_ID.test(afterId)) throw new BelayError('VALIDATION', 'Invalid cursor');
    }
    const rows = await this.store.listPushConfigs(who.tenant, taskId, { ...(afterId === undefined ? {} : { afterId }), limit: limit + 1 });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return { configs: page, nextCursor: rows.length > limit && last ? Buffer.from(last.id).toString('base64url') : null };
  }

  /** Idempotent: deleting a config that does not exist (any more) succeeds, as long as the task is visible. */
  async deletePushConfig(who: Principal, taskId: string, id: string): Promise<void> {
    await this.getTask(who, taskId);
    await this.store.deletePushConfig(who.tenant, taskId, id);
  }

  private checkAnswer(schema: Record<string, unknown>, answer: unknown): void {
    const key = JSON.stringify(schema);
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(schema);
      if (this.validators.size > 1000) this.validators.clear();
      this.validators.set(key, validate);
    }
    if (!validate(answer)) {
      throw new BelayError('VALIDATION', 'The answer does not match the question\'s schema', {
        details: { issues: (validate.errors ?? []).map((e) => ({ path: e.instancePath, message: e.message ?? 'invalid' })) },
      });
    }
  }
}

/** What a caller registers; `id` is generated when absent. */
export interface PushConfigInput {
  id?: string;
  url: string;
  token?: string | null;
  authentication?: { scheme: string; credentials?: string | null } | null;
}

export const MAX_PUSH_CONFIGS = 20;
const PUSH_CONFIG_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
/** An HTTP auth scheme is an RFC 9110 token. */
const AUTH_SCHEME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
/** Header values: visible ASCII and spaces only (no CR/LF, so nothing can be smuggled into a request). */
const HEADER_VALUE = /^[\x20-\x7e]*$/;

/**
 * Checks a push config's shape: an absolute http(s) URL without credentials, at most 2048 characters; a token and
 * credentials that are safe header values. Not an SSRF check: the delivery dispatcher checks resolved addresses.
 * @throws BelayError VALIDATION
 */
export function checkPushConfig(input: PushConfigInput): { id: string | undefined; url: string; token: string | null; authentication: PushConfig['authentication'] } {
  const invalid = (message: string) => new BelayError('VALIDATION', message);
  if (input.id !== undefined && input.id !== '' && !PUSH_CONFIG_ID.test(input.id)) throw invalid('A push config id is 1-128 characters of [A-Za-z0-9_.:-]');
  if (typeof input.url !== 'string' || input.url.length === 0 || input.url.length > 2048) throw invalid('A push config needs a url of 1-2048 characters');
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw invalid('The push config url is not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid('The push config url must be http or https');
  if (url.username !== '' || url.password !== '') throw invalid('The push config url must not carry credentials; use authentication');
  const token = input.token === undefined || input.token === null || input.token === '' ? null : input.token;
  if (token !== null && (token.length > 1024 || !HEADER_VALUE.test(token))) throw invalid('A push token is at most 1024 printable ASCII characters');
  let authentication: PushConfig['authentication'] = null;
  if (input.authentication) {
    const { scheme, credentials } = input.authentication;
    if (typeof scheme !== 'string' || !AUTH_SCHEME.test(scheme)) throw invalid('authentication.scheme must be an HTTP auth scheme such as Bearer or Basic');
    const creds = credentials === undefined || credentials === null || credentials === '' ? null : credentials;
    if (creds !== null && (creds.length > 4096 || !HEADER_VALUE.test(creds))) throw invalid('authentication.credentials are at most 4096 printable ASCII characters');
    authentication = { scheme, credentials: creds };
  }
  return { id: input.id === '' ? undefined : input.id, url: input.url, token, authentication };
}

/** Cursors are opaque: the last item's sort key and id; an `updated` cursor is tagged so orders never mix. */
function encodeCursor(t: Task, order: 'created' | 'updated'): string {
  return Buffer.from(JSON.stringify(order === 'created' ? [t.createdAt, t.id] : ['u', t.updatedAt, t.id])).toString('base64url');
}

function decodeCursor(cursor: string, order: 'created' | 'updated'): { at: number; id: string } {
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const [at, id] = order === 'created' ? parts : parts[0] === 'u' ? parts.slice(1) : [];
    if (Array.isArray(parts) && parts.length === (order === 'created' ? 2 : 3) && typeof at === 'number' && typeof id === 'string') return { at, id };
  } catch {
    // fall through
  }
  throw new BelayError('VALIDATION', 'Invalid cursor');
}
