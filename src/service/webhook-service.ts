/**
 * @module service/webhook-service
 * Webhook administration, tenant-scoped and for tenant admins only: endpoints (register, list, update, enable,
 * delete), their signing secrets and rotation, the tenant's callback signing secret (it signs every `callback_url`
 * delivery of the tenant's tasks), the delivery log, dead letters and redrive. Fronts call this; none touches a store.
 *
 * Every URL is checked by the SSRF guard at registration (resolved addresses included); the dispatcher checks again
 * at every connect.
 */
import type { Clock } from '../core/clock.js';
import type { Delivery, DeliveryStatus, WebhookEndpoint, WebhookSecret } from '../core/delivery.js';
import { BelayError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { ensureCallbackSecrets } from '../delivery/dispatcher.js';
import { DEFAULT_EVENT_TYPES, EVENT_TYPES } from '../delivery/payloads.js';
import { generateSecret, liveSecrets, rotate, secretBytes } from '../delivery/signing.js';
import { UrlGuard } from '../delivery/ssrf-guard.js';
import type { Store } from '../store/port.js';
import type { Principal } from './task-service.js';

export interface WebhookServiceOptions {
  store: Store;
  clock: Clock;
  /** Registration-time SSRF check (default: no allowlist, system DNS). */
  guard?: UrlGuard;
  /** How long a rotated-out secret keeps signing next to the new one. Default 24 h. */
  rotationOverlapMs?: number;
}

export interface EndpointInput {
  url: string;
  description?: string | null;
  /** Event types to receive (see `EVENT_TYPES`); absent or null for the default set. */
  eventTypes?: string[] | null;
  /** Bring your own `whsec_` secret (24-64 bytes); generated when absent. */
  secret?: string;
}

export interface EndpointPatch {
  url?: string;
  description?: string | null;
  eventTypes?: string[] | null;
  enabled?: boolean;
}

export const MAX_ENDPOINTS_PER_TENANT = 50;
const MAX_PAGE = 100;
const ID = /^[A-Za-z0-9_.:-]{1,128}$/;

function requireAdmin(who: Principal): void {
  if (who.role === 'member') throw new BelayError('FORBIDDEN', 'Webhook administration needs a tenant admin');
}

function checkEventTypes(types: string[] | null | undefined): string[] | null {
  if (types === undefined || types === null) return null;
  if (!Array.isArray(types) || types.length === 0) throw new BelayError('VALIDATION', 'event_types is a non-empty list (or null for the default set)');
  for (const t of types) if (!EVENT_TYPES.includes(t)) throw new BelayError('VALIDATION', `Unknown event type "${t}"`, { details: { known: [...EVENT_TYPES] } });
  return [...new Set(types)];
}

function checkDescription(d: string | null | undefined): string | null {
  if (d === undefined || d === null) return null;
  if (typeof d !== 'string' || d.length > 500) throw new BelayError('VALIDATION', 'A description is at most 500 characters');
  return d;
}

export class WebhookService {
  readonly store: Store;
  readonly clock: Clock;
  readonly guard: UrlGuard;
  private readonly overlapMs: number;

  constructor(options: WebhookServiceOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.guard = options.guard ?? new UrlGuard();
    this.overlapMs = options.rotationOverlapMs ?? 24 * 3600_000;
  }

  /**
   * The registration check for any outbound URL (endpoints, task callbacks, push configs).
   * @throws BelayError VALIDATION (`details.reason = 'ssrf_refused'`)
   */
  async checkUrl(url: string): Promise<string> {
    if (typeof url !== 'string' || url.length === 0 || url.length > 2048) throw new BelayError('VALIDATION', 'A webhook URL is 1-2048 characters');
    return (await this.guard.checkUrl(url)).toString();
  }

  /** Registers an endpoint; the response is the only time the secret is shown besides `getEndpointSecrets`. */
  async createEndpoint(who: Principal, input: EndpointInput): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    requireAdmin(who);
    const url = await this.checkUrl(input.url);
    const eventTypes = checkEventTypes(input.eventTypes);
    const description = checkDescription(input.description);
    const secret = input.secret ?? generateSecret();
    secretBytes(secret);
    const existing = await this.store.listWebhookEndpoints(who.tenant, { limit: MAX_ENDPOINTS_PER_TENANT });
    if (existing.length >= MAX_ENDPOINTS_PER_TENANT) throw new BelayError('VALIDATION', `A tenant has at most ${MAX_ENDPOINTS_PER_TENANT} webhook endpoints`);
    const now = this.clock.now();
    const endpoint = await this.store.putWebhookEndpoint({
      id: newId('whe'),
      tenant: who.tenant,
      url,
      description,
      eventTypes,
      secrets: [{ secret, createdAt: now, expiresAt: null }],
      enabled: true,
      disabledReason: null,
      disabledAt: null,
      createdBy: who.principal,
      createdAt: now,
      updatedAt: now,
    });
    return { endpoint, secret };
  }

  /** @throws BelayError NOT_FOUND (also for another tenant's endpoint) */
  async getEndpoint(who: Principal, id: string): Promise<WebhookEndpoint> {
    requireAdmin(who);
    const ep = ID.test(id) ? await this.store.getWebhookEndpoint(who.tenant, id) : null;
    if (!ep) throw new BelayError('NOT_FOUND', 'No such webhook endpoint', { details: { endpoint_id: id } });
    return ep;
  }

  async listEndpoints(who: Principal, req: { cursor?: string; limit?: number } = {}): Promise<{ endpoints: WebhookEndpoint[]; nextCursor: string | null }> {
    requireAdmin(who);
    const limit = Math.min(Math.max(1, req.limit ?? MAX_PAGE), MAX_PAGE);
    const afterId = req.cursor ? Buffer.from(req.cursor, 'base64url').toString('utf8') : undefined;
    if (afterId !== undefined && !ID.test(afterId)) throw new BelayError('VALIDATION', 'Invalid cursor');
    const rows = await this.store.listWebhookEndpoints(who.tenant, { ...(afterId ? { afterId } : {}), limit: limit + 1 });
    const page = rows.slice(0, limit);
    return { endpoints: page, nextCursor: rows.length > limit ? Buffer.from(page.at(-1)!.id).toString('base64url') : null };
  }

  /** Changes the URL, description, event types, or enables/disables the endpoint (`enabled: true` after a 410). */
  async updateEndpoint(who: Principal, id: string, patch: EndpointPatch): Promise<WebhookEndpoint> {
    const ep = await this.getEndpoint(who, id);
    const now = this.clock.now();
    const next: WebhookEndpoint = { ...ep, updatedAt: now };
    if (patch.url !== undefined) next.url = await this.checkUrl(patch.url);
    if (patch.description !== undefined) next.description = checkDescription(patch.description);
    if (patch.eventTypes !== undefined) next.eventTypes = checkEventTypes(patch.eventTypes);
    if (patch.enabled !== undefined && patch.enabled !== ep.enabled) {
      next.enabled = patch.enabled;
      next.disabledReason = patch.enabled ? null : 'manual';
      next.disabledAt = patch.enabled ? null : now;
    }
    return this.store.putWebhookEndpoint(next);
  }

  /** Idempotent for the caller's own endpoints: deleting drops its pending deliveries too. */
  async deleteEndpoint(who: Principal, id: string): Promise<void> {
    requireAdmin(who);
    if (!ID.test(id) || !(await this.store.deleteWebhookEndpoint(who.tenant, id))) throw new BelayError('NOT_FOUND', 'No such webhook endpoint', { details: { endpoint_id: id } });
  }

  /** The secrets signing right now (two during a rotation's overlap), newest first. */
  async getEndpointSecrets(who: Principal, id: string): Promise<WebhookSecret[]> {
    const ep = await this.getEndpoint(who, id);
    return liveSecrets(ep.secrets, this.clock.now()).sort((a, b) => b.createdAt - a.createdAt);
  }

  /** A new secret signs from now on; the old one keeps signing beside it for the overlap (default 24 h). */
  async rotateEndpointSecret(who: Principal, id: string, req: { secret?: string; overlapMs?: number } = {}): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const ep = await this.getEndpoint(who, id);
    const now = this.clock.now();
    const secrets = rotate(ep.secrets, now, this.overlap(req.overlapMs), req.secret);
    const endpoint = await this.store.putWebhookEndpoint({ ...ep, secrets, updatedAt: now });
    return { endpoint, secret: secrets[0]!.secret };
  }

  /** The secrets that sign the tenant's task callbacks (made on first use). */
  async getCallbackSecrets(who: Principal): Promise<WebhookSecret[]> {
    requireAdmin(who);
    const now = this.clock.now();
    return liveSecrets(await ensureCallbackSecrets(this.store, who.tenant, now), now).sort((a, b) => b.createdAt - a.createdAt);
  }

  async rotateCallbackSecret(who: Principal, req: { secret?: string; overlapMs?: number } = {}): Promise<string> {
    requireAdmin(who);
    const now = this.clock.now();
    const current = await ensureCallbackSecrets(this.store, who.tenant, now);
    const secrets = rotate(current, now, this.overlap(req.overlapMs), req.secret);
    await this.store.putCallbackSecrets(who.tenant, secrets, now, false);
    return secrets[0]!.secret;
  }

  private overlap(ms: number | undefined): number {
    if (ms === undefined) return this.overlapMs;
    if (!Number.isInteger(ms) || ms < 0 || ms > 30 * 24 * 3600_000) throw new BelayError('VALIDATION', 'overlap_ms is 0 to 30 days');
    return ms;
  }

  async listDeliveries(
    who: Principal,
    req: { status?: DeliveryStatus; taskId?: string; endpointId?: string; cursor?: string; limit?: number } = {},
  ): Promise<{ deliveries: Delivery[]; nextCursor: string | null }> {
    requireAdmin(who);
    if (req.status !== undefined && !['pending', 'delivered', 'dead'].includes(req.status)) throw new BelayError('VALIDATION', 'status is pending, delivered or dead');
    const limit = Math.min(Math.max(1, req.limit ?? 50), MAX_PAGE);
    let after: { createdAt: number; id: string } | undefined;
    if (req.cursor) {
      try {
        const [createdAt, id] = JSON.parse(Buffer.from(req.cursor, 'base64url').toString('utf8')) as [number, string];
        if (typeof createdAt !== 'number' || typeof id !== 'string') throw new Error('bad');
        after = { createdAt, id };
      } catch {
        throw new BelayError('VALIDATION', 'Invalid cursor');
      }
    }
    const rows = await this.store.listDeliveries({
      tenant: who.tenant,
      ...(req.status ? { status: req.status } : {}),
      ...(req.taskId ? { taskId: req.taskId } : {}),
      ...(req.endpointId ? { endpointId: req.endpointId } : {}),
      ...(after ? { after } : {}),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return { deliveries: page, nextCursor: rows.length > limit && last ? Buffer.from(JSON.stringify([last.createdAt, last.id])).toString('base64url') : null };
  }

  async getDelivery(who: Principal, id: string): Promise<Delivery> {
    requireAdmin(who);
    const d = ID.test(id) ? await this.store.getDelivery(who.tenant, id) : null;
    if (!d) throw new BelayError('NOT_FOUND', 'No such delivery', { details: { delivery_id: id } });
    return d;
  }

  /**
   * Sends dead letters again (attempts reset, same event id): one by id, or every dead letter of an endpoint. A
   * redriven callback or push target that had answered 410 is live again; a disabled endpoint must be enabled first
   * (`updateEndpoint(..., { enabled: true })`), or its deliveries die again at once.
   * @throws BelayError NOT_FOUND | VALIDATION (the delivery is not dead)
   */
  async redrive(who: Principal, req: { deliveryId?: string; endpointId?: string }): Promise<number> {
    requireAdmin(who);
    if (req.deliveryId) {
      const d = await this.getDelivery(who, req.deliveryId);
      if (d.status !== 'dead') throw new BelayError('VALIDATION', `Only dead letters can be redriven; this delivery is ${d.status}`, { details: { status: d.status } });
      return this.store.redriveDeliveries(who.tenant, { ids: [d.id] }, this.clock.now());
    }
    if (req.endpointId) {
      await this.getEndpoint(who, req.endpointId);
      return this.store.redriveDeliveries(who.tenant, { endpointId: req.endpointId }, this.clock.now());
    }
    throw new BelayError('VALIDATION', 'Name a delivery or an endpoint to redrive');
  }
}

export { DEFAULT_EVENT_TYPES, EVENT_TYPES };
