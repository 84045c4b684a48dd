/**
 * @module core/errors
 * The one error catalogue. Every failure Belay reports carries a stable string `code`, an `owner` (who has to act:
 * the caller, the worker retrying by itself, or an operator) and `retryable`. Fronts map codes to their own wire
 * formats; domain errors never know about HTTP.
 */

export type ErrorOwner = 'caller' | 'worker' | 'operator';

interface CatalogueEntry {
  readonly owner: ErrorOwner;
  readonly retryable: boolean;
  readonly title: string;
}

/** Stable error codes. Adding one is fine; renaming one is a breaking change for every client. */
export const ERROR_CATALOGUE = {
  NOT_FOUND: { owner: 'caller', retryable: false, title: 'Task not found' },
  UNKNOWN_TASK_TYPE: { owner: 'caller', retryable: false, title: 'Unknown task type' },
  VALIDATION: { owner: 'caller', retryable: false, title: 'Input does not match the schema' },
  PAYLOAD_TOO_LARGE: { owner: 'caller', retryable: false, title: 'Payload too large' },
  PAYLOAD_TOO_DEEP: { owner: 'caller', retryable: false, title: 'Payload nested too deeply' },
  INVALID_JSON: { owner: 'caller', retryable: false, title: 'Payload is not serialisable JSON' },
  IDEMPOTENCY_MISMATCH: { owner: 'caller', retryable: false, title: 'Idempotency key reused with a different request' },
  IDEMPOTENCY_IN_FLIGHT: { owner: 'caller', retryable: true, title: 'A request with this idempotency key is in flight' },
  STALE_VERSION: { owner: 'caller', retryable: false, title: 'The task has moved on since that version' },
  NOT_WAITING_FOR_INPUT: { owner: 'caller', retryable: false, title: 'The task is not waiting for input' },
  INPUT_DEADLINE_PASSED: { owner: 'caller', retryable: false, title: 'The question expired before it was answered' },
  INPUT_DEADLINE_EXPIRED: { owner: 'caller', retryable: false, title: 'Nobody answered the question before its deadline' },
  RESULT_NOT_READY: { owner: 'caller', retryable: true, title: 'The task has not finished' },
  ALREADY_TERMINAL: { owner: 'caller', retryable: false, title: 'The task has already finished' },
  INVALID_TRANSITION: { owner: 'operator', retryable: false, title: 'Transition not allowed by the state machine' },
  LEASE_LOST: { owner: 'worker', retryable: true, title: 'Lease lost to another worker' },
  CANCEL_REQUESTED: { owner: 'worker', retryable: false, title: 'Cancellation was requested' },
  CANCELLED: { owner: 'caller', retryable: false, title: 'The task was cancelled' },
  STEP_FAILED: { owner: 'worker', retryable: true, title: 'A step failed' },
  ATTEMPTS_EXHAUSTED: { owner: 'operator', retryable: false, title: 'The step failed too many times' },
  TIMEOUT: { owner: 'worker', retryable: true, title: 'Timed out' },
  IDEMPOTENCY_KEY_REQUIRED: { owner: 'caller', retryable: false, title: 'An Idempotency-Key header is required' },
  UNSUPPORTED_MEDIA_TYPE: { owner: 'caller', retryable: false, title: 'Unsupported media type' },
  RATE_LIMITED: { owner: 'caller', retryable: true, title: 'Too many requests' },
  TASK_EXPIRED: { owner: 'caller', retryable: false, title: 'The task expired under the retention policy' },
  AUTHORIZATION_REVOKED: { owner: 'caller', retryable: false, title: 'The requester no longer has the authority this task needs' },
  UNAUTHORIZED: { owner: 'caller', retryable: false, title: 'Not authenticated' },
  FORBIDDEN: { owner: 'caller', retryable: false, title: 'Not allowed' },
  STORE_UNAVAILABLE: { owner: 'worker', retryable: true, title: 'The store is unavailable' },
  SCHEMA_TOO_NEW: { owner: 'operator', retryable: false, title: 'The database schema is newer than this code' },
  VERSION_NOT_REGISTERED: { owner: 'operator', retryable: false, title: 'No worker has this task type version' },
  INTERNAL: { owner: 'operator', retryable: true, title: 'Internal error' },
} as const satisfies Record<string, CatalogueEntry>;

export type BelayErrorCode = keyof typeof ERROR_CATALOGUE;

export interface BelayErrorOptions {
  cause?: unknown;
  details?: Record<string, unknown>;
  /** When a retry may succeed, how long to wait first. */
  retryAfterMs?: number;
}

/** The error every Belay layer throws and every front maps. */
export class BelayError extends Error {
  override name = 'BelayError';
  readonly code: BelayErrorCode;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(code: BelayErrorCode, message?: string, options: BelayErrorOptions = {}) {
    super(message ?? ERROR_CATALOGUE[code].title, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    this.retryAfterMs = options.retryAfterMs;
  }

  get owner(): ErrorOwner {
    return ERROR_CATALOGUE[this.code].owner;
  }

  get retryable(): boolean {
    return ERROR_CATALOGUE[this.code].retryable;
  }
}

export function isBelayError(e: unknown, code?: BelayErrorCode): e is BelayError {
  return e instanceof BelayError && (code === undefined || e.code === code);
}

/** Turns anything thrown into an Error, so logs and records always have a message. */
export function coerceError(e: unknown): Error {
  if (e instanceof Error) return e;
  return new Error(typeof e === 'string' ? e : `Non-error thrown: ${safeString(e)}`);
}

function safeString(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

// ---- Errors a step author throws (restate's taxonomy) --------------------------------------------------------

/**
 * A failure that retrying cannot fix: the task ends `failed` at once with this code.
 * @example throw new TerminalError('grant_not_found', 'System 7 has no such grant');
 */
export class TerminalError extends Error {
  override name = 'TerminalError';
  constructor(
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/**
 * A failure worth retrying, optionally after a delay the downstream asked for (for example its `Retry-After`).
 * Any other thrown error is also retried under the task type's policy; this class only adds the delay and a code.
 */
export class RetryableError extends Error {
  override name = 'RetryableError';
  constructor(
    message: string,
    readonly options: { retryAfterMs?: number; code?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }

  static from(cause: unknown, options: { retryAfterMs?: number; code?: string } = {}): RetryableError {
    return new RetryableError(coerceError(cause).message, { ...options, cause });
  }
}

/** The error recorded on a failed or cancelled task (snake_case keys: it is stored and served as JSON). */
export interface TaskError {
  code: string;
  message: string;
  owner: ErrorOwner;
  retryable: boolean;
  details?: Record<string, unknown>;
}

export function taskErrorFrom(code: BelayErrorCode, message?: string, details?: Record<string, unknown>): TaskError {
  const entry = ERROR_CATALOGUE[code];
  return { code, message: message ?? entry.title, owner: entry.owner, retryable: entry.retryable, ...(details ? { details } : {}) };
}
