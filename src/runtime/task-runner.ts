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
import type { Artifact, Json, PendingInput, Progress, SideEffectRecord, Task, TaskEventKind } from '../core/task.js';
import type { ClaimedTask, CommitKind, CommitOutcome, Lease, Store, TaskCommit } from '../store/port.js';
import { PauseSignal, StepContext, StopSignal } from './step-context.js';
import { effectKind, type TaskType } from './task-type.js';

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
  /** Built-in re-validation: a requester disabled since the task started is refused on resume. */
  principals?: PrincipalDirectory;
  /**
   * `true`: the run's last commit (complete, pause, fail) is being sent and no step code runs any more, so its slot
   * may take the next task while the commit is in flight. `false`: that commit was refused (a cancellation or an
   * answer arrived first) and the run goes on.
   */
  finishing?(on: boolean): void;
}

/** Who may still act. Backed by the store's disabled-principals list, or by the product's own directory. */
export interface PrincipalDirectory {
  isDisabled(tenant: string, principal: string): Promise<boolean>;
}

export type RunOutcome = 'completed' | 'failed' | 'canceled' | 'cancel_pending' | 'paused' | 'retry' | 'lease_lost' | 'released' | 'store_error';

/** Thrown internally when a step's output cannot be committed (checkpoint or result not serialisable). */
class CommitInputError extends Error {
  constructor(override readonly cause: BelayError) {
    super(cause.message);
  }
}

export class TaskRunner {
  private readonly controller = new AbortController();
  private readonly keeperStop = new AbortController();
  private lost = false;
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
  /**
   * Renews the lease now (also used when a cancellation notification arrives). A cancellation aborts the step but
   * the lease is still renewed: the runner keeps working on the cancellation (reconciling, compensating) under it.
   */
  async checkLease(): Promise<'ok' | 'lost'> {
    if (this.lost) return 'lost';
    const r = await this.env.store.renewLease(this.lease, this.env.clock.now(), this.env.leaseMs);
    if (r.status === 'lost') {
      this.lost = true;
      this.controller.abort(new StopSignal('lease_lost'));
      return 'lost';
    }
    if (r.cancelRequested && !this.controller.signal.aborted) this.controller.abort(new StopSignal('cancel_requested'));
    return 'ok';
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
        if ((await this.checkLease()) === 'lost') return;
      } catch (e) {
        this.env.logger.warn({ err: coerceError(e), taskId: this.task.id }, 'lease renewal failed; will retry');
      }
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
    const fresh = step === 0 && this.task.checkpoint === null && this.task.attempts <= 1;
    let checkpoint: Json = step === 0 && this.task.checkpoint === null ? (this.type.initialCheckpoint(this.task.input) as Json) : this.task.checkpoint;
    if (!fresh) {
      const verdict = await this.revalidate(step, checkpoint);
      if (verdict) return verdict;
    }
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
        reconcilers: this.type.reconcilers ?? {},
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

  /**
   * Re-validation on resume: the checkpoint says where the task stopped, not that its requester may still act.
   * Returns an outcome when the task must not go on.
   */
  private async revalidate(step: number, checkpoint: Json): Promise<RunOutcome | null> {
    const { tenant, createdBy } = this.task;
    if (this.env.principals && (await this.env.principals.isDisabled(tenant, createdBy))) {
      return this.finishFailed(taskErrorFrom('AUTHORIZATION_REVOKED', `The requester "${createdBy}" has been disabled since the task started`, { principal: createdBy }));
    }
    if (!this.type.revalidate) return null;
    const reason = this.task.attempts > 1 ? (this.task.error ? 'retry' : 'recovery') : 'resume';
    const verdict = await this.type.revalidate({
      taskId: this.task.id,
      requester: { tenant, principal: createdBy },
      input: this.task.input,
      checkpoint,
      step,
      reason,
      answers: this.task.answers,
      signal: this.controller.signal,
    });
    if (!verdict || 'ok' in verdict) return null;
    if ('fail' in verdict) return this.finishFailed({ code: verdict.fail.code, message: verdict.fail.message, owner: 'caller', retryable: false, details: { step: this.stepName(step), revalidation: true } });
    const now = this.env.clock.now();
    const out = await this.commitPause(
      {
        key: verdict.ask.key,
        question: verdict.ask.question,
        schema: verdict.ask.schema,
        deadlineAt: now + (verdict.ask.timeoutMs ?? this.type.defaultInputTimeoutMs ?? this.env.defaultInputTimeoutMs),
        onDeadline: this.type.onDeadline ?? 'fail',
        ...(verdict.ask.context === undefined ? {} : { context: verdict.ask.context }),
        askedAt: now,
      },
      step,
      checkpoint,
      undefined,
    );
    // An answer already given means the hook has what it asked for: go on.
    return out === 'answer_arrived' ? null : out;
  }

