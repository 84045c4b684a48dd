/**
 * @module runtime/step-context
 * What a step sees: its input and checkpoint, an AbortSignal, the run-once ledger (`once`), questions (`ask`),
 * measured progress, sub-step commits (`save`) and artifacts.
 */
import { z } from 'zod';
import { BelayError, coerceError } from '../core/errors.js';
import { serializeJson } from '../core/limits.js';
import type { Clock } from '../core/clock.js';
import type { Artifact, DeadlineAction, Json, JsonObject, PendingInput, Progress } from '../core/task.js';
import { QUESTION_KEY } from '../core/transitions.js';
import type { Lease, Store } from '../store/port.js';
import { effectKind, type EffectReconciler } from './task-type.js';

/** Thrown by `ask` when the answer is not there yet: the runner commits `input_required` and releases the lease. */
export class PauseSignal extends Error {
  override name = 'PauseSignal';
  constructor(readonly pending: PendingInput) {
    super(`Waiting for input "${pending.key}"`);
  }
}

/** Thrown inside a step when the task must stop: the lease was lost or cancellation was requested. */
export class StopSignal extends Error {
  override name = 'StopSignal';
  constructor(readonly reason: 'lease_lost' | 'cancel_requested') {
    super(reason === 'lease_lost' ? 'Lease lost to another worker' : 'Cancellation requested');
  }
}

export interface Question<T> {
  question: string;
  /** The answer's schema: a zod schema or a JSON Schema object. */
  schema: z.ZodType<T> | JsonObject;
  /** Time to answer (default: the task type's), or an absolute deadline. */
  timeoutMs?: number;
  deadlineAt?: number;
  onDeadline?: DeadlineAction;
  /** Structured material for whoever answers. */
  context?: Json;
}

export interface EffectOptions {
  /** Called instead of re-running the effect when a previous attempt's outcome is unknown (sent, never confirmed). */
  reconcile?: (idempotencyKey: string, signal: AbortSignal) => Promise<Json | undefined>;
}

export interface StepContextInit<Input, Checkpoint> {
  taskId: string;
  tenant: string;
  requestedBy: string;
  input: Input;
  checkpoint: Checkpoint;
  stepName: string;
  stepIndex: number;
  attempt: number;
  answers: Record<string, Json>;
  artifacts: Artifact[];
  progress: Progress;
  signal: AbortSignal;
  clock: Clock;
  store: Store;
  lease: Lease;
  defaultInputTimeoutMs: number;
  defaultOnDeadline: DeadlineAction;
  /** The task type's reconcilers by effect kind, used when `once` finds an effect whose outcome is unknown. */
  reconcilers: Record<string, EffectReconciler>;
  /** Commits a sub-step (same step index) and keeps the lease. */
  saveSubstep(checkpoint: Checkpoint, progress: Progress, artifacts: Artifact[] | undefined): Promise<void>;
  faultPoint(label: string): void;
}

export class StepContext<Input = unknown, Checkpoint = Json> {
  readonly taskId: string;
  readonly tenant: string;
  readonly requestedBy: string;
  readonly input: Input;
  readonly stepName: string;
  readonly stepIndex: number;
  /** 1 on the first try of this step; higher after a crash or retry. */
  readonly attempt: number;
  /** Fires when the task is cancelled or the lease is lost; pass it to every call that can take long. */
  readonly signal: AbortSignal;
  readonly clock: Clock;
  private currentCheckpoint: Checkpoint;
  private progressValue: Progress;
  private artifactList: Artifact[];
  private artifactsChanged = false;
  private readonly init: StepContextInit<Input, Checkpoint>;

  constructor(init: StepContextInit<Input, Checkpoint>) {
    this.init = init;
    this.taskId = init.taskId;
    this.tenant = init.tenant;
    this.requestedBy = init.requestedBy;
    this.input = init.input;
    this.stepName = init.stepName;
    this.stepIndex = init.stepIndex;
    this.attempt = init.attempt;
    this.signal = init.signal;
    this.clock = init.clock;
    this.currentCheckpoint = init.checkpoint;
    this.progressValue = init.progress;
    this.artifactList = init.artifacts;
  }

  /** The last committed checkpoint (after `save`, the saved one). */
  get checkpoint(): Checkpoint {
    return this.currentCheckpoint;
  }

  get currentProgress(): Progress {
    return this.progressValue;
  }

  /** Artifacts to commit, or undefined when unchanged. */
  get changedArtifacts(): Artifact[] | undefined {
    return this.artifactsChanged ? this.artifactList : undefined;
  }

  /** Records measured progress; it is committed with the next sub-step or step commit. Never invent a percentage. */
  progress(current: number | null, total: number | null, message: string | null = null): void {
    this.progressValue = { current, total, message };
  }

  /** Adds (or replaces, by name) an artifact committed with the next commit. */
  artifact(name: string, data: Json, mediaType = 'application/json'): void {
    serializeJson(data, `artifact "${name}"`);
    const artifact: Artifact = { artifactId: `${this.taskId}:${name}`, name, mediaType, data };
    this.artifactList = [...this.artifactList.filter((a) => a.name !== name), artifact];
    this.artifactsChanged = true;
  }

