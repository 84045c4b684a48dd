/**
 * @module core/delivery
 * Webhook delivery records as the dispatcher, the service and the fronts see them (camelCase). The store keeps them
 * durably; `delivery/` sends them.
 *
 * A delivery is one event for one target. Its `eventId` is the Standard Webhooks `webhook-id`: derived from the task
 * and the event's sequence number, so every retry, redrive or redelivery after a crash carries the same id.
 */
import type { TaskEvent } from './task.js';

/** `callback`: the task's `callback_url`; `endpoint`: a tenant's registered endpoint; `push`: an A2A push config. */
export type DeliveryTargetKind = 'callback' | 'endpoint' | 'push';

/** `pending` (waiting for its next attempt, or in flight under a lease), `delivered` (a 2xx), `dead` (dead letter). */
export type DeliveryStatus = 'pending' | 'delivered' | 'dead';

/** A signing secret: `whsec_` + base64 of 24-64 random bytes. Several are live while a rotation overlaps. */
export interface WebhookSecret {
  secret: string;
  createdAt: number;
  /** When an old secret stops signing (null: the current one). */
  expiresAt: number | null;
}

/** A tenant's registered webhook endpoint (REST contract), with its own secrets. */
export interface WebhookEndpoint {
  id: string;
  tenant: string;
  url: string;
  description: string | null;
  /** The event types it receives (`task.completed`...); null for the default set. */
  eventTypes: string[] | null;
  secrets: WebhookSecret[];
  enabled: boolean;
  /** Why it was disabled (`gone`: the receiver answered 410; `manual`). */
  disabledReason: string | null;
  disabledAt: number | null;
  createdBy: string;
  createdAt: number;
  updatedAt: number;
}

export interface Delivery {
  id: string;
  /** The Standard Webhooks `webhook-id`: the same on every attempt and redrive. */
  eventId: string;
  tenant: string;
  taskId: string;
  seq: number;
  eventType: string;
  targetKind: DeliveryTargetKind;
  /** Endpoint id, push config id, or '' for a callback. */
  targetId: string;
  /** `callback:<task>`, `endpoint:<id>` or `push:<task>:<config>`: what 410 disables. */
  targetKey: string;
  /** Where it goes (for endpoints and push configs the current URL is re-read at send time). */
  url: string;
  /** The request body, fixed when the delivery was made: every attempt sends the same bytes. */
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  /** Next attempt (pending), or the lease's end while an attempt is in flight. */
  nextAttemptAt: number | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  fence: number;
  lastStatus: number | null;
  lastError: string | null;
  lastAttemptAt: number | null;
  deadReason: string | null;
  deadAt: number | null;
  createdAt: number;
  deliveredAt: number | null;
}

export type NewDelivery = Pick<Delivery, 'id' | 'eventId' | 'tenant' | 'taskId' | 'seq' | 'eventType' | 'targetKind' | 'targetId' | 'targetKey' | 'url' | 'payload' | 'deadReason'> & {
  /** Usually `pending`; `dead` when the target is disabled (kept so a redrive after re-enabling loses nothing). */
  status: 'pending' | 'dead';
  now: number;
};

/** What one attempt ended in; `finishDelivery` records it. */
export type DeliveryOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'retry'; nextAttemptAt: number; status: number | null; error: string }
  | { kind: 'dead'; reason: string; status: number | null; error: string }
  /** 410 Gone: the delivery is dead, its target disabled, and the target's other pending deliveries dead-lettered. */
  | { kind: 'gone'; status: number; error: string };

/** An event of the durable log with what routing needs from its task. */
export interface FeedEvent extends TaskEvent {
  tenant: string;
  contextId: string;
  taskType: string;
  callbackUrl: string | null;
  createdBy: string;
}

export function targetKey(kind: DeliveryTargetKind, taskId: string, targetId: string): string {
  if (kind === 'callback') return `callback:${taskId}`;
  if (kind === 'endpoint') return `endpoint:${targetId}`;
  return `push:${taskId}:${targetId}`;
}

/** The stable event id (`webhook-id`): no `.` (Standard Webhooks signs `id.timestamp.body`). */
export function webhookEventId(taskId: string, seq: number): string {
  return `evt_${taskId.replace(/^task_/, '')}_${seq}`;
}
