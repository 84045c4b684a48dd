/**
 * @module service/task-follower
 * Follows one task from any gateway: re-reads the row whenever the store hints at a change (`TaskService.watch`:
 * NOTIFY on PostgreSQL, polling on SQLite, another process's commits included) and at least every `pollMs`, so a
 * lost hint delays an update by one interval and never loses it. Used by MCP's held `tools/call`, `tasks/result` and
 * session status notifications, and by A2A's blocking `SendMessage`.
 */
import type { Task } from '../core/task.js';
import type { Principal, TaskService } from './task-service.js';

export interface FollowOptions {
  signal?: AbortSignal;
  /** Longest time between two reads without a hint. */
  pollMs: number;
  /** Extra wake-ups that re-run `step` even when the row has not changed (for example a rejected answer). */
  kicks?: (kick: () => void) => () => void;
}

/**
 * Calls `step` with the current row, then after every change, until `step` returns true (the last row is returned)
 * or the signal aborts (null). Read errors (the task expired, the store is down) are thrown.
 */
export async function followTask(service: TaskService, who: Principal, taskId: string, step: (task: Task) => boolean | Promise<boolean>, options: FollowOptions): Promise<Task | null> {
  const { signal } = options;
  let hinted = true;
  let wake: (() => void) | null = null;
  const unwatch = service.watch(taskId, () => {
    hinted = true;
    wake?.();
  });
  let lastVersion = -1;
  const unkick = options.kicks?.(() => {
    lastVersion = -1;
    hinted = true;
    wake?.();
  });
  const onAbort = () => wake?.();
  signal?.addEventListener('abort', onAbort);
  try {
    for (;;) {
      if (signal?.aborted) return null;
      hinted = false;
      const task = await service.getTask(who, taskId);
      if (task.version !== lastVersion) {
        lastVersion = task.version;
        if (await step(task)) return task;
      }
      if (signal?.aborted) return null;
      if (!hinted) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, options.pollMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
      }
    }
  } finally {
    unwatch();
    unkick?.();
    signal?.removeEventListener('abort', onAbort);
  }
}
