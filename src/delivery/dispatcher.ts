/**
 * @module delivery/dispatcher
 * The webhook dispatcher: turns committed events into durable deliveries, then sends them, at least once, with the
 * same `webhook-id` every time.
 *
 * Why it reads the event log instead of an outbox written by every commit: the log is already the durable,
 * transactional record of each change (a checkpoint and its event commit together, DESIGN.md §1 rule 2), so a router
 * that reads it after the commit sees exactly what committed, and the hot paths (create, claim, the one-statement
 * step commit) stay untouched — an outbox would add a write, and the routing decision (which callback, endpoints and
 * push configs want this event), to every commit in both adapters. The router keeps a durable cursor over the log in
 * commit order (`Store.readEventFeed`) and writes the deliveries for a batch and the new cursor in ONE transaction
 * (`Store.enqueueDeliveries`); a crash before that commit re-routes the batch, and a delivery already made for the same
 * (target, task, seq) is left alone, so nothing is lost or doubled.
 *
 * Sending: deliveries are leased like tasks (`claimDeliveries`: a fence, attempts, a lease of `timeoutMs` + margin).
 * A dispatcher killed mid-attempt leaves the delivery pending; when the lease lapses another dispatcher (or this one,
 * restarted) sends it again with the same event id — the receiver dedupes (`belay/client`'s WebhookReceiver does).
 * Outcomes (delivery/schedule.ts has the retry schedule):
 * - 2xx: delivered (crash point `after-webhook-2xx` sits between the response and the record);
 * - 410: dead, and the target disabled (an endpoint's `enabled`; a callback or push target's gone marker);
 * - 3xx: a failure — redirects are never followed; any other status, a timeout or a network error: retried per the
 *   schedule, `Retry-After` honoured; dead-lettered when the schedule is exhausted;
 * - an address the SSRF guard refuses at connect time: dead at once (reason `ssrf_refused`), nothing sent.
 * Dead letters are redriven through `WebhookService.redrive` (REST: `POST /v1/webhook-deliveries/{id}/redrive`).
 */
import { systemClock, type Clock } from '../core/clock.js';
import { targetKey, webhookEventId, type Delivery, type DeliveryOutcome, type FeedEvent, type NewDelivery, type WebhookEndpoint, type WebhookSecret } from '../core/delivery.js';
import { coerceError } from '../core/errors.js';
import { newId, newWorkerId } from '../core/ids.js';
import { silentLogger, type Logger } from '../core/logger.js';
import type { PushConfig } from '../core/task.js';
import type { BelayMetrics } from '../metrics/belay-metrics.js';
import type { Store } from '../store/port.js';
import { guardedSender, type Sender, type SendResult } from './http-sender.js';
import { a2aPayload, DEFAULT_EVENT_TYPES, eventType, PUSH_EVENT_KINDS, restPayload, type PayloadRenderer } from './payloads.js';
import { DEFAULT_RETRY_POLICY, nextAttemptDelay, parseRetryAfter, type RetryPolicy } from './schedule.js';
import { generateSecret, signatureHeader } from './signing.js';
import { UrlGuard } from './ssrf-guard.js';

export interface DispatcherOptions {
  store: Store;
  clock?: Clock;
  logger?: Logger;
  /** Checks every connect (default: no allowlist, system DNS). */
  guard?: UrlGuard;
  /** Sends one attempt (default: node:http through `guard`). */
  sender?: Sender;
  workerId?: string;
  /** Attempts in flight at once. Default 8. */
  concurrency?: number;
  /** Per attempt, connect to last response byte. Default 10 s (A2A asks 10-30 s; Standard Webhooks 15-30 s). */
  timeoutMs?: number;
  /** Delivery lease; must outlast an attempt. Default `timeoutMs + 5 s`. */
  leaseMs?: number;
  /** Longest sleep between passes when nothing wakes the loop. Default 1 s. */
  pollMs?: number;
  retry?: RetryPolicy;
  random?: () => number;
  /** Crash points (`after-webhook-2xx`). */
  faultPoint?: (label: string) => void;
  metrics?: BelayMetrics;
  /** Absolute task links in REST payloads (default: `/v1/agent-tasks/{id}`). */
  taskUrl?: (taskId: string) => string;
  /** Renders A2A push bodies (default: a `statusUpdate` StreamResponse). */
  renderPush?: PayloadRenderer;
  /** Events routed per feed read. Default 200. */
  routeBatch?: number;
}

