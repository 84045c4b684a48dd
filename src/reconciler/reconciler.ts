/**
 * @module reconciler/reconciler
 * Upkeep that keeps DESIGN.md §1 rules 5, 7 and 8 true whatever crashed, run on a timer in `belay serve` and
 * `belay worker` (several processes may run it at once: every repair is one conditional transition).
 *
 * Each sweep:
 * 1. **Input deadlines**: questions past their deadline fail or cancel the task (`expireDeadlines`).
 * 2. **Every non-terminal task has a wake-up** (rule 7): a task with no `wake_at` gets one — now for a queued or
 *    working task, the question's deadline for a waiting one.
 * 3. **Stranded claimable tasks** (queued, or working with a lease that ended, unclaimed for `graceMs` past their
 *    wake-up) are re-dispatched: a `retry_scheduled` event with `reason: "redispatch"` wakes every worker process
 *    (their wake_at is kept, so a backlog keeps its order). At most once per `graceMs` per task. A queued task whose
 *    type version no worker of this process runs fails with `ATTEMPTS_EXHAUSTED` after `maxRedispatches`
 *    re-dispatches ("dispatch attempts exhausted", DESIGN.md §4); a kind this process runs is only re-dispatched
 *    (its worker will get to it: a backlog is not a failure).
 * 4. **Retention** (rule 8): finished tasks past `expires_at` become tombstones, their events, ledger, idempotency
 *    keys, push configs and deliveries deleted in the same transaction (`Store.expireTasks`); delivered deliveries
 *    older than `deliveredRetentionMs` are pruned.
 *
 * Recovery bounds (defaults): a task held by a dead worker is claimable when its lease ends and is claimed at the next
 * poll — lease (30 s) + poll (1 s); a task without a wake-up or unclaimed is repaired at the first sweep after
 * `graceMs` — 60 s + sweep (5 s) — then claimed at the next poll.
 */
import { systemClock, type Clock } from '../core/clock.js';
import { coerceError, taskErrorFrom } from '../core/errors.js';
import { silentLogger, type Logger } from '../core/logger.js';
import type { Task } from '../core/task.js';
import { CLAIMABLE_STATES, isTerminal, isWaiting } from '../core/task-state.js';
import type { BelayMetrics } from '../metrics/belay-metrics.js';
import { DEFAULT_RETENTION_MS, expireDeadlines } from '../runtime/worker.js';
import type { Store, TaskKind, TaskPatch } from '../store/port.js';

export const DEFAULT_GRACE_MS = 60_000;
export const DEFAULT_SWEEP_MS = 5_000;
export const DEFAULT_MAX_REDISPATCHES = 10;
export const DEFAULT_DELIVERED_RETENTION_MS = 7 * 24 * 3600_000;

export interface ReconcilerOptions {
  store: Store;
  clock?: Clock;
  logger?: Logger;
  metrics?: BelayMetrics;
  /** A claimable task unclaimed this long past its wake-up is stranded. Default 60 s. */
  graceMs?: number;
  /** Time between sweeps. Default 5 s. */
  sweepMs?: number;
  /** Re-dispatches of a queued task before it fails (kinds this process cannot run only). Default 10. */
  maxRedispatches?: number;
  /** Task kinds a worker in this process runs: their queued tasks are never failed for want of a worker. */
  runnableKinds?: readonly TaskKind[];
  /** Retention of failed-by-reconciler tasks (as the worker's `retentionMs`). Default 30 days. */
  retentionMs?: number;
  /** How long delivered webhook deliveries are kept. Default 7 days. */
  deliveredRetentionMs?: number;
  /** Run retention here (default true). */
  expireTasks?: boolean;
}

export type StrandedReason = 'no_wake_up' | 'unclaimed' | 'lease_expired';

