/**
 * The A2A error table, checked as a table: every catalogue code has a row, the A2A errors have the codes, statuses
 * and reasons the spec gives, and rendering keeps internals out of the message while carrying the Belay code.
 */
import { describe, expect, it } from 'vitest';
import { BelayError, ERROR_CATALOGUE } from '../../src/core/errors.js';
import { A2A_ONLY_ERRORS, A2aError } from '../../src/protocols/a2a/a2a-error.js';
import { A2A_ERROR_TABLE, jsonRpcError, renderError, statusBody } from '../../src/protocols/a2a/error-map.js';

describe('A2A error table', () => {
  it('has a row for every code of the one catalogue and every A2A-only error', () => {
    for (const code of [...Object.keys(ERROR_CATALOGUE), ...A2A_ONLY_ERRORS]) expect(A2A_ERROR_TABLE, code).toHaveProperty(code);
  });

  // [code, JSON-RPC, google.rpc status, HTTP, ErrorInfo reason] — A2A 1.0 §5.4/§9.5/§11.6 with v1.0.1 HTTP statuses.
  const rows: Array<[string, number, string, number, string]> = [
    ['PARSE_ERROR', -32700, 'INVALID_ARGUMENT', 400, 'PARSE_ERROR'],
    ['INVALID_REQUEST', -32600, 'INVALID_ARGUMENT', 400, 'INVALID_REQUEST'],
    ['METHOD_NOT_FOUND', -32601, 'NOT_FOUND', 404, 'METHOD_NOT_FOUND'],
    ['INVALID_PARAMS', -32602, 'INVALID_ARGUMENT', 400, 'INVALID_PARAMS'],
    ['TASK_NOT_CANCELABLE', -32002, 'FAILED_PRECONDITION', 400, 'TASK_NOT_CANCELABLE'],
    ['PUSH_NOTIFICATION_NOT_SUPPORTED', -32003, 'FAILED_PRECONDITION', 400, 'PUSH_NOTIFICATION_NOT_SUPPORTED'],
    ['UNSUPPORTED_OPERATION', -32004, 'FAILED_PRECONDITION', 400, 'UNSUPPORTED_OPERATION'],
    ['CONTENT_TYPE_NOT_SUPPORTED', -32005, 'INVALID_ARGUMENT', 400, 'CONTENT_TYPE_NOT_SUPPORTED'],
    ['INVALID_AGENT_RESPONSE', -32006, 'INTERNAL', 500, 'INVALID_AGENT_RESPONSE'],
    ['EXTENDED_AGENT_CARD_NOT_CONFIGURED', -32007, 'FAILED_PRECONDITION', 400, 'EXTENDED_AGENT_CARD_NOT_CONFIGURED'],
    ['EXTENSION_SUPPORT_REQUIRED', -32008, 'FAILED_PRECONDITION', 400, 'EXTENSION_SUPPORT_REQUIRED'],
    ['VERSION_NOT_SUPPORTED', -32009, 'FAILED_PRECONDITION', 400, 'VERSION_NOT_SUPPORTED'],
    ['NOT_FOUND', -32001, 'NOT_FOUND', 404, 'TASK_NOT_FOUND'],
    ['TASK_EXPIRED', -32001, 'NOT_FOUND', 404, 'TASK_NOT_FOUND'],
    ['VALIDATION', -32602, 'INVALID_ARGUMENT', 400, 'INVALID_PARAMS'],
    ['UNKNOWN_TASK_TYPE', -32602, 'INVALID_ARGUMENT', 400, 'INVALID_PARAMS'],
    ['IDEMPOTENCY_MISMATCH', -32602, 'INVALID_ARGUMENT', 400, 'INVALID_PARAMS'],
    ['STALE_VERSION', -32602, 'ABORTED', 409, 'INVALID_PARAMS'],
    ['PAYLOAD_TOO_LARGE', -32602, 'INVALID_ARGUMENT', 413, 'INVALID_PARAMS'],
    ['UNSUPPORTED_MEDIA_TYPE', -32600, 'INVALID_ARGUMENT', 415, 'INVALID_REQUEST'],
    ['NOT_WAITING_FOR_INPUT', -32004, 'FAILED_PRECONDITION', 400, 'UNSUPPORTED_OPERATION'],
    ['INPUT_DEADLINE_PASSED', -32004, 'FAILED_PRECONDITION', 400, 'UNSUPPORTED_OPERATION'],
    ['RATE_LIMITED', -32000, 'RESOURCE_EXHAUSTED', 429, 'RATE_LIMITED'],
    ['UNAUTHORIZED', -32000, 'UNAUTHENTICATED', 401, 'UNAUTHENTICATED'],
    ['FORBIDDEN', -32000, 'PERMISSION_DENIED', 403, 'PERMISSION_DENIED'],
    ['STORE_UNAVAILABLE', -32603, 'UNAVAILABLE', 503, 'STORE_UNAVAILABLE'],
    ['INTERNAL', -32603, 'INTERNAL', 500, 'INTERNAL'],
    ['LEASE_LOST', -32603, 'INTERNAL', 500, 'INTERNAL'],
  ];
  it.each(rows)('%s → %i / %s / HTTP %i / reason %s', (code, rpc, status, http, reason) => {
    const row = A2A_ERROR_TABLE[code as keyof typeof A2A_ERROR_TABLE];
    expect({ rpc: row.jsonRpc, status: row.status, http: row.http, reason: row.reason }).toEqual({ rpc, status, http, reason });
  });

  it('renders a JSON-RPC error and a google.rpc.Status with ErrorInfo (and BadRequest for field violations)', () => {
    const r = renderError(new BelayError('VALIDATION', 'Input does not match', { details: { issues: [{ path: ['systems'], message: 'too big' }] } }));
    expect(jsonRpcError(r)).toEqual({
      code: -32602,
      message: 'Input does not match',
      data: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INVALID_PARAMS', domain: 'a2a-protocol.org', metadata: { belayCode: 'VALIDATION', owner: 'caller', retryable: 'false' } },
        { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'systems', description: 'too big' }] },
      ],
    });
    expect(statusBody(renderError(new A2aError('TASK_NOT_CANCELABLE', 'done')))).toEqual({
      error: { code: 400, status: 'FAILED_PRECONDITION', message: 'done', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org', metadata: {} }] },
    });
  });

  it('never leaks an internal error\'s text, and gives Belay-only errors the belay.dev domain and Retry-After', () => {
    const internal = renderError(new Error('SELECT * FROM secret'));
    expect(internal.message).toBe('Internal error');
    expect(internal.details[0]).toMatchObject({ reason: 'INTERNAL', domain: 'belay.dev', metadata: { belayCode: 'INTERNAL' } });
    const limited = renderError(new BelayError('RATE_LIMITED', 'slow down', { retryAfterMs: 1500 }));
    expect(limited.retryAfterSeconds).toBe(2);
    expect(limited.details[0]).toMatchObject({ reason: 'RATE_LIMITED', domain: 'belay.dev', metadata: { retryable: 'true' } });
  });
});
