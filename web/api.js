// The dashboard's only way to data: Belay's REST API on this origin, with the user's key in the Authorization
// header. EventSource cannot send that header, so the event stream is read with fetch() and parsed here, and it
// reconnects with Last-Event-ID after every drop.

const KEY_STORAGE = 'belay.apiKey';

export function getKey() {
  return localStorage.getItem(KEY_STORAGE);
}

export function setKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

export class ApiError extends Error {
  constructor(status, problem) {
    const detail = (problem && (problem.detail || problem.title)) || `HTTP ${status}`;
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.code = (problem && problem.code) || `http_${status}`;
    this.problem = problem || {};
  }
}

/** Listeners told when the key is refused (the app shows the key form). */
const unauthorizedListeners = new Set();
export function onUnauthorized(fn) {
  unauthorizedListeners.add(fn);
}

function authHeaders(extra = {}) {
  const key = getKey();
  return { accept: 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra };
}

export async function api(method, path, { body, headers, signal } = {}) {
  const init = { method, headers: authHeaders(headers), signal };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, { code: 'unreachable', detail: 'The Belay server cannot be reached.' });
  }
  const text = await res.text();
  let parsed = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { detail: text.slice(0, 300) };
    }
  }
  if (!res.ok && res.status !== 304) {
    const err = new ApiError(res.status, parsed);
    if (res.status === 401) for (const fn of unauthorizedListeners) fn(err);
    throw err;
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

export const get = (path, opts) => api('GET', path, opts);
export const post = (path, body, opts = {}) => api('POST', path, { ...opts, body });

export const taskPath = (id, tail = '') => `/v1/agent-tasks/${encodeURIComponent(id)}${tail}`;

/** One SSE frame: `id:`, `event:` and `data:` lines. Comments (heartbeats) and `retry:` give null. */
export function parseFrame(frame) {
  let id = null;
  let event = 'message';
  let retry = null;
  const data = [];
  for (const line of frame.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = Number(value);
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'retry') retry = Number(value);
  }
  if (id === null || !Number.isInteger(id) || data.length === 0) return { retry };
  try {
    return { retry, event: { seq: id, kind: event, ...JSON.parse(data.join('\n')) } };
  } catch {
    return { retry };
  }
}

const TERMINAL_KINDS = new Set(['completed', 'failed', 'canceled']);
const TERMINAL_STATUSES = new Set(['completed', 'failed', 'cancelled']);

/**
 * Follows a task's event log: events after `after`, then live, across any number of dropped connections (a server
 * restart, a proxy timeout). Each reconnect sends `Last-Event-ID` with the last sequence delivered, and a gap in the
 * sequence is filled from the JSON pages before going on, so `onEvent` sees every event once, in order.
 * `onStatus(state, detail)`: connecting | live | reconnecting | ended | error. Returns a function that stops.
 */
export function followEvents(taskId, { after = 0, onEvent, onStatus, onRequest }) {
  let last = after;
  let stopped = false;
  let controller = null;
  let delay = 500;
  const status = (s, d) => !stopped && onStatus && onStatus(s, d);

  const deliver = (e) => {
    if (e.seq <= last) return false;
    last = e.seq;
    onEvent(e);
    return TERMINAL_KINDS.has(e.kind);
  };

  async function fillGap(upTo) {
    // Never expected (the server sends everything after Last-Event-ID), but a gap must never be shown as history.
    let cursor = last;
    while (cursor < upTo - 1) {
      const page = await get(taskPath(taskId, `/events?after=${cursor}&limit=1000`));
      for (const e of page.body.events) if (e.seq < upTo && deliver(e)) return true;
      if (!page.body.has_more || page.body.next_after === cursor) break;
      cursor = page.body.next_after;
    }
    return false;
  }

  async function connectOnce() {
    controller = new AbortController();
    const headers = authHeaders({ accept: 'text/event-stream' });
    if (last > 0) headers['last-event-id'] = String(last);
    if (onRequest) onRequest({ lastEventId: last });
    let watchdog = null;
    const arm = () => {
      clearTimeout(watchdog);
      // The server sends a heartbeat at least every 15 s; silence for longer means a dead connection.
      watchdog = setTimeout(() => controller.abort(), 45_000);
    };
    try {
      const res = await fetch(taskPath(taskId, '/events'), { headers, signal: controller.signal, cache: 'no-store' });
      if (!res.ok) {
        let problem = null;
        try {
          problem = await res.json();
        } catch {
          // not JSON
        }
        const err = new ApiError(res.status, problem);
        if (res.status === 401) for (const fn of unauthorizedListeners) fn(err);
        return { fatal: res.status < 500 && res.status !== 429, error: err };
      }
      status('live');
      delay = 500;
      arm();
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return { ended: false };
        arm();
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const { event, retry } = parseFrame(frame);
          if (retry) delay = Math.max(250, Math.min(retry, 5000));
          if (!event) continue;
          if (event.seq > last + 1 && (await fillGap(event.seq))) return { ended: true };
          if (deliver(event)) return { ended: true };
        }
      }
    } catch (e) {
      return { ended: false, error: e };
    } finally {
      clearTimeout(watchdog);
      try {
        controller.abort();
      } catch {
        // already closed
      }
    }
  }

  (async () => {
    status('connecting');
    while (!stopped) {
      const r = await connectOnce();
      if (stopped) return;
      if (r.ended) return status('ended');
      if (r.fatal) return status('error', r.error);
      // The stream closed without a terminal event: the task may have ended before `last`, or the server went away.
      try {
        const t = await get(taskPath(taskId));
        if (TERMINAL_STATUSES.has(t.body.status)) {
          const tail = await get(taskPath(taskId, `/events?after=${last}&limit=1000`));
          for (const e of tail.body.events) deliver(e);
          if (!tail.body.has_more) return status('ended');
        }
      } catch (e) {
        if (e instanceof ApiError && e.status >= 400 && e.status < 500 && e.status !== 429) return status('error', e);
      }
      status('reconnecting', { after: last, inMs: delay });
      await new Promise((r2) => setTimeout(r2, delay));
      delay = Math.min(delay * 2, 5000);
    }
  })();

  return () => {
    stopped = true;
    if (controller) controller.abort();
  };
}
