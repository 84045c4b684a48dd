/**
 * @module agent/define-agent-task-type
 * Makes a model + tools loop durable: turns a Vercel AI SDK language model and a set of tools into a Belay task type.
 *
 * Belay owns the loop. Each turn is one `generateText` call of exactly one step (`stopWhen: stepCountIs(1)`, tools
 * given to the model without `execute`), so the SDK never runs a tool by itself. Then:
 * - the model's response is appended to the conversation in the checkpoint and committed (`ctx.save`) BEFORE any of
 *   its tool calls runs: a committed model response is never requested again, whatever crashes afterwards;
 * - each tool call is a sub-step commit of its own. A tool with `runOnce` (the default) runs through the run-once
 *   ledger (`ctx.once`) keyed by the call (`revoke:turn-3/call-0`) and gets `<taskId>:<that key>` as the idempotency
 *   key to pass downstream, so a crash between the tool's effect and the next commit replays the recorded result;
 *   a tool with `runOnce: false` (reads, questions) may run again if a crash hits before its result is committed;
 * - a tool can ask a person (`tc.ask`): the task goes `input_required`, releases its lease, and the tool runs again
 *   with the answer when it comes;
 * - cancellation (or a lost lease) aborts the in-flight model call and tools through `ctx.signal`; the cancelled
 *   task lists the tool effects that had already happened (`error.details.effects_applied`);
 * - turn count and token usage are reported as progress after every commit; `maxTurns` and `maxTotalTokens` end
 *   the task with `AGENT_TURN_BUDGET_EXCEEDED` / `AGENT_TOKEN_BUDGET_EXCEEDED` before another model call or tool
 *   call is spent past them.
 *
 * Failure semantics of errors: a `TerminalError` (from a tool or the model wrapper) fails the task at once; a model
 * API error the SDK marks non-retryable (a 400, 401...) fails it with `AGENT_MODEL_ERROR`; throw `AgentToolError` to
 * hand an error to the model as the tool's result instead; anything else is retried with exponential backoff from
 * the last commit (the committed turns and tool results are not repeated). The retry budget counts failures since
 * the agent last made progress (a commit), not over the agent's whole life, so a long agent that pauses for many
 * questions does not run out of attempts.
 */
import { APICallError, generateText, RetryError, stepCountIs, tool as sdkTool, type FlexibleSchema, type LanguageModel, type ModelMessage, type ToolSet } from 'ai';
import type { z } from 'zod';
import type { Clock } from '../core/clock.js';
import { BelayError, RetryableError, TerminalError, coerceError, isBelayError } from '../core/errors.js';
import type { DeadlineAction, Json } from '../core/task.js';
import { PauseSignal, StopSignal, type EffectOptions, type Question, type StepContext } from '../runtime/step-context.js';
import {
  DEFAULT_RETRY,
  defineTaskType,
  type EffectCompensation,
  type EffectReconciler,
  type ResumeContext,
  type RetryPolicy,
  type RevalidateOutcome,
  type TaskType,
} from '../runtime/task-type.js';

// ---- What a tool sees -------------------------------------------------------------------------------------------

/** Given to every tool call. */
export interface AgentToolContext<TaskInput = unknown> {
  readonly taskId: string;
  /** The task's (validated) input. */
  readonly taskInput: TaskInput;
  /** The model turn (1-based) that asked for this call. */
  readonly turn: number;
  readonly toolCallId: string;
  readonly toolName: string;
  /** This call's run-once ledger key: `<toolName>:turn-<n>/call-<i>`, for example `revoke:turn-3/call-0`. */
  readonly effectKey: string;
  /**
   * `<taskId>:<effectKey>`, stable across crashes and retries: pass it downstream as the idempotency key. For a
   * `runOnce` tool it is the key the ledger records the whole call under.
   */
  readonly idempotencyKey: string;
  /** Fires when the task is cancelled or the lease is lost: pass it to every call that can take long. */
  readonly signal: AbortSignal;
  readonly clock: Clock;
  /**
   * Runs one side effect through the run-once ledger under `<key>:turn-<n>/call-<i>/<toolName>` (see
   * `StepContext.once`; its kind is `key`). Use it in `runOnce: false` tools, for instance to act after asking a
   * person.
   */
  once<T extends Json>(key: string, fn: (idempotencyKey: string, signal: AbortSignal) => Promise<T>, options?: EffectOptions): Promise<T>;
  /**
   * Asks a person and returns the answer; until it arrives the task waits in `input_required` (lease released) and
   * this tool runs again from its start when it comes. The question key is derived from the call
   * (`turn-3-call-0`, plus `-<key>` when given). Only in `runOnce: false` tools: a `runOnce` tool would hold its
   * ledger entry open (reported as an uncertain effect) for as long as nobody answers.
   */
  ask<T>(question: Question<T>, key?: string): T;
  /** Adds (or replaces, by name) a task artifact, committed with this call's result. */
  artifact(name: string, data: Json, mediaType?: string): void;
}

