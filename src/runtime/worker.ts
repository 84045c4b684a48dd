/**
 * @module runtime/worker
 * A worker process's loop: claim what it can run, run each task under its lease, sleep until a wake-up or the
 * poll interval. It also fires input deadlines. Throughput comes from `concurrency` inside one process.
 */
import { systemClock, type Clock } from '../core/clock.js';
import { coerceError } from '../core/errors.js';
import { newWorkerId } from '../core/ids.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { decideDeadline } from '../core/transitions.js';
import type { Store } from '../store/port.js';
import { TaskRunner, type PrincipalDirectory, type RunOutcome } from './task-runner.js';
import type { TaskTypeRegistry } from './task-type.js';

export interface WorkerOptions {
  store: Store;
  registry: TaskTypeRegistry;
  clock?: Clock;
  logger?: Logger;
  workerId?: string;
  /** Tasks run at once in this process. */
  concurrency?: number;
  /** Lease length; renewed every third of it while a step runs. Recovery after a crash takes at most this long. */
  leaseMs?: number;
  /** Longest sleep between claims when no wake-up arrives. */
  pollMs?: number;
  /** How long finished tasks are kept before they may be expired (the published retention policy). */
  retentionMs?: number;
  /** Time to answer a question when neither the question nor its task type says. */
  defaultInputTimeoutMs?: number;
  /** How often to look for questions past their deadline. */
  deadlineSweepMs?: number;
  /** Named crash points for chaos tests (see `runtime/fault-points.ts`). */
  faultPoint?: (label: string) => void;
  random?: () => number;
  /** Re-validation on resume: requesters disabled here are refused (AUTHORIZATION_REVOKED). */
  principals?: PrincipalDirectory;
  /** Whether this worker's sweep also applies retention (default true; the reconciler can own it instead). */
  expireTasks?: boolean;
  /** Called after each task run ends (tests and metrics). */
  onRunEnd?: (taskId: string, outcome: RunOutcome) => void;
}

export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_RETENTION_MS = 30 * 24 * 3600_000;
export const DEFAULT_INPUT_TIMEOUT_MS = 7 * 24 * 3600_000;

export class Worker {
  readonly id: string;
  private readonly store: Store;
  private readonly registry: TaskTypeRegistry;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly deadlineSweepMs: number;
  private readonly options: WorkerOptions;
  private readonly running = new Map<string, { runner: TaskRunner; done: Promise<void> }>();
  /**
   * Runs whose last commit is in flight: they run no step code, so their slots take the next tasks meanwhile. The
   * claim then overlaps the commit instead of following it, and PostgreSQL flushes both in one WAL write (group
   * commit). `concurrency` bounds step code; a last commit refused by a race (a cancellation, an early answer) puts
   * its run back, which for that moment can make it one more.
   */
  private readonly finishing = new Set<string>();
  private loop: Promise<void> | null = null;
  private stopping = false;
  private draining = false;
  private wake: AbortController = new AbortController();
  private unsubscribe: (() => void) | null = null;
  private lastDeadlineSweep = -Infinity;

  constructor(options: WorkerOptions) {
    this.options = options;
    this.store = options.store;
    this.registry = options.registry;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.id = options.workerId ?? newWorkerId();
    this.concurrency = Math.max(1, options.concurrency ?? 4);
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.pollMs = options.pollMs ?? 1000;
    this.deadlineSweepMs = options.deadlineSweepMs ?? 5000;
  }

  get activeTasks(): number {
    return this.running.size;
  }

