/**
 * @module client/client
 * `BelayClient`: the REST async task contract from the caller's side, on web-standard fetch only.
 *
 * Retries: idempotent reads, `createTask` (always sent with an Idempotency-Key that every retry of the call reuses)
 * and `cancel` (idempotent on the server) are retried on network errors, per-attempt timeouts, 5xx, 408, 429 and
 * 409 `idempotency_in_flight`, with exponential backoff, jitter and `Retry-After` as a floor. `answer` is retried
 * only on 429: a duplicate of an answer that did land is refused as stale, so an ambiguous failure is reported
 * rather than turned into a misleading 409 (re-read the task to see whether the answer arrived).
 */
import { BelayApiError, BelayNetworkError, BelayTimeoutError, parseRetryAfter } from './errors.js';
import { abortReason, anySignal, backoffDelay, jitter, resolveRetryPolicy, sleep, type ResolvedRetryPolicy, type RetryPolicy } from './retry.js';
import { readSse, type SseMessage } from './sse.js';
import {
  TERMINAL_EVENT_KINDS,
  isTerminalStatus,
  type CancellationView,
  type EffectView,
  type EventPage,
  type Json,
  type ResultView,
  type TaskEventView,
  type TaskListPage,
  type TaskState,
  type TaskStatus,
  type TaskTypeView,
  type TaskView,
} from './types.js';