export interface AgentTool<ToolInput = any, TaskInput = any> {
  description?: string;
  /** The input the model must produce (a zod schema, or `jsonSchema(...)` from `ai`). Invalid input never runs. */
  inputSchema: FlexibleSchema<ToolInput>;
  /**
   * true (default): the whole call runs through the run-once ledger: its result is recorded before the next commit,
   * a replay after a crash returns it without calling `execute` again, and `tc.idempotencyKey` goes downstream.
   * false: for reads and questions; the result is committed with the conversation and a crash before that commit
   * runs the call again. Such a tool may still act through `tc.once`.
   */
  runOnce?: boolean;
  /**
   * Returns the tool's result: JSON (checked when it is committed; a value that is not JSON fails the task with
   * INVALID_JSON), a string is sent to the model as text, undefined as null. Throw `AgentToolError` to give the model
   * an error as the result, `TerminalError` to fail the task, anything else to retry the call later.
   */
  execute(input: ToolInput, tc: AgentToolContext<TaskInput>): unknown;
  /**
   * Run-once tools: learns from downstream whether a call that was sent and never confirmed (a crash between the
   * downstream call and the ledger write) happened, instead of calling `execute` again. Throwing means "still unknown".
   */
  reconcile?: (call: { effectKey: string; startedAt: number }, idempotencyKey: string, signal: AbortSignal) => Promise<{ applied: true; result: unknown } | { applied: false }>;
  /**
   * Run-once tools: undoes an applied call after the task is cancelled. Runs once per call (ledgered as
   * `compensate:<effectKey>`), newest first, before the task commits `canceled`; `result` is what `execute` returned.
   */
  compensate?: (call: { effectKey: string; result: Json }, idempotencyKey: string, signal: AbortSignal) => Promise<Json>;
}

/**
 * Identity helper that infers a tool's input type from its schema; annotate `tc` (`AgentToolContext<MyInput>`) to
 * type the task input.
 */
export function agentTool<ToolInput, TaskInput = any>(def: AgentTool<ToolInput, TaskInput>): AgentTool<ToolInput, TaskInput> {
  return def;
}

/** Thrown by a tool to report an error to the model (as the tool's result) rather than retrying or failing. */
export class AgentToolError extends Error {
  override name = 'AgentToolError';
}

// ---- The checkpoint ---------------------------------------------------------------------------------------------

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** What a tool call's result becomes in the conversation (AI SDK tool-result outputs). */
export type AgentToolOutput = { type: 'json'; value: Json } | { type: 'text'; value: string } | { type: 'error-text'; value: string };

export interface AgentToolCallRecord {
  toolCallId: string;
  toolName: string;
  input: Json;
  /** Run-once ledger key of the call. */
  key: string;
  /** Question key prefix of the call. */
  questionKey: string;
  /** Present once the call's result is committed. */
  output?: AgentToolOutput;
}

export interface AgentCheckpoint {
  /**
   * The conversation (AI SDK model messages, as JSON), without the system prompt. Kept inline, so bounded by the
   * store's JSON limit (1 MiB: past it the task fails with PAYLOAD_TOO_LARGE), except the large results of run-once
   * tools, which stay in the ledger (see `refs`).
   */
  messages: ModelMessage[];
  /** Model turns committed so far. */
  turn: number;
  usage: TokenUsage;
  /** Tool calls of the last committed turn whose results are not yet in `messages`. */
  calls: AgentToolCallRecord[];
  /**
   * Tool results kept by reference: tool call id -> run-once ledger key. In `messages` such a result is a short text
   * placeholder; the model gets the full result from the ledger on every turn.
   */
  refs: Record<string, string>;
  /** Set when the model answered without calling a tool: the loop is done. */
  final: { text: string; finishReason: string } | null;
  /** The worker attempt before the last commit: failures are counted from here (see the module's failure semantics). */
  attemptBase: number;
}