  /** Starts the claim loop. */
  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.draining = false;
    this.unsubscribe = this.store.subscribe((n) => {
      if (n.type === 'ready' || n.kind === 'created' || n.kind === 'input_received' || n.kind === 'retry_scheduled') this.poke();
      if (n.type === 'event' && n.kind === 'cancel_requested') {
        const held = this.running.get(n.taskId);
        if (held) held.runner.checkLease().catch((e: unknown) => this.logger.warn({ err: coerceError(e) }, 'cancel check failed'));
      }
    });
    this.loop = this.runLoop();
  }

  /** Wakes the claim loop now. */
  poke(): void {
    this.wake.abort();
  }

  /**
   * Graceful shutdown: stop claiming; running tasks finish their current step, commit it and give their lease back.
   * After `graceMs` the remaining steps are aborted; their leases lapse and another worker resumes them.
   */
  async stop(graceMs = 30_000): Promise<void> {
    this.stopping = true;
    this.draining = true;
    this.poke();
    await this.loop;
    this.loop = null;
    const all = Promise.all([...this.running.values()].map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      for (const r of this.running.values()) r.runner.abort();
      await all;
    }
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /**
   * Claims and runs tasks until nothing is claimable right now, then returns (tests, one-shot tools).
   * Does not start the background loop.
   */
  async drain(): Promise<number> {
    let ran = 0;
    for (;;) {
      await this.sweepDeadlines(true);
      const claimed = await this.claimBatch();
      if (claimed === 0 && this.running.size === 0) return ran;
      ran += claimed;
      await Promise.race([...this.running.values()].map((r) => r.done));
    }
  }

  private async runLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      let claimed = 0;
      try {
        await this.sweepDeadlines(false);
        claimed = await this.claimBatch();
        failures = 0;
      } catch (e) {
        failures += 1;
        this.logger.warn({ err: coerceError(e), failures }, 'claim failed; backing off');
      }
      if (this.stopping) break;
      const free = this.freeSlots();
      if (claimed > 0 && free > 0 && failures === 0) continue;
      this.wake = new AbortController();
      const delay = failures > 0 ? Math.min(this.pollMs * 2 ** Math.min(failures, 5), 30_000) : await this.idleDelay(free);
      await this.clock.sleep(delay, this.wake.signal).catch(() => undefined);
    }
  }

  /**
   * How long to sleep with `free` slots and nothing claimable: until the next lease lapses or retry falls due, when
   * that comes before the poll interval. Nothing announces a lapsing lease (its holder may be dead), so without this
   * a crashed worker's task waited up to a whole poll past its lease: recovery took lease + poll + the step, and now
   * takes lease + the step. A failed look-up falls back to the poll interval.
   */
  private async idleDelay(free: number): Promise<number> {
    if (free <= 0 || this.draining) return this.pollMs;
    const now = this.clock.now();
    try {
      const next = await this.store.nextClaimAt({ workerId: this.id, now, kinds: this.registry.kinds() });
      // +1 ms: a claim takes rows with wake_at <= now, so wake just after the instant, not a hair before it.
      return next === null ? this.pollMs : Math.min(this.pollMs, Math.max(0, next - now + 1));
    } catch (e) {
      this.logger.warn({ err: coerceError(e) }, 'next-claim look-up failed; polling');
      return this.pollMs;
    }
  }

  private freeSlots(): number {
    return this.concurrency - this.running.size + this.finishing.size;
  }

  private async claimBatch(): Promise<number> {
    const free = this.freeSlots();
    if (free <= 0 || this.draining) return 0;
    const claimed = await this.store.claimTasks({ workerId: this.id, now: this.clock.now(), leaseMs: this.leaseMs, limit: free, kinds: this.registry.kinds() });
    for (const c of claimed) {
      const type = this.registry.get(c.task.type, c.task.typeVersion);
      if (!type) {
        // Cannot happen through the claim filter; give the task back rather than guess.
        await this.store.releaseLease(c.lease, this.clock.now());
        continue;
      }
      const runner = new TaskRunner(c, type, {
        store: this.store,
        clock: this.clock,
        logger: this.logger,
        leaseMs: this.leaseMs,
        retentionMs: this.options.retentionMs ?? DEFAULT_RETENTION_MS,
        defaultInputTimeoutMs: this.options.defaultInputTimeoutMs ?? DEFAULT_INPUT_TIMEOUT_MS,
        random: this.options.random ?? Math.random,
        faultPoint: this.options.faultPoint ?? (() => {}),
        draining: () => this.draining,
        // Built-in re-validation: a requester disabled in the store is refused when its task resumes.
        principals: this.options.principals ?? { isDisabled: (tenant, principal) => this.store.isPrincipalDisabled(tenant, principal) },
        finishing: (on) => {
          if (this.running.get(c.task.id)?.runner !== runner) return;
          if (!on) {
            this.finishing.delete(c.task.id);
            return;
          }
          this.finishing.add(c.task.id);
          this.poke();
        },
      });
      const forget = () => {
        // A lease that lapsed while this run's last commit was in flight can already be held by a new run of the
        // same task here; leave that one's entry alone.
        if (this.running.get(c.task.id)?.runner !== runner) return;
        this.running.delete(c.task.id);
        this.finishing.delete(c.task.id);
      };
      const done = runner.run().then(
        (outcome) => {
          forget();
          this.options.onRunEnd?.(c.task.id, outcome);
          this.poke();
        },
        (e: unknown) => {
          forget();
          this.logger.error({ err: coerceError(e), taskId: c.task.id }, 'runner crashed');
        },
      );
      // Replacing an earlier run of this task (its lease lapsed mid-commit; the fence refuses that commit): its slot
      // stops counting as finishing along with it.
      this.finishing.delete(c.task.id);
      this.running.set(c.task.id, { runner, done });
    }
    return claimed.length;
  }

  /** Fires the deadline of every question nobody answered in time (fail or cancel, per the question). */
  private async sweepDeadlines(force: boolean): Promise<void> {
    const now = this.clock.now();
    if (!force && now - this.lastDeadlineSweep < this.deadlineSweepMs) return;
    this.lastDeadlineSweep = now;
    await expireDeadlines(this.store, now, this.logger);
    // Retention that actually deletes: finished tasks past `expires_at` become tombstones (410 Gone).
    if (this.options.expireTasks !== false) await this.store.expireTasks(now, 500);
  }
}

/** Expires every question past its deadline. Safe to run from several processes: each expiry is one transition. */
export async function expireDeadlines(store: Store, now: number, logger: Logger = silentLogger): Promise<number> {
  let expired = 0;
  for (;;) {
    const due = await store.listDueDeadlines(now, 100);
    if (due.length === 0) return expired;
    const before = expired;
    for (const d of due) {
      try {
        await store.transition(d.id, undefined, now, (t) => decideDeadline(t, now));
        expired += 1;
      } catch (e) {
        logger.warn({ err: coerceError(e), taskId: d.id }, 'deadline expiry failed');
      }
    }
    // Stop when a page made no full progress: a row that cannot expire must not spin this loop.
    if (due.length < 100 || expired - before < due.length) return expired;
  }
}
