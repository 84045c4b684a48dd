/**
 * @module protocols/mcp/mcp-errors
 * The MCP front's mapping of the one error catalogue (core/errors.ts) to JSON-RPC errors, in one table. Domain
 * errors never carry a JSON-RPC code; this table does. `data` carries the same stable members as REST's
 * problem+json (`code`, `owner`, `retryable`, details), so a client can key on them across fronts.
 *
 * A task of another tenant or principal is indistinguishable from a missing one: both are NOT_FOUND, which maps to
 * -32602 with one fixed message and no details. An expired task (retention tombstone, or an MCP ttl that elapsed)
 * is -32602 "Task has expired", the wording the MCP Tasks spec uses.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { BelayError, ERROR_CATALOGUE, coerceError, type BelayErrorCode } from '../../core/errors.js';

/** JSON-RPC 2.0 codes and the MCP-reserved ones this front emits. */
export const RPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** 2026-07-28: HTTP headers do not match the body, or a required one is missing. */
  HEADER_MISMATCH: -32020,
  /** 2026-07-28: the request needs a client capability it did not declare. */
  MISSING_REQUIRED_CLIENT_CAPABILITY: -32021,
  /** 2026-07-28: the requested protocol version is not served here. */
  UNSUPPORTED_PROTOCOL_VERSION: -32022,
} as const;

interface McpErrorEntry {
  /** JSON-RPC error code. */
  readonly rpc: number;
  /** HTTP status when the error ends the HTTP exchange itself (a body that cannot be read as JSON-RPC). */
  readonly http: number;
  /** Fixed message, where the spec words it or where details must not leak. */
  readonly message?: string;
}

const TASK_NOT_FOUND = 'Failed to retrieve task: Task not found';
const TASK_EXPIRED = 'Failed to retrieve task: Task has expired';

/** The one table: every catalogue code, its JSON-RPC code and its HTTP status. */
export const MCP_ERRORS: Record<BelayErrorCode, McpErrorEntry> = {
  NOT_FOUND: { rpc: RPC.INVALID_PARAMS, http: 404, message: TASK_NOT_FOUND },
  TASK_EXPIRED: { rpc: RPC.INVALID_PARAMS, http: 410, message: TASK_EXPIRED },
  UNKNOWN_TASK_TYPE: { rpc: RPC.INVALID_PARAMS, http: 400 },
  VALIDATION: { rpc: RPC.INVALID_PARAMS, http: 400 },
  PAYLOAD_TOO_LARGE: { rpc: RPC.INVALID_REQUEST, http: 413 },
  PAYLOAD_TOO_DEEP: { rpc: RPC.INVALID_REQUEST, http: 400 },
  INVALID_JSON: { rpc: RPC.PARSE_ERROR, http: 400 },
  UNSUPPORTED_MEDIA_TYPE: { rpc: RPC.INVALID_REQUEST, http: 415 },
  IDEMPOTENCY_MISMATCH: { rpc: RPC.INVALID_PARAMS, http: 400 },
  IDEMPOTENCY_IN_FLIGHT: { rpc: RPC.INTERNAL_ERROR, http: 409 },
  IDEMPOTENCY_KEY_REQUIRED: { rpc: RPC.INVALID_PARAMS, http: 400 },
  STALE_VERSION: { rpc: RPC.INVALID_PARAMS, http: 409 },
  NOT_WAITING_FOR_INPUT: { rpc: RPC.INVALID_PARAMS, http: 409 },
  INPUT_DEADLINE_PASSED: { rpc: RPC.INVALID_PARAMS, http: 410 },
  // A task's own failure is never a JSON-RPC error of the request that asks about it: it is the task's status and
  // result. These codes reach the wire only inside a task's error; the mapping keeps the table total.
  INPUT_DEADLINE_EXPIRED: { rpc: RPC.INTERNAL_ERROR, http: 500 },
  CANCELLED: { rpc: RPC.INTERNAL_ERROR, http: 500 },
  STEP_FAILED: { rpc: RPC.INTERNAL_ERROR, http: 500 },
  ATTEMPTS_EXHAUSTED: { rpc: RPC.INTERNAL_ERROR, http: 500 },
  TIMEOUT: { rpc: RPC.INTERNAL_ERROR, http: 504 },
  AUTHORIZATION_REVOKED: { rpc: RPC.INTERNAL_ERROR, http: 403 },
  // tasks/result blocks instead; kept for completeness.
  RESULT_NOT_READY: { rpc: RPC.INVALID_PARAMS, http: 409 },
  // tasks/cancel of a finished task: "-32602 Cannot cancel task in terminal status".
  ALREADY_TERMINAL: { rpc: RPC.INVALID_PARAMS, http: 409 },
  INVALID_TRANSITION: { rpc: RPC.INVALID_PARAMS, http: 409 },
  LEASE_LOST: { rpc: RPC.INTERNAL_ERROR, http: 500 },
  CANCEL_REQUESTED: { rpc: RPC.INTERNAL_ERROR, http: 500 },
  // Authentication and rate limiting end the HTTP exchange before JSON-RPC is read (the shared middleware answers
  // them as problem+json, exactly as on REST); the codes here are for completeness.
  UNAUTHORIZED: { rpc: RPC.INVALID_REQUEST, http: 401 },
  FORBIDDEN: { rpc: RPC.INVALID_REQUEST, http: 403 },
  RATE_LIMITED: { rpc: RPC.INTERNAL_ERROR, http: 429 },
  STORE_UNAVAILABLE: { rpc: RPC.INTERNAL_ERROR, http: 503 },
  SCHEMA_TOO_NEW: { rpc: RPC.INTERNAL_ERROR, http: 500 },
  VERSION_NOT_REGISTERED: { rpc: RPC.INTERNAL_ERROR, http: 500 },
  INTERNAL: { rpc: RPC.INTERNAL_ERROR, http: 500, message: 'Internal error' },
};

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

