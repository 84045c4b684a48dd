/**
 * @module protocols/a2a/error-map
 * The A2A front's ONE error table: every code of the Belay catalogue (`core/errors.ts`) and every A2A-only error,
 * mapped to its JSON-RPC code, its `google.rpc.Status` code name, its HTTP status, and the `google.rpc.ErrorInfo`
 * reason clients key on. Both bindings render errors from this table only.
 *
 * Choices where the spec moved (reference a2a-1.0.md §2.5, §2.10): HTTP statuses follow the current spec (v1.0.1:
 * TaskNotCancelable 400, ContentTypeNotSupported 400, InvalidAgentResponse 500), and every error carries its
 * `ErrorInfo` reason. Belay errors with an A2A counterpart use the A2A reason and domain (`a2a-protocol.org`), so
 * any A2A client recognises them; the Belay code always travels in `ErrorInfo.metadata.belayCode`. Belay errors
 * without a counterpart (rate limits, authentication, outages) use the Belay code as reason in domain `belay.dev`.
 * JSON-RPC errors travel on HTTP 200, except those decided before a method runs at the HTTP level (authentication,
 * rate limit, body size and type), which keep their HTTP status so proxies and clients see them as such.
 */
import { BelayError, ERROR_CATALOGUE, coerceError, type BelayErrorCode } from '../../core/errors.js';
import { A2aError, type A2aOnlyCode, type FieldViolation } from './a2a-error.js';

export type RpcStatus =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'RESOURCE_EXHAUSTED'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'UNIMPLEMENTED'
  | 'INTERNAL'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED';

export interface A2aErrorRow {
  jsonRpc: number;
  status: RpcStatus;
  http: number;
  /** `ErrorInfo.reason`: an A2A reason (domain a2a-protocol.org) or a Belay code (domain belay.dev). */
  reason: string;
  /** Decided at the HTTP level, before a JSON-RPC method runs: the JSON-RPC reply keeps this HTTP status. */
  httpLevel?: boolean;
}

export const A2A_DOMAIN = 'a2a-protocol.org';
export const BELAY_DOMAIN = 'belay.dev';
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';

const TASK_NOT_FOUND: A2aErrorRow = { jsonRpc: -32001, status: 'NOT_FOUND', http: 404, reason: 'TASK_NOT_FOUND' };
const INVALID_PARAMS: A2aErrorRow = { jsonRpc: -32602, status: 'INVALID_ARGUMENT', http: 400, reason: 'INVALID_PARAMS' };
const UNSUPPORTED_OPERATION: A2aErrorRow = { jsonRpc: -32004, status: 'FAILED_PRECONDITION', http: 400, reason: 'UNSUPPORTED_OPERATION' };
const INTERNAL: A2aErrorRow = { jsonRpc: -32603, status: 'INTERNAL', http: 500, reason: 'INTERNAL' };
/** JSON-RPC's implementation-defined server error, for Belay errors A2A has no code for. */
const SERVER_ERROR = -32000;

