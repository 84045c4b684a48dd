/**
 * @module store/sqlite
 * The embedded store: one SQLite file in WAL mode through better-sqlite3.
 *
 * Durability: `synchronous=FULL` by default. In WAL mode NORMAL survives a process crash but can lose the last
 * transactions on power loss; an acknowledged create or step commit must survive both, so FULL is the default.
 * `synchronous: 'normal'` trades that for about three times the commit rate (DESIGN.md §7) and is an option.
 *
 * Several processes may share the file: every write runs under `BEGIN IMMEDIATE` with a busy timeout, so writers
 * queue instead of failing. Throughput comes from concurrency inside one process (DESIGN.md §7); extra processes
 * are for failover. Cross-process wake-ups come from polling the event table's rowid.
 */
import Database from 'better-sqlite3';
import { BelayError } from '../../core/errors.js';
import type { Json, PushConfig, SideEffectRecord, Task, TaskEvent, Tombstone } from '../../core/task.js';
import { planMigrations, type AppliedMigration } from '../migration.js';
import { CANCEL_COMMIT_KINDS } from '../port.js';
import type {
  BeginEffectOptions,
  BeginEffectOutcome,
  ClaimRequest,
  TaskKind,
  ClaimedTask,
  CommitOutcome,
  CreateResult,
  IdempotencyClaim,
  Lease,
  NewTask,
  Store,
  StoreCapabilities,
  StoreNotification,
  TaskCommit,
  TaskCountQuery,
  TaskListQuery,
  TaskPatch,
} from '../port.js';
import {
  PATCH_COLUMNS,
  effectFromRow,
  eventFromRow,
  json,
  newDeliveryRow,
  pendingForStorage,
  pendingFromEvent,
  pendingInEvent,
  pushConfigFromRow,
  taskFromRow,
  tombstoneFromRow,
  type EffectRow,
  type EventRow,
  type PushConfigRow,
  type TaskRow,
  type TombstoneRow,
} from '../row-mapping.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
import type { Delivery, DeliveryOutcome, DeliveryStatus, FeedEvent, NewDelivery, WebhookEndpoint, WebhookSecret } from '../../core/delivery.js';
import { deliveryFromRow, endpointFromRow, outcomeColumns, type DeliveryRow, type EndpointRow } from '../delivery-rows.js';

export interface SqliteStoreOptions {
  /** Database file path. A file (not `:memory:`) is needed for several processes. */
  path: string;
  synchronous?: 'full' | 'normal';
  busyTimeoutMs?: number;
  /** How often to look for other processes' events while someone subscribes. */
  pollMs?: number;
}

const TERMINAL_SQL = `('completed','failed','canceled','rejected')`;

function sqlJson(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}

export class SqliteStore implements Store {
  /** Compiled statements by text (see `prepare`). */
  private readonly statements = new Map<string, Database.Statement>();
  readonly capabilities: StoreCapabilities = { dialect: 'sqlite', notify: false, skipLocked: false, multiProcess: true };
  private readonly db: Database.Database;
  private readonly listeners = new Set<(n: StoreNotification) => void>();
  private pollTimer: NodeJS.Timeout | null = null;
  private lastEventRowId = 0;
  private readonly pollMs: number;
  private closed = false;

  private constructor(db: Database.Database, pollMs: number) {
    this.db = db;
    this.pollMs = pollMs;
  }

  /** Opens (creating if needed) and migrates the database. */
  static async open(options: SqliteStoreOptions): Promise<SqliteStore> {
    const db = new Database(options.path);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    const store = new SqliteStore(db, options.pollMs ?? 100);
    try {
      store.migrate();
    } catch (e) {
      db.close();
      throw e;
    }
    return store;
  }

