/**
 * @module cli/rest-client
 * The CLI's only way to a server: the REST API over HTTP (README "REST API"). Problems (`application/problem+json`)
 * become ApiError with the server's `code` and `detail`; a server that cannot be reached becomes ServerUnreachable
 * with a hint. The event stream reconnects with `Last-Event-ID`, so a server restart costs a pause, never an event.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly body: Record<string, unknown>,
  ) {
    super(`${detail} (${status} ${code})`);
    this.name = 'ApiError';
  }
}

export class ServerUnreachable extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach the Belay server at ${url} (${reason}). Is \`belay serve\` running there? Set --url or BELAY_URL.`);
    this.name = 'ServerUnreachable';
  }
}

export interface Reply<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** Why fetch failed, in the words of the socket: ECONNREFUSED, ENOTFOUND, a timeout... */
export function networkReason(e: unknown): string {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err?.name === 'TimeoutError') return 'timed out';
  return err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(e);
}

export interface SseEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

export class RestClient {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string | null,
    private readonly timeoutMs = 15_000,
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { accept: 'application/json', ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}), ...extra };
  }

  async request<T = any>(method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; okStatuses?: number[] } = {}): Promise<Reply<T>> {
    const headers = this.headers(init.headers);
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      throw new ServerUnreachable(this.baseUrl, networkReason(e));
    }
    const text = await res.text();
    let body: unknown = null;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    if (res.status >= 400) throw toApiError(res.status, body, this.apiKey !== null);
    return { status: res.status, headers: res.headers, body: body as T };
  }

  get<T = any>(path: string): Promise<Reply<T>> {
    return this.request<T>('GET', path);
  }

  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply<T>> {
    return this.request<T>('POST', path, { ...(body !== undefined ? { body } : {}), ...(headers ? { headers } : {}) });
  }

  /**
   * One SSE connection to a task's events after `afterSeq`. Yields each event; returns when the server ends the
   * stream (it does after a terminal event). Throws ServerUnreachable when the connection fails or drops, and
   * ApiError when the server refuses (404, 401, 410...).
   */
  async *eventStream(taskId: string, afterSeq: number, options: { signal?: AbortSignal; onOpen?: () => void } = {}): AsyncGenerator<SseEvent, void, undefined> {
    const { signal } = options;
    let res: Response;
    const url = `${this.baseUrl}/v1/agent-tasks/${encodeURIComponent(taskId)}/events`;
    try {
      res = await fetch(url, {
        headers: this.headers({ accept: 'text/event-stream', ...(afterSeq > 0 ? { 'last-event-id': String(afterSeq) } : {}) }),
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      throw new ServerUnreachable(this.baseUrl, networkReason(e));
    }
    if (res.status >= 400) {
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the text
      }
      throw toApiError(res.status, body, this.apiKey !== null);
    }
    options.onOpen?.();
    if (!res.body) return;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (e) {
          throw new ServerUnreachable(this.baseUrl, `stream broke: ${networkReason(e)}`);
        }
        if (chunk.done) return;
        buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n?/g, '\n');
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const parsed = parseSseFrame(frame);
          if (parsed) yield parsed;
        }
      }
    } finally {
      reader.releaseLock();
      await res.body.cancel().catch(() => undefined);
    }
  }
}

/** Parses one SSE frame (`id:`, `event:`, `data:` lines); comments and `retry:` frames give null. */
export function parseSseFrame(frame: string): SseEvent | null {
  let id: number | null = null;
  let event = 'message';
  const data: string[] = [];
  for (const line of frame.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = Number(value);
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (id === null || !Number.isInteger(id) || data.length === 0) return null;
  try {
    return { id, event, data: JSON.parse(data.join('\n')) as Record<string, unknown> };
  } catch {
    return null;
  }
}

function toApiError(status: number, body: unknown, sentKey: boolean): ApiError {
  const problem = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const code = typeof problem.code === 'string' ? problem.code : `http_${status}`;
  let detail = typeof problem.detail === 'string' ? problem.detail : typeof body === 'string' && body ? body.slice(0, 200) : `HTTP ${status}`;
  if (status === 401) detail += sentKey ? ' — the server refused this API key (check --api-key / BELAY_API_KEY)' : ' — no API key configured (set --api-key or BELAY_API_KEY)';
  const issues = Array.isArray(problem.issues) ? (problem.issues as Array<{ path?: string | string[]; message?: string }>) : [];
  const where = (path: string | string[] | undefined) => (Array.isArray(path) ? path.join('.') : (path ?? '').replace(/^\//, '').replace(/\//g, '.'));
  if (issues.length) detail += `: ${issues.map((i) => `${where(i.path) ? `${where(i.path)}: ` : ''}${i.message ?? ''}`).join('; ')}`;
  return new ApiError(status, code, detail, problem);
}