/** What `result` receives. */
export interface AgentOutcome {
  text: string;
  finishReason: string;
  turns: number;
  usage: TokenUsage;
  messages: ModelMessage[];
}

// ---- The definition ---------------------------------------------------------------------------------------------

export interface AgentModelContext<Input> {
  taskId: string;
  input: Input;
  /** The turn about to be requested (1-based). */
  turn: number;
  attempt: number;
}

/** Settings passed to every `generateText` call. */
export interface AgentCallSettings {
  temperature?: number;
  topP?: number;
  maxOutputTokens?: number;
  seed?: number;
  stopSequences?: string[];
  /** The SDK's own quick retries of a failed model call within one attempt (default 2). */
  maxRetries?: number;
  headers?: Record<string, string>;
  /** Merged with `belay: { taskId, turn, attempt }`, which every call carries for wrappers and observers. */
  providerOptions?: Record<string, Record<string, Json>>;
  toolChoice?: 'auto' | 'required' | 'none';
}

export interface AgentTaskTypeDefinition<Input> {
  name: string;
  version: number;
  description?: string;
  input: z.ZodType<Input>;
  /** An AI SDK language model, or a function choosing one per turn. */
  model: LanguageModel | ((ctx: AgentModelContext<Input>) => LanguageModel);
  system?: string | ((input: Input) => string);
  /** The opening user message(s). */
  prompt: (input: Input) => string | ModelMessage[];
  tools: Record<string, AgentTool<any, Input>>;
  /** Most model calls the task may make (default 20). */
  maxTurns?: number | ((input: Input) => number);
  /** Most tokens (input + output, summed over turns) the task may spend (default: no limit). */
  maxTotalTokens?: number | ((input: Input) => number | undefined);
  call?: AgentCallSettings;
  /**
   * A run-once tool's result larger than this (bytes of JSON) stays in the run-once ledger, where it is recorded
   * anyway, and the checkpoint keeps a reference to it (default 16 KiB).
   */
  inlineResultBytes?: number;
  /** The task's result from the final answer (default: text, finish reason, turns and usage). */
  result?: (outcome: AgentOutcome, input: Input) => Json;
  /** Failures allowed since the last progress, and their backoff. */
  retry?: Partial<RetryPolicy>;
  onDeadline?: DeadlineAction;
  defaultInputTimeoutMs?: number;
  /** Re-validation on every claim after a pause, a crash or a retry (see `TaskTypeDefinition.revalidate`). */
  revalidate?: (ctx: ResumeContext<Input, AgentCheckpoint>) => Promise<RevalidateOutcome>;
}

export const DEFAULT_MAX_TURNS = 20;
export const DEFAULT_INLINE_RESULT_BYTES = 16 * 1024;
export const AGENT_STEP = 'agent';

const ZERO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

/**
 * Defines a durable agent task type (see the module comment).
 * @example defineAgentTaskType({ name: 'triage', version: 1, input: z.object({ ticket: z.string() }), model: openai('gpt-4.1'),
 *   prompt: (i) => `Triage ticket ${i.ticket}`, tools: { close: agentTool({ inputSchema: z.object({ id: z.string() }), execute: ... }) } })
 */