export interface StrandedTask {
  id: string;
  tenant: string;
  type: string;
  typeVersion: number;
  state: Task['state'];
  reason: StrandedReason;
  wakeAt: number | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  attempts: number;
  updatedAt: number;
  /** How long it has been claimable with nobody claiming it (ms), or null without a wake-up. */
  overdueMs: number | null;
}

export interface SweepReport {
  deadlines: number;
  wakeUpsRepaired: number;
  redispatched: number;
  failed: number;
  expired: number;
  deliveriesPruned: number;
  /** Stranded tasks seen by this sweep (before repairs). */
  stranded: number;
}

function classify(t: Task, now: number): StrandedTask {
  const reason: StrandedReason = t.wakeAt === null ? 'no_wake_up' : t.state === 'working' && t.leaseOwner !== null ? 'lease_expired' : 'unclaimed';
  return {
    id: t.id,
    tenant: t.tenant,
    type: t.type,
    typeVersion: t.typeVersion,
    state: t.state,
    reason,
    wakeAt: t.wakeAt,
    leaseOwner: t.leaseOwner,
    leaseUntil: t.leaseUntil,
    attempts: t.attempts,
    updatedAt: t.updatedAt,
    overdueMs: t.wakeAt === null ? null : now - t.wakeAt,
  };
}

/**
 * The stranded-task invariant as a query (`belay doctor`, `GET /v1/admin/stranded`, the metric): non-terminal tasks
 * with no recent lease, no future wake-up and no input deadline, each with why. `tenant` limits it to one tenant.
 */
export async function findStrandedTasks(store: Store, options: { now: number; graceMs?: number; limit?: number; tenant?: string }): Promise<StrandedTask[]> {
  const limit = options.limit ?? 100;
  // The store query is global; a tenant filter reads a larger window.
  const rows = await store.findStranded(options.now, options.graceMs ?? DEFAULT_GRACE_MS, options.tenant ? Math.max(limit * 10, 1000) : limit);
  return rows
    .filter((t) => options.tenant === undefined || t.tenant === options.tenant)
    .slice(0, limit)
    .map((t) => classify(t, options.now));
}

export class Reconciler {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly metrics: BelayMetrics | undefined;
  readonly graceMs: number;
  private readonly sweepMs: number;
  private readonly maxRedispatches: number;
  private readonly runnable: Set<string>;
  private readonly retentionMs: number;
  private readonly deliveredRetentionMs: number;
  private readonly expire: boolean;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake = new AbortController();