/** Creates the tenant's callback signing secret on first use; two racing creators end up with the same one. */
export async function ensureCallbackSecrets(store: Store, tenant: string, now: number): Promise<WebhookSecret[]> {
  const existing = await store.getCallbackSecrets(tenant);
  if (existing && existing.length > 0) return existing;
  return store.putCallbackSecrets(tenant, [{ secret: generateSecret(), createdAt: now, expiresAt: null }], now, true);
}

function subscribed(endpoint: WebhookEndpoint, type: string): boolean {
  return (endpoint.eventTypes ?? DEFAULT_EVENT_TYPES).includes(type);
}

export class Dispatcher {
  readonly id: string;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly send: Sender;
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly retry: RetryPolicy;
  private readonly random: () => number;
  private readonly faultPoint: (label: string) => void;
  private readonly metrics: BelayMetrics | undefined;
  private readonly taskUrl: ((taskId: string) => string) | undefined;
  private readonly renderPush: PayloadRenderer;
  private readonly routeBatch: number;
  private readonly inFlight = new Map<string, Promise<void>>();
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake = new AbortController();
  private unsubscribe: (() => void) | null = null;

  constructor(options: DispatcherOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.send = options.sender ?? guardedSender(options.guard ?? new UrlGuard());
    this.id = options.workerId ?? `d${newWorkerId().slice(1)}`;
    this.concurrency = Math.max(1, options.concurrency ?? 8);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.leaseMs = options.leaseMs ?? this.timeoutMs + 5_000;
    this.pollMs = options.pollMs ?? 1000;
    this.retry = options.retry ?? DEFAULT_RETRY_POLICY;
    this.random = options.random ?? Math.random;
    this.faultPoint = options.faultPoint ?? (() => {});
    this.metrics = options.metrics;
    this.taskUrl = options.taskUrl;
    this.renderPush = options.renderPush ?? a2aPayload;
    this.routeBatch = options.routeBatch ?? 200;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.unsubscribe = this.store.subscribe(() => this.poke());
    this.loop = this.runLoop();
  }

  poke(): void {
    this.wake.abort();
  }

  /** Stops claiming and waits for attempts in flight (their outcome is recorded; nothing is abandoned mid-way). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.poke();
    await this.loop;
    this.loop = null;
    await Promise.all(this.inFlight.values());
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /**
   * One full pass, awaited (tests, one-shot tools): routes every event available, then sends every delivery due now,
   * again and again until none is due. Returns how many deliveries were routed and how many attempts were made.
   */
  async runOnce(): Promise<{ routed: number; attempts: number }> {
    const routed = await this.route();
    let attempts = 0;
    for (;;) {
      const batch = await this.store.claimDeliveries({ workerId: this.id, now: this.clock.now(), leaseMs: this.leaseMs, limit: this.concurrency });
      if (batch.length === 0) return { routed, attempts };
      attempts += batch.length;
      await Promise.all(batch.map((d) => this.attempt(d)));
    }
  }