  private stepName(index: number): string {
    return this.type.steps[index]?.name ?? `#${index}`;
  }

  /**
   * Every worker commit's event carries the fence of the lease it was written under, so a history can prove that no
   * commit was made with an old fence (the chaos history checker compares it with the fence granted at that seq).
   */
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
      event: { kind: event.kind, body: { ...event.body, fence: this.lease.fence } },
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
      // A sub-step that committed is progress: a later crash in this step starts counting attempts afresh.
      resetAttempts: true,
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
    return this.lastCommit({
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

  /** A commit that ends the run when it succeeds; see `RunnerEnvironment.finishing`. */
  private async lastCommit(commit: TaskCommit): Promise<CommitOutcome> {
    this.env.finishing?.(true);
    let out: CommitOutcome;
    try {
      out = await this.env.store.commit(commit);
    } catch (e) {
      this.env.finishing?.(false);
      throw e;
    }
    if (!out.ok) this.env.finishing?.(false);
    return out;
  }

  private async pause(ctx: StepContext<any, any>, signal: PauseSignal): Promise<RunOutcome | 'answer_arrived'> {
    this.progress = ctx.currentProgress;
    if (ctx.changedArtifacts) this.artifacts = ctx.changedArtifacts;
    return this.commitPause(signal.pending, ctx.stepIndex, ctx.checkpoint as Json, ctx.changedArtifacts);
  }

  /** Commits `input_required` with the question and releases the lease: the pause costs one row. */
  private async commitPause(pending: PendingInput, stepIndex: number, checkpoint: Json, artifacts: Artifact[] | undefined): Promise<RunOutcome | 'answer_arrived'> {
    const stepName = this.stepName(stepIndex);
    try {
      serializeJson(pending, 'question');
      this.checkSerializable(checkpoint, 'checkpoint');
    } catch (e) {
      const err = e instanceof CommitInputError ? e.cause : isBelayError(e) ? e : new BelayError('INVALID_JSON', coerceError(e).message);
      return this.finishFailed(taskErrorFrom(err.code, err.message, { step: stepName }));
    }
    const out = await this.lastCommit({
      ...this.base('pause', stepIndex, checkpoint, {
        kind: 'input_required',
        body: {
          state: 'input_required',
          step: stepIndex,
          step_name: stepName,
          key: pending.key,
          question: pending.question,
          schema: pending.schema,
          deadline_at: pending.deadlineAt,
          ...(pending.context === undefined ? {} : { context: pending.context }),
        },
      }),
      state: 'input_required',
      pendingInput: pending,
      artifacts,
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

  /**
   * Which effects happened: applied (the ledger has their result), uncertain (sent, never confirmed), and never
   * started (planned by the task type and absent from the ledger). Compensations are reported apart.
   */
  private effectsReport(effects: SideEffectRecord[]): { effects_applied: string[]; effects_uncertain: string[]; effects_not_started: string[] } {
    const own = effects.filter((e) => !e.key.startsWith('compensate:'));
    const known = new Set(own.map((e) => e.key));
    // Before the first commit the row has no checkpoint yet: the plan starts from the initial one (a task type's
    // plannedEffects reads its own checkpoint shape; handing it null made cancelling such a task throw, forever).
    const checkpoint = this.committedCheckpoint === null && this.committedStep === 0 ? (this.type.initialCheckpoint(this.task.input) as Json) : this.committedCheckpoint;
    const planned = this.type.plannedEffects ? this.type.plannedEffects(checkpoint, this.task.input) : [];
    return {
      effects_applied: own.filter((e) => e.status === 'applied').map((e) => e.key),
      effects_uncertain: own.filter((e) => e.status === 'pending').map((e) => e.key),
      effects_not_started: planned.filter((k) => !known.has(k)),
    };
  }

  private async finishFailed(error: TaskError): Promise<RunOutcome> {
    const report = this.effectsReport(await this.env.store.listEffects(this.task.id));
    error = { ...error, details: { ...error.details, ...report } };
    const now = this.env.clock.now();
    const out = await this.lastCommit({
      ...this.base('fail', this.committedStep, this.committedCheckpoint, { kind: 'failed', body: { state: 'failed', error: error as unknown as Json } }),
      state: 'failed',
      error,
      expiresAt: now + this.env.retentionMs,
    });
    if (out.ok) return 'failed';
    return this.afterRefusedCommit(out.reason);
  }

  /**
   * Carries a cancellation out. Effects whose outcome is unknown are reconciled first (a cancellation that cannot
   * stop external work stays "cancel requested" until the outcome is known); then declared compensations run, each
   * once, as its own ledgered effect `compensate:<key>`; then `canceled` is committed with the full report.
   * Failure semantics: a crash anywhere here leaves the task working with its cancellation requested; the next
   * claim resumes this procedure, and the ledger keeps every compensation to one application.
   */
  private async finishCanceled(): Promise<RunOutcome> {
    // The step's signal has fired (that is how the cancellation reached it); compensations get their own.
    const signal = new AbortController().signal;
    let effects = await this.env.store.listEffects(this.task.id);
    const reconciled: Array<{ key: string; applied: boolean }> = [];
    let unknown = 0;
    for (const e of effects.filter((x) => x.status === 'pending' && !x.key.startsWith('compensate:'))) {
      const reconciler = this.type.reconcilers?.[effectKind(e.key)];
      if (!reconciler) continue;
      try {
        const found = await reconciler({ key: e.key, kind: effectKind(e.key), startedAt: e.startedAt }, `${this.task.id}:${e.key}`, signal);
        if (found.applied) await this.env.store.completeEffect(this.task.id, e.key, found.result, this.env.clock.now());
        reconciled.push({ key: e.key, applied: found.applied });
      } catch (err) {
        unknown += 1;
        this.env.logger.warn({ taskId: this.task.id, effect: e.key, err: coerceError(err) }, 'outcome still unknown; cancellation stays requested');
      }
    }
    if (unknown > 0) return this.settleLater(`${unknown} effect outcome(s) still unknown`);
    if (reconciled.length > 0) effects = await this.env.store.listEffects(this.task.id);

    const compensations: Array<{ effect: string; status: 'compensated'; result: Json }> = [];
    const applied = effects.filter((e) => e.status === 'applied' && !e.key.startsWith('compensate:')).reverse();
    for (const e of applied) {
      const compensate = this.type.compensations?.[effectKind(e.key)];
      if (!compensate) continue;
      const key = `compensate:${e.key}`;
      const begun = await this.env.store.beginEffect(this.lease, key, this.env.clock.now(), { duringCancel: true });
      if (begun.status === 'lease_lost') return 'lease_lost';
      let result: Json;
      if (begun.status === 'applied') result = begun.result;
      else {
        try {
          result = await compensate({ key: e.key, kind: effectKind(e.key), result: e.result, startedAt: e.startedAt }, `${this.task.id}:${key}`, signal);
        } catch (err) {
          this.env.logger.warn({ taskId: this.task.id, effect: key, err: coerceError(err) }, 'compensation failed; will retry');
          return this.settleLater(`compensation of ${e.key} failed: ${coerceError(err).message}`);
        }
        this.env.faultPoint('after-compensation');
        await this.env.store.completeEffect(this.task.id, key, result, this.env.clock.now());
      }
      compensations.push({ effect: e.key, status: 'compensated', result });
    }

    const report = this.effectsReport(await this.env.store.listEffects(this.task.id));
    const notApplied = reconciled.filter((r) => !r.applied).map((r) => r.key);
    const details = {
      ...report,
      effects_uncertain: report.effects_uncertain.filter((k) => !notApplied.includes(k)),
      effects_not_applied: notApplied,
      compensations: compensations as unknown as Json,
    };
    const error = taskErrorFrom('CANCELLED', 'Cancelled on request', details);
    const now = this.env.clock.now();
    const out = await this.env.store.commit({
      ...this.base('cancel', this.committedStep, this.committedCheckpoint, { kind: 'canceled', body: { state: 'canceled', ...details } }),
      state: 'canceled',
      error,
      expiresAt: now + this.env.retentionMs,
    });
    if (out.ok) return 'canceled';
    return 'lease_lost';
  }

  /** Keeps the task working with its cancellation requested and comes back later (backoff, jittered). */
  private async settleLater(why: string): Promise<RunOutcome> {
    const attempt = Math.max(1, this.task.attempts);
    const policy = this.type.retryPolicy;
    const backoff = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** (attempt - 1));
    const delay = Math.floor(backoff / 2 + (this.env.random() * backoff) / 2);
    const now = this.env.clock.now();
    const out = await this.env.store.commit({
      ...this.base('settle', this.committedStep, this.committedCheckpoint, {
        kind: 'retry_scheduled',
        body: { state: 'working', cancel_requested: true, reason: why, retry_at: now + delay },
      }),
      wakeAt: now + delay,
      error: taskErrorFrom('CANCEL_REQUESTED', `Cancellation requested; waiting to settle: ${why}`),
    });
    return out.ok ? 'cancel_pending' : 'lease_lost';
  }
}