/** The JSON-RPC error object for anything thrown; MCP errors pass through, everything else goes through the table. */
export function rpcErrorFor(e: unknown): JsonRpcErrorObject {
  if (e instanceof RpcError) return { code: e.code, message: e.message, ...(e.data === undefined ? {} : { data: e.data }) };
  if (e instanceof McpError) return { code: e.code, message: e.message.replace(/^MCP error -?\d+: /, ''), ...(isRecord(e.data) ? { data: e.data } : {}) };
  const err = e instanceof BelayError ? e : new BelayError('INTERNAL', 'Internal error', { cause: coerceError(e) });
  const entry = MCP_ERRORS[err.code];
  const catalogue = ERROR_CATALOGUE[err.code];
  // NOT_FOUND and INTERNAL carry nothing but the stable members: no ids, no SQL, no hint that a task exists.
  const details = err.code === 'INTERNAL' || err.code === 'NOT_FOUND' ? {} : (err.details ?? {});
  return {
    code: entry.rpc,
    message: entry.message ?? err.message,
    data: { ...details, code: err.code.toLowerCase(), owner: catalogue.owner, retryable: catalogue.retryable },
  };
}

/**
 * What an SDK request handler throws to choose its JSON-RPC error. The SDK's Protocol sends `error.code`,
 * `error.message` and `error.data`; its own McpError prefixes the message with "MCP error <code>: ", so the wire
 * would say "MCP error -32602: Failed to retrieve task: …". This class keeps the message exactly as the spec words it.
 */
export class RpcError extends Error {
  override name = 'RpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Anything thrown, as an error the SDK sends with our code, message and data. */
export function toRpcError(e: unknown): RpcError {
  if (e instanceof RpcError) return e;
  const { code, message, data } = rpcErrorFor(e);
  return new RpcError(code, message, data);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The HTTP status for an error that ends the exchange before a JSON-RPC response can be sent. */
export function httpStatusFor(e: unknown): number {
  return e instanceof BelayError ? MCP_ERRORS[e.code].http : 500;
}

/** A JSON-RPC error response body (id null when the request could not be read). */
export function rpcErrorResponse(id: string | number | null, error: JsonRpcErrorObject, httpStatus: number, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id, error }), { status: httpStatus, headers: { 'content-type': 'application/json', ...headers } });
}
