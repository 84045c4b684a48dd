import { randomBytes } from 'node:crypto';

/**
 * Task ids are unguessable (128 random bits, as MCP and A2A ask for) and sort roughly by creation time, which keeps
 * B-tree inserts local. Format: `task_` + 12 hex digits of time + 32 hex digits of randomness.
 */
export function newTaskId(nowMs: number): string {
  return `task_${Math.floor(nowMs).toString(16).padStart(12, '0')}${randomBytes(16).toString('hex')}`;
}

export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('hex')}`;
}

/** A worker's identity in leases: host-unique enough to read in a dashboard. */
export function newWorkerId(): string {
  return `w_${process.pid}_${randomBytes(4).toString('hex')}`;
}