const BASE = '/v1/agent-tasks';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface BelayClientOptions {
  /** Where the server is, e.g. `http://127.0.0.1:8080` (a path prefix is kept: `https://host/belay`). */
  baseUrl: string | URL;
  /** Bearer credential (API key or JWT); a function is called before every request, so a token may rotate. */
  apiKey?: string | (() => string | Promise<string>);
  /** A fetch implementation (default: the global `fetch`). */
  fetch?: FetchLike;
  retry?: RetryPolicy;
  /** Timeout of one attempt of an ordinary request, body included (default 30 s); streams have none. */
  requestTimeoutMs?: number;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface CreateTaskRequest extends CallOptions {
  type: string;
  input?: Record<string, unknown>;
  callbackUrl?: string;
  contextId?: string;
  /** 1-255 printable ASCII characters; generated (a UUID) when absent. Reused by every retry of this call. */
  idempotencyKey?: string;
}

export interface CreatedTask {
  task: TaskView;
  /** True when the server answered from an earlier request with the same key (`Idempotency-Replayed: true`). */
  replayed: boolean;
  /** The key sent; keep it to retry the create later yourself. */
  idempotencyKey: string;
  location: string | null;
}

export interface TaskSnapshot {
  notModified: false;
  task: TaskView;
  /** Send back as `etag` to get a cheap 304 while nothing changed. */
  etag: string | null;
  /** The server's recommended poll interval; null once the task is terminal. */
  pollIntervalMs: number | null;
}

export interface TaskNotModified {
  notModified: true;
  task: null;
  etag: string | null;
  pollIntervalMs: number | null;
}

export interface GetTaskOptions extends CallOptions {
  /** `operator` adds lease details (admin principals only). */
  view?: 'operator';
}

export type StatusFilter = TaskStatus | TaskState;

export interface ListTasksFilter extends CallOptions {
  status?: StatusFilter | StatusFilter[];
  type?: string;
  createdAfter?: Date | string | number;
  createdBefore?: Date | string | number;
  /** 1-100 (server default 20). */
  limit?: number;
  cursor?: string;
}

export interface ListEventsOptions extends CallOptions {
  after?: number;
  /** 1-1000 (server default 100). */
  limit?: number;
}

export interface StreamEventsOptions extends CallOptions {
  /** Start after this sequence number (default 0: the whole log). */
  after?: number;
  /** Base reconnect delay; default: the server's `retry:` hint, else 1 s. Consecutive failures back off from it. */
  reconnectDelayMs?: number;
  /** Consecutive failed connections (no event and no heartbeat) before giving up (default 10). */
  maxReconnectAttempts?: number;
  /** Called before each reconnect with the `Last-Event-ID` about to be sent and the reason. */
  onReconnect?: (info: { lastEventId: number; attempt: number; cause: unknown }) => void;
}

export interface WaitForTaskOptions extends CallOptions {
  /** `poll` (default): GET with ETag, honouring the poll hint; `stream`: follow the SSE event stream. */
  mode?: 'poll' | 'stream';
  /** `terminal` (default) or `input_required`: also resolve when the task waits for input. */
  until?: 'terminal' | 'input_required';
  /** Reject with `BelayTimeoutError` after this long. */
  timeoutMs?: number;
  /** Cap on the server's poll hint (it asks for up to 30 s while a task waits for a person). */
  maxPollIntervalMs?: number;
  /** Poll mode: called with every new representation (not for 304s). */
  onUpdate?: (task: TaskView) => void;
  /** Stream mode: see `streamEvents`. */
  reconnectDelayMs?: number;
}

export interface AnswerRequest extends CallOptions {
  /** The `input_request.version` the answer is for. */
  version: number;
  answer: Json;
  /** The question's key, when answering a specific (possibly not yet asked) question. */
  key?: string;
}

/** The server sent an event stream this client cannot read (not an HTTP error, not a cut connection). */
export class BelayProtocolError extends Error {
  override readonly name = 'BelayProtocolError';
}

interface RequestSpec extends CallOptions {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Retry ambiguous failures (network, timeout, 5xx, 408, in-flight 409)? 429 is always retried. */
  retry: boolean;
}

interface Reply<T> {
  status: number;
  headers: Headers;
  body: T;
}

type Attempt<T> = { kind: 'ok'; reply: Reply<T> } | { kind: 'api'; error: BelayApiError } | { kind: 'network'; error: unknown };

export class BelayClient {
  private readonly baseUrl: string;
  private readonly fetchImpl: FetchLike;
  private readonly retryPolicy: ResolvedRetryPolicy;
  private readonly requestTimeoutMs: number;

  constructor(private readonly options: BelayClientOptions) {
    this.baseUrl = String(options.baseUrl).replace(/\/+$/, '');
    if (!/^https?:\/\//.test(this.baseUrl)) throw new TypeError(`baseUrl must be an http(s) URL, got "${this.baseUrl}"`);
    const f: FetchLike | undefined = options.fetch ?? globalThis.fetch;
    if (!f) throw new TypeError('No fetch implementation: pass options.fetch');
    // The global fetch must be called with globalThis as `this` in browsers.
    this.fetchImpl = options.fetch ? options.fetch : (input, init) => f.call(globalThis, input, init);
    this.retryPolicy = resolveRetryPolicy(options.retry);
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  /** `POST /v1/agent-tasks`. Retries reuse the idempotency key, so a lost response never starts a second task. */
  async createTask(req: CreateTaskRequest): Promise<CreatedTask> {
    const key = req.idempotencyKey ?? newIdempotencyKey();
    if (key.length === 0 || key.length > 255 || !/^[\x20-\x7e]+$/.test(key)) throw new TypeError('idempotencyKey must be 1-255 printable ASCII characters');
    const reply = await this.request<TaskView>({
      method: 'POST',
      path: BASE,
      body: {
        type: req.type,
        input: req.input ?? {},
        ...(req.callbackUrl !== undefined ? { callback_url: req.callbackUrl } : {}),
        ...(req.contextId !== undefined ? { context_id: req.contextId } : {}),
      },
      // An RFC 8941 sf-string, as the IETF Idempotency-Key draft specifies.
      headers: { 'idempotency-key': `"${key.replace(/[\\"]/g, '\\$&')}"` },
      retry: true,
      signal: req.signal,
    });
    return { task: reply.body, replayed: reply.headers.get('idempotency-replayed') === 'true', idempotencyKey: key, location: reply.headers.get('location') };
  }

  /** `GET /v1/agent-tasks/{id}`. */
  getTask(id: string, options?: GetTaskOptions): Promise<TaskSnapshot>;
  /** With an `etag`, answers `notModified: true` (a 304, no body) while the task is unchanged. */
  getTask(id: string, options: GetTaskOptions & { etag: string | undefined }): Promise<TaskSnapshot | TaskNotModified>;
  async getTask(id: string, options: GetTaskOptions & { etag?: string | undefined } = {}): Promise<TaskSnapshot | TaskNotModified> {
    const reply = await this.request<TaskView | null>({
      method: 'GET',
      path: `${BASE}/${encodeURIComponent(id)}`,
      query: { view: options.view },
      headers: options.etag ? { 'if-none-match': options.etag } : {},
      retry: true,
      signal: options.signal,
    });
    const etag = reply.headers.get('etag');
    const hinted = parseRetryAfter(reply.headers.get('retry-after'));
    if (reply.status === 304 || reply.body === null) return { notModified: true, task: null, etag: etag ?? options.etag ?? null, pollIntervalMs: hinted ?? null };
    return { notModified: false, task: reply.body, etag, pollIntervalMs: reply.body.poll_interval_ms ?? hinted ?? null };
  }

  /** `GET /v1/agent-tasks`: one page of the caller's tasks, newest first. */
  async listTasks(filter: ListTasksFilter = {}): Promise<TaskListPage> {
    const status = filter.status === undefined ? undefined : [filter.status].flat().join(',');
    const reply = await this.request<TaskListPage>({
      method: 'GET',
      path: BASE,
      query: {
        status,
        type: filter.type,
        created_after: isoTime(filter.createdAfter),
        created_before: isoTime(filter.createdBefore),
        limit: filter.limit === undefined ? undefined : String(filter.limit),
        cursor: filter.cursor,
      },
      retry: true,
      signal: filter.signal,
    });
    return reply.body;
  }

  /** Every task matching the filter, page after page. */
  async *iterateTasks(filter: Omit<ListTasksFilter, 'cursor'> = {}): AsyncGenerator<TaskView, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.listTasks({ ...filter, ...(cursor ? { cursor } : {}) });
      yield* page.tasks;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** `GET /v1/agent-tasks/{id}/events?after=`: one JSON page of the event log (for clients that cannot hold a stream). */
  async listEvents(id: string, options: ListEventsOptions = {}): Promise<EventPage> {
    const reply = await this.request<EventPage>({
      method: 'GET',
      path: `${BASE}/${encodeURIComponent(id)}/events`,
      query: { after: options.after === undefined ? undefined : String(options.after), limit: options.limit === undefined ? undefined : String(options.limit) },
      retry: true,
      signal: options.signal,
    });
    return reply.body;
  }

  /** The whole event log after `after`, through the JSON pages. */
  async *iterateEvents(id: string, options: ListEventsOptions = {}): AsyncGenerator<TaskEventView, void, undefined> {
    let after = options.after ?? 0;
    for (;;) {
      const page = await this.listEvents(id, { ...options, after });
      yield* page.events;
      if (!page.has_more || page.next_after <= after) return;
      after = page.next_after;
    }
  }

  /**
   * The task's events over Server-Sent Events, each exactly once and in order: after a cut connection the client
   * reconnects with `Last-Event-ID` set to the last sequence number it delivered and drops anything at or below it.
   * Ends after a terminal event (completed, failed, canceled), or when the task is already over and nothing is left.
   */
  async *streamEvents(id: string, options: StreamEventsOptions = {}): AsyncGenerator<TaskEventView, void, undefined> {
    const { signal } = options;
    const url = this.url(`${BASE}/${encodeURIComponent(id)}/events`);
    const maxFailures = options.maxReconnectAttempts ?? 10;
    let last = options.after ?? 0;
    let failures = 0;
    let serverRetryMs: number | undefined;
    for (let connection = 1; ; connection++) {
      if (signal?.aborted) throw abortReason(signal);
      let cause: unknown = null;
      let retryAfterMs: number | undefined;
      let delivered = 0;
      let alive = false;
      let res: Response | null = null;
      try {
        res = await this.fetchImpl(url, {
          method: 'GET',
          headers: await this.headers({ accept: 'text/event-stream', ...(last > 0 ? { 'last-event-id': String(last) } : {}) }),
          ...(signal ? { signal } : {}),
        });
      } catch (e) {
        if (signal?.aborted) throw abortReason(signal);
        cause = e;
      }
      if (res && !res.ok) {
        const error = await BelayApiError.fromResponse(res, 'GET', url);
        if (!isRetryable(error, true)) throw error;
        cause = error;
        retryAfterMs = error.retryAfterMs;
      } else if (res) {
        const type = res.headers.get('content-type') ?? '';
        if (!res.body || !type.toLowerCase().startsWith('text/event-stream')) {
          await res.body?.cancel().catch(() => undefined);
          throw new BelayProtocolError(`GET ${url}: expected text/event-stream, got ${res.status} "${type}"`);
        }
        const messages = readSse(res.body, {
          onRetry: (ms) => (serverRetryMs = ms),
          onComment: () => (alive = true),
        });
        try {
          for (;;) {
            // Only reading can fail as a cut connection; the consumer's side of `yield` is not caught here.
            let next: IteratorResult<SseMessage, void>;
            try {
              next = await messages.next();
            } catch (e) {
              if (signal?.aborted) throw abortReason(signal);
              cause = e; // the connection was cut
              break;
            }
            if (next.done) break;
            alive = true;
            const message = next.value;
            const event = parseEvent(message.data, url);
            const seq = message.hasId ? Number(message.id) : event.seq;
            if (!Number.isSafeInteger(seq)) throw new BelayProtocolError(`GET ${url}: event id "${message.id}" is not a sequence number`);
            if (seq <= last) continue; // already delivered before a reconnect
            last = seq;
            delivered++;
            yield event;
            if (TERMINAL_EVENT_KINDS.includes(event.kind)) return;
          }
        } finally {
          // Closes the connection when the consumer stops early or the stream ends here.
          await messages.return();
        }
        if (cause === null && delivered === 0) {
          // A clean end with nothing new: the server closes the stream of a finished task once everything is sent.
          // Something in between may also have closed it early, so stop only if the log has nothing after `last`.
          const { task } = await this.getTask(id, { ...(signal ? { signal } : {}) });
          if (isTerminalStatus(task.state)) {
            const rest = await this.listEvents(id, { after: last, limit: 1, ...(signal ? { signal } : {}) });
            if (rest.events.length === 0) return;
          }
        }
        cause ??= new Error('The event stream ended before a terminal event');
      }
      failures = alive || delivered > 0 ? 1 : failures + 1;
      if (failures > maxFailures) throw new BelayNetworkError(`GET ${url}: the event stream failed ${failures - 1} times in a row`, connection, { cause });
      const base = options.reconnectDelayMs ?? serverRetryMs ?? 1000;
      const delay = Math.max(Math.min(base * 2 ** (failures - 1), Math.max(base, 30_000)) * (0.5 + 0.5 * this.retryPolicy.random()), retryAfterMs ?? 0);
      options.onReconnect?.({ lastEventId: last, attempt: failures, cause });
      await sleep(delay, signal);
    }
  }

  /**
   * Resolves with the task once it is terminal (or, with `until: 'input_required'`, waiting for input). Polls with
   * jitter at the server's hinted interval using ETags (an unchanged task costs a 304), or follows the event stream.
   */
  async waitForTask(id: string, options: WaitForTaskOptions = {}): Promise<TaskView> {
    const until = options.until ?? 'terminal';
    const done = (t: TaskView) => isTerminalStatus(t.status) || (until === 'input_required' && t.status === 'input_required');
    const seen: { task: TaskView | null } = { task: null };
    const timeout = new AbortController();
    const timeoutError = () => {
      const what = until === 'terminal' ? 'finished' : 'finished or waiting for input';
      const last = seen.task ? ` (last seen ${seen.task.status}, version ${seen.task.version})` : '';
      return new BelayTimeoutError(`Task ${id} was not ${what} after ${options.timeoutMs} ms${last}`, options.timeoutMs ?? 0, seen.task);
    };
    const timer = options.timeoutMs === undefined ? null : setTimeout(() => timeout.abort(timeoutError()), options.timeoutMs);
    const combined = anySignal([options.signal, timeout.signal]);
    try {
      return options.mode === 'stream' ? await this.waitByStream(id, done, combined.signal, options, seen) : await this.waitByPolling(id, done, combined.signal, options, seen);
    } catch (e) {
      if (timer && timeout.signal.aborted && !options.signal?.aborted) throw timeoutError();
      throw e;
    } finally {
      if (timer) clearTimeout(timer);
      combined.dispose();
    }
  }

  /** `POST /v1/agent-tasks/{id}/input`: answers the pending question. */
  async answer(id: string, req: AnswerRequest): Promise<TaskView> {
    const reply = await this.request<TaskView>({
      method: 'POST',
      path: `${BASE}/${encodeURIComponent(id)}/input`,
      body: { version: req.version, answer: req.answer, ...(req.key !== undefined ? { key: req.key } : {}) },
      retry: false,
      signal: req.signal,
    });
    return reply.body;
  }

  /** `POST /v1/agent-tasks/{id}/cancellation`: idempotent; `cancellation` says what happened. */
  async cancel(id: string, req: CallOptions & { reason?: string } = {}): Promise<CancellationView> {
    const reply = await this.request<CancellationView>({
      method: 'POST',
      path: `${BASE}/${encodeURIComponent(id)}/cancellation`,
      body: req.reason !== undefined ? { reason: req.reason } : {},
      retry: true,
      signal: req.signal,
    });
    return reply.body;
  }

  /** `GET /v1/agent-tasks/{id}/result`; a task that has not finished is a `BelayApiError` with code `result_not_ready`. */
  async getResult(id: string, options: CallOptions = {}): Promise<ResultView> {
    return (await this.request<ResultView>({ method: 'GET', path: `${BASE}/${encodeURIComponent(id)}/result`, retry: true, signal: options.signal })).body;
  }

  /** `GET /v1/agent-tasks/{id}/effects`: the run-once ledger of the task. */
  async listEffects(id: string, options: CallOptions = {}): Promise<EffectView[]> {
    return (await this.request<{ effects: EffectView[] }>({ method: 'GET', path: `${BASE}/${encodeURIComponent(id)}/effects`, retry: true, signal: options.signal })).body.effects;
  }

  /** `GET /v1/task-types`. */
  async listTaskTypes(options: CallOptions = {}): Promise<TaskTypeView[]> {
    return (await this.request<{ task_types: TaskTypeView[] }>({ method: 'GET', path: '/v1/task-types', retry: true, signal: options.signal })).body.task_types;
  }

  // ---------------------------------------------------------------------------------------------------------------

  private async waitByPolling(id: string, done: (t: TaskView) => boolean, signal: AbortSignal, options: WaitForTaskOptions, seen: { task: TaskView | null }): Promise<TaskView> {
    let task: TaskView | null = null;
    let etag: string | undefined;
    for (;;) {
      const snap = await this.getTask(id, { etag, signal });
      if (!snap.notModified) {
        task = snap.task;
        seen.task = task;
        etag = snap.etag ?? undefined;
        options.onUpdate?.(task);
      }
      if (task && done(task)) return task;
      const hint = snap.pollIntervalMs ?? 1000;
      await sleep(jitter(Math.min(hint, options.maxPollIntervalMs ?? Infinity), this.retryPolicy.random), signal);
    }
  }

  private async waitByStream(id: string, done: (t: TaskView) => boolean, signal: AbortSignal, options: WaitForTaskOptions, seen: { task: TaskView | null }): Promise<TaskView> {
    const first = await this.getTask(id, { signal });
    seen.task = first.task;
    if (done(first.task)) return first.task;
    const interesting = (state: TaskState) => isTerminalStatus(state) || state === 'input_required' || state === 'auth_required';
    const stream = this.streamEvents(id, { signal, ...(options.reconnectDelayMs !== undefined ? { reconnectDelayMs: options.reconnectDelayMs } : {}) });
    for await (const event of stream) {
      // The stream replays the log from the start: confirm with the current representation before resolving.
      if (!interesting(event.state)) continue;
      const { task } = await this.getTask(id, { signal });
      seen.task = task;
      if (done(task)) return task;
    }
    const { task } = await this.getTask(id, { signal });
    if (done(task)) return task;
    throw new BelayProtocolError(`The event stream of task ${id} ended while the task is ${task.status}`);
  }

  private url(path: string, query?: Record<string, string | undefined>): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, v);
    const qs = params.toString();
    return `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`;
  }

  private async headers(extra: Record<string, string>): Promise<Record<string, string>> {
    const key = typeof this.options.apiKey === 'function' ? await this.options.apiKey() : this.options.apiKey;
    return { accept: 'application/json', ...this.options.headers, ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra };
  }

  private async request<T>(spec: RequestSpec): Promise<Reply<T>> {
    const url = this.url(spec.path, spec.query);
    const policy = this.retryPolicy;
    for (let attempt = 1; ; attempt++) {
      if (spec.signal?.aborted) throw abortReason(spec.signal);
      const outcome = await this.attempt<T>(spec, url);
      if (outcome.kind === 'ok') return outcome.reply;
      if (spec.signal?.aborted) throw abortReason(spec.signal);
      if (outcome.kind === 'api') {
        if (!isRetryable(outcome.error, spec.retry) || attempt >= policy.maxAttempts) throw outcome.error;
        await sleep(backoffDelay(policy, attempt - 1, outcome.error.retryAfterMs), spec.signal);
      } else {
        if (!spec.retry || attempt >= policy.maxAttempts) {
          throw new BelayNetworkError(`${spec.method} ${url} failed after ${attempt} attempt${attempt === 1 ? '' : 's'}: ${describe(outcome.error)}`, attempt, { cause: outcome.error });
        }
        await sleep(backoffDelay(policy, attempt - 1), spec.signal);
      }
    }
  }

  /** One attempt, body read included, under the per-attempt timeout. */
  private async attempt<T>(spec: RequestSpec, url: string): Promise<Attempt<T>> {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new BelayTimeoutError(`${spec.method} ${url}: no complete response after ${this.requestTimeoutMs} ms`, this.requestTimeoutMs)), this.requestTimeoutMs);
    const combined = anySignal([spec.signal, timeout.signal]);
    try {
      const res = await this.fetchImpl(url, {
        method: spec.method,
        headers: await this.headers({ ...(spec.body !== undefined ? { 'content-type': 'application/json' } : {}), ...spec.headers }),
        ...(spec.body !== undefined ? { body: JSON.stringify(spec.body) } : {}),
        signal: combined.signal,
      });
      if (res.status === 304) {
        await res.body?.cancel().catch(() => undefined);
        return { kind: 'ok', reply: { status: 304, headers: res.headers, body: null as T } };
      }
      if (!res.ok) return { kind: 'api', error: await BelayApiError.fromResponse(res, spec.method, url) };
      const text = await res.text();
      return { kind: 'ok', reply: { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as T } };
    } catch (e) {
      return { kind: 'network', error: e };
    } finally {
      clearTimeout(timer);
      combined.dispose();
    }
  }
}

