/**
 * @module runtime/task-runner
 * Runs one claimed task under its lease: step after step from the checkpoint, each commit fenced, until it
 * pauses, finishes, fails, is cancelled or loses its lease.
 *
 * Failure semantics: whatever a step did before its commit is redone after a crash (the step re-runs from the last
 * committed checkpoint); its side effects are protected by the ledger (`ctx.once`). A runner that loses its lease
 * stops without writing anything further: the fence refuses its commits and its new effects.
 */
import type { Clock } from '../core/clock.js';
import { BelayError, RetryableError, TerminalError, coerceError, isBelayError, taskErrorFrom, type TaskError } from '../core/errors.js';
import { serializeJson } from '../core/limits.js';
import type { Logger } from '../core/logger.js';
import type { Artifact, Json, Progress, Task, TaskEventKind } from '../core/task.js';
import type { ClaimedTask, CommitKind, Lease, Store, TaskCommit } from '../store/port.js';
import { PauseSignal, StepContext, StopSignal } from './step-context.js';
import type { TaskType } from './task-type.js';

export interface RunnerEnvironment {
  store: Store;
  clock: Clock;
  logger: Logger;
  leaseMs: number;
  retentionMs: number;
  defaultInputTimeoutMs: number;
  random: () => number;
  faultPoint(label: string): void;
  /** True once the worker is shutting down: finish the current step, then give the lease back. */
  draining(): boolean;
}

export type RunOutcome = 'completed' | 'failed' | 'canceled' | 'paused' | 'retry' | 'lease_lost' | 'released' | 'store_error';

/** Thrown internally when a step's output cannot be committed (checkpoint or result not serialisable). */
class CommitInputError extends Error {
  constructor(override readonly cause: BelayError) {
    super(cause.message);
  }
}

export class TaskRunner {
  private readonly controller = new AbortController();
  private readonly keeperStop = new AbortController();
  private task: Task;
  private readonly lease: Lease;
  private artifacts: Artifact[];
  private progress: Progress;
  /** The last committed position: failure and cancel commits keep it. */
  private committedStep: number;
  private committedCheckpoint: Json;

  constructor(
    claimed: ClaimedTask,
    private readonly type: TaskType<any, any>,
    private readonly env: RunnerEnvironment,
  ) {
    this.task = claimed.task;
    this.lease = claimed.lease;
    this.artifacts = claimed.task.artifacts;
    this.progress = claimed.task.progress;
    this.committedStep = claimed.task.step;
    this.committedCheckpoint = claimed.task.checkpoint;
  }

  get taskId(): string {
    return this.task.id;
  }

  /** Checks the lease now (used when a cancellation notification arrives). */
  async checkLease(): Promise<void> {
    if (this.controller.signal.aborted) return;
    const r = await this.env.store.renewLease(this.lease, this.env.clock.now(), this.env.leaseMs);
    if (r.status === 'lost') this.controller.abort(new StopSignal('lease_lost'));
    else if (r.cancelRequested) this.controller.abort(new StopSignal('cancel_requested'));
  }

  /** Aborts the running step (worker shutdown past its grace period). */
  abort(): void {
    this.controller.abort(new StopSignal('lease_lost'));
  }

  async run(): Promise<RunOutcome> {
    const keeper = this.keepLease();
    try {
      return await this.runSteps();
    } catch (e) {
      // Store errors (a restarting database, a broken connection) end this run; the lease expires and another
      // worker, or this one, claims the task again from its last commit.
      this.env.logger.error({ err: coerceError(e), taskId: this.task.id }, 'task run aborted by an unexpected error');
      return 'store_error';
    } finally {
      this.keeperStop.abort();
      await keeper;
    }
  }

  private async keepLease(): Promise<void> {
    const interval = Math.max(1, Math.floor(this.env.leaseMs / 3));
    for (;;) {
      try {
        await this.env.clock.sleep(interval, this.keeperStop.signal);
      } catch {
        return;
      }
      try {
        await this.checkLease();
      } catch (e) {
        this.env.logger.warn({ err: coerceError(e), taskId: this.task.id }, 'lease renewal failed; will retry');
      }
      if (this.controller.signal.aborted) return;
    }
  }