export function defineAgentTaskType<Input>(def: AgentTaskTypeDefinition<Input>): TaskType<Input, AgentCheckpoint> {
  const names = Object.keys(def.tools);
  for (const n of names) {
    if (!/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(n)) throw new Error(`Tool name "${n}" must be 1-64 characters of [A-Za-z0-9_-], starting with a letter`);
  }
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...def.retry };
  // The model sees each tool's description and schema, never its execute: Belay runs the calls.
  const sdkTools: ToolSet = Object.fromEntries(
    Object.entries(def.tools).map(([name, t]) => [name, sdkTool({ ...(t.description === undefined ? {} : { description: t.description }), inputSchema: t.inputSchema })]),
  );

  // A run-once call's ledger key is `<toolName>:turn-<n>/call-<i>`, so its effect kind is the tool's name.
  const reconcilers: Record<string, EffectReconciler> = {};
  const compensations: Record<string, EffectCompensation> = {};
  for (const [name, t] of Object.entries(def.tools)) {
    if (t.runOnce === false) continue;
    const { reconcile, compensate } = t;
    if (reconcile) {
      reconcilers[name] = async (effect, idempotencyKey, signal) => {
        const found = await reconcile({ effectKey: effect.key, startedAt: effect.startedAt }, idempotencyKey, signal);
        return found.applied ? { applied: true, result: toOutput(found.result) as unknown as Json } : { applied: false };
      };
    }
    if (compensate) {
      compensations[name] = async (effect, idempotencyKey, signal) => {
        // A call that reported an error to the model (AgentToolError) did nothing to undo.
        if ((effect.result as AgentToolOutput | null)?.type === 'error-text') return null;
        return compensate({ effectKey: effect.key, result: unwrapOutput(effect.result) }, idempotencyKey, signal);
      };
    }
  }
  const runsOnce = (toolName: string) => def.tools[toolName]?.runOnce !== false;

  const type = defineTaskType<Input, AgentCheckpoint>({
    name: def.name,
    version: def.version,
    ...(def.description === undefined ? {} : { description: def.description }),
    input: def.input,
    initialCheckpoint: (input) => ({
      messages: openingMessages(def.prompt(input)),
      turn: 0,
      usage: ZERO_USAGE,
      calls: [],
      refs: {},
      final: null,
      attemptBase: 0,
    }),
    // The agent counts its own attempts from its last progress (see runAgent); the runner's per-step count would
    // include every pause and every committed turn of this one long step.
    retry: { ...policy, maxAttempts: Number.MAX_SAFE_INTEGER },
    ...(def.onDeadline === undefined ? {} : { onDeadline: def.onDeadline }),
    ...(def.defaultInputTimeoutMs === undefined ? {} : { defaultInputTimeoutMs: def.defaultInputTimeoutMs }),
    ...(def.revalidate === undefined ? {} : { revalidate: def.revalidate }),
    reconcilers,
    compensations,
    // The run-once calls the model asked for in the committed turn that have not started: a cancelled or failed
    // task lists them as never started.
    // (Before the first commit there is no checkpoint yet.)
    plannedEffects: (cp: AgentCheckpoint | null) => (cp?.calls ?? []).filter((c) => !c.output && runsOnce(c.toolName)).map((c) => c.key),
    steps: [{ name: AGENT_STEP, run: (ctx) => runAgent(ctx, def, sdkTools, policy) }],
    result: (cp, input) => {
      const outcome: AgentOutcome = {
        text: cp.final?.text ?? '',
        finishReason: cp.final?.finishReason ?? 'unknown',
        turns: cp.turn,
        usage: cp.usage,
        messages: cp.messages,
      };
      return def.result
        ? def.result(outcome, input)
        : { text: outcome.text, finish_reason: outcome.finishReason, turns: outcome.turns, usage: usageJson(outcome.usage) };
    },
  });
  return type;
}

function openingMessages(prompt: string | ModelMessage[]): ModelMessage[] {
  return typeof prompt === 'string' ? [{ role: 'user', content: prompt }] : toJson(prompt);
}

function usageJson(u: TokenUsage): Json {
  return { input_tokens: u.inputTokens, output_tokens: u.outputTokens, total_tokens: u.totalTokens };
}

/** A deep copy as plain JSON (drops undefined members; the SDK's messages may carry them). */
function toJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function budgetOf<Input>(v: number | ((input: Input) => number | undefined) | undefined, input: Input): number | undefined {
  return typeof v === 'function' ? v(input) : v;
}

// ---- The loop ---------------------------------------------------------------------------------------------------

async function runAgent<Input>(
  ctx: StepContext<Input, AgentCheckpoint>,
  def: AgentTaskTypeDefinition<Input>,
  sdkTools: ToolSet,
  policy: RetryPolicy,
): Promise<AgentCheckpoint> {
  const failures = ctx.attempt - ctx.checkpoint.attemptBase;
  if (failures > policy.maxAttempts) {
    throw new TerminalError('ATTEMPTS_EXHAUSTED', `The agent made no progress in ${failures - 1} attempts`, { turn: ctx.checkpoint.turn });
  }
  try {
    return await loop(ctx, def, sdkTools);
  } catch (e) {
    throw classifyFailure(e, ctx, policy);
  }
}