function isRetryable(error: BelayApiError, ambiguousOk: boolean): boolean {
  if (error.status === 429) return true;
  if (!ambiguousOk) return false;
  return error.status >= 500 || error.status === 408 || error.code === 'idempotency_in_flight';
}

function parseEvent(data: string, url: string): TaskEventView {
  try {
    const event = JSON.parse(data) as TaskEventView;
    if (typeof event !== 'object' || event === null || typeof event.kind !== 'string') throw new Error('not an event object');
    return event;
  } catch (e) {
    throw new BelayProtocolError(`GET ${url}: unreadable event data: ${describe(e)}`, { cause: e });
  }
}

/** A random UUID v4; `randomUUID` is missing outside secure contexts in browsers, `getRandomValues` is not. */
function newIdempotencyKey(): string {
  const c = globalThis.crypto as typeof globalThis.crypto | undefined;
  if (!c) throw new TypeError('No Web Crypto: pass idempotencyKey');
  if (typeof c.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function isoTime(t: Date | string | number | undefined): string | undefined {
  if (t === undefined) return undefined;
  return (t instanceof Date ? t : new Date(t)).toISOString();
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const cause = e.cause instanceof Error ? ` (${e.cause.message})` : '';
    return `${e.message}${cause}`;
  }
  return String(e);
}
