/**
 * @module protocols/mcp/mcp-context
 * What every part of the MCP front shares: the service (the only API it calls), the view and ttl policies, and the
 * server's identity. Built once per app.
 */
import type { Task } from '../../core/task.js';
import type { TaskService } from '../../service/task-service.js';
import { DEFAULT_TTL_POLICY, type TtlPolicy } from './task-ttl.js';
import type { ViewOptions } from './task-view.js';

export interface McpFrontOptions {
  /** Suggested `pollInterval` while a task works (a paused task suggests five times as much). */
  pollIntervalMs?: number;
  /** How a requested ttl is clamped. */
  ttl?: Partial<TtlPolicy>;
  /** Sessions with no request for this long (and no open notification stream) are closed. */
  sessionIdleMs?: number;
  /** Longest time between two reads of a followed task when no change hint arrives. */
  followPollMs?: number;
  serverInfo?: { name: string; version: string };
}

export interface McpContext {
  service: TaskService;
  view: ViewOptions;
  ttl: TtlPolicy;
  followPollMs: number;
  sessionIdleMs: number;
  serverInfo: { name: string; version: string };
  now(): number;
}

export function mcpContext(service: TaskService, options: McpFrontOptions = {}): McpContext {
  const stepNames = (task: Task) => service.registry.get(task.type, task.typeVersion)?.steps.map((s) => s.name);
  return {
    service,
    view: { pollIntervalMs: options.pollIntervalMs ?? 1000, stepNames },
    ttl: { ...DEFAULT_TTL_POLICY, ...options.ttl },
    followPollMs: options.followPollMs ?? 1000,
    sessionIdleMs: options.sessionIdleMs ?? 30 * 60_000,
    serverInfo: options.serverInfo ?? { name: 'belay', version: '0.1.0' },
    now: () => service.clock.now(),
  };
}