  constructor(options: ReconcilerOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.metrics = options.metrics;
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    this.sweepMs = options.sweepMs ?? DEFAULT_SWEEP_MS;
    this.maxRedispatches = options.maxRedispatches ?? DEFAULT_MAX_REDISPATCHES;
    this.runnable = new Set((options.runnableKinds ?? []).map((k) => `${k.type}@${k.version}`));
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.deliveredRetentionMs = options.deliveredRetentionMs ?? DEFAULT_DELIVERED_RETENTION_MS;
    this.expire = options.expireTasks ?? true;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = (async () => {
      while (!this.stopping) {
        try {
          await this.sweep();
        } catch (e) {
          this.logger.warn({ err: coerceError(e) }, 'reconciler sweep failed');
        }
        if (this.stopping) break;
        this.wake = new AbortController();
        await this.clock.sleep(this.sweepMs, this.wake.signal).catch(() => undefined);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake.abort();
    await this.loop;
    this.loop = null;
  }

  /** The stranded tasks right now (all tenants, or one). */
  stranded(options: { limit?: number; tenant?: string } = {}): Promise<StrandedTask[]> {
    return findStrandedTasks(this.store, { now: this.clock.now(), graceMs: this.graceMs, ...options });
  }

  /** One sweep (see the module comment). */
  async sweep(): Promise<SweepReport> {
    const now = this.clock.now();
    const report: SweepReport = { deadlines: 0, wakeUpsRepaired: 0, redispatched: 0, failed: 0, expired: 0, deliveriesPruned: 0, stranded: 0 };
    report.deadlines = await expireDeadlines(this.store, now, this.logger);
    if (report.deadlines > 0) this.metrics?.reconcilerRepairs.inc({ action: 'deadline' }, report.deadlines);

    const stranded = await this.store.findStranded(now, this.graceMs, 200);
    report.stranded = stranded.length;
    for (const t of stranded) {
      try {
        const action = await this.repair(t, now);
        if (action === 'wake_up') report.wakeUpsRepaired += 1;
        else if (action === 'redispatch') report.redispatched += 1;
        else if (action === 'failed') report.failed += 1;
        if (action) this.metrics?.reconcilerRepairs.inc({ action });
      } catch (e) {
        this.logger.warn({ err: coerceError(e), taskId: t.id }, 'stranded-task repair failed');
      }
    }

    if (this.expire) {
      for (;;) {
        const n = await this.store.expireTasks(now, 500);
        report.expired += n;
        if (n < 500) break;
      }
      if (report.expired > 0) this.metrics?.reconcilerRepairs.inc({ action: 'expired' }, report.expired);
      report.deliveriesPruned = await this.store.pruneDeliveries(now - this.deliveredRetentionMs, 1000);
    }
    return report;
  }

  private async repair(t: Task, now: number): Promise<'wake_up' | 'redispatch' | 'failed' | null> {
    if (isTerminal(t.state)) return null;
    if (t.wakeAt === null) {
      let repaired = false as boolean;
      await this.store.transition(t.id, undefined, now, (cur) => {
        if (isTerminal(cur.state) || cur.wakeAt !== null) return null;
        repaired = true;
        const wakeAt = isWaiting(cur.state) ? (cur.pendingInput?.deadlineAt ?? now) : Math.max(now, cur.leaseUntil ?? now);
        return { set: { wakeAt }, bumpFence: false, event: null };
      });
      return repaired ? 'wake_up' : null;
    }
    if (!CLAIMABLE_STATES.includes(t.state)) return null;
    // How often it was re-dispatched already (the log says; each re-dispatch is an event).
    const events = await this.store.listEvents(t.id, 0, 10_000);
    const redispatches = events.filter((e) => e.kind === 'retry_scheduled' && e.body.reason === 'redispatch').length;
    const runnableHere = this.runnable.has(`${t.type}@${t.typeVersion}`);
    let action = null as 'redispatch' | 'failed' | null;
    await this.store.transition(t.id, undefined, now, (cur): TaskPatch | null => {
      // Someone claimed, committed or re-dispatched it since it was read (another reconciler, a worker): leave it.
      if (cur.version !== t.version || !CLAIMABLE_STATES.includes(cur.state) || cur.wakeAt === null || cur.wakeAt > now - this.graceMs) return null;
      if (now - cur.updatedAt < this.graceMs) return null;
      if (cur.state === 'submitted' && redispatches >= this.maxRedispatches && !runnableHere) {
        action = 'failed';
        const error = taskErrorFrom('ATTEMPTS_EXHAUSTED', `No worker claimed this ${cur.type}@${cur.typeVersion} task after ${redispatches} re-dispatches (dispatch attempts exhausted)`, {
          redispatches,
        });
        return {
          set: { state: 'failed', error, leaseOwner: null, leaseUntil: null, wakeAt: null, terminalAt: now, expiresAt: now + this.retentionMs },
          bumpFence: true,
          event: { kind: 'failed', body: { state: 'failed', error: error as never } },
        };
      }
      if (redispatches >= this.maxRedispatches) return null; // runnable here: a backlog; stop adding events
      action = 'redispatch';
      return {
        set: { wakeAt: cur.wakeAt },
        bumpFence: false,
        event: { kind: 'retry_scheduled', body: { state: cur.state, reason: 'redispatch', redispatch: redispatches + 1 } },
      };
    });
    if (action === 'failed') this.logger.warn({ taskId: t.id }, 'queued task failed: dispatch attempts exhausted');
    return action;
  }
}
