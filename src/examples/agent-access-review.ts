/**
 * @module examples/agent-access-review
 * The access review as a durable agent: a model decides, turn by turn, which tools to call — list the systems,
 * fetch each system's grants, propose the stale ones for revocation, ask the owners (the task pauses until they
 * answer), revoke each approved grant exactly once through the downstream, write the report — and ends with a
 * summary. The model here is scripted (`ScriptedAccessReviewModel`, an AI SDK LanguageModelV3 that reads the tool
 * results in its prompt and decides deterministically), so the example needs no network and no key; swap in any AI
 * SDK model with the same tools.
 *
 * The scripted model reports every request it receives to the downstream (kind `model-call`, key
 * `<taskId>:model-turn-<n>`), so a test outside the worker can count model calls across crashes.
 */
import type { LanguageModel } from 'ai';
import { z } from 'zod';
import { agentTool, AgentToolError, defineAgentTaskType, type AgentToolContext } from '../agent/define-agent-task-type.js';
import type { Json } from '../core/task.js';
import type { Downstream } from './downstream.js';

// ---- A fake directory of systems and grants (deterministic, so every rerun sees the same data) -----------------

const GRANTS_PER_SYSTEM = 3;

const Input = z.object({
  systems: z.number().int().min(1).max(50).default(6),
  /** How many grants are stale (unused for more than 90 days). */
  revocations: z.number().int().min(0).max(150).default(4),
  approvalTimeoutMs: z.number().int().min(1000).max(30 * 24 * 3600_000).default(7 * 24 * 3600_000),
  /** Simulated model latency per turn (demos); 0 in tests. */
  thinkMs: z.number().int().min(0).max(60_000).default(0),
  maxTurns: z.number().int().min(1).max(100).default(12),
  /** Token budget for the whole review (input + output tokens over all turns). */
  maxTotalTokens: z.number().int().min(1).optional(),
});
type Input = z.infer<typeof Input>;
type Ctx = AgentToolContext<Input>;

interface Grant {
  id: string;
  system: string;
  principal: string;
  role: string;
  last_used_days: number;
}

function systemNames(input: Input): string[] {
  return Array.from({ length: input.systems }, (_, i) => `system-${i + 1}`);
}

function grantsOf(system: string, input: Input): Grant[] {
  const s = Number(system.slice('system-'.length)) - 1;
  const total = input.systems * GRANTS_PER_SYSTEM;
  const stale = Math.min(input.revocations, total);
  const stride = Math.max(1, Math.floor(total / Math.max(1, stale)));
  return Array.from({ length: GRANTS_PER_SYSTEM }, (_, g) => {
    const ordinal = s * GRANTS_PER_SYSTEM + g;
    const isStale = stale > 0 && ordinal % stride === 0 && ordinal / stride < stale;
    return {
      id: `grant-${s + 1}-${g + 1}`,
      system,
      principal: `user-${(ordinal * 7) % 97}`,
      role: g === 0 ? 'admin' : 'read',
      last_used_days: isStale ? 120 + ordinal : ordinal % 30,
    };
  });
}

const Approval = z.object({
  approved: z.boolean(),
  /** Grant ids the owners want to keep. */
  keep: z.array(z.string()).max(10_000).optional(),
});

// ---- The tools ----------------------------------------------------------------------------------------------------

