import type { Migration } from '../migration.js';

/**
 * The placeholder every migration writes in front of its table and index names. The adapter replaces it with the
 * quoted schema name (`"belay"` by default) before running the statement, so every object is schema-qualified and
 * several Belay installations (or test runs) can share one database.
 */
export const SCHEMA_PLACEHOLDER = '{{schema}}';

/**
 * PostgreSQL schema, forward-only. Version numbers pair with `store/sqlite/migrations.ts`: the same tables and
 * columns (without the `belay_` prefix, inside a schema), times as BIGINT epoch milliseconds, JSON as JSONB.
 *
 * Not copied from SQLite: `task_events.id`. SQLite needs that rowid so other processes can poll for new events;
 * PostgreSQL wakes them with LISTEN/NOTIFY, and an identity column would not be a safe cursor there anyway
 * (identity order is not commit order).
 */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'init',
    breaking: true,
    sql: `
CREATE TABLE {{schema}}.tasks (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  context_id TEXT NOT NULL,
  type TEXT NOT NULL,
  type_version INTEGER NOT NULL,
  state TEXT NOT NULL,
  step INTEGER NOT NULL DEFAULT 0,
  checkpoint JSONB NOT NULL DEFAULT 'null',
  input JSONB NOT NULL,
  progress JSONB NOT NULL,
  pending_input JSONB,
  answers JSONB NOT NULL DEFAULT '{}',
  cancel_requested_at BIGINT,
  result JSONB NOT NULL DEFAULT 'null',
  artifacts JSONB NOT NULL DEFAULT '[]',
  error JSONB,
  lease_owner TEXT,
  lease_until BIGINT,
  fence BIGINT NOT NULL DEFAULT 0,
  version BIGINT NOT NULL DEFAULT 1,
  next_seq BIGINT NOT NULL DEFAULT 1,
  attempts INTEGER NOT NULL DEFAULT 0,
  wake_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  terminal_at BIGINT,
  expires_at BIGINT,
  created_by TEXT NOT NULL,
  callback_url TEXT
);
-- The claim scans this partial index in wake_at order: its predicate is exactly the claim's state filter, so the
-- planner can use it from the first query on an empty table.
CREATE INDEX tasks_claim ON {{schema}}.tasks (wake_at) WHERE state IN ('submitted', 'working');
-- Deadline sweep over paused tasks.
CREATE INDEX tasks_waiting ON {{schema}}.tasks (wake_at) WHERE state IN ('input_required', 'auth_required');
CREATE INDEX tasks_tenant_created ON {{schema}}.tasks (tenant, created_at DESC, id DESC);
CREATE TABLE {{schema}}.task_events (
  task_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  kind TEXT NOT NULL,
  body JSONB NOT NULL,
  at BIGINT NOT NULL,
  PRIMARY KEY (task_id, seq)
);
CREATE TABLE {{schema}}.side_effects (
  task_id TEXT NOT NULL,
  effect_key TEXT NOT NULL,
  status TEXT NOT NULL,
  result JSONB,
  fence BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  applied_at BIGINT,
  PRIMARY KEY (task_id, effect_key)
);
CREATE TABLE {{schema}}.idempotency_keys (
  tenant TEXT NOT NULL,
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  task_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (tenant, scope, key)
);
`,
  },
  {
    version: 2,
    name: 'tombstones',
    breaking: false,
    sql: `
CREATE TABLE {{schema}}.tombstones (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  type TEXT NOT NULL,
  final_state TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  terminal_at BIGINT,
  expired_at BIGINT NOT NULL
);
CREATE INDEX tasks_expiry ON {{schema}}.tasks (expires_at) WHERE expires_at IS NOT NULL;
`,
  },
  {
    version: 3,
    name: 'push-configs',
    breaking: false,
    sql: `
CREATE TABLE {{schema}}.push_configs (
  tenant TEXT NOT NULL,
  task_id TEXT NOT NULL,
  id TEXT NOT NULL,
  created_by TEXT NOT NULL,
  url TEXT NOT NULL,
  token TEXT,
  auth_scheme TEXT,
  auth_credentials TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (tenant, task_id, id)
);
CREATE INDEX push_configs_task ON {{schema}}.push_configs (task_id);
CREATE INDEX tasks_tenant_updated ON {{schema}}.tasks (tenant, updated_at DESC, id DESC);
`,
  },
  {
    version: 4,
    name: 'disabled_principals',
    breaking: false,
    sql: `
CREATE TABLE {{schema}}.disabled_principals (
  tenant TEXT NOT NULL,
  principal TEXT NOT NULL,
  disabled_at BIGINT NOT NULL,
  reason TEXT,
  PRIMARY KEY (tenant, principal)
);
`,
  },
  {
    version: 5,
    name: 'webhook-deliveries',
    breaking: false,
    sql: `
-- The webhook feed's commit order: the id of the transaction that wrote each event. Rows from before this migration
-- keep NULL (no table rewrite) and are not sent. The router reads only below the oldest running transaction.
ALTER TABLE {{schema}}.task_events ADD COLUMN xid xid8;
ALTER TABLE {{schema}}.task_events ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
CREATE INDEX task_events_xid ON {{schema}}.task_events (xid);
CREATE TABLE {{schema}}.webhook_endpoints (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  url TEXT NOT NULL,
  description TEXT,
  event_types JSONB,
  secrets JSONB NOT NULL,
  enabled BOOLEAN NOT NULL DEFAULT true,
  disabled_reason TEXT,
  disabled_at BIGINT,
  created_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_tenant ON {{schema}}.webhook_endpoints (tenant, id);
CREATE TABLE {{schema}}.webhook_tenant_secrets (
  tenant TEXT PRIMARY KEY,
  secrets JSONB NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE {{schema}}.deliveries (
  id TEXT PRIMARY KEY,
  event_id TEXT NOT NULL,
  tenant TEXT NOT NULL,
  task_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  event_type TEXT NOT NULL,
  target_kind TEXT NOT NULL,
  target_id TEXT NOT NULL,
  target_key TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT,
  lease_owner TEXT,
  lease_until BIGINT,
  fence BIGINT NOT NULL DEFAULT 0,
  last_status INTEGER,
  last_error TEXT,
  last_attempt_at BIGINT,
  dead_reason TEXT,
  dead_at BIGINT,
  created_at BIGINT NOT NULL,
  delivered_at BIGINT,
  UNIQUE (target_key, task_id, seq)
);
CREATE INDEX deliveries_due ON {{schema}}.deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_task ON {{schema}}.deliveries (task_id);
CREATE INDEX deliveries_tenant ON {{schema}}.deliveries (tenant, created_at DESC, id DESC);
CREATE INDEX deliveries_delivered ON {{schema}}.deliveries (delivered_at) WHERE status = 'delivered';
CREATE TABLE {{schema}}.webhook_gone_targets (
  target_key TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  task_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  at BIGINT NOT NULL
);
CREATE INDEX webhook_gone_targets_task ON {{schema}}.webhook_gone_targets (task_id);
-- The router's cursor: '' (the start) or '<xid>:<task id length>:<task id>:<seq>'.
CREATE TABLE {{schema}}.delivery_feed (
  name TEXT PRIMARY KEY,
  cursor TEXT NOT NULL,
  updated_at BIGINT NOT NULL
);
INSERT INTO {{schema}}.delivery_feed (name, cursor, updated_at) VALUES ('webhooks', '', 0);
`,
  },
  {
    version: 6,
    name: 'ascending-list-indexes',
    breaking: false,
    sql: `
-- The task list indexes, rebuilt ascending and without the id: they held most of the bytes a waiting task costs
-- that were neither its row nor its events. Every UPDATE of a task row is non-HOT (it changes the indexed state and
-- wake_at), so it adds an entry to each index, in tasks_tenant_updated under the newest key. The id (49 bytes) made
-- an entry 84 bytes; without it an entry is 28, and equal keys (the row versions of one task in the created index,
-- tasks updated in the same millisecond) deduplicate into one posting list. Ascending only helps the tenant whose
-- range ends the index (one tenant, as in the benchmark): its newest keys land on the rightmost page, which
-- PostgreSQL splits 90/10, where DESC put them at the left end of the range and split every page 50/50. For a tenant
-- in the middle of the index both directions split 50/50. The list queries (ORDER BY created_at|updated_at DESC,
-- id DESC) scan the index backward and order ties on the millisecond by id in an Incremental Sort; the keyset
-- cursor and the state/type filters read the same rows as before.
--
-- Cost on a large table: DROP INDEX takes an ACCESS EXCLUSIVE lock on tasks, held until the migrations commit, and
-- each CREATE INDEX reads and sorts the whole table, so every read and write of tasks waits for both builds (0.1 s
-- each for 200,000 rows in memory here; minutes for tens of millions read from disk). Acceptable at this stage (no
-- installation has a large tasks table yet) and it keeps the runner's rule of one transaction for all migrations.
-- A large installation would instead build the new indexes under new names with CREATE INDEX CONCURRENTLY and
-- DROP INDEX CONCURRENTLY the old ones, which cannot run inside a transaction.
DROP INDEX {{schema}}.tasks_tenant_created;
DROP INDEX {{schema}}.tasks_tenant_updated;
CREATE INDEX tasks_tenant_created ON {{schema}}.tasks (tenant, created_at);
CREATE INDEX tasks_tenant_updated ON {{schema}}.tasks (tenant, updated_at);
`,
  },
];