async function loop<Input>(ctx: StepContext<Input, AgentCheckpoint>, def: AgentTaskTypeDefinition<Input>, sdkTools: ToolSet): Promise<AgentCheckpoint> {
  const maxTurns = budgetOf(def.maxTurns, ctx.input) ?? DEFAULT_MAX_TURNS;
  const maxTokens = budgetOf(def.maxTotalTokens, ctx.input);
  const budget = { maxTurns, maxTokens };
  let cp = ctx.checkpoint;
  const commit = async (next: AgentCheckpoint) => {
    const stamped = { ...next, attemptBase: ctx.attempt - 1 };
    await ctx.save(stamped);
    cp = stamped;
  };

  for (;;) {
    ctx.throwIfStopped();
    if (cp.calls.length > 0) {
      // The turn that asked for these calls is committed. No tool runs when the model could not see its result
      // (the turn budget is spent) or when the token budget is already spent.
      checkBudgets(cp, budget, `before running ${cp.calls.length} tool call(s) of turn ${cp.turn}`);
      for (let i = 0; i < cp.calls.length; i++) {
        const call = cp.calls[i]!;
        if (call.output) continue;
        ctx.throwIfStopped();
        const { output, byReference } = await runToolCall(ctx, def, call, cp.turn);
        const calls = cp.calls.map((c, j) => (j === i ? { ...c, output } : c));
        const refs = byReference ? { ...cp.refs, [call.toolCallId]: call.key } : cp.refs;
        ctx.progress(cp.turn, null, progressMessage(cp.turn, budget, cp.usage, `${call.toolName} done (${i + 1} of ${calls.length} tool calls)`));
        await commit({ ...cp, calls, refs });
      }
      // Folded into the next turn's commit; a crash before it rebuilds the same messages from `calls`.
      cp = { ...cp, messages: withToolResults(cp.messages, cp.calls), calls: [] };
    }
    if (cp.final) return cp;
    checkBudgets(cp, budget, `before model turn ${cp.turn + 1}`);

    const turn = cp.turn + 1;
    const model = typeof def.model === 'function' ? def.model({ taskId: ctx.taskId, input: ctx.input, turn, attempt: ctx.attempt }) : def.model;
    const s = def.call ?? {};
    const response = await generateText({
      model,
      ...(def.system === undefined ? {} : { system: typeof def.system === 'function' ? def.system(ctx.input) : def.system }),
      messages: await resolveReferences(ctx, cp.messages, cp.refs),
      tools: sdkTools,
      ...(s.toolChoice === undefined ? {} : { toolChoice: s.toolChoice }),
      stopWhen: stepCountIs(1),
      abortSignal: ctx.signal,
      ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
      ...(s.topP === undefined ? {} : { topP: s.topP }),
      ...(s.maxOutputTokens === undefined ? {} : { maxOutputTokens: s.maxOutputTokens }),
      ...(s.seed === undefined ? {} : { seed: s.seed }),
      ...(s.stopSequences === undefined ? {} : { stopSequences: s.stopSequences }),
      ...(s.maxRetries === undefined ? {} : { maxRetries: s.maxRetries }),
      ...(s.headers === undefined ? {} : { headers: s.headers }),
      providerOptions: { ...s.providerOptions, belay: { taskId: ctx.taskId, turn, attempt: ctx.attempt } },
    });
    ctx.throwIfStopped();
    const u = response.usage;
    const inputTokens = u.inputTokens ?? 0;
    const outputTokens = u.outputTokens ?? 0;
    const usage: TokenUsage = {
      inputTokens: cp.usage.inputTokens + inputTokens,
      outputTokens: cp.usage.outputTokens + outputTokens,
      totalTokens: cp.usage.totalTokens + (u.totalTokens ?? inputTokens + outputTokens),
    };
    // Invalid calls (unknown tool, input that fails the schema) already have an error result in the response
    // messages; provider-executed calls have theirs from the provider. Belay runs the rest, in order.
    const all = response.toolCalls;
    const calls: AgentToolCallRecord[] = [];
    all.forEach((c, index) => {
      if ((c as { invalid?: boolean }).invalid || c.providerExecuted) return;
      calls.push({
        toolCallId: c.toolCallId,
        toolName: c.toolName,
        input: toJson((c.input ?? null) as Json),
        key: `${c.toolName}:turn-${turn}/call-${index}`,
        questionKey: `turn-${turn}-call-${index}`,
      });
    });
    const next: AgentCheckpoint = {
      ...cp,
      turn,
      usage,
      messages: [...cp.messages, ...toJson(response.response.messages)],
      calls,
      final: all.length === 0 ? { text: response.text, finishReason: response.finishReason } : null,
    };
    const what = all.length === 0 ? `final answer (${response.finishReason})` : `${calls.length} tool call(s) requested`;
    ctx.progress(turn, null, progressMessage(turn, budget, usage, what));
    // A final answer is committed with the task's completion.
    if (next.final) return { ...next, attemptBase: ctx.attempt - 1 };
    // The model's response is durable before any of its tool calls runs.
    await commit(next);
    ctx.faultPoint('after-model-turn');
  }
}

