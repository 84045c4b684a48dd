/**
 * @module protocols/mcp/status-notifier
 * `notifications/tasks/status` for a live 2025-11-25 session, from the durable event log: the session follows the
 * tasks it created or asked about; on every change hint (`TaskService.watch`, which also sees other processes'
 * commits) it reads the events after the last one it saw (`TaskService.listEvents`) and sends one notification per
 * change of MCP status, in commit order, stopping at the terminal one. The notifications are hints (the spec tells
 * requestors to keep polling); nothing here is state: a restarted gateway simply has no session to notify.
 */
import type { JSONRPCMessage, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import type { Task, TaskEvent } from '../../core/task.js';
import { mcpStatus, TASK_STATES, type TaskState } from '../../core/task-state.js';
import type { Principal } from '../../service/task-service.js';
import type { McpContext } from './mcp-context.js';
import { legacyTask, statusOf, type McpStatus } from './task-view.js';

const TERMINAL: ReadonlySet<McpStatus> = new Set(['completed', 'failed', 'cancelled']);
/** Tasks one session follows at most; the longest-followed is dropped first (it can still be polled). */
export const MAX_FOLLOWED = 200;

function statusFromEvent(e: TaskEvent): McpStatus | null {
  if (e.kind === 'cancel_requested') return 'cancelled';
  const state = e.body.state;
  return typeof state === 'string' && (TASK_STATES as readonly string[]).includes(state) ? mcpStatus(state as TaskState) : null;
}

interface Followed {
  lastSeq: number;
  lastStatus: McpStatus | null;
  unwatch: () => void;
  busy: boolean;
  again: boolean;
}

export class StatusNotifier {
  private readonly followed = new Map<string, Followed>();
  private closed = false;

  constructor(
    private readonly ctx: McpContext,
    private readonly who: Principal,
    private readonly send: (message: JSONRPCMessage) => Promise<void>,
    /** Called with the current row when a followed task starts waiting for input. */
    private readonly onInputRequired: (task: Task) => Promise<void>,
  ) {}

  get size(): number {
    return this.followed.size;
  }

  /** Starts following a task (idempotent); `seen` is the row the caller just read, if any. */
  follow(taskId: string, seen?: Task): void {
    if (this.closed || this.followed.has(taskId)) return;
    if (this.followed.size >= MAX_FOLLOWED) this.unfollow(this.followed.keys().next().value!);
    const entry: Followed = { lastSeq: -1, lastStatus: null, unwatch: () => {}, busy: true, again: false };
    this.followed.set(taskId, entry);
    // Watch before reading, so nothing committed in between is missed.
    entry.unwatch = this.ctx.service.watch(taskId, () => void this.pump(taskId));
    void (async () => {
      try {
        const task = seen ?? (await this.ctx.service.getTask(this.who, taskId));
        entry.lastSeq = task.nextSeq - 1;
        entry.lastStatus = statusOf(task);
        entry.busy = false;
        if (TERMINAL.has(entry.lastStatus)) {
          this.unfollow(taskId);
          return;
        }
        if (entry.lastStatus === 'input_required') await this.onInputRequired(task);
        // Catch up once: whatever was committed between the caller's read and the watch has no hint of its own.
        await this.pump(taskId);
      } catch {
        this.unfollow(taskId);
      }
    })();
  }

  /** Re-offers the questions of followed tasks that wait for input (a notification stream has just opened). */
  replayInputRequests(): void {
    for (const [taskId, entry] of this.followed) {
      if (entry.lastStatus !== 'input_required') continue;
      void this.ctx.service
        .getTask(this.who, taskId)
        .then((row) => (statusOf(row) === 'input_required' ? this.onInputRequired(row) : undefined))
        .catch(() => undefined);
    }
  }

  unfollow(taskId: string): void {
    const entry = this.followed.get(taskId);
    if (!entry) return;
    entry.unwatch();
    this.followed.delete(taskId);
  }

  close(): void {
    this.closed = true;
    for (const id of [...this.followed.keys()]) this.unfollow(id);
  }

  private async pump(taskId: string): Promise<void> {
    const entry = this.followed.get(taskId);
    if (!entry) return;
    if (entry.busy) {
      entry.again = true;
      return;
    }
    entry.busy = true;
    try {
      do {
        entry.again = false;
        let row: Task | null = null;
        for (;;) {
          const events = await this.ctx.service.listEvents(this.who, taskId, entry.lastSeq, 200);
          for (const e of events) {
            entry.lastSeq = e.seq;
            const status = statusFromEvent(e);
            if (status === null || status === entry.lastStatus || (entry.lastStatus !== null && TERMINAL.has(entry.lastStatus))) continue;
            entry.lastStatus = status;
            row ??= await this.ctx.service.getTask(this.who, taskId);
            const current = legacyTask(row, this.ctx.view);
            const params: McpTask = {
              ...current,
              status,
              lastUpdatedAt: new Date(e.at).toISOString(),
              ...(current.status === status ? {} : { statusMessage: `The task is ${status}` }),
            };
            await this.send({ jsonrpc: '2.0', method: 'notifications/tasks/status', params });
            if (status === 'input_required' && statusOf(row) === 'input_required') await this.onInputRequired(row);
          }
          if (events.length < 200) break;
        }
        if (entry.lastStatus !== null && TERMINAL.has(entry.lastStatus)) {
          this.unfollow(taskId);
          return;
        }
      } while (entry.again);
    } catch {
      // The task expired or the session went away: notifications are hints, polling still works.
      this.unfollow(taskId);
    } finally {
      entry.busy = false;
    }
  }
}
