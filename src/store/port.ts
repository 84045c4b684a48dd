/**
 * @module store/port
 * The Store: the only source of truth (DESIGN.md §1). Its methods are domain verbs. Two adapters implement it
 * (`store/sqlite`, `store/postgres`) and both pass the one contract suite in `test/contract/`.
 *
 * Responsibilities of a Store:
 * - persist a task, its first event and its idempotency key in one transaction (`createTask`);
 * - grant leases, bumping `fence` on every grant (`claimTasks`), and renew them (`renewLease`);
 * - commit a step: checkpoint, state and exactly one event in one transaction, only while the caller's fence is
 *   current (`commit`); hot-path commits are one round trip where the dialect allows;
 * - keep the run-once ledger (`beginEffect`, `completeEffect`);
 * - apply the service's cold-path transitions (input, cancellation, deadlines) atomically;
 * - announce committed events to subscribers, never before the commit (`subscribe`).
 *
 * Times are epoch milliseconds passed in by the caller from its injected Clock, so both dialects agree and
 * tests can move time.
 */
import type { TaskError } from '../core/errors.js';
import type { Artifact, Json, PendingInput, Progress, PushConfig, SideEffectRecord, Task, TaskEvent, TaskEventKind, Tombstone } from '../core/task.js';
import type { TaskState } from '../core/task-state.js';
import type { Delivery, DeliveryOutcome, DeliveryStatus, FeedEvent, NewDelivery, WebhookEndpoint, WebhookSecret } from '../core/delivery.js';

export interface StoreCapabilities {
  readonly dialect: 'sqlite' | 'postgres';
  /** Wake-ups cross processes by themselves (LISTEN/NOTIFY). Without it, other processes poll. */
  readonly notify: boolean;
  /** Claims skip rows locked by other claimers instead of waiting. */
  readonly skipLocked: boolean;
  /** Several processes (or machines) may share the store. */
  readonly multiProcess: boolean;
}

export interface NewTask {
  id: string;
  tenant: string;
  contextId: string;
  type: string;
  typeVersion: number;
  /** Serialised and size-checked by the service. */
  input: Json;
  createdBy: string;
  callbackUrl: string | null;
  now: number;
  /**
   * Extra members recorded in the task's `created` event, next to `state`, `type` and `type_version` (which win on a
   * clash): a front's durable record of the request, for example the A2A message that started the task.
   */
  createdEvent?: Record<string, Json>;
}

export interface IdempotencyClaim {
  /** Keys are scoped per tenant and scope (the task type for REST creates). */
  scope: string;
  key: string;
  /** SHA-256 of the canonical request; a different fingerprint under the same key is IDEMPOTENCY_MISMATCH. */
  fingerprint: string;
  expiresAt: number;
}

export interface CreateResult {
  task: Task;
  /** False when an earlier request with the same idempotency key created it (a replay). */
  created: boolean;
}

export interface TaskKind {
  type: string;
  version: number;
}

export interface ClaimRequest {
  workerId: string;
  now: number;
  leaseMs: number;
  limit: number;
  /** The (type, version) pairs this worker can run; tasks of other versions are left alone. */
  kinds: readonly TaskKind[];
}

export interface Lease {
  taskId: string;
  fence: number;
  workerId: string;
}

export interface ClaimedTask {
  task: Task;
  lease: Lease;
}

/**
 * `settle`: the task stays `working` with its cancellation requested while the worker waits to learn the outcome of
 * effects it could not stop (released lease, wake-up later). Like `cancel`, it is allowed after a cancel request.
 */
export type CommitKind = 'progress' | 'pause' | 'complete' | 'fail' | 'retry' | 'cancel' | 'settle';

/** Commit kinds a cancellation request does not refuse: the ones that carry the cancellation out. */
export const CANCEL_COMMIT_KINDS: readonly CommitKind[] = ['cancel', 'settle'];

/**
 * One fenced step commit. The adapter writes every listed column and one event, or nothing.
 * Conditions: `fence` still current and state `working`; unless `kind` is in CANCEL_COMMIT_KINDS, no cancellation requested;
 * for `pause`, the question's key not answered yet (an early answer is not lost: the worker re-runs the step).
 */
export interface TaskCommit {
  lease: Lease;
  now: number;
  kind: CommitKind;
  state: Extract<TaskState, 'working' | 'input_required' | 'completed' | 'failed' | 'canceled'>;
  step: number;
  checkpoint: Json;
  progress: Progress;
  pendingInput: PendingInput | null;
  result: Json;
  /** The full artifact list when it changed, or undefined to keep the stored one. */
  artifacts: Artifact[] | undefined;
  error: TaskError | null;
  /** Kept lease: the new `lease_until` (also `wake_at`). Null releases the lease. */
  leaseUntil: number | null;
  wakeAt: number | null;
  /** Successful progress starts the next step's first attempt under the kept lease (attempts = 1). */
  resetAttempts: boolean;
  expiresAt: number | null;
  event: { kind: TaskEventKind; body: Record<string, Json> };
}

