import type { Migration } from '../migration.js';

/** SQLite schema, forward-only. Version numbers pair with `store/postgres/migrations.ts`. */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'init',
    breaking: true,
    sql: `
CREATE TABLE belay_tasks (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  context_id TEXT NOT NULL,
  type TEXT NOT NULL,
  type_version INTEGER NOT NULL,
  state TEXT NOT NULL,
  step INTEGER NOT NULL DEFAULT 0,
  checkpoint TEXT NOT NULL DEFAULT 'null',
  input TEXT NOT NULL,
  progress TEXT NOT NULL,
  pending_input TEXT,
  answers TEXT NOT NULL DEFAULT '{}',
  cancel_requested_at INTEGER,
  result TEXT NOT NULL DEFAULT 'null',
  artifacts TEXT NOT NULL DEFAULT '[]',
  error TEXT,
  lease_owner TEXT,
  lease_until INTEGER,
  fence INTEGER NOT NULL DEFAULT 0,
  version INTEGER NOT NULL DEFAULT 1,
  next_seq INTEGER NOT NULL DEFAULT 1,
  attempts INTEGER NOT NULL DEFAULT 0,
  wake_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  terminal_at INTEGER,
  expires_at INTEGER,
  created_by TEXT NOT NULL,
  callback_url TEXT
) STRICT;
-- The claim scans this partial index in wake_at order: its predicate is exactly the claim's state filter.
CREATE INDEX belay_tasks_claim ON belay_tasks (wake_at) WHERE state IN ('submitted', 'working');
-- Deadline sweep over paused tasks.
CREATE INDEX belay_tasks_waiting ON belay_tasks (wake_at) WHERE state IN ('input_required', 'auth_required');
CREATE INDEX belay_tasks_tenant_created ON belay_tasks (tenant, created_at DESC, id DESC);
-- A rowid (AUTOINCREMENT, never reused) lets other processes poll for new events cheaply.
CREATE TABLE belay_task_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  at INTEGER NOT NULL,
  UNIQUE (task_id, seq)
) STRICT;
CREATE TABLE belay_side_effects (
  task_id TEXT NOT NULL,
  effect_key TEXT NOT NULL,
  status TEXT NOT NULL,
  result TEXT,
  fence INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  applied_at INTEGER,
  PRIMARY KEY (task_id, effect_key)
) STRICT, WITHOUT ROWID;
CREATE TABLE belay_idempotency_keys (
  tenant TEXT NOT NULL,
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  task_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (tenant, scope, key)
) STRICT, WITHOUT ROWID;
`,
  },
  {
    version: 2,
    name: 'tombstones',
    breaking: false,
    sql: `
-- What is left of a task after retention: enough to answer 410 Gone instead of a bare 404.
CREATE TABLE belay_tombstones (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  type TEXT NOT NULL,
  final_state TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  terminal_at INTEGER,
  expired_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX belay_tasks_expiry ON belay_tasks (expires_at) WHERE expires_at IS NOT NULL;
`,
  },
  {
    version: 3,
    name: 'push-configs',
    breaking: false,
    sql: `
-- Push-notification targets per task (A2A TaskPushNotificationConfig), scoped by tenant. Credentials are secrets.
CREATE TABLE belay_push_configs (
  tenant TEXT NOT NULL,
  task_id TEXT NOT NULL,
  id TEXT NOT NULL,
  created_by TEXT NOT NULL,
  url TEXT NOT NULL,
  token TEXT,
  auth_scheme TEXT,
  auth_credentials TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (tenant, task_id, id)
) STRICT, WITHOUT ROWID;
-- The expiry sweep deletes a task's configs by task id alone.
CREATE INDEX belay_push_configs_task ON belay_push_configs (task_id);
-- A2A ListTasks: newest status change first, keyset-paged.
CREATE INDEX belay_tasks_tenant_updated ON belay_tasks (tenant, updated_at DESC, id DESC);
`,
  },
  {
    version: 4,
    name: 'disabled_principals',
    breaking: false,
    sql: `
-- Requesters whose authority was withdrawn: refused at the API and when their tasks resume.
CREATE TABLE belay_disabled_principals (
  tenant TEXT NOT NULL,
  principal TEXT NOT NULL,
  disabled_at INTEGER NOT NULL,
  reason TEXT,
  PRIMARY KEY (tenant, principal)
) STRICT, WITHOUT ROWID;
`,
  },
  {
    version: 5,
    name: 'webhook-deliveries',
    breaking: false,
    sql: `
-- Tenant webhook endpoints (REST contract), each with its own signing secrets (JSON list; two overlap in a rotation).
CREATE TABLE belay_webhook_endpoints (
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  url TEXT NOT NULL,
  description TEXT,
  event_types TEXT,
  secrets TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  disabled_reason TEXT,
  disabled_at INTEGER,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX belay_webhook_endpoints_tenant ON belay_webhook_endpoints (tenant, id);
-- The secrets that sign a tenant's task callbacks (callback_url given at creation).
CREATE TABLE belay_webhook_tenant_secrets (
  tenant TEXT PRIMARY KEY,
  secrets TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
-- One row per (target, event): the durable delivery state. Leased like tasks while an attempt is in flight.
CREATE TABLE belay_deliveries (
  id TEXT PRIMARY KEY,
  event_id TEXT NOT NULL,
  tenant TEXT NOT NULL,
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_type TEXT NOT NULL,
  target_kind TEXT NOT NULL,
  target_id TEXT NOT NULL,
  target_key TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  lease_owner TEXT,
  lease_until INTEGER,
  fence INTEGER NOT NULL DEFAULT 0,
  last_status INTEGER,
  last_error TEXT,
  last_attempt_at INTEGER,
  dead_reason TEXT,
  dead_at INTEGER,
  created_at INTEGER NOT NULL,
  delivered_at INTEGER,
  UNIQUE (target_key, task_id, seq)
) STRICT;
-- The claim scans due pending deliveries in next_attempt_at order.
CREATE INDEX belay_deliveries_due ON belay_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX belay_deliveries_task ON belay_deliveries (task_id);
CREATE INDEX belay_deliveries_tenant ON belay_deliveries (tenant, created_at DESC, id DESC);
CREATE INDEX belay_deliveries_delivered ON belay_deliveries (delivered_at) WHERE status = 'delivered';
-- Callback and push targets that answered 410 Gone: nothing more is sent to them until a redrive.
CREATE TABLE belay_webhook_gone_targets (
  target_key TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  task_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX belay_webhook_gone_targets_task ON belay_webhook_gone_targets (task_id);
-- How far the dispatcher has routed the event log (the log's rowid). Events from before this migration are not sent.
CREATE TABLE belay_delivery_feed (
  name TEXT PRIMARY KEY,
  cursor TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO belay_delivery_feed (name, cursor, updated_at) SELECT 'webhooks', CAST(COALESCE(MAX(id), 0) AS TEXT), 0 FROM belay_task_events;
`,
  },
  {
    version: 6,
    name: 'ascending-list-indexes',
    breaking: false,
    sql: `
-- The task list indexes, ascending and without the id, as on PostgreSQL (see there). Descending, the newest key went
-- to the left end of the tenant's range and SQLite left those pages about half empty; ascending, it lands at the
-- end of the range and the pages fill (with one tenant or fifty). An entry carries the rowid anyway, so the id
-- (49 bytes) only made it longer. The list queries still use them (SEARCH ... USING INDEX, the cursor as a range on
-- the time column) and order ties on the millisecond by id in a small sort (USE TEMP B-TREE FOR LAST TERM OF ORDER
-- BY). Rebuilding them reads the whole table once, inside the migrations' write transaction.
DROP INDEX belay_tasks_tenant_created;
DROP INDEX belay_tasks_tenant_updated;
CREATE INDEX belay_tasks_tenant_created ON belay_tasks (tenant, created_at);
CREATE INDEX belay_tasks_tenant_updated ON belay_tasks (tenant, updated_at);
`,
  },
];