function checkBudgets(cp: AgentCheckpoint, budget: { maxTurns: number; maxTokens: number | undefined }, when: string): void {
  const details = { turns: cp.turn, max_turns: budget.maxTurns, usage: usageJson(cp.usage), ...(budget.maxTokens === undefined ? {} : { max_total_tokens: budget.maxTokens }) };
  if (budget.maxTokens !== undefined && cp.usage.totalTokens >= budget.maxTokens) {
    throw new TerminalError('AGENT_TOKEN_BUDGET_EXCEEDED', `The agent spent ${cp.usage.totalTokens} of its ${budget.maxTokens} tokens; stopped ${when}`, details);
  }
  if (cp.turn >= budget.maxTurns) {
    throw new TerminalError('AGENT_TURN_BUDGET_EXCEEDED', `The agent used all ${budget.maxTurns} model turns; stopped ${when}`, details);
  }
}

function progressMessage(turn: number, budget: { maxTurns: number; maxTokens: number | undefined }, usage: TokenUsage, what: string): string {
  const tokens = budget.maxTokens === undefined ? `${usage.totalTokens} tokens` : `${usage.totalTokens} of ${budget.maxTokens} tokens`;
  return `turn ${turn} of at most ${budget.maxTurns}: ${what}; ${tokens} (${usage.inputTokens} in, ${usage.outputTokens} out)`;
}

/** Appends the calls' results to the conversation, into the trailing tool message when the response has one. */
function withToolResults(messages: ModelMessage[], calls: AgentToolCallRecord[]): ModelMessage[] {
  const parts = calls.map((c) => ({ type: 'tool-result' as const, toolCallId: c.toolCallId, toolName: c.toolName, output: c.output! }));
  const last = messages.at(-1);
  if (last?.role === 'tool') return [...messages.slice(0, -1), { ...last, content: [...last.content, ...parts] }];
  return [...messages, { role: 'tool', content: parts }];
}

/** What a tool returned, from its recorded output. */
function unwrapOutput(recorded: Json): Json {
  const o = recorded as AgentToolOutput | null;
  return o && typeof o === 'object' && 'value' in o ? o.value : recorded;
}

function toOutput(value: unknown): AgentToolOutput {
  if (typeof value === 'string') return { type: 'text', value };
  return { type: 'json', value: value === undefined ? null : (value as Json) };
}

/** The conversation with every result kept by reference read back from the ledger (a read: they are applied). */
async function resolveReferences<Input>(ctx: StepContext<Input, AgentCheckpoint>, messages: ModelMessage[], refs: Record<string, string>): Promise<ModelMessage[]> {
  if (Object.keys(refs).length === 0) return messages;
  const out: ModelMessage[] = [];
  for (const m of messages) {
    if (m.role !== 'tool' || !m.content.some((p) => p.type === 'tool-result' && refs[p.toolCallId] !== undefined)) {
      out.push(m);
      continue;
    }
    const content = [];
    for (const p of m.content) {
      const key = p.type === 'tool-result' ? refs[p.toolCallId] : undefined;
      if (p.type !== 'tool-result' || key === undefined) {
        content.push(p);
        continue;
      }
      const stored = await ctx.once<AgentToolOutput>(key, () => {
        throw new TerminalError('AGENT_RESULT_MISSING', `The ledger has no recorded result under "${key}"`);
      });
      content.push({ ...p, output: stored });
    }
    out.push({ ...m, content });
  }
  return out;
}

