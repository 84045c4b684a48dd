/**
 * @module runtime/task-type
 * How a product team defines work: a task type is a name, a version, an input schema (zod) and an ordered list of
 * named steps. Each step receives the checkpoint and returns the next one. A task stays on the version it started
 * with; register old versions next to new ones until their tasks drain.
 */
import { z } from 'zod';
import { BelayError } from '../core/errors.js';
import type { DeadlineAction, Json, JsonObject } from '../core/task.js';
import type { TaskKind } from '../store/port.js';
import type { StepContext } from './step-context.js';

export interface RetryPolicy {
  /** Attempts per step, counting the first (claims after a crash count too). */
  maxAttempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  /** Multiplier per attempt. */
  factor: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 10, initialDelayMs: 1000, maxDelayMs: 5 * 60_000, factor: 2 };

export interface StepDefinition<Input, Checkpoint> {
  name: string;
  run(ctx: StepContext<Input, Checkpoint>): Promise<Checkpoint>;
}

/** An effect as the ledger knows it. Its kind is the key's prefix before the first `:` (`revoke:grant-7` → `revoke`). */
export interface LedgerEffect {
  key: string;
  kind: string;
  result: Json;
  startedAt: number;
}

export function effectKind(key: string): string {
  const i = key.indexOf(':');
  return i < 0 ? key : key.slice(0, i);
}

/** What a resumed task is told when it is claimed again after a pause, a crash or a retry. */
export interface ResumeContext<Input, Checkpoint> {
  taskId: string;
  requester: { tenant: string; principal: string };
  input: Input;
  checkpoint: Checkpoint;
  /** Index of the step about to run. */
  step: number;
  reason: 'resume' | 'recovery' | 'retry';
  answers: Record<string, Json>;
  signal: AbortSignal;
}

/**
 * A checkpoint proves where execution stopped; it does not grant permanent permission. `revalidate` re-checks the
 * requester's authority and the product state the task depends on: return nothing to go on, `fail` to end the task
 * (no further effect runs), or `ask` to pause with a question (the answer is in `answers` next time).
 */
export type RevalidateOutcome =
  | void
  | { ok: true }
  | { fail: { code: string; message: string } }
  | { ask: { key: string; question: string; schema: JsonObject; timeoutMs?: number; context?: Json } };

/** Learns, from downstream, whether an effect whose outcome is unknown happened. Throwing means "still unknown". */
export type EffectReconciler = (effect: { key: string; kind: string; startedAt: number }, idempotencyKey: string, signal: AbortSignal) => Promise<{ applied: true; result: Json } | { applied: false }>;

/** Undoes an applied effect after cancellation; runs once, as its own ledgered effect keyed `compensate:<key>`. */
export type EffectCompensation = (effect: LedgerEffect, idempotencyKey: string, signal: AbortSignal) => Promise<Json>;

export interface TaskTypeDefinition<Input = unknown, Checkpoint = Json> {
  name: string;
  version: number;
  description?: string;
  /** Validates and normalises input at create time (the task is never persisted otherwise). */
  input: z.ZodType<Input>;
  initialCheckpoint(input: Input): Checkpoint;
  steps: ReadonlyArray<StepDefinition<Input, Checkpoint>>;
  /** The task's result, computed from the final checkpoint. */
  result?(checkpoint: Checkpoint, input: Input): Json;
  retry?: Partial<RetryPolicy>;
  /** What an unanswered question's deadline does, unless the question says otherwise. */
  onDeadline?: DeadlineAction;
  /** Default time to answer a question. */
  defaultInputTimeoutMs?: number;
  /** Re-validation on every claim after a pause, a crash or a retry (see RevalidateOutcome). */
  revalidate?(ctx: ResumeContext<Input, Checkpoint>): Promise<RevalidateOutcome>;
  /** Per effect kind: how to learn the outcome of an effect that was sent and never confirmed. */
  reconcilers?: Record<string, EffectReconciler>;
  /** Per effect kind: how to undo an applied effect after cancellation. */
  compensations?: Record<string, EffectCompensation>;
  /** Every effect key the task would apply from this checkpoint on, for the "never started" part of a report. */
  plannedEffects?(checkpoint: Checkpoint, input: Input): string[];
}

export interface TaskType<Input = unknown, Checkpoint = Json> extends TaskTypeDefinition<Input, Checkpoint> {
  readonly retryPolicy: RetryPolicy;
  readonly inputJsonSchema: JsonObject;
}

/** @example defineTaskType({ name: 'report', version: 1, input: z.object({}), initialCheckpoint: () => ({}), steps: [...] }) */
export function defineTaskType<Input, Checkpoint>(def: TaskTypeDefinition<Input, Checkpoint>): TaskType<Input, Checkpoint> {
  if (!/^[a-z][a-z0-9-]{0,63}$/.test(def.name)) throw new Error(`Task type name "${def.name}" must be kebab-case`);
  if (!Number.isInteger(def.version) || def.version < 1) throw new Error(`Task type version must be a positive integer`);
  if (def.steps.length === 0) throw new Error(`Task type "${def.name}" has no steps`);
  const names = new Set(def.steps.map((s) => s.name));
  if (names.size !== def.steps.length) throw new Error(`Task type "${def.name}" has duplicate step names`);
  return {
    ...def,
    retryPolicy: { ...DEFAULT_RETRY, ...def.retry },
    inputJsonSchema: z.toJSONSchema(def.input, { io: 'input', unrepresentable: 'any' }) as JsonObject,
  };
}

/** Every task type version this process knows. Old versions stay until their tasks drain. */
export class TaskTypeRegistry {
  private readonly byName = new Map<string, Map<number, TaskType<any, any>>>();

  constructor(types: ReadonlyArray<TaskType<any, any>> = []) {
    for (const t of types) this.register(t);
  }

  register(type: TaskType<any, any>): this {
    let versions = this.byName.get(type.name);
    if (!versions) this.byName.set(type.name, (versions = new Map()));
    if (versions.has(type.version)) throw new Error(`Task type ${type.name}@${type.version} is already registered`);
    versions.set(type.version, type);
    return this;
  }

  /** The version new tasks of this type start on. */
  latest(name: string): TaskType<any, any> {
    const versions = this.byName.get(name);
    if (!versions || versions.size === 0) throw new BelayError('UNKNOWN_TASK_TYPE', `No task type named "${name}"`, { details: { task_type: name } });
    return versions.get(Math.max(...versions.keys()))!;
  }

  get(name: string, version: number): TaskType<any, any> | undefined {
    return this.byName.get(name)?.get(version);
  }

  kinds(): TaskKind[] {
    return [...this.byName.values()].flatMap((m) => [...m.values()].map((t) => ({ type: t.name, version: t.version })));
  }

  list(): Array<TaskType<any, any>> {
    return [...this.byName.values()].flatMap((m) => [...m.values()]).sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version);
  }
}