  /**
   * Commits a sub-step: the checkpoint, progress and artifacts so far, keeping the lease and the step index, so a
   * crash costs at most the work since the last save.
   * Failure semantics: when the commit is refused (lease lost or cancellation requested) this throws StopSignal and
   * the step must not catch it.
   */
  async save(checkpoint: Checkpoint): Promise<void> {
    this.throwIfStopped();
    await this.init.saveSubstep(checkpoint, this.progressValue, this.changedArtifacts);
    this.currentCheckpoint = checkpoint;
    this.artifactsChanged = false;
  }

  /**
   * Runs a side effect at most once per `(task, key)` as far as Belay can tell, and passes `<taskId>:<key>` to it as
   * the idempotency key for the downstream.
   *
   * Failure semantics:
   * - a recorded result is returned without calling `fn` again (replay after a crash or retry);
   * - a crash after the downstream call and before the ledger write leaves the effect `uncertain`: the next attempt
   *   calls `options.reconcile` when given (a result means "it happened"), otherwise calls `fn` again with the SAME
   *   idempotency key, so a downstream that honours keys applies it once;
   * - once cancellation is requested (or the lease is lost) no new effect starts: this throws StopSignal.
   * @example const receipt = await ctx.once(`revoke-${grant.id}`, (key) => iam.revoke(grant.id, { idempotencyKey: key }));
   */
  async once<T extends Json>(key: string, fn: (idempotencyKey: string, signal: AbortSignal) => Promise<T>, options: EffectOptions = {}): Promise<T> {
    if (key.length === 0 || key.length > 200) throw new BelayError('VALIDATION', 'An effect key is 1-200 characters');
    this.throwIfStopped();
    const begun = await this.init.store.beginEffect(this.init.lease, key, this.clock.now());
    if (begun.status === 'applied') return begun.result as T;
    if (begun.status === 'lease_lost' || begun.status === 'cancel_requested') throw new StopSignal(begun.status);
    const idempotencyKey = `${this.taskId}:${key}`;
    let result: Json | undefined;
    if (begun.status === 'uncertain') {
      // Sent before and never confirmed: ask downstream what happened before trying again.
      const kindReconciler = this.init.reconcilers[effectKind(key)];
      if (options.reconcile) result = await options.reconcile(idempotencyKey, this.signal);
      else if (kindReconciler) {
        const found = await kindReconciler({ key, kind: effectKind(key), startedAt: begun.startedAt }, idempotencyKey, this.signal);
        if (found.applied) result = found.result;
      }
    }
    if (result === undefined) {
      this.init.faultPoint('before-effect');
      result = await fn(idempotencyKey, this.signal);
      this.init.faultPoint('after-effect-sent');
    }
    const stored = result === undefined ? null : result;
    try {
      serializeJson(stored, `result of effect "${key}"`);
    } catch (e) {
      throw coerceError(e);
    }
    await this.init.store.completeEffect(this.taskId, key, stored, this.clock.now());
    this.init.faultPoint('after-ledger-write');
    return stored as T;
  }

  /**
   * Asks a question. Returns the answer if it has arrived (even before the question was asked); otherwise pauses
   * the task in `input_required` (the lease is released, the task costs one row) and the step re-runs from its
   * checkpoint when the answer comes. Deadline: `timeoutMs` (default the task type's) after asking; then the task
   * fails or is cancelled with INPUT_DEADLINE_EXPIRED.
   */
  ask<T>(key: string, q: Question<T>): T {
    if (!QUESTION_KEY.test(key)) throw new BelayError('VALIDATION', 'A question key is 1-64 characters of [A-Za-z0-9_-]');
    const isZod = q.schema instanceof z.ZodType;
    if (key in this.init.answers) {
      const raw = this.init.answers[key];
      return isZod ? (q.schema as z.ZodType<T>).parse(raw) : (raw as T);
    }
    const now = this.clock.now();
    const schema = isZod ? (z.toJSONSchema(q.schema as z.ZodType<T>, { io: 'input', unrepresentable: 'any' }) as JsonObject) : (q.schema as JsonObject);
    throw new PauseSignal({
      key,
      question: q.question,
      schema,
      deadlineAt: q.deadlineAt ?? now + (q.timeoutMs ?? this.init.defaultInputTimeoutMs),
      onDeadline: q.onDeadline ?? this.init.defaultOnDeadline,
      ...(q.context === undefined ? {} : { context: q.context }),
      askedAt: now,
    });
  }

  /**
   * Reaches a named crash point (`runtime/fault-points.ts`): a no-op unless the worker was started with one selected
   * (`BELAY_CRASH_AT`, chaos tests). For helpers built on steps, such as the agent loop, to mark their own moments.
   */
  faultPoint(label: string): void {
    this.init.faultPoint(label);
  }

  /** Throws StopSignal when the task was cancelled or the lease lost. Call it between bounded units of work. */
  throwIfStopped(): void {
    if (this.signal.aborted) {
      const reason: unknown = this.signal.reason;
      throw reason instanceof StopSignal ? reason : new StopSignal('cancel_requested');
    }
  }
}
