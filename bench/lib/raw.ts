/**
 * The raw limit: the same writes Belay makes — a fenced UPDATE of the task row and an INSERT of its event in one
 * transaction, the create, the claim — issued directly with the driver, with no Belay code in between. Tables are
 * Belay's own (created by its migrations), so rows, indexes and page layout are identical.
 *
 * PostgreSQL: one statement per write (a data-modifying CTE, as Belay does), without NOTIFY unless asked, one
 * client per lane. SQLite: prepared statements inside `BEGIN IMMEDIATE` on one connection, WAL, synchronous=FULL
 * (Belay's default).
 */
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { BELAY_SCHEMA, type Place } from './env.js';

export type RawCommitMode = 'cte' | 'cte+notify' | 'multi-statement';

export interface RawCommit {
  id: string;
  fence: number;
  /** 1-based index of the commit in its task. */
  i: number;
  total: number;
  final: boolean;
}

export interface RawDriver {
  /** Inserts `n` tasks already leased (state working, fence 1), as a claimed task looks; returns their ids. */
  seedWorking(n: number, type: string): Promise<string[]>;
  /** `notify`: PostgreSQL only, a NOTIFY on channel `belay_raw` inside the same statement. */
  create(lane: number, type: string, notify?: boolean): Promise<void>;
  claim(lane: number, type: string, leaseMs: number): Promise<{ id: string; fence: number } | null>;
  commit(lane: number, c: RawCommit, mode?: RawCommitMode): Promise<void>;
  close(): Promise<void>;
}

export const rawTaskId = () => `task_${Date.now().toString(16).padStart(12, '0')}${randomBytes(16).toString('hex')}`;

const PROGRESS_NULL = JSON.stringify({ current: null, total: null, message: null });

/** The column values of commit `c`, shaped as Belay's runner shapes them. */
function commitValues(c: RawCommit, now: number, leaseMs: number) {
  const progress = { current: c.i, total: c.total, message: null };
  return {
    state: c.final ? 'completed' : 'working',
    step: c.i,
    checkpoint: JSON.stringify({ n: c.i }),
    progress: JSON.stringify(progress),
    result: c.final ? JSON.stringify({ n: c.i }) : 'null',
    leaseUntil: c.final ? null : now + leaseMs,
    resetAttempts: !c.final,
    terminalAt: c.final ? now : null,
    expiresAt: c.final ? now + 30 * 24 * 3600_000 : null,
    kind: c.final ? 'completed' : 'progress',
    body: JSON.stringify(
      c.final
        ? { state: 'completed', step: c.i, steps_total: c.total, progress }
        : { state: 'working', step: c.i, step_name: `s${c.i}`, completed_step: `s${c.i - 1}`, steps_total: c.total, progress },
    ),
  };
}

const LEASE_MS = 30_000;

// ---- PostgreSQL ------------------------------------------------------------------------------------------------

