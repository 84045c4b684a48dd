/** An SSE client that drops its connection at chosen points and resumes with `Last-Event-ID`, recording everything. */
import type { SseChain, SseConnection } from '../history.js';

const TERMINAL = new Set(['completed', 'failed', 'canceled']);

export interface DropPlan {
  /** Drop after this many events (null: never). */
  afterEvents: number | null;
  /** Drop after this long (ms; null: never). */
  afterMs: number | null;
}

export async function sseConnect(base: string, key: string, taskId: string, lastEventId: number | null, drop: DropPlan, maxMs = 30_000): Promise<SseConnection> {
  const conn: SseConnection = { taskId, lastEventId, status: 'network', events: [], end: 'error' };
  const ctrl = new AbortController();
  const timers: NodeJS.Timeout[] = [setTimeout(() => ctrl.abort(), maxMs)];
  let dropped = false;
  if (drop.afterMs !== null) {
    timers.push(
      setTimeout(() => {
        dropped = true;
        ctrl.abort();
      }, drop.afterMs),
    );
  }
  try {
    const res = await fetch(`${base}/v1/agent-tasks/${encodeURIComponent(taskId)}/events`, {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...(lastEventId !== null ? { 'last-event-id': String(lastEventId) } : {}) },
      signal: ctrl.signal,
    });
    conn.status = res.status;
    if (res.status !== 200 || !res.body) {
      await res.text().catch(() => undefined);
      conn.end = 'closed';
      return conn;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        conn.end = conn.events.length > 0 && TERMINAL.has(conn.events.at(-1)!.kind) ? 'terminal' : 'closed';
        return conn;
      }
      buf += decoder.decode(value, { stream: true });
      let idx;
      while ((idx = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, idx);
        buf = buf.slice(idx + 2);
        const id = /^id: ?(\d+)$/m.exec(frame);
        const ev = /^event: ?(\S+)$/m.exec(frame);
        if (id && ev) conn.events.push({ seq: Number(id[1]), kind: ev[1]! });
        if (ev && TERMINAL.has(ev[1]!)) {
          // The server ends the stream after a terminal event; nothing follows it.
          await reader.cancel().catch(() => undefined);
          conn.end = 'terminal';
          return conn;
        }
        if (drop.afterEvents !== null && conn.events.length >= drop.afterEvents) {
          dropped = true;
          ctrl.abort();
          await reader.cancel().catch(() => undefined);
          conn.end = 'aborted';
          return conn;
        }
      }
    }
  } catch {
    conn.end = dropped ? 'aborted' : 'error';
    return conn;
  } finally {
    for (const t of timers) clearTimeout(t);
  }
}

/**
 * Follows one task to its end through drops and reconnects (to any live gateway), sending the last id received.
 * `plan` decides each connection's drop point.
 */
export async function sseFollow(
  bases: () => string[],
  key: string,
  taskId: string,
  plan: (n: number) => DropPlan,
  pick: <T>(items: readonly T[]) => T,
  deadline: number,
): Promise<SseChain> {
  const chain: SseChain = { taskId, connections: [] };
  let last: number | null = null;
  for (let n = 0; Date.now() < deadline; n++) {
    const live = bases();
    if (live.length === 0) {
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    const c = await sseConnect(pick(live), key, taskId, last, plan(n), Math.max(1000, deadline - Date.now()));
    chain.connections.push(c);
    if (c.events.length) last = c.events.at(-1)!.seq;
    if (c.end === 'terminal') return chain;
    if (typeof c.status === 'number' && c.status !== 200) return chain;
    await new Promise((r) => setTimeout(r, 20 + (n % 5) * 20));
  }
  return chain;
}