function tools(downstream: Downstream) {
  return {
    list_systems: agentTool({
      description: 'List the systems under review.',
      inputSchema: z.object({}),
      runOnce: false,
      execute: (_input, tc: Ctx) => ({ systems: systemNames(tc.taskInput) }),
    }),
    fetch_grants: agentTool({
      description: 'Fetch the access grants of one system, with the days since each was last used.',
      inputSchema: z.object({ system: z.string() }),
      runOnce: false,
      execute: ({ system }, tc: Ctx) => {
        if (!systemNames(tc.taskInput).includes(system)) throw new AgentToolError(`Unknown system "${system}"`);
        return { system, grants: grantsOf(system, tc.taskInput) };
      },
    }),
    propose_revocations: agentTool({
      description: 'Record the grants proposed for revocation and why.',
      inputSchema: z.object({ grants: z.array(z.string()).max(10_000), reason: z.string().max(2000) }),
      runOnce: false,
      execute: ({ grants, reason }, tc: Ctx) => {
        const known = new Set(systemNames(tc.taskInput).flatMap((s) => grantsOf(s, tc.taskInput).map((g) => g.id)));
        return { proposed: grants.filter((g) => known.has(g)), unknown: grants.filter((g) => !known.has(g)), reason };
      },
    }),
    ask_owner: agentTool({
      description: 'Ask the owners to approve revoking grants; returns their answer ({ approved, keep? }).',
      inputSchema: z.object({ question: z.string().max(2000), grants: z.array(z.string()).max(10_000) }),
      // A question, not an effect: it runs again with the answer when the owners reply.
      runOnce: false,
      execute: ({ question, grants }, tc: Ctx) => {
        const answer = tc.ask({ question, schema: Approval, timeoutMs: tc.taskInput.approvalTimeoutMs, context: { grants } });
        return { approved: answer.approved, keep: answer.keep ?? [] };
      },
    }),
    revoke: agentTool({
      description: 'Revoke one grant. Irreversible.',
      inputSchema: z.object({ grant: z.string() }),
      // The whole call runs once; the ledger key goes downstream as the idempotency key.
      execute: ({ grant }, tc: Ctx) => downstream.apply('revoke', tc.idempotencyKey, { grant }, tc.signal),
    }),
    write_report: agentTool({
      description: 'Write the review report.',
      inputSchema: z.object({ summary: z.string().max(10_000), revoked: z.array(z.string()).max(10_000), kept: z.array(z.string()).max(10_000) }),
      runOnce: false,
      execute: ({ summary, revoked, kept }, tc: Ctx) => {
        tc.artifact('access-review-report', { systems_reviewed: tc.taskInput.systems, summary, revoked, kept });
        return { written: true };
      },
    }),
  };
}

// ---- The scripted model -------------------------------------------------------------------------------------------

type LanguageModelV3 = Extract<LanguageModel, { specificationVersion: 'v3' }>;
type CallOptions = Parameters<LanguageModelV3['doGenerate']>[0];
type GenerateResult = Awaited<ReturnType<LanguageModelV3['doGenerate']>>;
type Content = GenerateResult['content'][number];

export interface ScriptedModelOptions {
  /** Simulated latency per request; aborted by the call's signal. */
  latencyMs?: number;
  /** Called with every request that carries Belay's `providerOptions.belay` (before answering it). */
  onRequest?: (request: { taskId: string; turn: number; attempt: number }, signal: AbortSignal | undefined) => Promise<void>;
}

/**
 * A deterministic stand-in for a real model: it reads the tool results in its prompt and asks for the next tools
 * an access reviewer would call, then answers with a summary. Usage is counted as about 4 characters per token.
 */
export class ScriptedAccessReviewModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3' as const;
  readonly provider = 'belay-examples';
  readonly modelId = 'scripted-access-review';
  readonly supportedUrls = {};
  private calls = 0;

  constructor(private readonly options: ScriptedModelOptions = {}) {}

  async doGenerate(call: CallOptions): Promise<GenerateResult> {
    const belay = call.providerOptions?.belay as { taskId?: string; turn?: number; attempt?: number } | undefined;
    if (belay?.taskId && this.options.onRequest) {
      await this.options.onRequest({ taskId: belay.taskId, turn: belay.turn ?? 0, attempt: belay.attempt ?? 0 }, call.abortSignal);
    }
    if (this.options.latencyMs) await sleep(this.options.latencyMs, call.abortSignal);
    const content = decide(resultsByTool(call.prompt), () => `scripted-${++this.calls}`);
    const toolCalls = content.some((c) => c.type === 'tool-call');
    const inputTokens = Math.ceil(JSON.stringify(call.prompt).length / 4);
    const outputTokens = Math.ceil(JSON.stringify(content).length / 4);
    return {
      content,
      finishReason: { unified: toolCalls ? 'tool-calls' : 'stop', raw: toolCalls ? 'tool_calls' : 'stop' },
      usage: {
        inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
      },
      warnings: [],
    };
  }

  doStream(): never {
    throw new Error('The scripted model does not stream');
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Successful JSON tool results in the prompt, by tool name, in order. */
function resultsByTool(prompt: CallOptions['prompt']): Map<string, any[]> {
  const out = new Map<string, any[]>();
  for (const message of prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-result' || part.output.type !== 'json') continue;
      out.set(part.toolName, [...(out.get(part.toolName) ?? []), part.output.value]);
    }
  }
  return out;
}

