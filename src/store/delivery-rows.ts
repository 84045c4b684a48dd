/**
 * @module store/delivery-rows
 * Rows of the delivery tables (identical column names in both dialects) to the domain types of `core/delivery`.
 */
import type { Delivery, DeliveryStatus, DeliveryTargetKind, WebhookEndpoint, WebhookSecret } from '../core/delivery.js';
import { json } from './row-mapping.js';

export interface DeliveryRow {
  id: string;
  event_id: string;
  tenant: string;
  task_id: string;
  seq: number;
  event_type: string;
  target_kind: string;
  target_id: string;
  target_key: string;
  url: string;
  payload: string;
  status: string;
  attempts: number;
  next_attempt_at: number | null;
  lease_owner: string | null;
  lease_until: number | null;
  fence: number;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: number | null;
  dead_reason: string | null;
  dead_at: number | null;
  created_at: number;
  delivered_at: number | null;
}

const num = (v: number | null): number | null => (v === null ? null : Number(v));

export function deliveryFromRow(r: DeliveryRow): Delivery {
  return {
    id: r.id,
    eventId: r.event_id,
    tenant: r.tenant,
    taskId: r.task_id,
    seq: Number(r.seq),
    eventType: r.event_type,
    targetKind: r.target_kind as DeliveryTargetKind,
    targetId: r.target_id,
    targetKey: r.target_key,
    url: r.url,
    payload: r.payload,
    status: r.status as DeliveryStatus,
    attempts: Number(r.attempts),
    nextAttemptAt: num(r.next_attempt_at),
    leaseOwner: r.lease_owner,
    leaseUntil: num(r.lease_until),
    fence: Number(r.fence),
    lastStatus: num(r.last_status),
    lastError: r.last_error,
    lastAttemptAt: num(r.last_attempt_at),
    deadReason: r.dead_reason,
    deadAt: num(r.dead_at),
    createdAt: Number(r.created_at),
    deliveredAt: num(r.delivered_at),
  };
}

export interface EndpointRow {
  id: string;
  tenant: string;
  url: string;
  description: string | null;
  event_types: unknown;
  secrets: unknown;
  enabled: number | boolean;
  disabled_reason: string | null;
  disabled_at: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export function endpointFromRow(r: EndpointRow): WebhookEndpoint {
  return {
    id: r.id,
    tenant: r.tenant,
    url: r.url,
    description: r.description,
    eventTypes: r.event_types === null || r.event_types === undefined ? null : json<string[]>(r.event_types),
    secrets: json<WebhookSecret[]>(r.secrets),
    enabled: r.enabled === true || Number(r.enabled) === 1,
    disabledReason: r.disabled_reason,
    disabledAt: num(r.disabled_at),
    createdBy: r.created_by,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** Outcome columns `finishDelivery` writes, shared by both adapters. */
export function outcomeColumns(outcome: import('../core/delivery.js').DeliveryOutcome, now: number) {
  switch (outcome.kind) {
    case 'delivered':
      return { status: 'delivered', next_attempt_at: null, last_status: outcome.status, last_error: null, dead_reason: null, dead_at: null, delivered_at: now };
    case 'retry':
      return { status: 'pending', next_attempt_at: outcome.nextAttemptAt, last_status: outcome.status, last_error: outcome.error, dead_reason: null, dead_at: null, delivered_at: null };
    case 'dead':
      return { status: 'dead', next_attempt_at: null, last_status: outcome.status, last_error: outcome.error, dead_reason: outcome.reason, dead_at: now, delivered_at: null };
    case 'gone':
      return { status: 'dead', next_attempt_at: null, last_status: outcome.status, last_error: outcome.error, dead_reason: 'gone', dead_at: now, delivered_at: null };
  }
}