export type CommitOutcome =
  | { ok: true; seq: number; version: number }
  | { ok: false; reason: 'lease_lost' | 'cancel_requested' | 'answer_arrived' };

export interface BeginEffectOptions {
  /** Compensations run after a cancellation was requested: the lease still fences them, the request does not. */
  duringCancel?: boolean;
}

export type BeginEffectOutcome =
  /** No record: the caller may run the effect now (a `pending` record was written first). */
  | { status: 'started' }
  /** Ran before and its result was recorded: return it, do not call the effect again. */
  | { status: 'applied'; result: Json }
  /** Started before and never confirmed (a crash or timeout after sending): the outcome is unknown. */
  | { status: 'uncertain'; startedAt: number }
  | { status: 'lease_lost' }
  | { status: 'cancel_requested' };

export interface TaskListQuery {
  tenant: string;
  /** Only tasks this principal created. */
  createdBy?: string;
  states?: readonly TaskState[];
  type?: string;
  createdFrom?: number;
  createdTo?: number;
  /** Newest first; the cursor is the last item of the previous page (order `created`). */
  after?: { createdAt: number; id: string };
  /** Only tasks of this context. */
  contextId?: string;
  /** Only tasks whose last change (`updated_at`, the status timestamp) is at or after this instant. */
  updatedFrom?: number;
  /**
   * `created` (default): newest `created_at` first. `updated`: newest `updated_at` first, ties by id descending
   * (A2A ListTasks sorts by status timestamp); its cursor is `afterUpdated`.
   */
  order?: 'created' | 'updated';
  /** Cursor for order `updated`: the last item of the previous page. */
  afterUpdated?: { updatedAt: number; id: string };
  limit: number;
}

/** The filters of a TaskListQuery, for counting (A2A ListTasks reports the total before paging). */
export type TaskCountQuery = Omit<TaskListQuery, 'after' | 'afterUpdated' | 'order' | 'limit'>;

/**
 * A cold-path change decided by `store/transitions.ts` from the current row. The adapter writes it only if the row
 * still has `expectVersion` (and, when given, `expectFence`), bumps `version`, and appends the event.
 */
export interface TaskPatch {
  set: Partial<{
    state: TaskState;
    pendingInput: PendingInput | null;
    answers: Record<string, Json>;
    cancelRequestedAt: number | null;
    error: TaskError | null;
    leaseOwner: string | null;
    leaseUntil: number | null;
    wakeAt: number | null;
    terminalAt: number | null;
    expiresAt: number | null;
    attempts: number;
  }>;
  bumpFence: boolean;
  event: { kind: TaskEventKind; body: Record<string, Json> } | null;
}

export type StoreNotification =
  /** An event was committed for a task. */
  | { type: 'event'; taskId: string; seq: number; kind: TaskEventKind }
  /** Work may be claimable (used to cut claim latency; workers also poll). */
  | { type: 'ready' };

export interface Store {
  readonly capabilities: StoreCapabilities;

  /** The schema version this database is at. */
  schemaVersion(): Promise<number>;

  /**
   * Persists the task, its `created` event and the idempotency key in one transaction.
   * A replay (same scope, key and fingerprint) returns the existing task with `created: false`.
   * @throws BelayError IDEMPOTENCY_MISMATCH when the key is taken by a different request.
   */
  createTask(task: NewTask, idempotency?: IdempotencyClaim): Promise<CreateResult>;

  /** With `tenant`, a task of another tenant is indistinguishable from a missing one. */
  getTask(id: string, tenant?: string): Promise<Task | null>;
  listTasks(query: TaskListQuery): Promise<Task[]>;
  listEvents(taskId: string, afterSeq: number, limit: number): Promise<TaskEvent[]>;

  /**
   * Leases up to `limit` claimable tasks: state submitted or working with `wake_at <= now` (new, retry due, or lease
   * expired), of a kind the worker has. Each grant bumps `fence`, sets `lease_until = wake_at = now + leaseMs`,
   * increments `attempts`; a submitted task becomes working with a `started` event.
   */
  claimTasks(request: ClaimRequest): Promise<ClaimedTask[]>;