  private async runSteps(): Promise<RunOutcome> {
    const policy = this.type.retryPolicy;
    if (this.task.cancelRequestedAt !== null) return this.finishCanceled();
    if (this.task.attempts > policy.maxAttempts) {
      return this.finishFailed(
        taskErrorFrom('ATTEMPTS_EXHAUSTED', `Step ${this.stepName(this.task.step)} was attempted ${this.task.attempts - 1} times`, {
          step: this.stepName(this.task.step),
        }),
      );
    }
    this.env.faultPoint('after-claim');
    let step = this.task.step;
    let checkpoint: Json = step === 0 && this.task.checkpoint === null ? (this.type.initialCheckpoint(this.task.input) as Json) : this.task.checkpoint;
    let attempt = this.task.attempts;
    while (step < this.type.steps.length) {
      const def = this.type.steps[step]!;
      const ctx = new StepContext<any, any>({
        taskId: this.task.id,
        tenant: this.task.tenant,
        requestedBy: this.task.createdBy,
        input: this.task.input,
        checkpoint,
        stepName: def.name,
        stepIndex: step,
        attempt,
        answers: this.task.answers,
        artifacts: this.artifacts,
        progress: this.progress,
        signal: this.controller.signal,
        clock: this.env.clock,
        store: this.env.store,
        lease: this.lease,
        defaultInputTimeoutMs: this.type.defaultInputTimeoutMs ?? this.env.defaultInputTimeoutMs,
        defaultOnDeadline: this.type.onDeadline ?? 'fail',
        saveSubstep: (cp, progress, artifacts) => this.saveSubstep(step, cp, progress, artifacts),
        faultPoint: (label) => this.env.faultPoint(label),
      });
      let next: Json;
      try {
        next = (await def.run(ctx)) as Json;
        ctx.throwIfStopped();
      } catch (e) {
        if (e instanceof PauseSignal) {
          const paused = await this.pause(ctx, e);
          if (paused === 'answer_arrived') {
            const fresh = await this.env.store.getTask(this.task.id);
            if (!fresh) return 'lease_lost';
            this.task = { ...this.task, answers: fresh.answers };
            checkpoint = ctx.checkpoint;
            continue;
          }
          return paused;
        }
        return this.handleStepError(e, ctx, step);
      }
      this.progress = ctx.currentProgress;
      if (ctx.changedArtifacts) this.artifacts = ctx.changedArtifacts;
      const last = step + 1 === this.type.steps.length;
      this.env.faultPoint('before-step-commit');
      let outcome;
      try {
        outcome = last ? await this.complete(step + 1, next, ctx.changedArtifacts) : await this.commitProgress(step + 1, next, ctx.changedArtifacts);
      } catch (e) {
        if (e instanceof CommitInputError) return this.finishFailed(taskErrorFrom(e.cause.code, e.cause.message, { step: def.name }));
        throw e;
      }
      if (!outcome.ok) return this.afterRefusedCommit(outcome.reason);
      this.env.faultPoint('after-step-commit');
      if (last) return 'completed';
      step += 1;
      checkpoint = next;
      this.committedStep = step;
      this.committedCheckpoint = next;
      attempt = 1;
      if (this.env.draining()) {
        await this.env.store.releaseLease(this.lease, this.env.clock.now());
        return 'released';
      }
    }
    return 'completed';
  }

  private stepName(index: number): string {
    return this.type.steps[index]?.name ?? `#${index}`;
  }

  private base(kind: CommitKind, step: number, checkpoint: Json, event: { kind: TaskEventKind; body: Record<string, Json> }): TaskCommit {
    const now = this.env.clock.now();
    return {
      lease: this.lease,
      now,
      kind,
      state: 'working',
      step,
      checkpoint,
      progress: this.progress,
      pendingInput: null,
      result: null,
      artifacts: undefined,
      error: null,
      leaseUntil: null,
      wakeAt: null,
      resetAttempts: false,
      expiresAt: null,
      event,
    };
  }

  private checkSerializable(checkpoint: Json, what: string): void {
    try {
      serializeJson(checkpoint, what);
    } catch (e) {
      if (isBelayError(e)) throw new CommitInputError(e);
      throw e;
    }
  }

  private stepEventBody(step: number, completed: string | null): Record<string, Json> {
    return {
      state: 'working',
      step,
      step_name: this.type.steps[step]?.name ?? null,
      completed_step: completed,
      steps_total: this.type.steps.length,
      progress: this.progress as unknown as Json,
    };
  }