async function runToolCall<Input>(
  ctx: StepContext<Input, AgentCheckpoint>,
  def: AgentTaskTypeDefinition<Input>,
  call: AgentToolCallRecord,
  turn: number,
): Promise<{ output: AgentToolOutput; byReference: boolean }> {
  const tool = def.tools[call.toolName];
  if (!tool) return { output: { type: 'error-text', value: `No tool named "${call.toolName}"` }, byReference: false };
  const runOnce = tool.runOnce !== false;
  const tc: AgentToolContext<Input> = {
    taskId: ctx.taskId,
    taskInput: ctx.input,
    turn,
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    effectKey: call.key,
    idempotencyKey: `${ctx.taskId}:${call.key}`,
    signal: ctx.signal,
    clock: ctx.clock,
    // `<kind>:turn-3/call-0/<tool>`: the kind (the part before the first `:`) is the caller's key.
    once: (key, fn, options) => ctx.once(`${key}:${call.key.slice(call.toolName.length + 1)}/${call.toolName}`, fn, options),
    ask: (question, key) => {
      if (runOnce) {
        throw new TerminalError(
          'AGENT_TOOL_MISCONFIGURED',
          `Tool "${call.toolName}" asks a person but runs once as a whole; declare it with runOnce: false and put its side effects in tc.once`,
        );
      }
      return ctx.ask(key === undefined ? call.questionKey : `${call.questionKey}-${key}`, question);
    },
    artifact: (name, data, mediaType) => ctx.artifact(name, data, mediaType),
  };
  const invoke = async (): Promise<AgentToolOutput> => {
    try {
      return toOutput(await tool.execute(call.input, tc));
    } catch (e) {
      if (e instanceof AgentToolError) return { type: 'error-text', value: e.message };
      throw e;
    }
  };
  if (!runOnce) return { output: await invoke(), byReference: false };
  const output = await ctx.once<AgentToolOutput>(call.key, () => invoke());
  const bytes = Buffer.byteLength(JSON.stringify(output));
  if (bytes <= (def.inlineResultBytes ?? DEFAULT_INLINE_RESULT_BYTES)) return { output, byReference: false };
  return { output: { type: 'text', value: `[a ${bytes}-byte result, kept in the run-once ledger under "${call.key}"]` }, byReference: true };
}

// ---- Failures ---------------------------------------------------------------------------------------------------

function modelApiError(e: unknown): APICallError | undefined {
  if (APICallError.isInstance(e)) return e;
  if (RetryError.isInstance(e) && APICallError.isInstance(e.lastError)) return e.lastError;
  return undefined;
}

/** Decides what the runner sees: stop, pause and terminal errors as they are; everything else a timed retry. */
function classifyFailure<Input>(e: unknown, ctx: StepContext<Input, AgentCheckpoint>, policy: RetryPolicy): unknown {
  if (ctx.signal.aborted) return e;
  if (e instanceof PauseSignal || e instanceof StopSignal || e instanceof TerminalError) return e;
  if (isBelayError(e) && (!e.retryable || e.code === 'LEASE_LOST')) return e;
  const api = modelApiError(e);
  if (api && !api.isRetryable) {
    return new TerminalError('AGENT_MODEL_ERROR', `The model call failed: ${api.message}`, { status: api.statusCode ?? null, turn: ctx.checkpoint.turn + 1 });
  }
  const err = coerceError(e);
  const failure = ctx.attempt - ctx.checkpoint.attemptBase;
  const code = e instanceof RetryableError ? (e.options.code ?? 'STEP_FAILED') : isBelayError(e) ? e.code : api ? 'AGENT_MODEL_ERROR' : 'STEP_FAILED';
  if (failure >= policy.maxAttempts) {
    return new TerminalError('ATTEMPTS_EXHAUSTED', `The agent failed ${failure} times without progress: ${err.message}`, {
      turn: ctx.checkpoint.turn,
      last_error: { code, message: err.message },
    });
  }
  const backoff = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** Math.max(0, failure - 1));
  const requested = e instanceof RetryableError ? e.options.retryAfterMs : e instanceof BelayError ? e.retryAfterMs : undefined;
  // Full jitter in [backoff/2, backoff]: agents that failed together (a provider outage) do not retry together.
  const delay = requested !== undefined ? Math.max(0, requested) : Math.floor(backoff / 2 + (Math.random() * backoff) / 2);
  return new RetryableError(err.message, { retryAfterMs: delay, code, cause: e });
}