  /**
   * When the next task of these kinds becomes claimable: the earliest `wake_at` after `now` among submitted and
   * working tasks (a scheduled retry, or a lease that will lapse), leaving out leases `workerId` holds itself (it
   * renews those). `null` when nothing is scheduled. A read with no lock: the answer may be stale by the time the
   * caller acts on it, which costs one empty claim or one poll of latency, never correctness. Workers sleep until
   * then instead of a whole poll interval, so a crashed worker's task is taken over as its lease lapses.
   */
  nextClaimAt(request: { workerId: string; now: number; kinds: readonly TaskKind[] }): Promise<number | null>;

  /**
   * Extends a lease. Failure semantics: returns `lost` once the fence moved on or the task left `working`; the
   * holder must stop without writing. Reports a pending cancellation so the holder can abort its step.
   */
  renewLease(lease: Lease, now: number, leaseMs: number): Promise<{ status: 'ok' | 'lost'; cancelRequested: boolean }>;

  /** Gives a lease back without progress (graceful shutdown): the task is claimable again at once. */
  releaseLease(lease: Lease, now: number): Promise<void>;

  /** The fenced step commit. See TaskCommit. */
  commit(commit: TaskCommit): Promise<CommitOutcome>;

  /**
   * The run-once ledger's first half: look up `(taskId, key)` and, when absent, write a `pending` record — but only
   * while the lease is current and no cancellation was requested. One round trip where the dialect allows.
   */
  beginEffect(lease: Lease, key: string, now: number, options?: BeginEffectOptions): Promise<BeginEffectOutcome>;

  /** The ledger's second half: records the effect's result. Not fenced: the downstream did apply it. */
  completeEffect(taskId: string, key: string, result: Json, now: number): Promise<void>;

  listEffects(taskId: string): Promise<SideEffectRecord[]>;

  /**
   * Reads the tenant's task, lets `decide` compute a change from it, and writes the change atomically (row locked
   * or version-checked). `decide` may throw a BelayError to refuse, or return null to change nothing.
   * @throws BelayError NOT_FOUND when the task does not exist for this tenant.
   */
  transition(id: string, tenant: string | undefined, now: number, decide: (task: Task) => TaskPatch | null): Promise<Task>;

  /** Ids of waiting tasks whose input deadline has passed (for the deadline sweep). */
  listDueDeadlines(now: number, limit: number): Promise<Array<{ id: string; tenant: string }>>;

  /**
   * Non-terminal tasks breaking the invariant "a recent lease, a future wake-up or a named input deadline":
   * claimable for longer than `graceMs` with nobody claiming them, or with no wake-up at all.
   */
  findStranded(now: number, graceMs: number, limit: number): Promise<Task[]>;

  /**
   * Retention: turns up to `limit` finished tasks whose `expires_at` has passed into tombstones, deleting their
   * events, ledger, idempotency keys, push configs, webhook deliveries and gone markers in the same transaction.
   * Returns how many expired.
   */
  expireTasks(now: number, limit: number): Promise<number>;

  /** With `tenant`, another tenant's tombstone is indistinguishable from none. */
  getTombstone(id: string, tenant?: string): Promise<Tombstone | null>;

  /** How many tasks match the filters (no paging). */
  countTasks(query: TaskCountQuery): Promise<number>;

  /**
   * Creates a push config, or replaces the one with the same `(tenant, taskId, id)` (keeping its `createdAt` and
   * `createdBy`). Written only if the task exists in that tenant, checked in the same statement, so a config never
   * outlives a task that expired meanwhile. Returns null when the task does not exist for the tenant.
   */
  putPushConfig(config: PushConfig): Promise<PushConfig | null>;

  /** With another tenant, or a task id of another tenant, indistinguishable from none. */
  getPushConfig(tenant: string, taskId: string, id: string): Promise<PushConfig | null>;

  /** The task's configs ordered by id, after `afterId` when given; at most `limit`. */
  listPushConfigs(tenant: string, taskId: string, options: { afterId?: string; limit: number }): Promise<PushConfig[]>;

  /** Deletes one config. Returns whether it existed (deleting a missing one is not an error). */
  deletePushConfig(tenant: string, taskId: string, id: string): Promise<boolean>;

  /** Disables (or re-enables) a principal of a tenant. Idempotent. */
  setPrincipalDisabled(tenant: string, principal: string, disabled: boolean, now: number, reason?: string): Promise<void>;

  /** Whether the principal is disabled (refused at the API and when its tasks resume). */
  isPrincipalDisabled(tenant: string, principal: string): Promise<boolean>;

  /** Counts of tasks by state (operators, metrics, benchmarks). */
  countByState(): Promise<Record<string, number>>;

  // ---- webhook delivery (delivery/dispatcher.ts) --------------------------------------------------------------------

