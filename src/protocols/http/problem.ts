/**
 * @module protocols/http/problem
 * The REST front's mapping of the one error catalogue to HTTP: RFC 9457 `application/problem+json` with the stable
 * `code`, `owner` and `retryable` members. Domain errors never carry an HTTP status; this table does.
 */
import { BelayError, ERROR_CATALOGUE, coerceError, type BelayErrorCode } from '../../core/errors.js';

export const HTTP_STATUS: Record<BelayErrorCode, number> = {
  NOT_FOUND: 404,
  UNKNOWN_TASK_TYPE: 422,
  VALIDATION: 422,
  PAYLOAD_TOO_LARGE: 413,
  PAYLOAD_TOO_DEEP: 400,
  INVALID_JSON: 400,
  IDEMPOTENCY_MISMATCH: 422,
  IDEMPOTENCY_IN_FLIGHT: 409,
  IDEMPOTENCY_KEY_REQUIRED: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  TASK_EXPIRED: 410,
  STALE_VERSION: 409,
  NOT_WAITING_FOR_INPUT: 409,
  INPUT_DEADLINE_PASSED: 410,
  INPUT_DEADLINE_EXPIRED: 410,
  RESULT_NOT_READY: 409,
  ALREADY_TERMINAL: 409,
  INVALID_TRANSITION: 409,
  LEASE_LOST: 409,
  CANCEL_REQUESTED: 409,
  CANCELLED: 409,
  STEP_FAILED: 500,
  ATTEMPTS_EXHAUSTED: 500,
  TIMEOUT: 504,
  AUTHORIZATION_REVOKED: 403,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  STORE_UNAVAILABLE: 503,
  SCHEMA_TOO_NEW: 500,
  VERSION_NOT_REGISTERED: 500,
  INTERNAL: 500,
};

/** Problem type URIs are `tag:` URIs Belay controls; clients key on them (or on `code`), never dereference them. */
export function problemType(code: string): string {
  return `tag:belay.dev,2026:problem:${code.toLowerCase()}`;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  owner: string;
  retryable: boolean;
  [extension: string]: unknown;
}

export function problemFor(e: unknown): { status: number; body: Problem; retryAfterSeconds?: number } {
  const err = e instanceof BelayError ? e : new BelayError('INTERNAL', 'Internal error', { cause: coerceError(e) });
  const status = HTTP_STATUS[err.code];
  const entry = ERROR_CATALOGUE[err.code];
  const body: Problem = {
    // Extension members first, so they can never overwrite the standard ones.
    ...(err.details && err.code !== 'INTERNAL' ? err.details : {}),
    type: problemType(err.code),
    title: entry.title,
    status,
    // INTERNAL never leaks what went wrong inside (no SQL, no stack, no foreign ids).
    detail: err.code === 'INTERNAL' ? 'Internal error' : err.message,
    code: err.code.toLowerCase(),
    owner: entry.owner,
    retryable: entry.retryable,
  };
  return { status, body, ...(err.retryAfterMs !== undefined ? { retryAfterSeconds: Math.max(1, Math.ceil(err.retryAfterMs / 1000)) } : {}) };
}

export function problemResponse(e: unknown, instance?: string): Response {
  const { status, body, retryAfterSeconds } = problemFor(e);
  const headers = new Headers({ 'content-type': 'application/problem+json' });
  if (retryAfterSeconds !== undefined) headers.set('retry-after', String(retryAfterSeconds));
  return new Response(JSON.stringify(instance ? { ...body, instance } : body), { status, headers });
}