/** The one table. Adding a catalogue code without a row here fails the type check. */
export const A2A_ERROR_TABLE: Record<BelayErrorCode | A2aOnlyCode, A2aErrorRow> = {
  // A2A's own errors (spec §5.4 / §9.5 / §11.6, current HTTP statuses).
  PARSE_ERROR: { jsonRpc: -32700, status: 'INVALID_ARGUMENT', http: 400, reason: 'PARSE_ERROR' },
  INVALID_REQUEST: { jsonRpc: -32600, status: 'INVALID_ARGUMENT', http: 400, reason: 'INVALID_REQUEST' },
  METHOD_NOT_FOUND: { jsonRpc: -32601, status: 'NOT_FOUND', http: 404, reason: 'METHOD_NOT_FOUND' },
  INVALID_PARAMS,
  TASK_NOT_CANCELABLE: { jsonRpc: -32002, status: 'FAILED_PRECONDITION', http: 400, reason: 'TASK_NOT_CANCELABLE' },
  PUSH_NOTIFICATION_NOT_SUPPORTED: { jsonRpc: -32003, status: 'FAILED_PRECONDITION', http: 400, reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED' },
  UNSUPPORTED_OPERATION,
  CONTENT_TYPE_NOT_SUPPORTED: { jsonRpc: -32005, status: 'INVALID_ARGUMENT', http: 400, reason: 'CONTENT_TYPE_NOT_SUPPORTED' },
  INVALID_AGENT_RESPONSE: { jsonRpc: -32006, status: 'INTERNAL', http: 500, reason: 'INVALID_AGENT_RESPONSE' },
  EXTENDED_AGENT_CARD_NOT_CONFIGURED: { jsonRpc: -32007, status: 'FAILED_PRECONDITION', http: 400, reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED' },
  EXTENSION_SUPPORT_REQUIRED: { jsonRpc: -32008, status: 'FAILED_PRECONDITION', http: 400, reason: 'EXTENSION_SUPPORT_REQUIRED' },
  VERSION_NOT_SUPPORTED: { jsonRpc: -32009, status: 'FAILED_PRECONDITION', http: 400, reason: 'VERSION_NOT_SUPPORTED' },

  // The Belay catalogue.
  NOT_FOUND: TASK_NOT_FOUND,
  // Retention removed the task: for A2A it is gone (§3.3.1 allows TaskNotFound once purged); belayCode says why.
  TASK_EXPIRED: TASK_NOT_FOUND,
  UNKNOWN_TASK_TYPE: INVALID_PARAMS,
  VALIDATION: INVALID_PARAMS,
  PAYLOAD_TOO_DEEP: INVALID_PARAMS,
  INVALID_JSON: INVALID_PARAMS,
  IDEMPOTENCY_MISMATCH: INVALID_PARAMS,
  IDEMPOTENCY_KEY_REQUIRED: INVALID_PARAMS,
  STALE_VERSION: { ...INVALID_PARAMS, status: 'ABORTED', http: 409 },
  PAYLOAD_TOO_LARGE: { jsonRpc: -32602, status: 'INVALID_ARGUMENT', http: 413, reason: 'INVALID_PARAMS', httpLevel: true },
  UNSUPPORTED_MEDIA_TYPE: { jsonRpc: -32600, status: 'INVALID_ARGUMENT', http: 415, reason: 'INVALID_REQUEST', httpLevel: true },
  // Continuing a task that is not waiting, or answering too late: the operation does not apply to its state.
  NOT_WAITING_FOR_INPUT: UNSUPPORTED_OPERATION,
  ALREADY_TERMINAL: UNSUPPORTED_OPERATION,
  INPUT_DEADLINE_PASSED: UNSUPPORTED_OPERATION,
  INPUT_DEADLINE_EXPIRED: UNSUPPORTED_OPERATION,
  RESULT_NOT_READY: UNSUPPORTED_OPERATION,
  CANCELLED: UNSUPPORTED_OPERATION,
  AUTHORIZATION_REVOKED: { jsonRpc: SERVER_ERROR, status: 'PERMISSION_DENIED', http: 403, reason: 'AUTHORIZATION_REVOKED' },
  IDEMPOTENCY_IN_FLIGHT: { jsonRpc: SERVER_ERROR, status: 'ABORTED', http: 409, reason: 'IDEMPOTENCY_IN_FLIGHT' },
  RATE_LIMITED: { jsonRpc: SERVER_ERROR, status: 'RESOURCE_EXHAUSTED', http: 429, reason: 'RATE_LIMITED', httpLevel: true },
  UNAUTHORIZED: { jsonRpc: SERVER_ERROR, status: 'UNAUTHENTICATED', http: 401, reason: 'UNAUTHENTICATED', httpLevel: true },
  FORBIDDEN: { jsonRpc: SERVER_ERROR, status: 'PERMISSION_DENIED', http: 403, reason: 'PERMISSION_DENIED', httpLevel: true },
  STORE_UNAVAILABLE: { jsonRpc: -32603, status: 'UNAVAILABLE', http: 503, reason: 'STORE_UNAVAILABLE' },
  TIMEOUT: { jsonRpc: -32603, status: 'DEADLINE_EXCEEDED', http: 504, reason: 'TIMEOUT' },
  // Worker-side codes never reach a caller through a front; if one does, it is an internal error.
  INVALID_TRANSITION: INTERNAL,
  LEASE_LOST: INTERNAL,
  CANCEL_REQUESTED: INTERNAL,
  STEP_FAILED: INTERNAL,
  ATTEMPTS_EXHAUSTED: INTERNAL,
  SCHEMA_TOO_NEW: INTERNAL,
  VERSION_NOT_REGISTERED: INTERNAL,
  INTERNAL,
};

const A2A_REASONS = new Set(['TASK_NOT_FOUND', 'TASK_NOT_CANCELABLE', 'PUSH_NOTIFICATION_NOT_SUPPORTED', 'UNSUPPORTED_OPERATION', 'CONTENT_TYPE_NOT_SUPPORTED', 'INVALID_AGENT_RESPONSE', 'EXTENDED_AGENT_CARD_NOT_CONFIGURED', 'EXTENSION_SUPPORT_REQUIRED', 'VERSION_NOT_SUPPORTED', 'INVALID_PARAMS', 'INVALID_REQUEST', 'METHOD_NOT_FOUND', 'PARSE_ERROR']);

export interface ErrorInfo {
  '@type': typeof ERROR_INFO;
  reason: string;
  domain: string;
  metadata: Record<string, string>;
}

export interface RenderedError {
  row: A2aErrorRow;
  message: string;
  /** `ErrorInfo` first, then `BadRequest` with field violations when there are any. */
  details: Array<ErrorInfo | { '@type': typeof BAD_REQUEST; fieldViolations: FieldViolation[] }>;
  retryAfterSeconds?: number;
}

/** Renders anything thrown into the table's terms; internal errors never leak their text. */
export function renderError(e: unknown): RenderedError {
  let code: BelayErrorCode | A2aOnlyCode;
  let message: string;
  let metadata: Record<string, string> = {};
  let violations: FieldViolation[] = [];
  let retryAfterMs: number | undefined;
  if (e instanceof A2aError) {
    code = e.code;
    message = e.message;
    metadata = { ...e.options.metadata };
    violations = e.options.fieldViolations ?? [];
  } else {
    const err = e instanceof BelayError ? e : new BelayError('INTERNAL', 'Internal error', { cause: coerceError(e) });
    code = err.code;
    const hidden = A2A_ERROR_TABLE[err.code].status === 'INTERNAL';
    message = hidden ? 'Internal error' : err.message;
    const entry = ERROR_CATALOGUE[err.code];
    metadata = { belayCode: err.code, owner: entry.owner, retryable: String(entry.retryable) };
    if (!hidden && err.details) {
      for (const [k, v] of Object.entries(err.details)) if (k !== 'issues' && v !== undefined) metadata[k] = typeof v === 'string' ? v : JSON.stringify(v);
      const issues = err.details.issues;
      if (Array.isArray(issues)) {
        violations = issues.map((i: { path?: unknown; message?: unknown }) => ({
          field: Array.isArray(i.path) ? i.path.map(String).join('.') : typeof i.path === 'string' ? i.path : '',
          description: typeof i.message === 'string' ? i.message : 'invalid',
        }));
      }
    }
    retryAfterMs = err.retryAfterMs;
  }
  const row = A2A_ERROR_TABLE[code];
  const details: RenderedError['details'] = [
    { '@type': ERROR_INFO, reason: row.reason, domain: A2A_REASONS.has(row.reason) ? A2A_DOMAIN : BELAY_DOMAIN, metadata },
  ];
  if (violations.length > 0) details.push({ '@type': BAD_REQUEST, fieldViolations: violations });
  return { row, message, details, ...(retryAfterMs !== undefined ? { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) } : {}) };
}

/** The JSON-RPC error object (`data` is the array of typed details, as A2A 1.0 §9.5 asks). */
export function jsonRpcError(r: RenderedError): { code: number; message: string; data: RenderedError['details'] } {
  return { code: r.row.jsonRpc, message: r.message, data: r.details };
}

/** The `google.rpc.Status` JSON body of the HTTP+JSON binding (§11.6). */
export function statusBody(r: RenderedError): { error: { code: number; status: RpcStatus; message: string; details: RenderedError['details'] } } {
  return { error: { code: r.row.http, status: r.row.status, message: r.message, details: r.details } };
}