  private async runLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        await this.route();
        await this.pump();
        failures = 0;
      } catch (e) {
        failures += 1;
        this.logger.warn({ err: coerceError(e), failures }, 'webhook dispatcher pass failed; backing off');
      }
      if (this.stopping) break;
      this.wake = new AbortController();
      const delay = failures > 0 ? Math.min(this.pollMs * 2 ** Math.min(failures, 5), 30_000) : this.pollMs;
      await this.clock.sleep(delay, this.wake.signal).catch(() => undefined);
    }
  }

  /** Claims what free slots allow and starts those attempts (not awaited: each pokes the loop when it ends). */
  private async pump(): Promise<void> {
    const free = this.concurrency - this.inFlight.size;
    if (free <= 0) return;
    const batch = await this.store.claimDeliveries({ workerId: this.id, now: this.clock.now(), leaseMs: this.leaseMs, limit: free });
    for (const d of batch) {
      const p = this.attempt(d)
        .catch((e: unknown) => this.logger.error({ err: coerceError(e), deliveryId: d.id }, 'delivery attempt crashed'))
        .finally(() => {
          this.inFlight.delete(d.id);
          this.poke();
        });
      this.inFlight.set(d.id, p);
    }
  }

  // ---- routing ---------------------------------------------------------------------------------------------------

  /** Routes the feed until it is drained. Returns how many deliveries were made. */
  async route(): Promise<number> {
    let made = 0;
    for (let pass = 0; pass < 1000; pass++) {
      const { cursor, next, events } = await this.store.readEventFeed(this.routeBatch);
      if (next === cursor) return made;
      const deliveries = await this.plan(events);
      if (await this.store.enqueueDeliveries(cursor, next, deliveries)) made += deliveries.length;
    }
    return made;
  }

  /** The deliveries a batch of events asks for. */
  private async plan(events: readonly FeedEvent[]): Promise<NewDelivery[]> {
    const now = this.clock.now();
    const endpoints = new Map<string, WebhookEndpoint[]>();
    const pushes = new Map<string, PushConfig[]>();
    for (const e of events) {
      if (!endpoints.has(e.tenant)) endpoints.set(e.tenant, await this.store.listWebhookEndpoints(e.tenant, { limit: 1000 }));
      if (PUSH_EVENT_KINDS.includes(e.kind) && !pushes.has(e.taskId)) pushes.set(e.taskId, await this.store.listPushConfigs(e.tenant, e.taskId, { limit: 100 }));
    }
    const keys = new Set<string>();
    for (const e of events) {
      if (e.callbackUrl) keys.add(targetKey('callback', e.taskId, ''));
      for (const p of pushes.get(e.taskId) ?? []) keys.add(targetKey('push', e.taskId, p.id));
    }
    const gone = new Set(await this.store.goneTargets([...keys]));
    const out: NewDelivery[] = [];
    const add = (e: FeedEvent, kind: NewDelivery['targetKind'], targetId: string, url: string, body: string, dead: string | null) => {
      out.push({
        id: newId('dlv'),
        eventId: webhookEventId(e.taskId, e.seq),
        tenant: e.tenant,
        taskId: e.taskId,
        seq: e.seq,
        eventType: eventType(e.kind),
        targetKind: kind,
        targetId,
        targetKey: targetKey(kind, e.taskId, targetId),
        url,
        payload: body,
        status: dead ? 'dead' : 'pending',
        deadReason: dead,
        now,
      });
    };
    for (const e of events) {
      const type = eventType(e.kind);
      const subscribedEndpoints = (endpoints.get(e.tenant) ?? []).filter((ep) => ep.createdAt <= e.at && subscribed(ep, type));
      const wantsCallback = e.callbackUrl !== null && DEFAULT_EVENT_TYPES.includes(type);
      if (wantsCallback || subscribedEndpoints.length > 0) {
        const rest = restPayload(e, this.taskUrl).body;
        if (wantsCallback) add(e, 'callback', '', e.callbackUrl!, rest, gone.has(targetKey('callback', e.taskId, '')) ? 'target_gone' : null);
        for (const ep of subscribedEndpoints) add(e, 'endpoint', ep.id, ep.url, rest, ep.enabled ? null : 'endpoint_disabled');
      }
      const configs = (pushes.get(e.taskId) ?? []).filter((p) => p.createdAt <= e.at);
      if (configs.length > 0) {
        const rendered = this.renderPush(e);
        if (rendered) for (const p of configs) add(e, 'push', p.id, p.url, rendered.body, gone.has(targetKey('push', e.taskId, p.id)) ? 'target_gone' : null);
      }
    }
    return out;
  }

  // ---- sending ---------------------------------------------------------------------------------------------------

  private async attempt(d: Delivery): Promise<void> {
    const lease = { id: d.id, fence: d.fence };
    const target = await this.resolveTarget(d);
    if ('dead' in target) {
      await this.finish(d, lease, { kind: 'dead', reason: target.dead, status: null, error: target.dead });
      return;
    }
    const now = this.clock.now();
    const timestamp = Math.floor(now / 1000);
    const headers: Record<string, string> = {
      'content-type': d.targetKind === 'push' ? 'application/a2a+json' : 'application/json',
      'user-agent': 'Belay-Webhooks/1',
      'webhook-id': d.eventId,
      'webhook-timestamp': String(timestamp),
      ...target.headers,
    };
    if (target.secrets) headers['webhook-signature'] = signatureHeader(target.secrets, now, d.eventId, timestamp, d.payload);
    const result = await this.send({ url: target.url, headers, body: d.payload, timeoutMs: this.timeoutMs });
    const outcome = this.classify(d, result);
    this.metrics?.webhookAttempts.inc({ target: d.targetKind, result: outcome.kind });
    if (outcome.kind !== 'delivered') this.metrics?.webhookFailures.inc({ target: d.targetKind, reason: failureReason(result) });
    if (outcome.kind === 'delivered') this.faultPoint('after-webhook-2xx');
    await this.finish(d, lease, outcome);
  }

  private async finish(d: Delivery, lease: { id: string; fence: number }, outcome: DeliveryOutcome): Promise<void> {
    const recorded = await this.store.finishDelivery(lease, outcome, this.clock.now());
    if (!recorded) {
      // The lease lapsed and another dispatcher took the delivery over: it decides now.
      this.logger.info({ deliveryId: d.id }, 'delivery lease lost; outcome not recorded');
      return;
    }
    if (outcome.kind === 'dead' || outcome.kind === 'gone') {
      this.metrics?.webhookDeadLetters.inc({ target: d.targetKind, reason: outcome.kind === 'gone' ? 'gone' : outcome.reason });
      this.logger.warn({ deliveryId: d.id, eventId: d.eventId, target: d.targetKey, outcome }, 'delivery dead-lettered');
    }
  }

  private async resolveTarget(d: Delivery): Promise<{ url: string; headers: Record<string, string>; secrets: WebhookSecret[] | null } | { dead: string }> {
    if (d.targetKind === 'endpoint') {
      const ep = await this.store.getWebhookEndpoint(d.tenant, d.targetId);
      if (!ep) return { dead: 'target_deleted' };
      if (!ep.enabled) return { dead: 'endpoint_disabled' };
      return { url: ep.url, headers: {}, secrets: ep.secrets };
    }
    if (d.targetKind === 'callback') {
      return { url: d.url, headers: {}, secrets: await ensureCallbackSecrets(this.store, d.tenant, this.clock.now()) };
    }
    const cfg = await this.store.getPushConfig(d.tenant, d.taskId, d.targetId);
    if (!cfg) return { dead: 'target_deleted' };
    const headers: Record<string, string> = {};
    if (cfg.authentication) headers.authorization = cfg.authentication.credentials ? `${cfg.authentication.scheme} ${cfg.authentication.credentials}` : cfg.authentication.scheme;
    if (cfg.token) {
      // The spec names no header: a2a-python sends the X- form, a2a-go the other; send both.
      headers['x-a2a-notification-token'] = cfg.token;
      headers['a2a-notification-token'] = cfg.token;
    }
    return { url: cfg.url, headers, secrets: null };
  }

  private classify(d: Delivery, result: SendResult): DeliveryOutcome {
    if (result.kind === 'refused') return { kind: 'dead', reason: 'ssrf_refused', status: null, error: result.error };
    if (result.kind === 'response') {
      if (result.status >= 200 && result.status < 300) return { kind: 'delivered', status: result.status };
      if (result.status === 410) return { kind: 'gone', status: 410, error: 'the receiver answered 410 Gone' };
      const ra = result.headers['retry-after'];
      const retryAfter = parseRetryAfter(Array.isArray(ra) ? ra[0] : ra, this.clock.now());
      const error = result.status >= 300 && result.status < 400 ? `redirect ${result.status} not followed` : `HTTP ${result.status}`;
      return this.retryOrDead(d, result.status, error, retryAfter);
    }
    return this.retryOrDead(d, null, result.error, null);
  }

  private retryOrDead(d: Delivery, status: number | null, error: string, retryAfterMs: number | null): DeliveryOutcome {
    const delay = nextAttemptDelay(this.retry, d.attempts, retryAfterMs, this.random);
    if (delay === null) return { kind: 'dead', reason: 'attempts_exhausted', status, error };
    return { kind: 'retry', nextAttemptAt: this.clock.now() + delay, status, error };
  }
}

function failureReason(r: SendResult): string {
  if (r.kind !== 'response') return r.kind;
  if (r.status === 410) return 'gone';
  if (r.status >= 300 && r.status < 400) return 'redirect';
  if (r.status === 429) return 'throttled';
  return r.status >= 500 ? 'server_error' : 'client_error';
}