  private async commitProgress(step: number, checkpoint: Json, artifacts: Artifact[] | undefined) {
    this.checkSerializable(checkpoint, 'checkpoint');
    const now = this.env.clock.now();
    return this.env.store.commit({
      ...this.base('progress', step, checkpoint, { kind: 'progress', body: this.stepEventBody(step, this.type.steps[step - 1]?.name ?? null) }),
      artifacts,
      leaseUntil: now + this.env.leaseMs,
      wakeAt: now + this.env.leaseMs,
      resetAttempts: true,
    });
  }

  private async saveSubstep(step: number, checkpoint: Json, progress: Progress, artifacts: Artifact[] | undefined): Promise<void> {
    this.progress = progress;
    if (artifacts) this.artifacts = artifacts;
    try {
      this.checkSerializable(checkpoint, 'checkpoint');
    } catch (e) {
      if (e instanceof CommitInputError) throw new TerminalError(e.cause.code, e.cause.message);
      throw e;
    }
    const now = this.env.clock.now();
    this.env.faultPoint('before-step-commit');
    const out = await this.env.store.commit({
      ...this.base('progress', step, checkpoint, { kind: 'progress', body: { ...this.stepEventBody(step, null), substep: true } }),
      artifacts,
      leaseUntil: now + this.env.leaseMs,
      wakeAt: now + this.env.leaseMs,
    });
    if (!out.ok) {
      if (out.reason === 'cancel_requested') this.controller.abort(new StopSignal('cancel_requested'));
      else this.controller.abort(new StopSignal('lease_lost'));
      throw this.controller.signal.reason as StopSignal;
    }
    this.committedCheckpoint = checkpoint;
    this.env.faultPoint('after-step-commit');
  }

  private async complete(step: number, checkpoint: Json, artifacts: Artifact[] | undefined) {
    this.checkSerializable(checkpoint, 'checkpoint');
    const result: Json = this.type.result ? this.type.result(checkpoint, this.task.input) : checkpoint;
    this.checkSerializable(result, 'result');
    const now = this.env.clock.now();
    return this.env.store.commit({
      ...this.base('complete', step, checkpoint, {
        kind: 'completed',
        body: { state: 'completed', step, steps_total: this.type.steps.length, progress: this.progress as unknown as Json },
      }),
      state: 'completed',
      result,
      artifacts,
      expiresAt: now + this.env.retentionMs,
    });
  }

  private async pause(ctx: StepContext<any, any>, signal: PauseSignal): Promise<RunOutcome | 'answer_arrived'> {
    this.progress = ctx.currentProgress;
    if (ctx.changedArtifacts) this.artifacts = ctx.changedArtifacts;
    const pending = signal.pending;
    try {
      serializeJson(pending, 'question');
      this.checkSerializable(ctx.checkpoint as Json, 'checkpoint');
    } catch (e) {
      const err = e instanceof CommitInputError ? e.cause : isBelayError(e) ? e : new BelayError('INVALID_JSON', coerceError(e).message);
      return this.finishFailed(taskErrorFrom(err.code, err.message, { step: ctx.stepName }));
    }
    const out = await this.env.store.commit({
      ...this.base('pause', ctx.stepIndex, ctx.checkpoint as Json, {
        kind: 'input_required',
        body: {
          state: 'input_required',
          step: ctx.stepIndex,
          step_name: ctx.stepName,
          key: pending.key,
          question: pending.question,
          schema: pending.schema,
          deadline_at: pending.deadlineAt,
          ...(pending.context === undefined ? {} : { context: pending.context }),
        },
      }),
      state: 'input_required',
      pendingInput: pending,
      artifacts: ctx.changedArtifacts,
      wakeAt: pending.deadlineAt,
    });
    if (out.ok) return 'paused';
    if (out.reason === 'answer_arrived') return 'answer_arrived';
    return this.afterRefusedCommit(out.reason);
  }

