/**
 * @module store/postgres
 * The multi-machine store: PostgreSQL through a `pg` Pool, every object inside one schema (default `belay`).
 *
 * Hot paths are one statement each (DESIGN.md §7: a round trip is the unit of cost): the step commit, the claim,
 * the lease renewal and the ledger's `beginEffect` are single statements built from data-modifying CTEs. Cold paths
 * (`transition`) lock the row with `SELECT ... FOR UPDATE` in a transaction and send their `pg_notify` inside it.
 *
 * Hot-path wake-ups (create, claim, step commit) are sent right AFTER their commit, not inside it: a transaction
 * that has issued NOTIFY takes a cluster-wide lock at commit and holds it through its WAL flush, so notifying commits
 * cannot share a flush (group commit) and run one fsync at a time. Measured by `npm run bench` on 8 workers: the
 * raw step commit fell from ~1,230 to ~400 per second with NOTIFY inside it. Instead the hints are queued and sent in
 * batches by one `SELECT pg_notify(...)` at a time with `synchronous_commit = off` (a hint needs no flush, so the lock
 * is held only for an instant). Still never before the commit; a process that dies between its commit and the send
 * loses that hint, which readers already tolerate (workers poll, event streams re-read the log on each heartbeat).
 *
 * Statements are sent unnamed (planned per execution with their parameters), so no connection keeps a plan made
 * while the tables were empty (the prepared-statement trap in DESIGN.md §7).
 *
 * Failures of the connection (server restart, network) surface as `BelayError('STORE_UNAVAILABLE')`, decided by
 * error code and by the client's own error event, never by message text. Broken clients are released with their
 * error, so the pool drops them and the next call opens a fresh connection once the server is back.
 *
 * Wake-ups: `NOTIFY` on one channel per schema with the payload `taskId:seq:kind` (or `ready`). One dedicated
 * client LISTENs and reconnects with backoff; notifications are hints, listeners re-read the event log.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { BelayError } from '../../core/errors.js';
import type { Json, PushConfig, SideEffectRecord, Task, TaskEvent, TaskEventKind, Tombstone } from '../../core/task.js';
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
  type EffectRow,
  type EventRow,
  type PushConfigRow,
  type TaskRow,
  tombstoneFromRow,
  type TombstoneRow,
} from '../row-mapping.js';
import { POSTGRES_MIGRATIONS, SCHEMA_PLACEHOLDER } from './migrations.js';
import type { Delivery, DeliveryOutcome, DeliveryStatus, FeedEvent, NewDelivery, WebhookEndpoint, WebhookSecret } from '../../core/delivery.js';
import { deliveryFromRow, endpointFromRow, outcomeColumns, type DeliveryRow, type EndpointRow } from '../delivery-rows.js';

export interface PostgresStoreOptions {
  /** `postgres://user@host:port/database`. */
  connectionString: string;
  /** Schema holding Belay's tables; created if missing. Default `belay`. */
  schema?: string;
  /** Pool size (connections for queries; the LISTEN client is one more). Default 10. */
  poolSize?: number;
  /** Connections kept for claiming work (workers only; opened on the first claim). Default 2. */
  claimPoolSize?: number;
  /**
   * When the LISTEN client runs. `eager` (default): from open to close, so a `subscribe()` hears every event
   * committed after it returns, from any process. `lazy`: only while someone subscribes (no extra connection for
   * tools that never subscribe); events committed before its LISTEN is in place are not announced.
   */
  listen?: 'eager' | 'lazy';
  /** How long to wait for a new connection before reporting STORE_UNAVAILABLE. Default 10 s. */
  connectTimeoutMs?: number;
  /** Background errors (idle pool clients, the LISTEN client) that no caller is waiting for. */
  onError?: (err: unknown) => void;
}

const TERMINAL_SQL = `('completed','failed','canceled','rejected')`;

/** SQLSTATEs that mean "the connection or the server went away" (besides class 08, connection exception). */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, recovering)
  '57P05', // idle_session_timeout
  '53300', // too_many_connections
]);
/** Socket-level error codes from Node. */
const UNAVAILABLE_SYSCALL_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
]);

/** True when `err` carries a code saying the connection or server is gone. */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SYSCALL_CODES.has(code);
}

function unavailable(cause: unknown): BelayError {
  if (cause instanceof BelayError) return cause;
  return new BelayError('STORE_UNAVAILABLE', 'PostgreSQL is unavailable', { cause });
}

/** Serialises a JSON column value; SQL NULL for null/undefined (nullable columns only). */
function sqlJson(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}

/** int8 as a JS number (every int8 Belay stores is an epoch-ms time or a small counter); json/jsonb as text, which
 * `row-mapping.json` parses, so a JSON string value is not parsed twice. */
function typeOverrides(): pg.TypeOverrides {
  const types = new pg.TypeOverrides();
  types.setTypeParser(20, 'text', (v: string) => Number(v));
  types.setTypeParser(114, 'text', (v: string) => v);
  types.setTypeParser(3802, 'text', (v: string) => v);
  return types;
}

/** A stable 64-bit advisory-lock key per schema (as a decimal string for `$1::bigint`). */
function advisoryKey(schema: string): string {
  return createHash('sha256').update(`belay:migrate:${schema}`).digest().readBigInt64BE(0).toString();
}

/** NOTIFY channel for a schema; identifiers are at most 63 bytes, so long schema names are hashed. */
function channelFor(schema: string): string {
  const plain = `belay_${schema}`;
  return Buffer.byteLength(plain) <= 63 ? plain : `belay_${createHash('sha256').update(schema).digest('hex').slice(0, 40)}`;
}

/** Casts for the cold-path patch columns. */
const PATCH_CASTS: Record<string, string> = { state: 'text', lease_owner: 'text' };

interface ClientState {
  /** Set when the client reported an error: it is released with it so the pool drops it. */
  broken: Error | null;
}

/** More distinct statement texts than the store sends; past it, statements run unnamed (see `query`). */
const MAX_PREPARED_STATEMENTS = 200;

/** PostgreSQL's refusal to run a prepared plan whose result columns changed under it (SQLSTATE 0A000). */
function isStalePlan(err: unknown): boolean {
  return err instanceof pg.DatabaseError && err.code === '0A000' && /cached plan must not change result type/.test(err.message);
}

export class PostgresStore implements Store {
  readonly capabilities: StoreCapabilities = { dialect: 'postgres', notify: true, skipLocked: true, multiProcess: true };
  readonly schema: string;
  private readonly pool: pg.Pool;
  private readonly types = typeOverrides();
  private readonly s: string;
  private readonly channel: string;
  private readonly channelLiteral: string;
  private readonly listeners = new Set<(n: StoreNotification) => void>();
  private readonly listenMode: 'eager' | 'lazy';
  private listenClient: pg.Client | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private reconnectAttempt = 0;
  private closed = false;
  private readonly commitSql = new Map<string, string>();
  /** Prepared statement names by statement text (see `query`). */
  private readonly statementNames = new Map<string, string>();
  private claimPool: pg.Pool | null = null;
  private claimText: string | undefined;
  /** Hints of committed hot-path writes waiting to be sent (see the module comment). */
  private readonly pendingHints: string[] = [];
  private sendingHints: Promise<void> | null = null;
  private readonly onError: (err: unknown) => void;