/** The raw limit: each lane its own connection, every statement prepared once per connection (as Belay's store does). */
export async function rawPostgres(place: Place, lanes: number): Promise<RawDriver> {
  const s = pg.escapeIdentifier(BELAY_SCHEMA);
  const clients: pg.Client[] = [];
  for (let i = 0; i < lanes; i++) {
    const c = new pg.Client({ connectionString: place.location, application_name: 'belay-bench-raw' });
    c.on('error', () => undefined); // surfaces through the lane's next query
    await c.connect();
    clients.push(c);
  }
  const lane = (i: number) => clients[i % clients.length]!;
  const update = `UPDATE ${s}.tasks
           SET state = $3::text, step = $4::int, checkpoint = $5::jsonb, progress = $6::jsonb, pending_input = NULL,
               result = $7::jsonb, error = NULL,
               lease_owner = CASE WHEN $8::bigint IS NULL THEN NULL ELSE lease_owner END, lease_until = $8::bigint,
               wake_at = $8::bigint, attempts = CASE WHEN $9::boolean THEN 1 ELSE attempts END,
               terminal_at = $10::bigint, expires_at = $11::bigint,
               version = version + 1, next_seq = next_seq + 1, updated_at = $12::bigint
         WHERE id = $1::text AND fence = $2::bigint AND state = 'working' AND cancel_requested_at IS NULL
        RETURNING id, next_seq - 1 AS seq`;
  const cte = (notify: boolean) => `WITH u AS (${update}),
      e AS (INSERT INTO ${s}.task_events (task_id, seq, kind, body, at) SELECT id, seq, $13::text, $14::jsonb, $12::bigint FROM u)
      SELECT seq${notify ? `, pg_notify('belay_raw', id || ':' || seq || ':' || $13::text) AS notified` : ''} FROM u`;
  const CTE = cte(false);
  const CTE_NOTIFY = cte(true);
  const insertTask = `INSERT INTO ${s}.tasks (id, tenant, context_id, type, type_version, state, input, progress, version, next_seq,
      wake_at, created_at, updated_at, created_by, callback_url, fence, lease_owner, lease_until, attempts)
    VALUES ($1::text, 'bench', $2::text, $3::text, 1, $4::text, '{}'::jsonb, $5::jsonb, 1, 2, $6::bigint, $6::bigint, $6::bigint, 'bench', NULL,
      $7::bigint, $8::text, $9::bigint, $10::int)
    RETURNING id, created_at`;
  return {
    async seedWorking(n, type) {
      const ids: string[] = [];
      const now = Date.now();
      for (let i = 0; i < n; i++) {
        const id = rawTaskId();
        ids.push(id);
        await lane(0).query(
          `WITH t AS (${insertTask}) INSERT INTO ${s}.task_events (task_id, seq, kind, body, at)
             SELECT id, 1, 'created', '{"state":"submitted"}'::jsonb, created_at FROM t`,
          [id, `ctx_${id}`, type, 'working', PROGRESS_NULL, now, 1, 'raw', now + 3600_000, 1],
        );
      }
      return ids;
    },
    async create(i, type, notify = false) {
      const id = rawTaskId();
      const now = Date.now();
      await lane(i).query({
        name: notify ? 'raw_create_notify' : 'raw_create',
        text: `WITH t AS (${insertTask}), e AS (INSERT INTO ${s}.task_events (task_id, seq, kind, body, at)
           SELECT id, 1, 'created', $11::jsonb, created_at FROM t)
         SELECT id${notify ? ", pg_notify('belay_raw', id) AS notified" : ''} FROM t`,
        values: [id, `ctx_${id}`, type, 'submitted', PROGRESS_NULL, now, 0, null, null, 0, JSON.stringify({ state: 'submitted', type, type_version: 1 })],
      });
    },
    async claim(i, type, leaseMs) {
      const now = Date.now();
      const r = await lane(i).query<{ id: string; fence: string }>({
        name: 'raw_claim',
        text: `WITH c AS (
           SELECT id, state AS old_state FROM ${s}.tasks
            WHERE state IN ('submitted', 'working') AND wake_at <= $1::bigint AND type = $2::text AND type_version = 1
            ORDER BY wake_at LIMIT 1 FOR UPDATE SKIP LOCKED
         ), u AS (
           UPDATE ${s}.tasks t SET fence = t.fence + 1, lease_owner = $3::text, lease_until = $4::bigint, wake_at = $4::bigint,
                  attempts = t.attempts + 1, state = 'working', updated_at = $1::bigint,
                  version = t.version + CASE WHEN c.old_state = 'submitted' THEN 1 ELSE 0 END,
                  next_seq = t.next_seq + CASE WHEN c.old_state = 'submitted' THEN 1 ELSE 0 END
             FROM c WHERE t.id = c.id RETURNING t.id, t.fence, t.next_seq, c.old_state
         ), e AS (
           INSERT INTO ${s}.task_events (task_id, seq, kind, body, at)
           SELECT id, next_seq - 1, 'started', '{"state":"working"}'::jsonb, $1::bigint FROM u WHERE old_state = 'submitted'
         )
         SELECT id, fence FROM u`,
        values: [now, type, `raw-${i}`, now + leaseMs],
      });
      const row = r.rows[0];
      return row ? { id: row.id, fence: Number(row.fence) } : null;
    },
    async commit(i, c, mode = 'cte') {
      const now = Date.now();
      const v = commitValues(c, now, LEASE_MS);
      const values = [c.id, c.fence, v.state, v.step, v.checkpoint, v.progress, v.result, v.leaseUntil, v.resetAttempts, v.terminalAt, v.expiresAt, now, v.kind, v.body];
      const client = lane(i);
      if (mode === 'multi-statement') {
        await client.query('BEGIN');
        const u = await client.query<{ id: string; seq: string }>({ name: 'raw_update', text: update, values: values.slice(0, 12) });
        const row = u.rows[0];
        if (row) {
          await client.query({
            name: 'raw_insert_event',
            text: `INSERT INTO ${s}.task_events (task_id, seq, kind, body, at) VALUES ($1::text, $2::bigint, $3::text, $4::jsonb, $5::bigint)`,
            values: [row.id, row.seq, v.kind, v.body, now],
          });
        }
        await client.query('COMMIT');
        if (!row) throw new Error(`raw commit matched no row (${c.id})`);
        return;
      }
      const r = await client.query(mode === 'cte+notify' ? { name: 'raw_cte_notify', text: CTE_NOTIFY, values } : { name: 'raw_cte', text: CTE, values });
      if (r.rowCount !== 1) throw new Error(`raw commit matched no row (${c.id})`);
    },
    async close() {
      await Promise.all(clients.map((c) => c.end()));
    },
  };
}

// ---- SQLite ----------------------------------------------------------------------------------------------------

