/**
 * @module client/errors
 * What the client throws. An HTTP error is a `BelayApiError` carrying every problem+json member; a transport
 * failure that outlived the retries is a `BelayNetworkError`; a `waitForTask` past its `timeoutMs` is a
 * `BelayTimeoutError`. An abort through the caller's `signal` rethrows the signal's reason unchanged.
 */
import type { ErrorOwner, ProblemDetails, TaskView } from './types.js';

export class BelayApiError extends Error {
  override readonly name = 'BelayApiError';
  /** HTTP status. */
  readonly status: number;
  /** Stable, lower-case error code (`not_found`, `stale_version`, ...); `http_<status>` when the body was no problem+json. */
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly owner: ErrorOwner;
  readonly retryable: boolean;
  /** Problem type URI (`tag:belay.dev,2026:problem:<code>`); key on it or on `code`, never dereference it. */
  readonly type: string;
  readonly instance: string | undefined;
  /** From a `Retry-After` header, when the server sent one. */
  readonly retryAfterMs: number | undefined;
  /** The whole problem body, extension members (`issues`, `state`, ...) included. */
  readonly problem: ProblemDetails;
  readonly method: string;
  readonly url: string;

  constructor(problem: ProblemDetails, context: { method: string; url: string; retryAfterMs?: number | undefined }) {
    super(`${context.method} ${context.url}: ${problem.status} ${problem.code}: ${problem.detail || problem.title}`);
    this.problem = problem;
    this.status = problem.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.owner = problem.owner;
    this.retryable = problem.retryable;
    this.type = problem.type;
    this.instance = problem.instance;
    this.retryAfterMs = context.retryAfterMs;
    this.method = context.method;
    this.url = context.url;
  }

  /** Builds the error from any error response: problem+json when the server sent it, a synthesized problem otherwise. */
  static async fromResponse(res: Response, method: string, url: string): Promise<BelayApiError> {
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
    let text = '';
    try {
      text = await res.text();
    } catch {
      // the body was cut; the status still says what happened
    }
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = null;
    }
    const problem = isProblem(body)
      ? { ...body, status: typeof body.status === 'number' ? body.status : res.status }
      : synthesizedProblem(res.status, res.statusText, text);
    return new BelayApiError(problem, { method, url, retryAfterMs });
  }
}

export class BelayNetworkError extends Error {
  override readonly name = 'BelayNetworkError';
  constructor(
    message: string,
    readonly attempts: number,
    options: { cause: unknown },
  ) {
    super(message, options);
  }
}

export class BelayTimeoutError extends Error {
  override readonly name = 'BelayTimeoutError';
  constructor(
    message: string,
    readonly timeoutMs: number,
    /** `waitForTask`: the last representation seen before the time ran out. */
    readonly lastTask: TaskView | null = null,
  ) {
    super(message);
  }
}

function isProblem(body: unknown): body is ProblemDetails {
  if (typeof body !== 'object' || body === null) return false;
  const b = body as Record<string, unknown>;
  return typeof b.code === 'string' && typeof b.title === 'string';
}

function synthesizedProblem(status: number, statusText: string, text: string): ProblemDetails {
  return {
    type: 'about:blank',
    title: statusText || `HTTP ${status}`,
    status,
    detail: text.slice(0, 500),
    code: `http_${status}`,
    owner: status >= 500 ? 'operator' : 'caller',
    retryable: status >= 500 || status === 429 || status === 408,
  };
}

/** `Retry-After` as delay-seconds or an HTTP date, in milliseconds; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