  private async handleStepError(e: unknown, ctx: StepContext<any, any>, step: number): Promise<RunOutcome> {
    const stop = e instanceof StopSignal ? e : this.controller.signal.aborted ? (this.controller.signal.reason as StopSignal) : null;
    if (stop) return stop.reason === 'cancel_requested' ? this.finishCanceled() : 'lease_lost';
    if (isBelayError(e, 'LEASE_LOST')) return 'lease_lost';
    if (isBelayError(e, 'CANCEL_REQUESTED')) return this.finishCanceled();
    this.progress = ctx.currentProgress;
    if (e instanceof TerminalError) {
      return this.finishFailed({ code: e.code, message: e.message, owner: 'caller', retryable: false, details: { step: ctx.stepName, ...e.details } });
    }
    if (isBelayError(e) && !e.retryable) return this.finishFailed(taskErrorFrom(e.code, e.message, { step: ctx.stepName }));
    const err = coerceError(e);
    const policy = this.type.retryPolicy;
    const code = e instanceof RetryableError ? (e.options.code ?? 'STEP_FAILED') : 'STEP_FAILED';
    const lastError: TaskError = { code, message: err.message, owner: 'worker', retryable: true, details: { step: ctx.stepName, attempt: ctx.attempt } };
    if (ctx.attempt >= policy.maxAttempts) {
      return this.finishFailed({ ...taskErrorFrom('ATTEMPTS_EXHAUSTED', `Step ${ctx.stepName} failed ${ctx.attempt} times: ${err.message}`), details: { step: ctx.stepName, last_error: lastError as unknown as Json } });
    }
    const backoff = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** Math.max(0, ctx.attempt - 1));
    // Full jitter in [backoff/2, backoff]: spreads retries of many tasks that failed together.
    const jittered = Math.floor(backoff / 2 + (this.env.random() * backoff) / 2);
    const delay = e instanceof RetryableError && e.options.retryAfterMs !== undefined ? Math.max(e.options.retryAfterMs, 0) : jittered;
    const now = this.env.clock.now();
    this.env.logger.warn({ taskId: this.task.id, step: ctx.stepName, attempt: ctx.attempt, delayMs: delay, err }, 'step failed; retry scheduled');
    const out = await this.env.store.commit({
      ...this.base('retry', step, ctx.checkpoint as Json, {
        kind: 'retry_scheduled',
        body: { state: 'working', step, step_name: ctx.stepName, attempt: ctx.attempt, retry_at: now + delay, error: lastError as unknown as Json },
      }),
      error: lastError,
      wakeAt: now + delay,
    });
    if (out.ok) return 'retry';
    return this.afterRefusedCommit(out.reason);
  }

  private async afterRefusedCommit(reason: 'lease_lost' | 'cancel_requested' | 'answer_arrived'): Promise<RunOutcome> {
    if (reason === 'cancel_requested') return this.finishCanceled();
    if (reason === 'lease_lost') this.env.logger.info({ taskId: this.task.id, fence: this.lease.fence }, 'lease lost; abandoning without writing');
    return 'lease_lost';
  }

  private async finishFailed(error: TaskError): Promise<RunOutcome> {
    const now = this.env.clock.now();
    const out = await this.env.store.commit({
      ...this.base('fail', this.committedStep, this.committedCheckpoint, { kind: 'failed', body: { state: 'failed', error: error as unknown as Json } }),
      state: 'failed',
      error,
      expiresAt: now + this.env.retentionMs,
    });
    if (out.ok) return 'failed';
    return this.afterRefusedCommit(out.reason);
  }

  /** Commits `canceled`, reporting which effects had already happened (they are never hidden). */
  private async finishCanceled(): Promise<RunOutcome> {
    const effects = await this.env.store.listEffects(this.task.id);
    const applied = effects.filter((e) => e.status === 'applied').map((e) => e.key);
    const uncertain = effects.filter((e) => e.status === 'pending').map((e) => e.key);
    const error = taskErrorFrom('CANCELLED', 'Cancelled on request', { effects_applied: applied, effects_uncertain: uncertain });
    const now = this.env.clock.now();
    const out = await this.env.store.commit({
      ...this.base('cancel', this.committedStep, this.committedCheckpoint, {
        kind: 'canceled',
        body: { state: 'canceled', effects_applied: applied, effects_uncertain: uncertain },
      }),
      state: 'canceled',
      error,
      expiresAt: now + this.env.retentionMs,
    });
    if (out.ok) return 'canceled';
    return 'lease_lost';
  }
}