function decide(results: Map<string, any[]>, nextId: () => string): Content[] {
  const calls = (text: string, list: Array<[string, Json]>): Content[] => [
    { type: 'text', text },
    ...list.map(([toolName, input]): Content => ({ type: 'tool-call', toolCallId: nextId(), toolName, input: JSON.stringify(input) })),
  ];
  const listed = results.get('list_systems')?.[0] as { systems: string[] } | undefined;
  if (!listed) return calls('First, which systems are under review?', [['list_systems', {}]]);
  const fetched = (results.get('fetch_grants') ?? []) as Array<{ grants: Grant[] }>;
  if (fetched.length === 0) return calls(`Fetching the grants of ${listed.systems.length} systems.`, listed.systems.map((system) => ['fetch_grants', { system }]));
  const proposal = results.get('propose_revocations')?.[0] as { proposed: string[] } | undefined;
  if (!proposal) {
    const stale = fetched.flatMap((f) => f.grants).filter((g) => g.last_used_days > 90).map((g) => g.id);
    return calls(`${stale.length} grants were not used for over 90 days.`, [['propose_revocations', { grants: stale, reason: 'unused for more than 90 days' }]]);
  }
  const answer = results.get('ask_owner')?.[0] as { approved: boolean; keep: string[] } | undefined;
  if (!answer) {
    return calls('The owners must approve before anything is revoked.', [
      ['ask_owner', { question: `Approve revoking ${proposal.proposed.length} stale grants?`, grants: proposal.proposed }],
    ]);
  }
  const keep = new Set(answer.keep);
  const approved = answer.approved ? proposal.proposed.filter((g) => !keep.has(g)) : [];
  const kept = proposal.proposed.filter((g) => !approved.includes(g));
  if (approved.length > 0 && !results.has('revoke')) return calls(`Revoking ${approved.length} approved grants.`, approved.map((grant) => ['revoke', { grant }]));
  const summary = `Reviewed ${listed.systems.length} systems: revoked ${approved.length} stale grants, kept ${kept.length}.`;
  if (!results.has('write_report')) return calls('Writing the report.', [['write_report', { summary, revoked: approved, kept }]]);
  return [{ type: 'text', text: summary }];
}

// ---- The task type ------------------------------------------------------------------------------------------------

/** The agent-driven access review, acting on `downstream`; its scripted model reports each request there too. */
export function agentAccessReviewType(downstream: Downstream) {
  return defineAgentTaskType<Input>({
    name: 'agent-access-review',
    version: 1,
    description: 'Access review driven by a (scripted) model with tools: fetch grants, propose, ask the owners, revoke once each, report.',
    input: Input,
    model: ({ input }) =>
      new ScriptedAccessReviewModel({
        latencyMs: input.thinkMs,
        onRequest: async ({ taskId, turn, attempt }, signal) => {
          await downstream.apply('model-call', `${taskId}:model-turn-${turn}`, { turn, attempt }, signal);
        },
      }),
    system: 'You review access grants. Revoke only what the owners approved, each grant once, and write a report.',
    prompt: (input) => `Run the quarterly access review of our ${input.systems} systems.`,
    tools: tools(downstream),
    maxTurns: (input) => input.maxTurns,
    maxTotalTokens: (input) => input.maxTotalTokens,
    onDeadline: 'fail',
    result: (outcome) => ({ summary: outcome.text, turns: outcome.turns, total_tokens: outcome.usage.totalTokens }),
  });
}
