/**
 * @module metrics/belay-metrics
 * Belay's metrics and where they come from:
 *
 * | metric | kind | source |
 * |---|---|---|
 * | `belay_tasks{state}` | gauge | the store, at scrape time (all tenants) |
 * | `belay_stranded_tasks` | gauge | `Store.findStranded` at scrape time (the reconciler's grace) |
 * | `belay_webhook_deliveries{status}` | gauge | the store, at scrape time |
 * | `belay_claims_total` | counter | tasks this process leased |
 * | `belay_lease_losses_total` | counter | renewals and commits this process had refused for a lost lease |
 * | `belay_step_duration_seconds` | histogram | claim (or previous commit) to commit, per lease, in this process |
 * | `belay_webhook_attempts_total{target,result}` | counter | delivery attempts by this process |
 * | `belay_webhook_failures_total{target,reason}` | counter | failed attempts by reason |
 * | `belay_webhook_dead_letters_total{target,reason}` | counter | deliveries this process dead-lettered |
 * | `belay_reconciler_repairs_total{action}` | counter | reconciler repairs in this process |
 */
import type { Store } from '../store/port.js';
import { MetricsRegistry, type Counter, type Gauge, type Histogram } from './registry.js';

export interface BelayMetrics {
  registry: MetricsRegistry;
  claims: Counter;
  leaseLosses: Counter;
  stepSeconds: Histogram;
  webhookAttempts: Counter;
  webhookFailures: Counter;
  webhookDeadLetters: Counter;
  reconcilerRepairs: Counter;
  tasks: Gauge;
  stranded: Gauge;
  deliveries: Gauge;
}

export interface BelayMetricsOptions {
  /** Reads the gauges from this store at scrape time. */
  store?: Store;
  /** Grace for `belay_stranded_tasks` (default 60 s, as the reconciler). */
  strandedGraceMs?: number;
  now?: () => number;
}

export function createBelayMetrics(options: BelayMetricsOptions = {}): BelayMetrics {
  const r = new MetricsRegistry();
  const m: BelayMetrics = {
    registry: r,
    tasks: r.gauge('belay_tasks', 'Tasks by canonical state (all tenants).'),
    stranded: r.gauge('belay_stranded_tasks', 'Non-terminal tasks with no recent lease, no future wake-up and no input deadline.'),
    deliveries: r.gauge('belay_webhook_deliveries', 'Webhook deliveries by status (pending, delivered, dead).'),
    claims: r.counter('belay_claims_total', 'Task leases granted to this process.'),
    leaseLosses: r.counter('belay_lease_losses_total', 'Lease renewals or commits refused because the lease was lost.'),
    stepSeconds: r.histogram('belay_step_duration_seconds', 'Time from a claim (or the previous commit) to a step commit.', [0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120, 600]),
    webhookAttempts: r.counter('belay_webhook_attempts_total', 'Webhook and push delivery attempts by target kind and result.'),
    webhookFailures: r.counter('belay_webhook_failures_total', 'Failed delivery attempts by target kind and reason.'),
    webhookDeadLetters: r.counter('belay_webhook_dead_letters_total', 'Deliveries dead-lettered by this process.'),
    reconcilerRepairs: r.counter('belay_reconciler_repairs_total', 'Reconciler repairs by action.'),
  };
  const store = options.store;
  if (store) {
    const now = options.now ?? Date.now;
    const grace = options.strandedGraceMs ?? 60_000;
    r.collect(async () => {
      const counts = await store.countByState();
      m.tasks.replace(Object.entries(counts).map(([state, n]) => [{ state }, n]));
    });
    r.collect(async () => {
      m.stranded.set({}, (await store.findStranded(now(), grace, 10_000)).length);
    });
    r.collect(async () => {
      const counts = await store.countDeliveries();
      m.deliveries.replace(['pending', 'delivered', 'dead'].map((status) => [{ status }, counts[status] ?? 0]));
    });
  }
  return m;
}

/**
 * Wraps a store so claims, lease losses and step latency are counted without touching the runtime: a Proxy that
 * intercepts `claimTasks`, `renewLease` and `commit` and passes every other call through.
 */
export function meterStore(store: Store, metrics: BelayMetrics, now: () => number = Date.now): Store {
  // Per lease (task id + fence): when its current step started (claim or previous commit).
  const stepStart = new Map<string, number>();
  const key = (taskId: string, fence: number) => `${taskId}#${fence}`;
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'claimTasks') {
        return async (...args: Parameters<Store['claimTasks']>) => {
          const claimed = await target.claimTasks(...args);
          metrics.claims.inc({}, claimed.length);
          const t = now();
          if (stepStart.size > 100_000) stepStart.clear(); // leases that ended without a commit this proxy saw
          for (const c of claimed) stepStart.set(key(c.lease.taskId, c.lease.fence), t);
          return claimed;
        };
      }
      if (prop === 'renewLease') {
        return async (...args: Parameters<Store['renewLease']>) => {
          const r = await target.renewLease(...args);
          if (r.status === 'lost') {
            metrics.leaseLosses.inc();
            stepStart.delete(key(args[0].taskId, args[0].fence));
          }
          return r;
        };
      }
      if (prop === 'commit') {
        return async (...args: Parameters<Store['commit']>) => {
          const out = await target.commit(...args);
          const k = key(args[0].lease.taskId, args[0].lease.fence);
          if (out.ok) {
            const started = stepStart.get(k);
            const t = now();
            if (started !== undefined) metrics.stepSeconds.observe((t - started) / 1000);
            if (args[0].leaseUntil === null) stepStart.delete(k);
            else stepStart.set(k, t);
          } else {
            if (out.reason === 'lease_lost') metrics.leaseLosses.inc();
            stepStart.delete(k);
          }
          return out;
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