  /**
   * The webhook feed: committed events after the stored feed cursor, in commit order, with their task's routing
   * fields, at most `limit`. Commit order is gapless: an event committed later never appears behind the cursor
   * (SQLite: the log's rowid, assigned under the single writer; PostgreSQL: the writing transaction's id, read only
   * below the oldest transaction still running). Events of tasks already deleted are skipped but still move `next`.
   * Pure read; `enqueueDeliveries` moves the cursor.
   */
  readEventFeed(limit: number): Promise<{ cursor: string; next: string; events: FeedEvent[] }>;

  /**
   * In one transaction: inserts the deliveries (a delivery for the same `(targetKey, taskId, seq)` that exists already
   * is left alone, so re-routing after a crash never duplicates) and moves the feed cursor from `cursor` to `next`.
   * Returns false, writing nothing, when the cursor is no longer `cursor` (another router got there first).
   */
  enqueueDeliveries(cursor: string, next: string, deliveries: readonly NewDelivery[]): Promise<boolean>;

  /**
   * Leases up to `limit` pending deliveries due at `now` (oldest due first): bumps `fence` and `attempts`, sets
   * `lease_until = next_attempt_at = now + leaseMs`. A dispatcher that dies mid-attempt leaves the delivery pending;
   * it is claimable again when the lease lapses, with the same event id. Several dispatchers never lease one row at once.
   */
  claimDeliveries(request: { workerId: string; now: number; leaseMs: number; limit: number }): Promise<Delivery[]>;

  /**
   * Records an attempt's outcome, only while `fence` is current and the delivery still pending (a stale dispatcher
   * whose lease lapsed gets false and writes nothing). `gone` also disables the target (an endpoint's `enabled`, or a
   * callback/push target's gone marker) and dead-letters that target's other pending deliveries not in flight.
   */
  finishDelivery(lease: { id: string; fence: number }, outcome: DeliveryOutcome, now: number): Promise<boolean>;

  /** With another tenant's id, indistinguishable from none. */
  getDelivery(tenant: string, id: string): Promise<Delivery | null>;

  /** The tenant's deliveries, newest first (by id within `createdAt`), filtered; `after` is the last id of the previous page. */
  listDeliveries(query: { tenant: string; status?: DeliveryStatus; taskId?: string; endpointId?: string; after?: { createdAt: number; id: string }; limit: number }): Promise<Delivery[]>;

  /**
   * Dead letters back to `pending` (attempts reset, due at `now`, same event id), by ids or by endpoint, in the
   * tenant only; clears the gone markers of their callback/push targets. Returns how many were redriven.
   */
  redriveDeliveries(tenant: string, filter: { ids?: readonly string[]; endpointId?: string }, now: number): Promise<number>;

  /** Retention for delivery history: deletes up to `limit` delivered deliveries delivered before `before`. */
  pruneDeliveries(before: number, limit: number): Promise<number>;

  /** Deliveries by status, all tenants (metrics). */
  countDeliveries(): Promise<Record<string, number>>;

  /** Creates or replaces (same tenant and id) an endpoint. */
  putWebhookEndpoint(endpoint: WebhookEndpoint): Promise<WebhookEndpoint>;
  /** With another tenant, indistinguishable from none. */
  getWebhookEndpoint(tenant: string, id: string): Promise<WebhookEndpoint | null>;
  /** In id order, after `afterId`; at most `limit`. */
  listWebhookEndpoints(tenant: string, options: { afterId?: string; limit: number }): Promise<WebhookEndpoint[]>;
  /** Deletes the endpoint and its pending deliveries. Returns whether it existed. */
  deleteWebhookEndpoint(tenant: string, id: string): Promise<boolean>;

  /** The secrets that sign a tenant's task callbacks (`callback_url`), or null when none were made yet. */
  getCallbackSecrets(tenant: string): Promise<WebhookSecret[] | null>;
  /** Stores them; with `onlyIfAbsent`, keeps and returns the existing ones when there are any (two racing creators agree). */
  putCallbackSecrets(tenant: string, secrets: readonly WebhookSecret[], now: number, onlyIfAbsent: boolean): Promise<WebhookSecret[]>;

  /** Which of these callback/push target keys answered 410 Gone (and were not redriven since). */
  goneTargets(keys: readonly string[]): Promise<string[]>;

  /**
   * Subscribes to committed events, including other processes' (PostgreSQL: LISTEN, started when the store opens;
   * SQLite: polling). Notifications are hints, delivered at least once after the commit; a `ready` hint after a
   * reconnect means "re-read". Returns the unsubscribe function.
   */
  subscribe(listener: (n: StoreNotification) => void): () => void;

  close(): Promise<void>;
}
