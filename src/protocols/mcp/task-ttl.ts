/**
 * @module protocols/mcp/task-ttl
 * MCP task retention (`ttl` in 2025-11-25, `ttlMs` in the tasks extension): the requested value is clamped to a
 * published range and recorded durably with the task, so every gateway reports and enforces the same value.
 *
 * Where it is kept: in the task's context id, which the MCP front owns for the tasks it creates (MCP has no
 * conversation context). `mcp-ttl-<ms>-<random>` costs no extra read and no schema change, and survives restarts
 * like the rest of the row. Tasks created through REST or A2A carry no MCP ttl: their retention is the platform's
 * (`expires_at`, set when they finish).
 *
 * How it is honoured: a task stays reachable for at least its ttl (the platform's retention, 30 days after the end by
 * default, is longer than the largest ttl granted). Once its ttl has elapsed AND it has finished, MCP answers
 * "Task has expired" and stops listing it, exactly as for a retention tombstone. Work still running when its ttl
 * elapses stays reachable until it finishes: hiding live work (and its side effects) from its requester would be
 * worse than keeping a record a little longer than asked, and the spec lets a receiver keep a task past its ttl.
 */
import { randomBytes } from 'node:crypto';
import { BelayError } from '../../core/errors.js';
import type { Task } from '../../core/task.js';
import { isTerminal } from '../../core/task-state.js';

export interface TtlPolicy {
  /** Granted when the request names none. */
  defaultMs: number;
  minMs: number;
  /** Keep it at most the platform's retention after the end, so the record outlives the ttl. */
  maxMs: number;
}

export const DEFAULT_TTL_POLICY: TtlPolicy = { defaultMs: 24 * 3600_000, minMs: 60_000, maxMs: 30 * 24 * 3600_000 };

const CONTEXT = /^mcp-ttl-(\d{1,13})-[0-9a-f]{32}$/;

/** The ttl the server grants for a requested one (null or absent: the default). */
export function clampTtl(requested: number | null | undefined, policy: TtlPolicy): number {
  if (requested === null || requested === undefined || !Number.isFinite(requested)) return policy.defaultMs;
  return Math.min(policy.maxMs, Math.max(policy.minMs, Math.floor(requested)));
}

/** The context id that records a granted ttl. */
export function contextIdForTtl(ttlMs: number): string {
  return `mcp-ttl-${ttlMs}-${randomBytes(16).toString('hex')}`;
}

/** The MCP ttl recorded with the task, or null for a task created by another front. */
export function grantedTtl(task: Task): number | null {
  const m = CONTEXT.exec(task.contextId);
  return m ? Number(m[1]) : null;
}

/**
 * The ttl to report: the granted one, or for tasks from other fronts the platform's retention once it is known
 * (`expires_at - created_at`), null (no limit announced) before.
 */
export function reportedTtl(task: Task): number | null {
  const granted = grantedTtl(task);
  if (granted !== null) return granted;
  return task.expiresAt === null ? null : Math.max(0, task.expiresAt - task.createdAt);
}

/** Whether MCP must treat the task as gone: finished, and its granted ttl elapsed. */
export function ttlElapsed(task: Task, now: number): boolean {
  const granted = grantedTtl(task);
  return granted !== null && isTerminal(task.state) && now >= task.createdAt + granted;
}

/** @throws BelayError TASK_EXPIRED (the same answer a retention tombstone gives) when the task's ttl has elapsed. */
export function assertNotExpired(task: Task, now: number): Task {
  if (ttlElapsed(task, now)) {
    throw new BelayError('TASK_EXPIRED', 'The task expired under its MCP ttl', {
      details: { final_state: task.state, expired_at: new Date(task.createdAt + grantedTtl(task)!).toISOString() },
    });
  }
  return task;
}
