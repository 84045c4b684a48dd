/**
 * @module server/background
 * The upkeep every `belay serve` and `belay worker` process runs next to its workers: the webhook dispatcher and the
 * reconciler (deadlines, stranded tasks, retention). Composition only; the pieces live in delivery/ and reconciler/.
 *
 * Settings (flags win over the environment):
 * - `--webhook-allow-host <host|ip|cidr>` (repeatable) / `BELAY_WEBHOOK_ALLOWLIST` (comma-separated): addresses the
 *   SSRF guard lets through (loopback for tests and the A2A TCK). Empty by default: only public addresses.
 * - `BELAY_WEBHOOK_TIMEOUT_MS` (default 10000): per attempt.
 * - `BELAY_WEBHOOKS=off`: no dispatcher in this process (deliveries wait for one that has it).
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { Dispatcher } from '../delivery/dispatcher.js';
import type { PayloadRenderer } from '../delivery/payloads.js';
import { UrlGuard } from '../delivery/ssrf-guard.js';
import type { BelayMetrics } from '../metrics/belay-metrics.js';
import { Reconciler } from '../reconciler/reconciler.js';
import type { Store, TaskKind } from '../store/port.js';

export interface WebhookSettings {
  allow: string[];
  timeoutMs: number;
  enabled: boolean;
}

/** Reads the webhook settings from flags (`--webhook-allow-host` values) and the environment. */
export function webhookSettings(flagHosts: readonly string[] | undefined, env: NodeJS.ProcessEnv): WebhookSettings {
  const allow = [...(flagHosts ?? []).flatMap((h) => UrlGuard.parseAllowlist(h)), ...UrlGuard.parseAllowlist(env.BELAY_WEBHOOK_ALLOWLIST)];
  const timeout = Number(env.BELAY_WEBHOOK_TIMEOUT_MS ?? 10_000);
  if (!Number.isInteger(timeout) || timeout < 100) throw new Error(`BELAY_WEBHOOK_TIMEOUT_MS must be an integer ≥ 100, got "${env.BELAY_WEBHOOK_TIMEOUT_MS}"`);
  return { allow, timeoutMs: timeout, enabled: env.BELAY_WEBHOOKS !== 'off' };
}

export interface BackgroundOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  guard: UrlGuard;
  webhooks: WebhookSettings;
  metrics?: BelayMetrics;
  faultPoint?: (label: string) => void;
  /** Renders A2A push bodies (default: a `statusUpdate` StreamResponse; the A2A front may pass its own). */
  renderPush?: PayloadRenderer;
  /** Kinds this process's worker runs (the reconciler never fails their queued tasks for want of a worker). */
  runnableKinds?: readonly TaskKind[];
  env: NodeJS.ProcessEnv;
}

export interface Background {
  dispatcher: Dispatcher | null;
  reconciler: Reconciler;
  stop(): Promise<void>;
}

export function startBackground(o: BackgroundOptions): Background {
  const days = Number(o.env.BELAY_DELIVERY_RETENTION_DAYS ?? 7);
  const dispatcher = o.webhooks.enabled
    ? new Dispatcher({
        store: o.store,
        clock: o.clock,
        logger: o.logger,
        guard: o.guard,
        timeoutMs: o.webhooks.timeoutMs,
        ...(o.metrics ? { metrics: o.metrics } : {}),
        ...(o.faultPoint ? { faultPoint: o.faultPoint } : {}),
        ...(o.renderPush ? { renderPush: o.renderPush } : {}),
      })
    : null;
  const reconciler = new Reconciler({
    store: o.store,
    clock: o.clock,
    logger: o.logger,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    ...(o.runnableKinds ? { runnableKinds: o.runnableKinds } : {}),
    ...(Number.isFinite(days) && days > 0 ? { deliveredRetentionMs: days * 86_400_000 } : {}),
  });
  dispatcher?.start();
  reconciler.start();
  return {
    dispatcher,
    reconciler,
    async stop() {
      await Promise.all([dispatcher?.stop(), reconciler.stop()]);
    },
  };
}
