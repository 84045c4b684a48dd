/**
 * @module protocols/mcp/session-registry
 * This gateway's live sessions. In memory on purpose: a session is only a set of open streams to push on, and a
 * session id another gateway (or this one before a restart) minted is served without one. Idle sessions are closed
 * by a sweep (unref'd, so it never keeps a process alive).
 */
import type { Principal } from '../../service/task-service.js';
import type { McpSession } from './mcp-session.js';

export class SessionRegistry {
  private readonly sessions = new Map<string, McpSession>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly idleMs: number) {}

  add(session: McpSession): void {
    this.sessions.set(session.id, session);
    if (!this.timer) {
      this.timer = setInterval(() => void this.sweep(), Math.min(60_000, Math.max(1000, this.idleMs / 4)));
      this.timer.unref();
    }
  }

  /** The session, only for the principal that opened it (anyone else's request is served without one). */
  get(id: string | null | undefined, who: Principal): McpSession | null {
    if (!id) return null;
    const s = this.sessions.get(id);
    if (!s || !s.belongsTo(who)) return null;
    s.lastSeen = Date.now();
    return s;
  }

  remove(id: string): void {
    this.sessions.delete(id);
    if (this.sessions.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  get size(): number {
    return this.sessions.size;
  }

  async sweep(now = Date.now()): Promise<void> {
    for (const s of [...this.sessions.values()]) {
      if (!s.standaloneOpen && now - s.lastSeen > this.idleMs) {
        this.remove(s.id);
        await s.close().catch(() => undefined);
      }
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.sessions.values()];
    for (const s of all) this.remove(s.id);
    await Promise.all(all.map((s) => s.close().catch(() => undefined)));
  }
}