  private constructor(private readonly options: PostgresStoreOptions) {
    this.schema = options.schema ?? 'belay';
    if (this.schema.length === 0) throw new BelayError('INTERNAL', 'The PostgreSQL schema name is empty');
    this.s = pg.escapeIdentifier(this.schema);
    this.channel = channelFor(this.schema);
    this.channelLiteral = pg.escapeLiteral(this.channel);
    this.listenMode = options.listen ?? 'eager';
    this.onError = options.onError ?? (() => {});
    this.pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.poolSize ?? 10,
      types: this.types,
      keepAlive: true,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      application_name: 'belay',
    });
    // An idle client whose connection dies (server restart) is removed by the pool, which then emits 'error';
    // without a handler that would crash the process.
    this.pool.on('error', (err) => this.onError(err));
  }

  /** Opens the pool, applies migrations and (in `eager` mode) starts listening. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const store = new PostgresStore(options);
    try {
      await store.migrate();
      if (store.listenMode === 'eager') await store.connectListener();
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  // ---- connections -----------------------------------------------------------------------------------------------

  private async withClient<T>(fn: (client: pg.PoolClient, state: ClientState) => Promise<T>, pool: pg.Pool = this.pool): Promise<T> {
    if (this.closed) throw new BelayError('STORE_UNAVAILABLE', 'The PostgreSQL store is closed');
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      // A server answer at connect (wrong password, no such database) is a configuration error, not an outage.
      if (err instanceof pg.DatabaseError && !isConnectionError(err)) throw err;
      throw unavailable(err);
    }
    const state: ClientState = { broken: null };
    const onClientError = (err: Error) => {
      state.broken = err;
    };
    client.on('error', onClientError);
    try {
      return await fn(client, state);
    } catch (err) {
      if (state.broken === null && isConnectionError(err)) state.broken = err as Error;
      if (state.broken !== null) throw unavailable(err);
      throw err;
    } finally {
      client.removeListener('error', onClientError);
      client.release(state.broken ?? undefined);
    }
  }

  /**
   * Runs one statement as a named prepared statement: each pooled connection parses and plans it once, then only
   * binds and executes. Unnamed statements were parsed and planned on every call, which on the hot path (commit,
   * lease renewal, the ledger) cost the server more than executing them (`npm run bench -- --only noop-peers`).
   * Every text sent here is fixed up to its parameters (the schema is the only thing interpolated), so the names
   * stay few; the cap only guards against a future caller that interpolates values.
   *
   * Failure semantics: a connection whose prepared plan no longer matches its table (a migration added a column
   * while this process ran: "cached plan must not change result type") is discarded and the statement is sent
   * once more on another connection. The statement failed before executing, so sending it again is safe.
   */
  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = [], pool: pg.Pool = this.pool): Promise<pg.QueryResult<R>> {
    const name = this.statementName(text);
    const run = () =>
      this.withClient(async (c, state) => {
        try {
          return await c.query<R>(name === null ? { text, values } : { name, text, values });
        } catch (err) {
          if (isStalePlan(err)) state.broken ??= err as Error;
          throw err;
        }
      }, pool);
    try {
      return await run();
    } catch (err) {
      if (!isStalePlan(err) && !(err instanceof BelayError && isStalePlan(err.cause))) throw err;
      return run();
    }
  }

  private statementName(text: string): string | null {
    let name = this.statementNames.get(text);
    if (name === undefined) {
      if (this.statementNames.size >= MAX_PREPARED_STATEMENTS) return null;
      name = `belay_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      this.statementNames.set(text, name);
    }
    return name;
  }

  private transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.withClient(async (c, state) => {
      await c.query('BEGIN');
      let result: T;
      try {
        result = await fn(c);
      } catch (err) {
        try {
          await c.query('ROLLBACK');
        } catch (rollbackErr) {
          // Never hand a client in an unknown transaction state back to the pool.
          state.broken ??= rollbackErr as Error;
        }
        throw err;
      }
      await c.query('COMMIT');
      return result;
    });
  }

  // ---- migrations ------------------------------------------------------------------------------------------------

  private async migrate(): Promise<void> {
    await this.transaction(async (c) => {
      // Serialises concurrent starts on one schema (both checking, then both creating).
      await c.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(this.schema)]);
      const ns = await c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [this.schema]);
      if (ns.rowCount === 0) await c.query(`CREATE SCHEMA IF NOT EXISTS ${this.s}`);
      await c.query(`CREATE TABLE IF NOT EXISTS ${this.s}.schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, breaking BOOLEAN NOT NULL, applied_at BIGINT NOT NULL)`);
      const applied = await this.readApplied(c);
      for (const m of planMigrations(POSTGRES_MIGRATIONS, applied)) {
        await c.query(m.sql.replaceAll(SCHEMA_PLACEHOLDER, this.s));
        await c.query(`INSERT INTO ${this.s}.schema_migrations (version, name, breaking, applied_at) VALUES ($1, $2, $3, $4)`, [
          m.version,
          m.name,
          m.breaking,
          Date.now(),
        ]);
      }
    });
  }

  private async readApplied(c: pg.PoolClient): Promise<AppliedMigration[]> {
    const r = await c.query<{ version: number; breaking: boolean }>(`SELECT version, breaking FROM ${this.s}.schema_migrations ORDER BY version`);
    return r.rows.map((row) => ({ version: Number(row.version), breaking: row.breaking }));
  }

  async schemaVersion(): Promise<number> {
    const r = await this.query<{ v: number }>(`SELECT COALESCE(MAX(version), 0) AS v FROM ${this.s}.schema_migrations`);
    return Number(r.rows[0]?.v ?? 0);
  }

  /** Test and operator hook: applied migrations (used to check the SCHEMA_TOO_NEW guard). */
  async appliedMigrations(): Promise<AppliedMigration[]> {
    return this.withClient((c) => this.readApplied(c));
  }

  // ---- create ----------------------------------------------------------------------------------------------------

  async createTask(task: NewTask, idem?: IdempotencyClaim): Promise<CreateResult> {
    const values: unknown[] = [
      task.id,
      task.tenant,
      task.contextId,
      task.type,
      task.typeVersion,
      JSON.stringify(task.input),
      JSON.stringify({ current: null, total: null, message: null }),
      task.now,
      task.createdBy,
      task.callbackUrl,
      JSON.stringify({ ...task.createdEvent, state: 'submitted', type: task.type, type_version: task.typeVersion }),
    ];
    // Without a key: one statement. With a key: the key row is written first in the same statement; the task is
    // inserted only if this request owns the key (new, or replacing an expired one). A concurrent request with the
    // same key blocks on the key row until the first commits, then finds it taken.
    let keyCte = '';
    let gate = '';
    if (idem) {
      values.push(idem.scope, idem.key, idem.fingerprint, idem.expiresAt);
      keyCte = `k AS (
          INSERT INTO ${this.s}.idempotency_keys AS ik (tenant, scope, key, task_id, fingerprint, created_at, expires_at)
          VALUES ($2::text, $12::text, $13::text, $1::text, $14::text, $8::bigint, $15::bigint)
          ON CONFLICT (tenant, scope, key) DO UPDATE
            SET task_id = EXCLUDED.task_id, fingerprint = EXCLUDED.fingerprint, created_at = EXCLUDED.created_at,
                expires_at = EXCLUDED.expires_at
            WHERE ik.expires_at <= EXCLUDED.created_at
          RETURNING 1
        ), `;
      gate = 'WHERE EXISTS (SELECT 1 FROM k)';
    }
    const sql = `WITH ${keyCte}t AS (
        INSERT INTO ${this.s}.tasks (id, tenant, context_id, type, type_version, state, input, progress, version, next_seq,
          wake_at, created_at, updated_at, created_by, callback_url)
        SELECT $1::text, $2::text, $3::text, $4::text, $5::int, 'submitted', $6::jsonb, $7::jsonb, 1, 2,
          $8::bigint, $8::bigint, $8::bigint, $9::text, $10::text
        ${gate}
        RETURNING *
      ), e AS (
        INSERT INTO ${this.s}.task_events (task_id, seq, kind, body, at) SELECT id, 1, 'created', $11::jsonb, created_at FROM t
      )
      SELECT t.* FROM t`;

    for (let attempt = 0; attempt < 5; attempt++) {
      const r = await this.query<TaskRow>(sql, values);
      const row = r.rows[0];
      if (row) {
        this.notifyAfterCommit(`${row.id}:1:created`);
        return { task: taskFromRow(row), created: true };
      }
      if (!idem) throw new BelayError('INTERNAL', 'Task insert returned no row');
      const existing = await this.query<TaskRow & { key_task_id: string; fingerprint: string; key_expires_at: number }>(
        `SELECT k.task_id AS key_task_id, k.fingerprint, k.expires_at AS key_expires_at, t.*
           FROM ${this.s}.idempotency_keys k LEFT JOIN ${this.s}.tasks t ON t.id = k.task_id
          WHERE k.tenant = $1 AND k.scope = $2 AND k.key = $3`,
        [task.tenant, idem.scope, idem.key],
      );
      const hit = existing.rows[0];
      if (!hit || Number(hit.key_expires_at) <= task.now) continue; // deleted or expired meanwhile: try again
      if (hit.fingerprint !== idem.fingerprint) {
        throw new BelayError('IDEMPOTENCY_MISMATCH', 'This idempotency key was used with a different request', {
          details: { idempotency_key: idem.key },
        });
      }
      if (hit.id !== null) return { task: (await this.withPending([taskFromRow(hit)]))[0]!, created: false };
      // The key names a task that no longer exists: the key is free again (as in the SQLite adapter).
      await this.query(`DELETE FROM ${this.s}.idempotency_keys WHERE tenant = $1 AND scope = $2 AND key = $3 AND task_id = $4`, [
        task.tenant,
        idem.scope,
        idem.key,
        hit.key_task_id,
      ]);
    }
    throw new BelayError('IDEMPOTENCY_IN_FLIGHT', 'The idempotency key kept changing while this request ran', {
      details: { idempotency_key: idem?.key },
      retryAfterMs: 100,
    });
  }

  // ---- reads -----------------------------------------------------------------------------------------------------

  /** Puts back the questions that paused tasks keep only in their events (see `pendingForStorage`): one query. */
  private async withPending(tasks: Task[], client?: pg.PoolClient): Promise<Task[]> {
    const ids = tasks.filter(pendingInEvent).map((t) => t.id);
    if (ids.length === 0) return tasks;
    const text = `SELECT DISTINCT ON (task_id) task_id, body FROM ${this.s}.task_events
       WHERE task_id = ANY($1::text[]) AND kind = 'input_required' ORDER BY task_id, seq DESC`;
    const r = client ? await client.query<{ task_id: string; body: unknown }>(text, [ids]) : await this.query<{ task_id: string; body: unknown }>(text, [ids]);
    const bodies = new Map(r.rows.map((row) => [row.task_id, json<Record<string, Json>>(row.body)]));
    return tasks.map((t) => pendingFromEvent(t, bodies.get(t.id)));
  }

  async getTask(id: string, tenant?: string): Promise<Task | null> {
    const r =
      tenant === undefined
        ? await this.query<TaskRow>(`SELECT * FROM ${this.s}.tasks WHERE id = $1`, [id])
        : await this.query<TaskRow>(`SELECT * FROM ${this.s}.tasks WHERE id = $1 AND tenant = $2`, [id, tenant]);
    const row = r.rows[0];
    return row ? (await this.withPending([taskFromRow(row)]))[0]! : null;
  }

  /** WHERE clauses for the filters shared by listing and counting; appends their parameters to `values`. */
  private taskFilters(q: TaskCountQuery, values: unknown[]): string[] {
    values.push(q.tenant);
    const where = [`tenant = $${values.length}::text`];
    const param = (v: unknown, cast: string) => {
      values.push(v);
      return `$${values.length}::${cast}`;
    };
    if (q.states && q.states.length > 0) where.push(`state = ANY(${param([...q.states], 'text[]')})`);
    if (q.createdBy !== undefined) where.push(`created_by = ${param(q.createdBy, 'text')}`);
    if (q.type !== undefined) where.push(`type = ${param(q.type, 'text')}`);
    if (q.createdFrom !== undefined) where.push(`created_at >= ${param(q.createdFrom, 'bigint')}`);
    if (q.createdTo !== undefined) where.push(`created_at < ${param(q.createdTo, 'bigint')}`);
    if (q.contextId !== undefined) where.push(`context_id = ${param(q.contextId, 'text')}`);
    if (q.updatedFrom !== undefined) where.push(`updated_at >= ${param(q.updatedFrom, 'bigint')}`);
    return where;
  }

  async listTasks(q: TaskListQuery): Promise<Task[]> {
    const values: unknown[] = [];
    const where = this.taskFilters(q, values);
    const param = (v: unknown, cast: string) => {
      values.push(v);
      return `$${values.length}::${cast}`;
    };
    const byUpdated = q.order === 'updated';
    const cursor = byUpdated ? (q.afterUpdated ? { at: q.afterUpdated.updatedAt, id: q.afterUpdated.id } : null) : q.after ? { at: q.after.createdAt, id: q.after.id } : null;
    const column = byUpdated ? 'updated_at' : 'created_at';
    if (cursor) {
      const at = param(cursor.at, 'bigint');
      const id = param(cursor.id, 'text');
      // The `<=` is redundant for the result but gives the index a bound: the OR alone is a filter, and page k
      // would read every newer row first.
      where.push(`${column} <= ${at} AND (${column} < ${at} OR (${column} = ${at} AND id < ${id}))`);
    }
    const limit = param(q.limit, 'int');
    const r = await this.query<TaskRow>(`SELECT * FROM ${this.s}.tasks WHERE ${where.join(' AND ')} ORDER BY ${column} DESC, id DESC LIMIT ${limit}`, values);
    return this.withPending(r.rows.map(taskFromRow));
  }

  async countTasks(q: TaskCountQuery): Promise<number> {
    const values: unknown[] = [];
    const where = this.taskFilters(q, values);
    const r = await this.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${this.s}.tasks WHERE ${where.join(' AND ')}`, values);
    return Number(r.rows[0]?.n ?? 0);
  }

  async listEvents(taskId: string, afterSeq: number, limit: number): Promise<TaskEvent[]> {
    const r = await this.query<EventRow>(
      `SELECT task_id, seq, kind, body, at FROM ${this.s}.task_events WHERE task_id = $1 AND seq > $2::bigint ORDER BY seq LIMIT $3::int`,
      [taskId, afterSeq, limit],
    );
    return r.rows.map(eventFromRow);
  }

  // ---- leases ----------------------------------------------------------------------------------------------------

  async claimTasks(req: ClaimRequest): Promise<ClaimedTask[]> {
    if (req.kinds.length === 0 || req.limit <= 0) return [];
    // One statement: pick and lock (skipping rows other claimers hold), grant, write the `started` events of the
    // tasks that were still submitted; their hints go out after the commit.
    //
    // The plan must walk `tasks_claim` in wake_at order and stop after `limit` rows, whatever the statistics say.
    // Without fresh statistics (a burst of creates into a young table; autovacuum analyzes a minute later at best)
    // the planner estimates a handful of claimable rows and picks a bitmap scan of EVERY claimable row plus a sort:
    // measured 54 ms per claim with 66k queued, against 0.15 ms for the ordered index scan (`npm run bench`,
    // scaling). So claims run on their own connections, opened with bitmap scans and sorts turned off
    // (`claimPool`), where the ordered index scan is the only plan left; and as a prepared statement, since the
    // claim is the costliest statement to plan and the hottest one (a new plan per call was 1.2 ms of every
    // no-op task's 2 ms on an idle machine).
    const r = await this.query<TaskRow & { old_state: string }>(
      this.claimSql,
      [req.now, req.now + req.leaseMs, req.workerId, req.limit, req.kinds.map((k) => k.type), req.kinds.map((k) => k.version)],
      this.claims(),
    );
    for (const row of r.rows) if (row.old_state === 'submitted') this.notifyAfterCommit(`${row.id}:${Number(row.next_seq) - 1}:started`);
    return r.rows.map((row) => {
      const task = taskFromRow(row);
      return { task, lease: { taskId: task.id, fence: task.fence, workerId: req.workerId } };
    });
  }

  private get claimSql(): string {
    return (this.claimText ??= `WITH c AS (
         SELECT id, state AS old_state FROM ${this.s}.tasks
          WHERE state IN ('submitted', 'working') AND wake_at <= $1::bigint
            AND (type, type_version) IN (SELECT * FROM unnest($5::text[], $6::int[]))
          ORDER BY wake_at
          LIMIT $4::int
          FOR UPDATE SKIP LOCKED
       ), u AS (
         UPDATE ${this.s}.tasks t
            SET fence = t.fence + 1, lease_owner = $3::text, lease_until = $2::bigint, wake_at = $2::bigint,
                attempts = t.attempts + 1, state = 'working', updated_at = $1::bigint,
                version = t.version + CASE WHEN c.old_state = 'submitted' THEN 1 ELSE 0 END,
                next_seq = t.next_seq + CASE WHEN c.old_state = 'submitted' THEN 1 ELSE 0 END
           FROM c WHERE t.id = c.id
         RETURNING t.*, c.old_state
       ), e AS (
         INSERT INTO ${this.s}.task_events (task_id, seq, kind, body, at)
         SELECT id, next_seq - 1, 'started', '{"state":"working"}'::jsonb, $1::bigint FROM u WHERE old_state = 'submitted'
       )
       SELECT u.* FROM u`);
  }

  /**
   * The claim's own small pool, opened on first use (gateways never claim). Its sessions plan with bitmap scans and
   * sorts disabled, which leaves the claim one plan whatever the statistics say (see `claimTasks`); nothing else
   * runs on them.
   */
  private claims(): pg.Pool {
    if (this.claimPool) return this.claimPool;
    const pool = new pg.Pool({
      connectionString: this.options.connectionString,
      max: this.options.claimPoolSize ?? 2,
      types: this.types,
      keepAlive: true,
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? 10_000,
      application_name: 'belay-claim',
      options: '-c enable_bitmapscan=off -c enable_sort=off',
    });
    pool.on('error', (err) => this.onError(err));
    this.claimPool = pool;
    return pool;
  }

  async nextClaimAt(req: { workerId: string; now: number; kinds: readonly TaskKind[] }): Promise<number | null> {
    if (req.kinds.length === 0) return null;
    // Walks `tasks_claim` upward from `now`. Rows past `now` there are leases in force and scheduled retries — a few
    // per worker slot, not the queue — so even a plan chosen on stale statistics reads only those.
    const r = await this.query<{ wake_at: string }>(
      `SELECT wake_at FROM ${this.s}.tasks
        WHERE state IN ('submitted', 'working') AND wake_at > $1::bigint
          AND lease_owner IS DISTINCT FROM $2::text
          AND (type, type_version) IN (SELECT * FROM unnest($3::text[], $4::int[]))
        ORDER BY wake_at LIMIT 1`,
      [req.now, req.workerId, req.kinds.map((k) => k.type), req.kinds.map((k) => k.version)],
    );
    return r.rows[0] ? Number(r.rows[0].wake_at) : null;
  }

  async renewLease(lease: Lease, now: number, leaseMs: number): Promise<{ status: 'ok' | 'lost'; cancelRequested: boolean }> {
    const r = await this.query<{ cancel_requested_at: number | null }>(
      `UPDATE ${this.s}.tasks SET lease_until = $3::bigint, wake_at = $3::bigint
        WHERE id = $1 AND fence = $2::bigint AND state = 'working' RETURNING cancel_requested_at`,
      [lease.taskId, lease.fence, now + leaseMs],
    );
    const row = r.rows[0];
    if (!row) return { status: 'lost', cancelRequested: false };
    return { status: 'ok', cancelRequested: row.cancel_requested_at !== null };
  }

  async releaseLease(lease: Lease, now: number): Promise<void> {
    await this.query(
      `WITH u AS (
         UPDATE ${this.s}.tasks SET lease_owner = NULL, lease_until = NULL, wake_at = $3::bigint, attempts = GREATEST(attempts - 1, 0)
          WHERE id = $1 AND fence = $2::bigint AND state = 'working' RETURNING id
       )
       SELECT pg_notify(${this.channelLiteral}, 'ready') AS notified FROM u`,
      [lease.taskId, lease.fence, now],
    );
  }

  // ---- the step commit -------------------------------------------------------------------------------------------

  private commitStatement(checkCancel: boolean, answerKey: boolean): string {
    const cacheKey = `${checkCancel ? 'c' : '-'}${answerKey ? 'a' : '-'}`;
    let sql = this.commitSql.get(cacheKey);
    if (sql) return sql;
    sql = `WITH u AS (
        UPDATE ${this.s}.tasks
           SET state = $3::text, step = $4::int, checkpoint = $5::jsonb, progress = $6::jsonb, pending_input = $7::jsonb,
               result = $8::jsonb, artifacts = COALESCE($9::jsonb, artifacts), error = $10::jsonb,
               lease_owner = CASE WHEN $11::bigint IS NULL THEN NULL ELSE lease_owner END, lease_until = $11::bigint,
               wake_at = $12::bigint, attempts = CASE WHEN $13::boolean THEN 1 ELSE attempts END,
               terminal_at = $14::bigint, expires_at = $15::bigint,
               version = version + 1, next_seq = next_seq + 1, updated_at = $16::bigint
         WHERE id = $1::text AND fence = $2::bigint AND state = 'working'${checkCancel ? `
           AND cancel_requested_at IS NULL` : ''}${answerKey ? `
           AND NOT (answers ? $19::text)` : ''}
        RETURNING id, next_seq - 1 AS seq, version
      ), e AS (
        INSERT INTO ${this.s}.task_events (task_id, seq, kind, body, at) SELECT id, seq, $17::text, $18::jsonb, $16::bigint FROM u
      )
      SELECT seq, version FROM u`;
    this.commitSql.set(cacheKey, sql);
    return sql;
  }

  async commit(c: TaskCommit): Promise<CommitOutcome> {
    const terminal = c.state === 'completed' || c.state === 'failed' || c.state === 'canceled';
    const checkCancel = !CANCEL_COMMIT_KINDS.includes(c.kind);
    const answerKey = c.kind === 'pause' && c.pendingInput ? c.pendingInput.key : null;
    const values: unknown[] = [
      c.lease.taskId,
      c.lease.fence,
      c.state,
      c.step,
      JSON.stringify(c.checkpoint),
      JSON.stringify(c.progress),
      pendingForStorage(c.pendingInput, c.event),
      JSON.stringify(c.result),
      c.artifacts === undefined ? null : JSON.stringify(c.artifacts),
      sqlJson(c.error),
      c.leaseUntil,
      c.wakeAt,
      c.resetAttempts,
      terminal ? c.now : null,
      c.expiresAt,
      c.now,
      c.event.kind,
      JSON.stringify(c.event.body),
    ];
    if (answerKey !== null) values.push(answerKey);
    const r = await this.query<{ seq: number; version: number }>(this.commitStatement(checkCancel, answerKey !== null), values);
    const row = r.rows[0];
    if (!row) return this.diagnose(c);
    this.notifyAfterCommit(`${c.lease.taskId}:${Number(row.seq)}:${c.event.kind}`);
    return { ok: true, seq: Number(row.seq), version: Number(row.version) };
  }

  /** Why a fenced commit matched no row. Runs only on the failure path. */
  private async diagnose(c: TaskCommit): Promise<CommitOutcome> {
    const r = await this.query<{ fence: number; state: string; cancel_requested_at: number | null }>(
      `SELECT fence, state, cancel_requested_at FROM ${this.s}.tasks WHERE id = $1`,
      [c.lease.taskId],
    );
    const t = r.rows[0];
    if (!t || Number(t.fence) !== c.lease.fence || t.state !== 'working') return { ok: false, reason: 'lease_lost' };
    if (!CANCEL_COMMIT_KINDS.includes(c.kind) && t.cancel_requested_at !== null) return { ok: false, reason: 'cancel_requested' };
    return { ok: false, reason: 'answer_arrived' };
  }

  // ---- the run-once ledger ---------------------------------------------------------------------------------------

  async beginEffect(lease: Lease, key: string, now: number, options: BeginEffectOptions = {}): Promise<BeginEffectOutcome> {
    // One statement: read the ledger row, share-lock the task row (so a claim or cancellation cannot commit between
    // the check and the insert; it waits for this statement instead), and write `pending` only when there is no
    // record and the lease is current with no cancellation requested.
    const r = await this.query<{
      inserted: number;
      status: string | null;
      result: unknown;
      started_at: number | null;
      fence: number | null;
      state: string | null;
      cancel_requested_at: number | null;
    }>(
      `WITH ex AS (
         SELECT status, result, started_at FROM ${this.s}.side_effects WHERE task_id = $1::text AND effect_key = $2::text
       ), t AS (
         SELECT fence, state, cancel_requested_at FROM ${this.s}.tasks WHERE id = $1::text FOR SHARE
       ), ins AS (
         INSERT INTO ${this.s}.side_effects (task_id, effect_key, status, result, fence, started_at)
         SELECT $1::text, $2::text, 'pending', NULL, $3::bigint, $4::bigint
          WHERE NOT EXISTS (SELECT 1 FROM ex)
            AND EXISTS (SELECT 1 FROM t WHERE t.fence = $3::bigint AND t.state = 'working' AND ($5::boolean OR t.cancel_requested_at IS NULL))
         ON CONFLICT (task_id, effect_key) DO NOTHING
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM ins) AS inserted, ex.status, ex.result, ex.started_at, t.fence, t.state, t.cancel_requested_at
         FROM (VALUES (1)) AS one (x) LEFT JOIN ex ON true LEFT JOIN t ON true`,
      [lease.taskId, key, lease.fence, now, options.duringCancel === true],
    );
    const row = r.rows[0]!;
    if (Number(row.inserted) > 0) return { status: 'started' };
    if (row.status === 'applied') return { status: 'applied', result: row.result === null ? null : json(row.result) };
    if (row.fence === null || Number(row.fence) !== lease.fence || row.state !== 'working') return { status: 'lease_lost' };
    if (row.cancel_requested_at !== null && !options.duringCancel) return { status: 'cancel_requested' };
    if (row.status !== null) return { status: 'uncertain', startedAt: Number(row.started_at) };
    // A concurrent beginEffect for the same key inserted first (invisible to this statement's snapshot).
    const again = await this.query<{ status: string; result: unknown; started_at: number }>(
      `SELECT status, result, started_at FROM ${this.s}.side_effects WHERE task_id = $1 AND effect_key = $2`,
      [lease.taskId, key],
    );
    const ex = again.rows[0];
    if (ex?.status === 'applied') return { status: 'applied', result: ex.result === null ? null : json(ex.result) };
    if (ex) return { status: 'uncertain', startedAt: Number(ex.started_at) };
    return { status: 'lease_lost' };
  }

  async completeEffect(taskId: string, key: string, result: Json, now: number): Promise<void> {
    await this.query(
      `UPDATE ${this.s}.side_effects SET status = 'applied', result = $3::jsonb, applied_at = $4::bigint WHERE task_id = $1 AND effect_key = $2`,
      [taskId, key, JSON.stringify(result), now],
    );
  }

  async listEffects(taskId: string): Promise<SideEffectRecord[]> {
    const r = await this.query<EffectRow>(`SELECT * FROM ${this.s}.side_effects WHERE task_id = $1 ORDER BY started_at, effect_key`, [taskId]);
    return r.rows.map(effectFromRow);
  }

  // ---- cold-path transitions -------------------------------------------------------------------------------------

  async transition(id: string, tenant: string | undefined, now: number, decide: (task: Task) => TaskPatch | null): Promise<Task> {
    return this.transaction(async (c) => {
      const r =
        tenant === undefined
          ? await c.query<TaskRow>(`SELECT * FROM ${this.s}.tasks WHERE id = $1 FOR UPDATE`, [id])
          : await c.query<TaskRow>(`SELECT * FROM ${this.s}.tasks WHERE id = $1 AND tenant = $2 FOR UPDATE`, [id, tenant]);
      const row = r.rows[0];
      if (!row) throw new BelayError('NOT_FOUND', 'No such task');
      const task = (await this.withPending([taskFromRow(row)], c))[0]!;
      const patch = decide(task);
      if (!patch) return task;
      const values: unknown[] = [id, now, patch.bumpFence ? 1 : 0, patch.event ? 1 : 0];
      const sets: string[] = [];
      for (const [field, value] of Object.entries(patch.set)) {
        const col = PATCH_COLUMNS[field as keyof typeof PATCH_COLUMNS];
        values.push(col.json ? sqlJson(value) : value);
        sets.push(`${col.column} = $${values.length}::${col.json ? 'jsonb' : (PATCH_CASTS[col.column] ?? 'bigint')}`);
      }
      let sql = `WITH u AS (
          UPDATE ${this.s}.tasks SET ${sets.map((s) => `${s}, `).join('')}version = version + 1, fence = fence + $3::bigint,
                 next_seq = next_seq + $4::bigint, updated_at = $2::bigint
           WHERE id = $1::text RETURNING *
        )`;
      // A task that becomes claimable at once (an answer resumed it) is worth a `ready` hint to idle workers.
      const ready =
        (patch.set.state === 'working' || patch.set.state === 'submitted') && patch.set.wakeAt !== undefined && patch.set.wakeAt !== null && patch.set.wakeAt <= now;
      const notifies: string[] = [];
      if (patch.event) {
        values.push(task.nextSeq, patch.event.kind, JSON.stringify(patch.event.body));
        const [seq, kind, body] = [values.length - 2, values.length - 1, values.length];
        sql += `, e AS (
          INSERT INTO ${this.s}.task_events (task_id, seq, kind, body, at) SELECT id, $${seq}::bigint, $${kind}::text, $${body}::jsonb, $2::bigint FROM u
        )`;
        notifies.push(`pg_notify(${this.channelLiteral}, u.id || ':' || $${seq}::bigint || ':' || $${kind}::text) AS notified`);
      }
      if (ready) notifies.push(`pg_notify(${this.channelLiteral}, 'ready') AS ready`);
      sql += ` SELECT u.*${notifies.map((n) => `, ${n}`).join('')} FROM u`;
      const updated = await c.query<TaskRow>(sql, values);
      return (await this.withPending([taskFromRow(updated.rows[0]!)], c))[0]!;
    });
  }

  // ---- sweeps ----------------------------------------------------------------------------------------------------

  async listDueDeadlines(now: number, limit: number): Promise<Array<{ id: string; tenant: string }>> {
    const r = await this.query<{ id: string; tenant: string }>(
      `SELECT id, tenant FROM ${this.s}.tasks WHERE state IN ('input_required', 'auth_required') AND wake_at <= $1::bigint ORDER BY wake_at LIMIT $2::int`,
      [now, limit],
    );
    return r.rows.map((row) => ({ id: row.id, tenant: row.tenant }));
  }

  async findStranded(now: number, graceMs: number, limit: number): Promise<Task[]> {
    const r = await this.query<TaskRow>(
      `SELECT * FROM ${this.s}.tasks WHERE state NOT IN ${TERMINAL_SQL}
          AND (wake_at IS NULL OR (state IN ('submitted', 'working') AND wake_at < $1::bigint))
        ORDER BY created_at LIMIT $2::int`,
      [now - graceMs, limit],
    );
    return this.withPending(r.rows.map(taskFromRow));
  }

  async expireTasks(now: number, limit: number): Promise<number> {
    // One statement: tombstone, delete the log, ledger and keys, and the row. SKIP LOCKED lets several sweepers
    // run at once without waiting on each other or double-counting.
    const r = await this.query<{ n: number }>(
      `WITH doomed AS (
         SELECT id FROM ${this.s}.tasks WHERE expires_at <= $1::bigint AND state IN ('completed','failed','canceled','rejected')
         ORDER BY expires_at LIMIT $2::int FOR UPDATE SKIP LOCKED),
       gone AS (DELETE FROM ${this.s}.tasks t USING doomed WHERE t.id = doomed.id RETURNING t.*),
       ev AS (DELETE FROM ${this.s}.task_events e USING doomed WHERE e.task_id = doomed.id),
       se AS (DELETE FROM ${this.s}.side_effects s USING doomed WHERE s.task_id = doomed.id),
       ik AS (DELETE FROM ${this.s}.idempotency_keys k USING doomed WHERE k.task_id = doomed.id),
       pc AS (DELETE FROM ${this.s}.push_configs p USING doomed WHERE p.task_id = doomed.id),
       dl AS (DELETE FROM ${this.s}.deliveries d USING doomed WHERE d.task_id = doomed.id),
       gt AS (DELETE FROM ${this.s}.webhook_gone_targets g USING doomed WHERE g.task_id = doomed.id),
       tb AS (INSERT INTO ${this.s}.tombstones (id, tenant, type, final_state, created_by, created_at, terminal_at, expired_at)
              SELECT id, tenant, type, state, created_by, created_at, terminal_at, $1::bigint FROM gone ON CONFLICT (id) DO NOTHING RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [now, limit],
    );
    return Number(r.rows[0]?.n ?? 0);
  }

  async getTombstone(id: string, tenant?: string): Promise<Tombstone | null> {
    const r =
      tenant === undefined
        ? await this.query<TombstoneRow>(`SELECT * FROM ${this.s}.tombstones WHERE id = $1`, [id])
        : await this.query<TombstoneRow>(`SELECT * FROM ${this.s}.tombstones WHERE id = $1 AND tenant = $2`, [id, tenant]);
    return r.rows[0] ? tombstoneFromRow(r.rows[0]) : null;
  }

  // ---- push-notification configs ----------------------------------------------------------------------------------

  async putPushConfig(c: PushConfig): Promise<PushConfig | null> {
    // One statement: the task's existence in the tenant is checked by the insert itself (FOR SHARE keeps an expiry
    // sweep from deleting the task between the check and the write).
    const r = await this.query<PushConfigRow>(
      `WITH t AS (SELECT id FROM ${this.s}.tasks WHERE id = $2::text AND tenant = $1::text FOR SHARE)
       INSERT INTO ${this.s}.push_configs AS p (tenant, task_id, id, created_by, url, token, auth_scheme, auth_credentials, created_at, updated_at)
       SELECT $1::text, t.id, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::bigint, $9::bigint FROM t
       ON CONFLICT (tenant, task_id, id) DO UPDATE SET url = EXCLUDED.url, token = EXCLUDED.token, auth_scheme = EXCLUDED.auth_scheme,
         auth_credentials = EXCLUDED.auth_credentials, updated_at = EXCLUDED.updated_at
       RETURNING p.*`,
      [c.tenant, c.taskId, c.id, c.createdBy, c.url, c.token, c.authentication?.scheme ?? null, c.authentication?.credentials ?? null, c.updatedAt],
    );
    return r.rows[0] ? pushConfigFromRow(r.rows[0]) : null;
  }

  async getPushConfig(tenant: string, taskId: string, id: string): Promise<PushConfig | null> {
    const r = await this.query<PushConfigRow>(`SELECT * FROM ${this.s}.push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3`, [tenant, taskId, id]);
    return r.rows[0] ? pushConfigFromRow(r.rows[0]) : null;
  }

  async listPushConfigs(tenant: string, taskId: string, options: { afterId?: string; limit: number }): Promise<PushConfig[]> {
    const r = await this.query<PushConfigRow>(
      `SELECT * FROM ${this.s}.push_configs WHERE tenant = $1 AND task_id = $2 AND id COLLATE "C" > $3 ORDER BY id COLLATE "C" LIMIT $4::int`,
      [tenant, taskId, options.afterId ?? '', options.limit],
    );
    return r.rows.map(pushConfigFromRow);
  }

  async deletePushConfig(tenant: string, taskId: string, id: string): Promise<boolean> {
    const r = await this.query(`DELETE FROM ${this.s}.push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3`, [tenant, taskId, id]);
    return (r.rowCount ?? 0) > 0;
  }

  async setPrincipalDisabled(tenant: string, principal: string, disabled: boolean, now: number, reason?: string): Promise<void> {
    if (disabled) {
      await this.query(
        `INSERT INTO ${this.s}.disabled_principals (tenant, principal, disabled_at, reason) VALUES ($1, $2, $3::bigint, $4) ON CONFLICT (tenant, principal) DO NOTHING`,
        [tenant, principal, now, reason ?? null],
      );
    } else {
      await this.query(`DELETE FROM ${this.s}.disabled_principals WHERE tenant = $1 AND principal = $2`, [tenant, principal]);
    }
  }

  async isPrincipalDisabled(tenant: string, principal: string): Promise<boolean> {
    const r = await this.query(`SELECT 1 FROM ${this.s}.disabled_principals WHERE tenant = $1 AND principal = $2`, [tenant, principal]);
    return r.rows.length > 0;
  }

  async countByState(): Promise<Record<string, number>> {
    const r = await this.query<{ state: string; n: number }>(`SELECT state, COUNT(*) AS n FROM ${this.s}.tasks GROUP BY state`);
    return Object.fromEntries(r.rows.map((row) => [row.state, Number(row.n)]));
  }

  // ---- webhook delivery ------------------------------------------------------------------------------------------
  // The feed's order is (xid, task_id, seq): each event carries the id of the transaction that wrote it. Only events
  // below the oldest transaction still running are read (every transaction below it has committed or aborted), so a
  // later commit can never land behind the cursor. A transaction left open holds the feed back until it ends.

  async readEventFeed(limit: number): Promise<{ cursor: string; next: string; events: FeedEvent[] }> {
    const cur = await this.query<{ cursor: string }>(`SELECT cursor FROM ${this.s}.delivery_feed WHERE name = 'webhooks'`);
    const cursor = cur.rows[0]?.cursor ?? '';
    const values: unknown[] = [limit];
    let after = '';
    if (cursor !== '') {
      const [xid, taskId, seq] = JSON.parse(cursor) as [string, string, number];
      values.push(xid, taskId, seq);
      after = `AND e.xid >= $2::xid8 AND (e.xid, e.task_id, e.seq) > ($2::xid8, $3::text, $4::bigint)`;
    }
    const r = await this.query<EventRow & { xid: string; tenant: string | null; context_id: string; task_type: string; callback_url: string | null; created_by: string }>(
      `SELECT e.task_id, e.seq, e.kind, e.body, e.at, e.xid::text AS xid, t.tenant, t.context_id, t.type AS task_type, t.callback_url, t.created_by
         FROM ${this.s}.task_events e LEFT JOIN ${this.s}.tasks t ON t.id = e.task_id
        WHERE e.xid IS NOT NULL ${after} AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.xid, e.task_id, e.seq LIMIT $1::int`,
      values,
    );
    const events: FeedEvent[] = [];
    for (const row of r.rows) {
      if (row.tenant === null) continue;
      events.push({ ...eventFromRow(row), tenant: row.tenant, contextId: row.context_id, taskType: row.task_type, callbackUrl: row.callback_url, createdBy: row.created_by });
    }
    const last = r.rows.at(-1);
    return { cursor, next: last ? JSON.stringify([last.xid, last.task_id, Number(last.seq)]) : cursor, events };
  }

  async enqueueDeliveries(cursor: string, next: string, deliveries: readonly NewDelivery[]): Promise<boolean> {
    return this.transaction(async (c) => {
      const moved = await c.query(`UPDATE ${this.s}.delivery_feed SET cursor = $1, updated_at = $3::bigint WHERE name = 'webhooks' AND cursor = $2`, [
        next,
        cursor,
        deliveries[0]?.now ?? 0,
      ]);
      if ((moved.rowCount ?? 0) === 0) return false;
      if (deliveries.length > 0) {
        await c.query(
          `INSERT INTO ${this.s}.deliveries (id, event_id, tenant, task_id, seq, event_type, target_kind, target_id, target_key, url, payload,
             status, attempts, next_attempt_at, fence, dead_reason, dead_at, created_at)
           SELECT d.id, d.event_id, d.tenant, d.task_id, d.seq, d.event_type, d.target_kind, d.target_id, d.target_key, d.url, d.payload,
             d.status, 0, d.next_attempt_at, 0, d.dead_reason, d.dead_at, d.now
             FROM jsonb_to_recordset($1::jsonb) AS d(id text, event_id text, tenant text, task_id text, seq bigint, event_type text,
               target_kind text, target_id text, target_key text, url text, payload text, status text, next_attempt_at bigint,
               dead_reason text, dead_at bigint, now bigint)
           ON CONFLICT (target_key, task_id, seq) DO NOTHING`,
          [
            JSON.stringify(
              deliveries.map(newDeliveryRow),
            ),
          ],
        );
      }
      return true;
    });
  }

  async claimDeliveries(req: { workerId: string; now: number; leaseMs: number; limit: number }): Promise<Delivery[]> {
    if (req.limit <= 0) return [];
    const r = await this.query<DeliveryRow>(
      `WITH c AS (
         SELECT id FROM ${this.s}.deliveries WHERE status = 'pending' AND next_attempt_at <= $1::bigint
          ORDER BY next_attempt_at LIMIT $2::int FOR UPDATE SKIP LOCKED
       )
       UPDATE ${this.s}.deliveries d SET lease_owner = $3::text, lease_until = $4::bigint, next_attempt_at = $4::bigint,
              attempts = d.attempts + 1, fence = d.fence + 1, last_attempt_at = $1::bigint
         FROM c WHERE d.id = c.id
       RETURNING d.*`,
      [req.now, req.limit, req.workerId, req.now + req.leaseMs],
    );
    return r.rows.map(deliveryFromRow).sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0));
  }

  async finishDelivery(lease: { id: string; fence: number }, outcome: DeliveryOutcome, now: number): Promise<boolean> {
    const cols = outcomeColumns(outcome, now);
    return this.transaction(async (c) => {
      const r = await c.query<DeliveryRow>(
        `UPDATE ${this.s}.deliveries SET status = $3, next_attempt_at = $4::bigint, last_status = $5::int, last_error = $6, dead_reason = $7,
           dead_at = $8::bigint, delivered_at = $9::bigint, lease_owner = NULL, lease_until = NULL
         WHERE id = $1 AND fence = $2::bigint AND status = 'pending' RETURNING *`,
        [lease.id, lease.fence, cols.status, cols.next_attempt_at, cols.last_status, cols.last_error, cols.dead_reason, cols.dead_at, cols.delivered_at],
      );
      const row = r.rows[0];
      if (!row) return false;
      if (outcome.kind === 'gone') {
        if (row.target_kind === 'endpoint') {
          await c.query(
            `UPDATE ${this.s}.webhook_endpoints SET enabled = false, disabled_reason = 'gone', disabled_at = $3::bigint, updated_at = $3::bigint WHERE tenant = $1 AND id = $2`,
            [row.tenant, row.target_id, now],
          );
        } else {
          await c.query(
            `INSERT INTO ${this.s}.webhook_gone_targets (target_key, tenant, task_id, reason, at) VALUES ($1, $2, $3, 'gone', $4::bigint) ON CONFLICT (target_key) DO NOTHING`,
            [row.target_key, row.tenant, row.task_id, now],
          );
        }
        await c.query(
          `UPDATE ${this.s}.deliveries SET status = 'dead', dead_reason = 'target_gone', dead_at = $2::bigint, next_attempt_at = NULL
            WHERE target_key = $1 AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $2::bigint)`,
          [row.target_key, now],
        );
      }
      return true;
    });
  }

  async getDelivery(tenant: string, id: string): Promise<Delivery | null> {
    const r = await this.query<DeliveryRow>(`SELECT * FROM ${this.s}.deliveries WHERE tenant = $1 AND id = $2`, [tenant, id]);
    return r.rows[0] ? deliveryFromRow(r.rows[0]) : null;
  }

  async listDeliveries(q: { tenant: string; status?: DeliveryStatus; taskId?: string; endpointId?: string; after?: { createdAt: number; id: string }; limit: number }): Promise<Delivery[]> {
    const values: unknown[] = [q.tenant];
    const param = (v: unknown, cast: string) => {
      values.push(v);
      return `$${values.length}::${cast}`;
    };
    const where = ['tenant = $1::text'];
    if (q.status) where.push(`status = ${param(q.status, 'text')}`);
    if (q.taskId) where.push(`task_id = ${param(q.taskId, 'text')}`);
    if (q.endpointId) where.push(`target_kind = 'endpoint' AND target_id = ${param(q.endpointId, 'text')}`);
    if (q.after) {
      const at = param(q.after.createdAt, 'bigint');
      const id = param(q.after.id, 'text');
      where.push(`created_at <= ${at} AND (created_at < ${at} OR (created_at = ${at} AND id < ${id}))`);
    }
    const limit = param(q.limit, 'int');
    const r = await this.query<DeliveryRow>(`SELECT * FROM ${this.s}.deliveries WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ${limit}`, values);
    return r.rows.map(deliveryFromRow);
  }

  async redriveDeliveries(tenant: string, filter: { ids?: readonly string[]; endpointId?: string }, now: number): Promise<number> {
    return this.transaction(async (c) => {
      const values: unknown[] = [tenant, now];
      const where = ['tenant = $1::text', `status = 'dead'`];
      if (filter.ids) {
        values.push([...filter.ids]);
        where.push(`id = ANY($${values.length}::text[])`);
      }
      if (filter.endpointId) {
        values.push(filter.endpointId);
        where.push(`target_kind = 'endpoint' AND target_id = $${values.length}::text`);
      }
      const r = await c.query<{ target_key: string }>(
        `UPDATE ${this.s}.deliveries SET status = 'pending', attempts = 0, next_attempt_at = $2::bigint, dead_reason = NULL, dead_at = NULL,
           lease_owner = NULL, lease_until = NULL WHERE ${where.join(' AND ')} RETURNING target_key`,
        values,
      );
      const keys = [...new Set(r.rows.map((row) => row.target_key))];
      if (keys.length > 0) await c.query(`DELETE FROM ${this.s}.webhook_gone_targets WHERE tenant = $1 AND target_key = ANY($2::text[])`, [tenant, keys]);
      return r.rowCount ?? 0;
    });
  }

  async pruneDeliveries(before: number, limit: number): Promise<number> {
    const r = await this.query(
      `DELETE FROM ${this.s}.deliveries WHERE id IN (
         SELECT id FROM ${this.s}.deliveries WHERE status = 'delivered' AND delivered_at < $1::bigint ORDER BY delivered_at LIMIT $2::int FOR UPDATE SKIP LOCKED)`,
      [before, limit],
    );
    return r.rowCount ?? 0;
  }

  async countDeliveries(): Promise<Record<string, number>> {
    const r = await this.query<{ status: string; n: number }>(`SELECT status, COUNT(*)::int AS n FROM ${this.s}.deliveries GROUP BY status`);
    return Object.fromEntries(r.rows.map((row) => [row.status, Number(row.n)]));
  }

  async putWebhookEndpoint(e: WebhookEndpoint): Promise<WebhookEndpoint> {
    const r = await this.query<EndpointRow>(
      `INSERT INTO ${this.s}.webhook_endpoints AS w (id, tenant, url, description, event_types, secrets, enabled, disabled_reason, disabled_at, created_by, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::boolean, $8, $9::bigint, $10, $11::bigint, $12::bigint)
       ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, description = EXCLUDED.description, event_types = EXCLUDED.event_types,
         secrets = EXCLUDED.secrets, enabled = EXCLUDED.enabled, disabled_reason = EXCLUDED.disabled_reason, disabled_at = EXCLUDED.disabled_at,
         updated_at = EXCLUDED.updated_at
       WHERE w.tenant = EXCLUDED.tenant
       RETURNING w.*`,
      [
        e.id,
        e.tenant,
        e.url,
        e.description,
        e.eventTypes === null ? null : JSON.stringify(e.eventTypes),
        JSON.stringify(e.secrets),
        e.enabled,
        e.disabledReason,
        e.disabledAt,
        e.createdBy,
        e.createdAt,
        e.updatedAt,
      ],
    );
    if (!r.rows[0]) throw new BelayError('NOT_FOUND', 'No such webhook endpoint');
    return endpointFromRow(r.rows[0]);
  }

  async getWebhookEndpoint(tenant: string, id: string): Promise<WebhookEndpoint | null> {
    const r = await this.query<EndpointRow>(`SELECT * FROM ${this.s}.webhook_endpoints WHERE tenant = $1 AND id = $2`, [tenant, id]);
    return r.rows[0] ? endpointFromRow(r.rows[0]) : null;
  }

  async listWebhookEndpoints(tenant: string, options: { afterId?: string; limit: number }): Promise<WebhookEndpoint[]> {
    const r = await this.query<EndpointRow>(
      `SELECT * FROM ${this.s}.webhook_endpoints WHERE tenant = $1 AND id COLLATE "C" > $2 ORDER BY id COLLATE "C" LIMIT $3::int`,
      [tenant, options.afterId ?? '', options.limit],
    );
    return r.rows.map(endpointFromRow);
  }

  async deleteWebhookEndpoint(tenant: string, id: string): Promise<boolean> {
    return this.transaction(async (c) => {
      const r = await c.query(`DELETE FROM ${this.s}.webhook_endpoints WHERE tenant = $1 AND id = $2`, [tenant, id]);
      const gone = (r.rowCount ?? 0) > 0;
      if (gone) await c.query(`DELETE FROM ${this.s}.deliveries WHERE tenant = $1 AND target_key = $2 AND status = 'pending'`, [tenant, `endpoint:${id}`]);
      return gone;
    });
  }

  async getCallbackSecrets(tenant: string): Promise<WebhookSecret[] | null> {
    const r = await this.query<{ secrets: unknown }>(`SELECT secrets FROM ${this.s}.webhook_tenant_secrets WHERE tenant = $1`, [tenant]);
    return r.rows[0] ? json<WebhookSecret[]>(r.rows[0].secrets) : null;
  }

  async putCallbackSecrets(tenant: string, secrets: readonly WebhookSecret[], now: number, onlyIfAbsent: boolean): Promise<WebhookSecret[]> {
    const r = await this.query<{ secrets: unknown }>(
      `INSERT INTO ${this.s}.webhook_tenant_secrets AS w (tenant, secrets, updated_at) VALUES ($1, $2::jsonb, $3::bigint)
       ON CONFLICT (tenant) DO UPDATE SET secrets = CASE WHEN $4::boolean THEN w.secrets ELSE EXCLUDED.secrets END,
         updated_at = CASE WHEN $4::boolean THEN w.updated_at ELSE EXCLUDED.updated_at END
       RETURNING w.secrets`,
      [tenant, JSON.stringify(secrets), now, onlyIfAbsent],
    );
    return json<WebhookSecret[]>(r.rows[0]!.secrets);
  }

  async goneTargets(keys: readonly string[]): Promise<string[]> {
    if (keys.length === 0) return [];
    const r = await this.query<{ target_key: string }>(`SELECT target_key FROM ${this.s}.webhook_gone_targets WHERE target_key = ANY($1::text[])`, [[...keys]]);
    return r.rows.map((row) => row.target_key);
  }

  // ---- wake-ups --------------------------------------------------------------------------------------------------

  subscribe(listener: (n: StoreNotification) => void): () => void {
    this.listeners.add(listener);
    if (this.listenMode === 'lazy' && !this.closed && !this.listenClient && !this.reconnectTimer) {
      // Events committed before the LISTEN was in place were not announced: `ready` tells listeners to re-read.
      this.connectListener().then(
        () => this.emit({ type: 'ready' }),
        () => undefined, // listenerDown scheduled a retry
      );
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listenMode === 'lazy' && this.listeners.size === 0) void this.stopListener();
    };
  }

  private listenWanted(): boolean {
    return !this.closed && (this.listenMode === 'eager' || this.listeners.size > 0);
  }

  private async connectListener(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      types: this.types,
      keepAlive: true,
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? 10_000,
      application_name: 'belay-listen',
    });
    this.listenClient = client;
    client.on('notification', (m) => {
      if (m.channel === this.channel) this.onPayload(m.payload ?? '');
    });
    client.on('error', (err) => this.listenerDown(client, err));
    client.on('end', () => this.listenerDown(client, null));
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(this.channel)}`);
    } catch (err) {
      this.listenerDown(client, err);
      throw unavailable(err);
    }
    this.reconnectAttempt = 0;
  }

  /** The LISTEN client failed or ended: drop it and, if still wanted, reconnect with backoff. */
  private listenerDown(client: pg.Client, err: unknown): void {
    if (this.listenClient !== client) return;
    this.listenClient = null;
    if (err !== null) this.onError(err);
    client.end().catch(() => undefined);
    if (!this.listenWanted() || this.reconnectTimer) return;
    const delay = Math.min(5_000, 100 * 2 ** this.reconnectAttempt) * (0.5 + Math.random() / 2);
    this.reconnectAttempt++;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.listenWanted() || this.listenClient) return;
      // Whatever was committed while nobody listened was not announced: tell listeners to re-read.
      this.connectListener().then(
        () => this.emit({ type: 'ready' }),
        () => undefined,
      );
    }, delay);
    this.reconnectTimer.unref();
  }

  private async stopListener(): Promise<void> {
    if (this.reconnectTimer) {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = null;
    }
    const client = this.listenClient;
    this.listenClient = null;
    if (client) await client.end().catch(() => undefined);
  }

  private onPayload(payload: string): void {
    if (payload === 'ready') {
      this.emit({ type: 'ready' });
      return;
    }
    // taskId:seq:kind — split from the right, so the id may contain ':'.
    const k = payload.lastIndexOf(':');
    const s = k > 0 ? payload.lastIndexOf(':', k - 1) : -1;
    if (s <= 0) return;
    const seq = Number(payload.slice(s + 1, k));
    if (!Number.isSafeInteger(seq)) return;
    this.emit({ type: 'event', taskId: payload.slice(0, s), seq, kind: payload.slice(k + 1) as TaskEventKind });
  }

  /** Queues the hint for a write that has committed; one sender drains the queue in batches. */
  private notifyAfterCommit(payload: string): void {
    if (this.closed) return;
    this.pendingHints.push(payload);
    this.sendingHints ??= this.sendHints();
  }

  private async sendHints(): Promise<void> {
    try {
      while (this.pendingHints.length > 0) {
        const batch = this.pendingHints.splice(0, 500);
        try {
          // set_config(..., true) applies to this statement's own transaction: its commit does not wait for a flush.
          await this.pool.query(`SELECT set_config('synchronous_commit', 'off', true), pg_notify($1::text, p) FROM unnest($2::text[]) AS p`, [this.channel, batch]);
        } catch (err) {
          // A lost hint only delays readers until their next poll or heartbeat; the events are in the log.
          this.onError(err);
        }
      }
    } finally {
      this.sendingHints = null;
    }
  }

  private emit(n: StoreNotification): void {
    for (const l of [...this.listeners]) {
      try {
        l(n);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Hints already queued go out before the pool closes (they announce commits that happened).
    await this.sendingHints;
    this.listeners.clear();
    await this.stopListener();
    await Promise.all([this.pool.end(), this.claimPool?.end()]);
  }
}

export function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  return PostgresStore.open(options);
}