export function rawSqlite(place: Place): RawDriver {
  const db = new Database(place.location);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  const insertTask = db.prepare(
    `INSERT INTO belay_tasks (id, tenant, context_id, type, type_version, state, input, progress, version, next_seq,
       wake_at, created_at, updated_at, created_by, callback_url, fence, lease_owner, lease_until, attempts)
     VALUES (@id, 'bench', @ctx, @type, 1, @state, '{}', @progress, 1, 2, @now, @now, @now, 'bench', NULL, @fence, @owner, @until, @attempts)`,
  );
  const insertEvent = db.prepare('INSERT INTO belay_task_events (task_id, seq, kind, body, at) VALUES (?, ?, ?, ?, ?)');
  const update = db.prepare(
    `UPDATE belay_tasks SET state = @state, step = @step, checkpoint = @checkpoint, progress = @progress, pending_input = NULL,
       result = @result, error = NULL,
       lease_owner = CASE WHEN @lease_until IS NULL THEN NULL ELSE lease_owner END, lease_until = @lease_until,
       wake_at = @lease_until, attempts = CASE WHEN @reset = 1 THEN 1 ELSE attempts END,
       terminal_at = @terminal_at, expires_at = @expires_at,
       version = version + 1, next_seq = next_seq + 1, updated_at = @now
     WHERE id = @id AND fence = @fence AND state = 'working' AND cancel_requested_at IS NULL
     RETURNING next_seq - 1 AS seq`,
  );
  const pick = db.prepare(
    `SELECT id, state FROM belay_tasks WHERE state IN ('submitted', 'working') AND wake_at <= ? AND type = ? AND type_version = 1
      ORDER BY wake_at LIMIT 1`,
  );
  const grant = db.prepare(
    `UPDATE belay_tasks SET fence = fence + 1, lease_owner = @owner, lease_until = @until, wake_at = @until,
       attempts = attempts + 1, state = 'working', updated_at = @now,
       version = version + (CASE WHEN state = 'submitted' THEN 1 ELSE 0 END),
       next_seq = next_seq + (CASE WHEN state = 'submitted' THEN 1 ELSE 0 END)
     WHERE id = @id RETURNING fence, next_seq`,
  );
  const createTx = db.transaction((id: string, type: string, now: number) => {
    insertTask.run({ id, ctx: `ctx_${id}`, type, state: 'submitted', progress: PROGRESS_NULL, now, fence: 0, owner: null, until: null, attempts: 0 });
    insertEvent.run(id, 1, 'created', JSON.stringify({ state: 'submitted', type, type_version: 1 }), now);
  });
  const claimTx = db.transaction((lane: number, type: string, now: number, leaseMs: number) => {
    const c = pick.get(now, type) as { id: string; state: string } | undefined;
    if (!c) return null;
    const row = grant.get({ id: c.id, owner: `raw-${lane}`, until: now + leaseMs, now }) as { fence: number; next_seq: number };
    if (c.state === 'submitted') insertEvent.run(c.id, row.next_seq - 1, 'started', '{"state":"working"}', now);
    return { id: c.id, fence: Number(row.fence) };
  });
  const commitTx = db.transaction((c: RawCommit, now: number) => {
    const v = commitValues(c, now, LEASE_MS);
    const row = update.get({
      id: c.id,
      fence: c.fence,
      state: v.state,
      step: v.step,
      checkpoint: v.checkpoint,
      progress: v.progress,
      result: v.result,
      lease_until: v.leaseUntil,
      reset: v.resetAttempts ? 1 : 0,
      terminal_at: v.terminalAt,
      expires_at: v.expiresAt,
      now,
    }) as { seq: number } | undefined;
    if (!row) throw new Error(`raw commit matched no row (${c.id})`);
    insertEvent.run(c.id, row.seq, v.kind, v.body, now);
  });
  return {
    async seedWorking(n, type) {
      const ids: string[] = [];
      const now = Date.now();
      db.transaction(() => {
        for (let i = 0; i < n; i++) {
          const id = rawTaskId();
          ids.push(id);
          insertTask.run({ id, ctx: `ctx_${id}`, type, state: 'working', progress: PROGRESS_NULL, now, fence: 1, owner: 'raw', until: now + 3600_000, attempts: 1 });
          insertEvent.run(id, 1, 'created', '{"state":"submitted"}', now);
        }
      }).immediate();
      return ids;
    },
    async create(_lane, type) {
      createTx.immediate(rawTaskId(), type, Date.now());
    },
    async claim(lane, type, leaseMs) {
      return claimTx.immediate(lane, type, Date.now(), leaseMs);
    },
    async commit(_lane, c) {
      commitTx.immediate(c, Date.now());
    },
    async close() {
      db.close();
    },
  };
}

export async function rawDriver(place: Place, lanes: number): Promise<RawDriver> {
  return place.kind === 'postgres' ? rawPostgres(place, lanes) : rawSqlite(place);
}