  private migrate(): void {
    // Fast path without the write lock: a process starting next to busy (or frozen) writers must not need it
    // when the schema is already current.
    const hasTable = this.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'belay_schema_migrations'").get() !== undefined;
    if (hasTable) {
      const applied = this.appliedMigrations();
      if (planMigrations(SQLITE_MIGRATIONS, applied).length === 0) return;
    }
    const run = this.db.transaction(() => {
      this.db.exec(`CREATE TABLE IF NOT EXISTS belay_schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, breaking INTEGER NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
      const applied = this.prepare('SELECT version, breaking FROM belay_schema_migrations')
        .all()
        .map((r) => ({ version: Number((r as AppliedMigrationRow).version), breaking: Number((r as AppliedMigrationRow).breaking) === 1 }));
      for (const m of planMigrations(SQLITE_MIGRATIONS, applied)) {
        this.db.exec(m.sql);
        this.prepare('INSERT INTO belay_schema_migrations (version, name, breaking, applied_at) VALUES (?, ?, ?, ?)')
          .run(m.version, m.name, m.breaking ? 1 : 0, Date.now());
      }
    });
    run.immediate();
  }

  async schemaVersion(): Promise<number> {
    const r = this.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM belay_schema_migrations').get() as { v: number };
    return Number(r.v);
  }

  /** Test and operator hook: applied migrations (used to check the SCHEMA_TOO_NEW guard). */
  appliedMigrations(): AppliedMigration[] {
    return this.prepare('SELECT version, breaking FROM belay_schema_migrations ORDER BY version')
      .all()
      .map((r) => ({ version: Number((r as AppliedMigrationRow).version), breaking: Number((r as AppliedMigrationRow).breaking) === 1 }));
  }

  async createTask(task: NewTask, idem?: IdempotencyClaim): Promise<CreateResult> {
    const tx = this.db.transaction((): CreateResult => {
      if (idem) {
        const existing = this.prepare('SELECT task_id, fingerprint FROM belay_idempotency_keys WHERE tenant = ? AND scope = ? AND key = ? AND expires_at > ?')
          .get(task.tenant, idem.scope, idem.key, task.now) as { task_id: string; fingerprint: string } | undefined;
        if (existing) {
          if (existing.fingerprint !== idem.fingerprint) {
            throw new BelayError('IDEMPOTENCY_MISMATCH', 'This idempotency key was used with a different request', {
              details: { idempotency_key: idem.key },
            });
          }
          const row = this.prepare('SELECT * FROM belay_tasks WHERE id = ?').get(existing.task_id) as TaskRow | undefined;
          if (row) return { task: this.taskOf(row), created: false };
        }
        // An expired key may be reused: it then names a new request.
        this.prepare('DELETE FROM belay_idempotency_keys WHERE tenant = ? AND scope = ? AND key = ?').run(task.tenant, idem.scope, idem.key);
      }
      const row = this.prepare(
          `INSERT INTO belay_tasks (id, tenant, context_id, type, type_version, state, input, progress, version, next_seq,
             wake_at, created_at, updated_at, created_by, callback_url)
           VALUES (@id, @tenant, @context_id, @type, @type_version, 'submitted', @input, @progress, 1, 2,
             @now, @now, @now, @created_by, @callback_url)
           RETURNING *`,
        )
        .get({
          id: task.id,
          tenant: task.tenant,
          context_id: task.contextId,
          type: task.type,
          type_version: task.typeVersion,
          input: JSON.stringify(task.input),
          progress: JSON.stringify({ current: null, total: null, message: null }),
          now: task.now,
          created_by: task.createdBy,
          callback_url: task.callbackUrl,
        }) as TaskRow;
      this.insertEvent(task.id, 1, 'created', { ...task.createdEvent, state: 'submitted', type: task.type, type_version: task.typeVersion }, task.now);
      if (idem) {
        this.prepare('INSERT INTO belay_idempotency_keys (tenant, scope, key, task_id, fingerprint, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
          .run(task.tenant, idem.scope, idem.key, task.id, idem.fingerprint, task.now, idem.expiresAt);
      }
      return { task: taskFromRow(row), created: true };
    });
    const result = tx.immediate();
    if (result.created) this.emit({ type: 'event', taskId: task.id, seq: 1, kind: 'created' });
    return result;
  }

  private insertEvent(taskId: string, seq: number, kind: string, body: Record<string, Json>, at: number): void {
    this.prepare('INSERT INTO belay_task_events (task_id, seq, kind, body, at) VALUES (?, ?, ?, ?, ?)').run(taskId, seq, kind, JSON.stringify(body), at);
  }

  async getTask(id: string, tenant?: string): Promise<Task | null> {
    const row = (
      tenant === undefined
        ? this.prepare('SELECT * FROM belay_tasks WHERE id = ?').get(id)
        : this.prepare('SELECT * FROM belay_tasks WHERE id = ? AND tenant = ?').get(id, tenant)
    ) as TaskRow | undefined;
    return row ? this.taskOf(row) : null;
  }

  /** WHERE clauses and parameters for the filters shared by listing and counting. */
  private taskFilters(q: TaskCountQuery): { where: string[]; params: Record<string, unknown> } {
    const where = ['tenant = @tenant'];
    const params: Record<string, unknown> = { tenant: q.tenant };
    if (q.states && q.states.length > 0) {
      where.push(`state IN (SELECT value FROM json_each(@states))`);
      params.states = JSON.stringify(q.states);
    }
    if (q.createdBy !== undefined) {
      where.push('created_by = @created_by');
      params.created_by = q.createdBy;
    }
    if (q.type !== undefined) {
      where.push('type = @type');
      params.type = q.type;
    }
    if (q.createdFrom !== undefined) {
      where.push('created_at >= @created_from');
      params.created_from = q.createdFrom;
    }
    if (q.createdTo !== undefined) {
      where.push('created_at < @created_to');
      params.created_to = q.createdTo;
    }
    if (q.contextId !== undefined) {
      where.push('context_id = @context_id');
      params.context_id = q.contextId;
    }
    if (q.updatedFrom !== undefined) {
      where.push('updated_at >= @updated_from');
      params.updated_from = q.updatedFrom;
    }
    return { where, params };
  }

  async listTasks(q: TaskListQuery): Promise<Task[]> {
    const { where, params } = this.taskFilters(q);
    params.limit = q.limit;
    const byUpdated = q.order === 'updated';
    if (!byUpdated && q.after) {
      where.push('(created_at < @after_at OR (created_at = @after_at AND id < @after_id))');
      params.after_at = q.after.createdAt;
      params.after_id = q.after.id;
    }
    if (byUpdated && q.afterUpdated) {
      where.push('(updated_at < @after_at OR (updated_at = @after_at AND id < @after_id))');
      params.after_at = q.afterUpdated.updatedAt;
      params.after_id = q.afterUpdated.id;
    }
    const order = byUpdated ? 'updated_at DESC, id DESC' : 'created_at DESC, id DESC';
    const rows = this.prepare(`SELECT * FROM belay_tasks WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT @limit`).all(params) as TaskRow[];
    return rows.map((r) => this.taskOf(r));
  }

  async countTasks(q: TaskCountQuery): Promise<number> {
    const { where, params } = this.taskFilters(q);
    const r = this.prepare(`SELECT COUNT(*) AS n FROM belay_tasks WHERE ${where.join(' AND ')}`).get(params) as { n: number };
    return Number(r.n);
  }

  /** A task from its row, with the question a paused task keeps only in its event put back (see `pendingForStorage`). */
  private taskOf(row: TaskRow): Task {
    const task = taskFromRow(row);
    if (!pendingInEvent(task)) return task;
    const e = this.prepare(`SELECT body FROM belay_task_events WHERE task_id = ? AND kind = 'input_required' ORDER BY seq DESC LIMIT 1`).get(task.id) as
      | { body: string }
      | undefined;
    return pendingFromEvent(task, e ? json<Record<string, Json>>(e.body) : undefined);
  }

  /**
   * better-sqlite3 compiles a statement on every `prepare` (6% of a step commit's CPU in `npm run bench -- --only
   * step-commits`); the store sends a fixed set of texts (the optional list filters make a bounded number more), so
   * each is compiled once per connection. Reusing one is safe: the driver is synchronous, so two calls never
   * interleave, and no statement here is iterated or switched to raw or pluck mode. SQLite recompiles a cached
   * statement by itself after a schema change.
   */
  private prepare(sql: string): Database.Statement {
    let stmt = this.statements.get(sql);
    if (stmt === undefined) {
      stmt = this.db.prepare(sql);
      if (this.statements.size < 500) this.statements.set(sql, stmt);
    }
    return stmt;
  }

  async listEvents(taskId: string, afterSeq: number, limit: number): Promise<TaskEvent[]> {
    const rows = this.prepare('SELECT task_id, seq, kind, body, at FROM belay_task_events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?')
      .all(taskId, afterSeq, limit) as EventRow[];
    return rows.map(eventFromRow);
  }

  async claimTasks(req: ClaimRequest): Promise<ClaimedTask[]> {
    if (req.kinds.length === 0 || req.limit <= 0) return [];
    const kinds = JSON.stringify(req.kinds.map((k) => `${k.type}@${k.version}`));
    const started: string[] = [];
    const tx = this.db.transaction((): ClaimedTask[] => {
      const candidates = this.prepare(
          `SELECT id, state FROM belay_tasks
            WHERE state IN ('submitted', 'working') AND wake_at <= @now
              AND (type || '@' || type_version) IN (SELECT value FROM json_each(@kinds))
            ORDER BY wake_at LIMIT @limit`,
        )
        .all({ now: req.now, kinds, limit: req.limit }) as Array<{ id: string; state: string }>;
      const claimed: ClaimedTask[] = [];
      const update = this.prepare(
        `UPDATE belay_tasks SET fence = fence + 1, lease_owner = @worker, lease_until = @until, wake_at = @until,
           attempts = attempts + 1, state = 'working', updated_at = @now,
           version = version + (CASE WHEN state = 'submitted' THEN 1 ELSE 0 END),
           next_seq = next_seq + (CASE WHEN state = 'submitted' THEN 1 ELSE 0 END)
         WHERE id = @id RETURNING *`,
      );
      for (const c of candidates) {
        const row = update.get({ id: c.id, worker: req.workerId, until: req.now + req.leaseMs, now: req.now }) as TaskRow;
        if (c.state === 'submitted') {
          this.insertEvent(c.id, Number(row.next_seq) - 1, 'started', { state: 'working' }, req.now);
          started.push(`${c.id}:${Number(row.next_seq) - 1}`);
        }
        const task = taskFromRow(row);
        claimed.push({ task, lease: { taskId: task.id, fence: task.fence, workerId: req.workerId } });
      }
      return claimed;
    });
    const claimed = tx.immediate();
    for (const s of started) {
      const [taskId, seq] = s.split(':') as [string, string];
      this.emit({ type: 'event', taskId, seq: Number(seq), kind: 'started' });
    }
    return claimed;
  }

  async nextClaimAt(req: { workerId: string; now: number; kinds: readonly TaskKind[] }): Promise<number | null> {
    if (req.kinds.length === 0) return null;
    // Walks `belay_tasks_claim` upward from `now`: past `now` are only leases in force and scheduled retries.
    const row = this.prepare(
        `SELECT wake_at FROM belay_tasks
          WHERE state IN ('submitted', 'working') AND wake_at > @now
            AND (lease_owner IS NULL OR lease_owner <> @worker)
            AND (type || '@' || type_version) IN (SELECT value FROM json_each(@kinds))
          ORDER BY wake_at LIMIT 1`,
      )
      .get({ now: req.now, worker: req.workerId, kinds: JSON.stringify(req.kinds.map((k) => `${k.type}@${k.version}`)) }) as { wake_at: number } | undefined;
    return row ? Number(row.wake_at) : null;
  }

  async renewLease(lease: Lease, now: number, leaseMs: number): Promise<{ status: 'ok' | 'lost'; cancelRequested: boolean }> {
    const row = this.prepare(
        `UPDATE belay_tasks SET lease_until = @until, wake_at = @until
          WHERE id = @id AND fence = @fence AND state = 'working' RETURNING cancel_requested_at`,
      )
      .get({ id: lease.taskId, fence: lease.fence, until: now + leaseMs }) as { cancel_requested_at: number | null } | undefined;
    if (!row) return { status: 'lost', cancelRequested: false };
    return { status: 'ok', cancelRequested: row.cancel_requested_at !== null };
  }

  async releaseLease(lease: Lease, now: number): Promise<void> {
    this.prepare(
        `UPDATE belay_tasks SET lease_owner = NULL, lease_until = NULL, wake_at = @now, attempts = MAX(attempts - 1, 0)
          WHERE id = @id AND fence = @fence AND state = 'working'`,
      )
      .run({ id: lease.taskId, fence: lease.fence, now });
    this.emit({ type: 'ready' });
  }

  async commit(c: TaskCommit): Promise<CommitOutcome> {
    const terminal = c.state === 'completed' || c.state === 'failed' || c.state === 'canceled';
    const tx = this.db.transaction((): CommitOutcome => {
      const row = this.prepare(
          `UPDATE belay_tasks SET state = @state, step = @step, checkpoint = @checkpoint, progress = @progress,
             pending_input = @pending_input, result = @result, artifacts = COALESCE(@artifacts, artifacts), error = @error,
             lease_owner = CASE WHEN @lease_until IS NULL THEN NULL ELSE lease_owner END, lease_until = @lease_until,
             wake_at = @wake_at, attempts = CASE WHEN @reset_attempts = 1 THEN 1 ELSE attempts END,
             terminal_at = @terminal_at, expires_at = @expires_at,
             version = version + 1, next_seq = next_seq + 1, updated_at = @now
           WHERE id = @id AND fence = @fence AND state = 'working'
             AND (@check_cancel = 0 OR cancel_requested_at IS NULL)
             -- The key is a QUESTION_KEY ([A-Za-z0-9_-]), checked by ctx.ask, so it is safe inside a JSON path.
             AND (@answer_key IS NULL OR json_type(answers, '$."' || @answer_key || '"') IS NULL)
           RETURNING next_seq - 1 AS seq, version`,
        )
        .get({
          id: c.lease.taskId,
          fence: c.lease.fence,
          state: c.state,
          step: c.step,
          checkpoint: JSON.stringify(c.checkpoint),
          progress: JSON.stringify(c.progress),
          pending_input: pendingForStorage(c.pendingInput, c.event),
          result: JSON.stringify(c.result),
          artifacts: c.artifacts === undefined ? null : JSON.stringify(c.artifacts),
          error: sqlJson(c.error),
          lease_until: c.leaseUntil,
          wake_at: c.wakeAt,
          reset_attempts: c.resetAttempts ? 1 : 0,
          terminal_at: terminal ? c.now : null,
          expires_at: c.expiresAt,
          now: c.now,
          check_cancel: CANCEL_COMMIT_KINDS.includes(c.kind) ? 0 : 1,
          answer_key: c.kind === 'pause' && c.pendingInput ? c.pendingInput.key : null,
        }) as { seq: number; version: number } | undefined;
      if (!row) return this.diagnose(c);
      this.insertEvent(c.lease.taskId, Number(row.seq), c.event.kind, c.event.body, c.now);
      return { ok: true, seq: Number(row.seq), version: Number(row.version) };
    });
    const outcome = tx.immediate();
    if (outcome.ok) this.emit({ type: 'event', taskId: c.lease.taskId, seq: outcome.seq, kind: c.event.kind });
    return outcome;
  }

  /** Why a fenced commit matched no row. Runs only on the failure path. */
  private diagnose(c: TaskCommit): CommitOutcome {
    const r = this.prepare('SELECT fence, state, cancel_requested_at, answers FROM belay_tasks WHERE id = ?').get(c.lease.taskId) as
      | { fence: number; state: string; cancel_requested_at: number | null; answers: string }
      | undefined;
    if (!r || Number(r.fence) !== c.lease.fence || r.state !== 'working') return { ok: false, reason: 'lease_lost' };
    if (!CANCEL_COMMIT_KINDS.includes(c.kind) && r.cancel_requested_at !== null) return { ok: false, reason: 'cancel_requested' };
    return { ok: false, reason: 'answer_arrived' };
  }

  async beginEffect(lease: Lease, key: string, now: number, options: BeginEffectOptions = {}): Promise<BeginEffectOutcome> {
    const tx = this.db.transaction((): BeginEffectOutcome => {
      const existing = this.prepare('SELECT status, result, started_at FROM belay_side_effects WHERE task_id = ? AND effect_key = ?')
        .get(lease.taskId, key) as { status: string; result: string | null; started_at: number } | undefined;
      if (existing?.status === 'applied') return { status: 'applied', result: existing.result === null ? null : (JSON.parse(existing.result) as Json) };
      const t = this.prepare('SELECT fence, state, cancel_requested_at FROM belay_tasks WHERE id = ?').get(lease.taskId) as
        | { fence: number; state: string; cancel_requested_at: number | null }
        | undefined;
      if (!t || Number(t.fence) !== lease.fence || t.state !== 'working') return { status: 'lease_lost' };
      if (t.cancel_requested_at !== null && !options.duringCancel) return { status: 'cancel_requested' };
      if (existing) return { status: 'uncertain', startedAt: Number(existing.started_at) };
      this.prepare(`INSERT INTO belay_side_effects (task_id, effect_key, status, result, fence, started_at) VALUES (?, ?, 'pending', NULL, ?, ?)`)
        .run(lease.taskId, key, lease.fence, now);
      return { status: 'started' };
    });
    return tx.immediate();
  }

  async completeEffect(taskId: string, key: string, result: Json, now: number): Promise<void> {
    this.prepare(`UPDATE belay_side_effects SET status = 'applied', result = ?, applied_at = ? WHERE task_id = ? AND effect_key = ?`)
      .run(JSON.stringify(result), now, taskId, key);
  }

  async listEffects(taskId: string): Promise<SideEffectRecord[]> {
    const rows = this.prepare('SELECT * FROM belay_side_effects WHERE task_id = ? ORDER BY started_at, effect_key').all(taskId) as EffectRow[];
    return rows.map(effectFromRow);
  }

  async transition(id: string, tenant: string | undefined, now: number, decide: (task: Task) => TaskPatch | null): Promise<Task> {
    let emitted: StoreNotification | null = null;
    const tx = this.db.transaction((): Task => {
      const row = (
        tenant === undefined
          ? this.prepare('SELECT * FROM belay_tasks WHERE id = ?').get(id)
          : this.prepare('SELECT * FROM belay_tasks WHERE id = ? AND tenant = ?').get(id, tenant)
      ) as TaskRow | undefined;
      if (!row) throw new BelayError('NOT_FOUND', 'No such task');
      const task = this.taskOf(row);
      const patch = decide(task);
      if (!patch) return task;
      const sets: string[] = [];
      const params: Record<string, unknown> = { id, now, bump_fence: patch.bumpFence ? 1 : 0, has_event: patch.event ? 1 : 0 };
      for (const [field, value] of Object.entries(patch.set)) {
        const col = PATCH_COLUMNS[field as keyof typeof PATCH_COLUMNS];
        sets.push(`${col.column} = @${col.column}`);
        params[col.column] = col.json ? sqlJson(value) : value;
      }
      const updated = this.prepare(
          `UPDATE belay_tasks SET ${sets.map((s) => `${s}, `).join('')} version = version + 1, fence = fence + @bump_fence,
             next_seq = next_seq + @has_event, updated_at = @now WHERE id = @id RETURNING *`,
        )
        .get(params) as TaskRow;
      if (patch.event) {
        this.insertEvent(id, task.nextSeq, patch.event.kind, patch.event.body, now);
        emitted = { type: 'event', taskId: id, seq: task.nextSeq, kind: patch.event.kind };
      }
      return this.taskOf(updated);
    });
    const task = tx.immediate();
    if (emitted) this.emit(emitted);
    return task;
  }

  async listDueDeadlines(now: number, limit: number): Promise<Array<{ id: string; tenant: string }>> {
    return this.prepare(`SELECT id, tenant FROM belay_tasks WHERE state IN ('input_required', 'auth_required') AND wake_at <= ? ORDER BY wake_at LIMIT ?`)
      .all(now, limit) as Array<{ id: string; tenant: string }>;
  }

  async findStranded(now: number, graceMs: number, limit: number): Promise<Task[]> {
    const rows = this.prepare(
        `SELECT * FROM belay_tasks WHERE state NOT IN ${TERMINAL_SQL}
           AND (wake_at IS NULL OR (state IN ('submitted', 'working') AND wake_at < @cutoff))
         ORDER BY created_at LIMIT @limit`,
      )
      .all({ cutoff: now - graceMs, limit }) as TaskRow[];
    return rows.map((r) => this.taskOf(r));
  }

  async expireTasks(now: number, limit: number): Promise<number> {
    const tx = this.db.transaction((): number => {
      const doomed = this.prepare(`SELECT id FROM belay_tasks WHERE expires_at <= ? AND state IN ${TERMINAL_SQL} ORDER BY expires_at LIMIT ?`)
        .all(now, limit) as Array<{ id: string }>;
      for (const { id } of doomed) {
        this.prepare(
            `INSERT OR IGNORE INTO belay_tombstones (id, tenant, type, final_state, created_by, created_at, terminal_at, expired_at)
             SELECT id, tenant, type, state, created_by, created_at, terminal_at, ? FROM belay_tasks WHERE id = ?`,
          )
          .run(now, id);
        this.prepare('DELETE FROM belay_task_events WHERE task_id = ?').run(id);
        this.prepare('DELETE FROM belay_side_effects WHERE task_id = ?').run(id);
        this.prepare('DELETE FROM belay_idempotency_keys WHERE task_id = ?').run(id);
        this.prepare('DELETE FROM belay_push_configs WHERE task_id = ?').run(id);
        this.prepare('DELETE FROM belay_deliveries WHERE task_id = ?').run(id);
        this.prepare('DELETE FROM belay_webhook_gone_targets WHERE task_id = ?').run(id);
        this.prepare('DELETE FROM belay_tasks WHERE id = ?').run(id);
      }
      return doomed.length;
    });
    return tx.immediate();
  }

  async getTombstone(id: string, tenant?: string): Promise<Tombstone | null> {
    const row = (
      tenant === undefined
        ? this.prepare('SELECT * FROM belay_tombstones WHERE id = ?').get(id)
        : this.prepare('SELECT * FROM belay_tombstones WHERE id = ? AND tenant = ?').get(id, tenant)
    ) as TombstoneRow | undefined;
    return row ? tombstoneFromRow(row) : null;
  }

  async putPushConfig(c: PushConfig): Promise<PushConfig | null> {
    const row = this.prepare(
        `INSERT INTO belay_push_configs (tenant, task_id, id, created_by, url, token, auth_scheme, auth_credentials, created_at, updated_at)
         SELECT @tenant, @task_id, @id, @created_by, @url, @token, @auth_scheme, @auth_credentials, @now, @now
          WHERE EXISTS (SELECT 1 FROM belay_tasks WHERE id = @task_id AND tenant = @tenant)
         ON CONFLICT (tenant, task_id, id) DO UPDATE SET url = excluded.url, token = excluded.token,
           auth_scheme = excluded.auth_scheme, auth_credentials = excluded.auth_credentials, updated_at = excluded.updated_at
         RETURNING *`,
      )
      .get({
        tenant: c.tenant,
        task_id: c.taskId,
        id: c.id,
        created_by: c.createdBy,
        url: c.url,
        token: c.token,
        auth_scheme: c.authentication?.scheme ?? null,
        auth_credentials: c.authentication?.credentials ?? null,
        now: c.updatedAt,
      }) as PushConfigRow | undefined;
    return row ? pushConfigFromRow(row) : null;
  }

  async getPushConfig(tenant: string, taskId: string, id: string): Promise<PushConfig | null> {
    const row = this.prepare('SELECT * FROM belay_push_configs WHERE tenant = ? AND task_id = ? AND id = ?').get(tenant, taskId, id) as PushConfigRow | undefined;
    return row ? pushConfigFromRow(row) : null;
  }

  async listPushConfigs(tenant: string, taskId: string, options: { afterId?: string; limit: number }): Promise<PushConfig[]> {
    const rows = this.prepare('SELECT * FROM belay_push_configs WHERE tenant = ? AND task_id = ? AND id > ? ORDER BY id LIMIT ?')
      .all(tenant, taskId, options.afterId ?? '', options.limit) as PushConfigRow[];
    return rows.map(pushConfigFromRow);
  }

  async deletePushConfig(tenant: string, taskId: string, id: string): Promise<boolean> {
    return this.prepare('DELETE FROM belay_push_configs WHERE tenant = ? AND task_id = ? AND id = ?').run(tenant, taskId, id).changes > 0;
  }

  async setPrincipalDisabled(tenant: string, principal: string, disabled: boolean, now: number, reason?: string): Promise<void> {
    if (disabled) {
      this.prepare('INSERT INTO belay_disabled_principals (tenant, principal, disabled_at, reason) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, principal) DO NOTHING')
        .run(tenant, principal, now, reason ?? null);
    } else {
      this.prepare('DELETE FROM belay_disabled_principals WHERE tenant = ? AND principal = ?').run(tenant, principal);
    }
  }

  async isPrincipalDisabled(tenant: string, principal: string): Promise<boolean> {
    return this.prepare('SELECT 1 FROM belay_disabled_principals WHERE tenant = ? AND principal = ?').get(tenant, principal) !== undefined;
  }

  async countByState(): Promise<Record<string, number>> {
    const rows = this.prepare('SELECT state, COUNT(*) AS n FROM belay_tasks GROUP BY state').all() as Array<{ state: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }

  // ---- webhook delivery -----------------------------------------------------------------------------------------
  // The feed cursor is the event log's rowid: AUTOINCREMENT ids are assigned under the single writer lock, so id
  // order is commit order and a reader past id n never misses a later commit below n.

  async readEventFeed(limit: number): Promise<{ cursor: string; next: string; events: FeedEvent[] }> {
    const read = this.db.transaction(() => {
      const row = this.prepare(`SELECT cursor FROM belay_delivery_feed WHERE name = 'webhooks'`).get() as { cursor: string } | undefined;
      const cursor = row?.cursor ?? '0';
      const rows = this.prepare(
          `SELECT e.id AS rowid_, e.task_id, e.seq, e.kind, e.body, e.at, t.tenant, t.context_id, t.type AS task_type, t.callback_url, t.created_by
             FROM belay_task_events e LEFT JOIN belay_tasks t ON t.id = e.task_id
            WHERE e.id > ? ORDER BY e.id LIMIT ?`,
        )
        .all(Number(cursor), limit) as Array<EventRow & { rowid_: number; tenant: string | null; context_id: string; task_type: string; callback_url: string | null; created_by: string }>;
      return { cursor, rows };
    });
    const { cursor, rows } = read.deferred();
    const events: FeedEvent[] = [];
    for (const r of rows) {
      if (r.tenant === null) continue;
      events.push({ ...eventFromRow(r), tenant: r.tenant, contextId: r.context_id, taskType: r.task_type, callbackUrl: r.callback_url, createdBy: r.created_by });
    }
    return { cursor, next: rows.length > 0 ? String(rows.at(-1)!.rowid_) : cursor, events };
  }

  async enqueueDeliveries(cursor: string, next: string, deliveries: readonly NewDelivery[]): Promise<boolean> {
    const tx = this.db.transaction((): boolean => {
      const moved = this.prepare(`UPDATE belay_delivery_feed SET cursor = @next, updated_at = @now WHERE name = 'webhooks' AND cursor = @cursor`)
        .run({ next, cursor, now: deliveries[0]?.now ?? 0 });
      if (moved.changes === 0) return false;
      const insert = this.prepare(
        `INSERT INTO belay_deliveries (id, event_id, tenant, task_id, seq, event_type, target_kind, target_id, target_key, url, payload,
           status, attempts, next_attempt_at, fence, dead_reason, dead_at, created_at)
         VALUES (@id, @event_id, @tenant, @task_id, @seq, @event_type, @target_kind, @target_id, @target_key, @url, @payload,
           @status, 0, @next_attempt_at, 0, @dead_reason, @dead_at, @now)
         ON CONFLICT (target_key, task_id, seq) DO NOTHING`,
      );
      for (const d of deliveries) insert.run(newDeliveryRow(d));
      return true;
    });
    return tx.immediate();
  }

  async claimDeliveries(req: { workerId: string; now: number; leaseMs: number; limit: number }): Promise<Delivery[]> {
    if (req.limit <= 0) return [];
    const tx = this.db.transaction((): Delivery[] => {
      const ids = this.prepare(`SELECT id FROM belay_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?`)
        .all(req.now, req.limit) as Array<{ id: string }>;
      const update = this.prepare(
        `UPDATE belay_deliveries SET lease_owner = @worker, lease_until = @until, next_attempt_at = @until, attempts = attempts + 1,
           fence = fence + 1, last_attempt_at = @now WHERE id = @id RETURNING *`,
      );
      return ids.map(({ id }) => deliveryFromRow(update.get({ id, worker: req.workerId, until: req.now + req.leaseMs, now: req.now }) as DeliveryRow));
    });
    return tx.immediate();
  }

  async finishDelivery(lease: { id: string; fence: number }, outcome: DeliveryOutcome, now: number): Promise<boolean> {
    const tx = this.db.transaction((): boolean => {
      const cols = outcomeColumns(outcome, now);
      const row = this.prepare(
          `UPDATE belay_deliveries SET status = @status, next_attempt_at = @next_attempt_at, last_status = @last_status, last_error = @last_error,
             dead_reason = @dead_reason, dead_at = @dead_at, delivered_at = @delivered_at, lease_owner = NULL, lease_until = NULL
           WHERE id = @id AND fence = @fence AND status = 'pending' RETURNING *`,
        )
        .get({ ...cols, id: lease.id, fence: lease.fence }) as DeliveryRow | undefined;
      if (!row) return false;
      if (outcome.kind === 'gone') {
        if (row.target_kind === 'endpoint') {
          this.prepare(`UPDATE belay_webhook_endpoints SET enabled = 0, disabled_reason = 'gone', disabled_at = ?, updated_at = ? WHERE tenant = ? AND id = ?`)
            .run(now, now, row.tenant, row.target_id);
        } else {
          this.prepare(`INSERT INTO belay_webhook_gone_targets (target_key, tenant, task_id, reason, at) VALUES (?, ?, ?, 'gone', ?) ON CONFLICT (target_key) DO NOTHING`)
            .run(row.target_key, row.tenant, row.task_id, now);
        }
        this.prepare(
            `UPDATE belay_deliveries SET status = 'dead', dead_reason = 'target_gone', dead_at = @now, next_attempt_at = NULL
              WHERE target_key = @key AND status = 'pending' AND (lease_until IS NULL OR lease_until <= @now)`,
          )
          .run({ key: row.target_key, now });
      }
      return true;
    });
    return tx.immediate();
  }

  async getDelivery(tenant: string, id: string): Promise<Delivery | null> {
    const row = this.prepare('SELECT * FROM belay_deliveries WHERE tenant = ? AND id = ?').get(tenant, id) as DeliveryRow | undefined;
    return row ? deliveryFromRow(row) : null;
  }

  async listDeliveries(q: { tenant: string; status?: DeliveryStatus; taskId?: string; endpointId?: string; after?: { createdAt: number; id: string }; limit: number }): Promise<Delivery[]> {
    const where = ['tenant = @tenant'];
    const params: Record<string, unknown> = { tenant: q.tenant, limit: q.limit };
    if (q.status) {
      where.push('status = @status');
      params.status = q.status;
    }
    if (q.taskId) {
      where.push('task_id = @task_id');
      params.task_id = q.taskId;
    }
    if (q.endpointId) {
      where.push(`target_kind = 'endpoint' AND target_id = @endpoint_id`);
      params.endpoint_id = q.endpointId;
    }
    if (q.after) {
      where.push('(created_at < @after_at OR (created_at = @after_at AND id < @after_id))');
      params.after_at = q.after.createdAt;
      params.after_id = q.after.id;
    }
    const rows = this.prepare(`SELECT * FROM belay_deliveries WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT @limit`).all(params) as DeliveryRow[];
    return rows.map(deliveryFromRow);
  }

  async redriveDeliveries(tenant: string, filter: { ids?: readonly string[]; endpointId?: string }, now: number): Promise<number> {
    const tx = this.db.transaction((): number => {
      const where = [`tenant = @tenant`, `status = 'dead'`];
      const params: Record<string, unknown> = { tenant, now };
      if (filter.ids) {
        where.push('id IN (SELECT value FROM json_each(@ids))');
        params.ids = JSON.stringify(filter.ids);
      }
      if (filter.endpointId) {
        where.push(`target_kind = 'endpoint' AND target_id = @endpoint_id`);
        params.endpoint_id = filter.endpointId;
      }
      const rows = this.prepare(
          `UPDATE belay_deliveries SET status = 'pending', attempts = 0, next_attempt_at = @now, dead_reason = NULL, dead_at = NULL,
             lease_owner = NULL, lease_until = NULL WHERE ${where.join(' AND ')} RETURNING target_key`,
        )
        .all(params) as Array<{ target_key: string }>;
      const del = this.prepare('DELETE FROM belay_webhook_gone_targets WHERE target_key = ? AND tenant = ?');
      for (const key of new Set(rows.map((r) => r.target_key))) del.run(key, tenant);
      return rows.length;
    });
    return tx.immediate();
  }

  async pruneDeliveries(before: number, limit: number): Promise<number> {
    return this.prepare(`DELETE FROM belay_deliveries WHERE id IN (SELECT id FROM belay_deliveries WHERE status = 'delivered' AND delivered_at < ? ORDER BY delivered_at LIMIT ?)`)
      .run(before, limit).changes;
  }

  async countDeliveries(): Promise<Record<string, number>> {
    const rows = this.prepare('SELECT status, COUNT(*) AS n FROM belay_deliveries GROUP BY status').all() as Array<{ status: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  async putWebhookEndpoint(e: WebhookEndpoint): Promise<WebhookEndpoint> {
    const row = this.prepare(
        `INSERT INTO belay_webhook_endpoints (id, tenant, url, description, event_types, secrets, enabled, disabled_reason, disabled_at, created_by, created_at, updated_at)
         VALUES (@id, @tenant, @url, @description, @event_types, @secrets, @enabled, @disabled_reason, @disabled_at, @created_by, @created_at, @updated_at)
         ON CONFLICT (id) DO UPDATE SET url = excluded.url, description = excluded.description, event_types = excluded.event_types,
           secrets = excluded.secrets, enabled = excluded.enabled, disabled_reason = excluded.disabled_reason, disabled_at = excluded.disabled_at,
           updated_at = excluded.updated_at
         WHERE belay_webhook_endpoints.tenant = excluded.tenant
         RETURNING *`,
      )
      .get({
        id: e.id,
        tenant: e.tenant,
        url: e.url,
        description: e.description,
        event_types: e.eventTypes === null ? null : JSON.stringify(e.eventTypes),
        secrets: JSON.stringify(e.secrets),
        enabled: e.enabled ? 1 : 0,
        disabled_reason: e.disabledReason,
        disabled_at: e.disabledAt,
        created_by: e.createdBy,
        created_at: e.createdAt,
        updated_at: e.updatedAt,
      }) as EndpointRow | undefined;
    if (!row) throw new BelayError('NOT_FOUND', 'No such webhook endpoint');
    return endpointFromRow(row);
  }

  async getWebhookEndpoint(tenant: string, id: string): Promise<WebhookEndpoint | null> {
    const row = this.prepare('SELECT * FROM belay_webhook_endpoints WHERE tenant = ? AND id = ?').get(tenant, id) as EndpointRow | undefined;
    return row ? endpointFromRow(row) : null;
  }

  async listWebhookEndpoints(tenant: string, options: { afterId?: string; limit: number }): Promise<WebhookEndpoint[]> {
    const rows = this.prepare('SELECT * FROM belay_webhook_endpoints WHERE tenant = ? AND id > ? ORDER BY id LIMIT ?')
      .all(tenant, options.afterId ?? '', options.limit) as EndpointRow[];
    return rows.map(endpointFromRow);
  }

  async deleteWebhookEndpoint(tenant: string, id: string): Promise<boolean> {
    const tx = this.db.transaction((): boolean => {
      const gone = this.prepare('DELETE FROM belay_webhook_endpoints WHERE tenant = ? AND id = ?').run(tenant, id).changes > 0;
      if (gone) this.prepare(`DELETE FROM belay_deliveries WHERE tenant = ? AND target_key = ? AND status = 'pending'`).run(tenant, `endpoint:${id}`);
      return gone;
    });
    return tx.immediate();
  }

  async getCallbackSecrets(tenant: string): Promise<WebhookSecret[] | null> {
    const row = this.prepare('SELECT secrets FROM belay_webhook_tenant_secrets WHERE tenant = ?').get(tenant) as { secrets: string } | undefined;
    return row ? (JSON.parse(row.secrets) as WebhookSecret[]) : null;
  }

  async putCallbackSecrets(tenant: string, secrets: readonly WebhookSecret[], now: number, onlyIfAbsent: boolean): Promise<WebhookSecret[]> {
    const row = this.prepare(
        `INSERT INTO belay_webhook_tenant_secrets (tenant, secrets, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (tenant) DO UPDATE SET secrets = CASE WHEN ? = 1 THEN secrets ELSE excluded.secrets END,
           updated_at = CASE WHEN ? = 1 THEN updated_at ELSE excluded.updated_at END
         RETURNING secrets`,
      )
      .get(tenant, JSON.stringify(secrets), now, onlyIfAbsent ? 1 : 0, onlyIfAbsent ? 1 : 0) as { secrets: string };
    return JSON.parse(row.secrets) as WebhookSecret[];
  }

  async goneTargets(keys: readonly string[]): Promise<string[]> {
    if (keys.length === 0) return [];
    const rows = this.prepare('SELECT target_key FROM belay_webhook_gone_targets WHERE target_key IN (SELECT value FROM json_each(?))')
      .all(JSON.stringify(keys)) as Array<{ target_key: string }>;
    return rows.map((r) => r.target_key);
  }

  subscribe(listener: (n: StoreNotification) => void): () => void {
    this.listeners.add(listener);
    if (!this.pollTimer && !this.closed) {
      const r = this.prepare('SELECT COALESCE(MAX(id), 0) AS m FROM belay_task_events').get() as { m: number };
      this.lastEventRowId = Number(r.m);
      // Other processes' commits are seen by polling; notifications are hints, so a duplicate of our own is harmless.
      this.pollTimer = setInterval(() => this.poll(), this.pollMs);
      this.pollTimer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.pollTimer) {
        clearInterval(this.pollTimer);
        this.pollTimer = null;
      }
    };
  }

  private poll(): void {
    if (this.closed) return;
    try {
      const rows = this.prepare('SELECT id, task_id, seq, kind FROM belay_task_events WHERE id > ? ORDER BY id LIMIT 1000')
        .all(this.lastEventRowId) as Array<{ id: number; task_id: string; seq: number; kind: string }>;
      for (const r of rows) {
        this.lastEventRowId = Number(r.id);
        this.emit({ type: 'event', taskId: r.task_id, seq: Number(r.seq), kind: r.kind as TaskEvent['kind'] });
      }
    } catch {
      // A busy database delays the hint to the next poll; nothing is lost because readers re-read the log.
    }
  }

  /** Listeners run after the commit; one that throws must not make a committed write look failed. */
  private emit(n: StoreNotification): void {
    for (const l of this.listeners) {
      try {
        l(n);
      } catch {
        // Notifications are hints: a failing listener loses its hint, never the write.
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.listeners.clear();
    this.db.close();
  }
}

interface AppliedMigrationRow {
  version: number;
  breaking: number;
}

export function openSqliteStore(options: SqliteStoreOptions): Promise<SqliteStore> {
  return SqliteStore.open(options);
}
