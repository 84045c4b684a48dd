/**
 * @module delivery/signing
 * Standard Webhooks 1.0 signatures (reference §2): `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`
 * with the secret's bytes as the key; one signature per live secret, space-separated, so a receiver keeps verifying
 * while a rotation overlaps. Secrets are `whsec_` + base64 of 24-64 random bytes, unique per endpoint.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { BelayError } from '../core/errors.js';
import type { WebhookSecret } from '../core/delivery.js';

export const SECRET_PREFIX = 'whsec_';
export const MIN_SECRET_BYTES = 24;
export const MAX_SECRET_BYTES = 64;

/** A new random secret (32 bytes). */
export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The key bytes of a `whsec_` secret. @throws BelayError VALIDATION when it is not one, or is shorter than 24 bytes */
export function secretBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new BelayError('VALIDATION', `A webhook secret starts with "${SECRET_PREFIX}"`);
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new BelayError('VALIDATION', 'A webhook secret is whsec_ followed by base64');
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.length < MIN_SECRET_BYTES || bytes.length > MAX_SECRET_BYTES) {
    throw new BelayError('VALIDATION', `A webhook secret holds ${MIN_SECRET_BYTES}-${MAX_SECRET_BYTES} bytes (${bytes.length} given)`);
  }
  return bytes;
}

/** One `v1,<base64>` signature. */
export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secretBytes(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The secrets that still sign at `now`: the current one and any rotated-out one whose overlap has not ended. */
export function liveSecrets(secrets: readonly WebhookSecret[], now: number): WebhookSecret[] {
  return secrets.filter((s) => s.expiresAt === null || s.expiresAt > now);
}

/** The `webhook-signature` header value: one signature per live secret, newest first. */
export function signatureHeader(secrets: readonly WebhookSecret[], now: number, id: string, timestampSeconds: number, body: string): string {
  const live = liveSecrets(secrets, now).sort((a, b) => b.createdAt - a.createdAt);
  return live.map((s) => sign(s.secret, id, timestampSeconds, body)).join(' ');
}

/**
 * Rotation: `next` (or a generated secret) becomes current; the current one keeps signing for `overlapMs` (both
 * signatures are sent), older ones are dropped.
 */
export function rotate(secrets: readonly WebhookSecret[], now: number, overlapMs: number, next?: string): WebhookSecret[] {
  const fresh = next ?? generateSecret();
  secretBytes(fresh);
  const kept = liveSecrets(secrets, now).map((s) => ({ ...s, expiresAt: s.expiresAt === null ? now + overlapMs : Math.min(s.expiresAt, now + overlapMs) }));
  return [{ secret: fresh, createdAt: now, expiresAt: null }, ...kept.filter((s) => s.expiresAt > now)];
}
